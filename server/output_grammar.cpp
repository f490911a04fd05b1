#include "server/output_grammar.h"

namespace tandem::server {

std::variant<std::shared_ptr<const grammar::CompiledGrammar>, ApiError> compile_output_constraint(
    const OutputConstraint& constraint, grammar::GrammarCache* grammars) {
  using Kind = OutputConstraint::Kind;
  if (!constraint.active()) return std::shared_ptr<const grammar::CompiledGrammar>{};
  if (grammars == nullptr) {
    return bad_request("'" + constraint.param + "' is not supported by this server.",
                       constraint.param);
  }
  try {
    switch (constraint.kind) {
      case Kind::kJsonObject:
        return grammars->json_object();
      case Kind::kJsonSchema:
        return grammars->json_schema(constraint.text);
      case Kind::kGbnf:
        return grammars->gbnf(constraint.text);
      case Kind::kRegex:
        return grammars->regex(constraint.text);
      case Kind::kNone:
        break;
    }
  } catch (const grammar::GrammarError& error) {
    return bad_request("Invalid '" + constraint.param + "': " + error.what(), constraint.param);
  }
  return std::shared_ptr<const grammar::CompiledGrammar>{};
}

}  // namespace tandem::server
