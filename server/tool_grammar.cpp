#include "server/tool_grammar.h"

#include <string>

namespace tandem::server {
namespace {

// The schema error of the tool whose parameters do not compile (the framed grammar's own
// error names a place in the combined document, not the request's field).
ApiError parameters_error(const ToolRequest& tools, const grammar::GrammarError& framed_error) {
  if (auto error = check_tool_parameters(tools)) return *error;
  return bad_request(
      std::string("The tools' call grammar does not compile: ") + framed_error.what(), "tools");
}

}  // namespace

std::optional<ApiError> check_tool_parameters(const ToolRequest& tools) {
  for (size_t i = 0; i < tools.functions.size(); ++i) {
    try {
      grammar::compile_json_schema(tools.functions[i].parameters);
    } catch (const grammar::GrammarError& error) {
      const std::string param = "tools[" + std::to_string(i) + "].function.parameters";
      return bad_request("Invalid '" + param + "': " + error.what(), param);
    }
  }
  return std::nullopt;
}

grammar::FramedJson tool_call_grammar_spec(const ToolRequest& tools, ToolCallFormat format) {
  const ToolCallFraming framing = tool_call_framing(format);
  grammar::FramedJson spec;
  spec.open = framing.open;
  spec.separator = framing.separator;
  spec.close = framing.close;
  spec.min_items = 1;
  // A named function is called exactly once, as OpenAI's forced function call is.
  const bool one = !tools.parallel || tools.choice.mode == ToolChoice::Mode::kNamed;
  spec.max_items = one ? 1 : grammar::GrammarBuilder::kUnbounded;
  for (const ToolFunction& function : tools.callable()) {
    using Part = grammar::FramedJson::Part;
    spec.alternatives.push_back({
        Part{framing.before_name + function.name + framing.after_name},
        Part{"", function.parameters, true},
        Part{framing.after_arguments},
    });
  }
  return spec;
}

std::variant<std::shared_ptr<const grammar::CompiledGrammar>, ApiError> compile_tool_call_grammar(
    const ToolRequest& tools, ToolCallFormat format, grammar::GrammarCache* grammars) {
  if (!tools.constrains()) return std::shared_ptr<const grammar::CompiledGrammar>{};
  if (grammars == nullptr) {
    return bad_request(
        "'tool_choice' other than 'auto' and 'none' is not supported by this server.",
        "tool_choice");
  }
  try {
    return grammars->framed_json(tool_call_grammar_spec(tools, format));
  } catch (const grammar::GrammarError& error) {
    return parameters_error(tools, error);
  }
}

}  // namespace tandem::server
