// Fuzzes the JSON Schema compiler with the input as schema text. Beyond "no crash": it
// either returns a grammar or throws GrammarError with a one-line "json_schema: ..."
// message; a grammar it returns drives a matcher whose masks equal the brute-force check
// and are never empty before the grammar ends; and every walk that completes spells a
// JSON text that the tests' independent validator finds valid against the schema
// (patterns excepted: std::regex's \s and . differ from JSON Schema's on non-ASCII).

#include <cstdint>
#include <regex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tests/fuzz/grammar_fuzzing.h"
#include "tests/runner/grammar/schema_validator.h"

using tandem::fuzzing::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::shared_ptr<const tandem::grammar::Grammar> g;
  try {
    g = tandem::grammar::compile_json_schema(text, tandem::fuzzing::fuzz_limits());
  } catch (const tandem::grammar::GrammarError& e) {
    const std::string message = e.what();
    require(message.rfind("json_schema: ", 0) == 0 && message.find('\n') == std::string::npos);
    return 0;
  }
  std::string walked;
  if (!tandem::fuzzing::walk(g, data, size, 48, walked)) return 0;
  const auto value = nlohmann::json::parse(walked, nullptr, false);
  require(!value.is_discarded());
  if (text.find("pattern") != std::string_view::npos) return 0;
  const auto schema = nlohmann::json::parse(text, nullptr, false);
  require(!schema.is_discarded());
  require(!tandem::grammar::testing::validate(value, schema).has_value());
  return 0;
}
