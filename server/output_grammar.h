// A request's output constraint (response_format, json_schema, grammar) compiled for the
// served model, through the model card's grammar cache: one compilation per schema or
// grammar text, whichever request sends it first. A schema or grammar the engine cannot
// compile is the client's 400, naming the field and, in the message, the keyword or the
// line and column.
#pragma once

#include <memory>
#include <variant>

#include "protocol/api_error.h"
#include "protocol/output_constraint.h"
#include "runner/grammar/grammar_cache.h"

namespace tandem::server {

// Null for a request without a constraint. `grammars` null: the model has no grammar
// support, and a constrained request is refused by name.
std::variant<std::shared_ptr<const grammar::CompiledGrammar>, ApiError> compile_output_constraint(
    const OutputConstraint& constraint, grammar::GrammarCache* grammars);

}  // namespace tandem::server
