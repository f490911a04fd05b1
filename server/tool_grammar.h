// The grammar of a request's tool calls when tool_choice is "required" or names a function:
// the output is one call (or, with parallel_tool_calls, one or more) of the callable
// functions, in the model family's format (protocol/tool_calls/tool_call_format.h), each
// call's arguments valid against that function's parameters schema. Compiled through the
// model card's grammar cache, so requests with the same tools share one compilation.
#pragma once

#include <memory>
#include <optional>
#include <variant>

#include "protocol/api_error.h"
#include "protocol/output_constraint.h"
#include "protocol/tool_calls/tool_call_format.h"
#include "protocol/tool_calls/tool_request.h"
#include "runner/grammar/grammar_cache.h"

namespace tandem::server {

// The FramedJson (runner/grammar/json_schema.h) of the request's calls in `format`.
grammar::FramedJson tool_call_grammar_spec(const ToolRequest& tools, ToolCallFormat format);

// Null when the request does not constrain its output to calls. A parameters schema the
// engine cannot compile is a 400 naming that tool's "tools[i].function.parameters".
std::variant<std::shared_ptr<const grammar::CompiledGrammar>, ApiError> compile_tool_call_grammar(
    const ToolRequest& tools, ToolCallFormat format, grammar::GrammarCache* grammars);

// Tools under "auto" beside a JSON response format (json_schema, json_object): the output
// is the calls, in the family's format, or the shaped answer instead, the two outcomes
// "auto" allows with a format (the Agents SDK sends the pair for an agent with tools and an
// output type). Null where the request is no such pair, or where a tool's parameters do not
// compile as a constrained call's must (an "auto" tool may hold keywords the engine lacks):
// the answer's grammar alone then writes the output, as vLLM's guided decoding does.
std::shared_ptr<const grammar::CompiledGrammar> compile_call_or_answer_grammar(
    const ToolRequest& tools, ToolCallFormat format, const OutputConstraint& constraint,
    grammar::GrammarCache* grammars);

// The parameters of every tool a constrained request (tool_choice "required" or named) may
// call compile as a JSON Schema of the engine's subset; else a 400 naming that tool's
// "tools[i].function.parameters". Under "auto" and "none", and for the tools a named choice
// leaves out, nothing constrains the output: the schemas only reach the template, and any
// keyword is accepted, as vLLM does (MCP servers' and generated tool sets hold keywords
// the engine lacks). Compiles each schema without the vocabulary (no masks): the grammar
// is built and dropped, and its verdict kept by schema text for the process, since clients
// send the same tools with every turn. Thread-safe.
std::optional<ApiError> check_tool_parameters(const ToolRequest& tools);

}  // namespace tandem::server
