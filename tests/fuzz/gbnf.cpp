// Fuzzes the GBNF parser with the input as grammar text. Beyond "no crash": it either
// returns a grammar or throws GrammarError with a one-line "gbnf: ..." message (nothing
// else escapes); a grammar it returns drives a matcher whose masks equal the brute-force
// check, are never empty before the grammar ends, and whose recognizer accepts the text
// of every completed walk.

#include <cstdint>
#include <string>
#include <string_view>

#include "runner/grammar/recognizer.h"
#include "tests/fuzz/grammar_fuzzing.h"

using tandem::fuzzing::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::shared_ptr<const tandem::grammar::Grammar> g;
  try {
    g = tandem::grammar::parse_gbnf(text, tandem::fuzzing::fuzz_limits());
  } catch (const tandem::grammar::GrammarError& e) {
    const std::string message = e.what();
    require(message.rfind("gbnf: ", 0) == 0 && message.find('\n') == std::string::npos);
    return 0;
  }
  require(g->num_states() > 0);
  std::string walked;
  if (tandem::fuzzing::walk(g, data, size, 24, walked)) {
    tandem::grammar::Recognizer r(g);
    require(r.feed(walked) && r.accepts());
  }
  return 0;
}
