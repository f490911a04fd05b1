// A small JSON Schema validator written for clarity, independent of the grammar engine:
// the tests check the engine's output with it. It implements the keywords the engine
// supports with their full JSON Schema 2020-12 meaning (additionalProperties absent means
// any; oneOf means exactly one; keywords of one type ignore values of other types), not
// the engine's narrower generation rules. Patterns run on std::wregex (ECMAScript) over
// the decoded code points; formats follow RFC 3339 (dates, times), RFC 4122 (uuid) and a
// loose email shape (one '@', a dotted domain, no spaces).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tandem::grammar::testing {

// nullopt when `instance` is valid against `schema` (a whole document: local $refs resolve
// within it); otherwise where and why it is not.
std::optional<std::string> validate(const nlohmann::json& instance, const nlohmann::json& schema);

}  // namespace tandem::grammar::testing
