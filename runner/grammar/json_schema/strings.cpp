// Strings: length bounds (in characters: an escape is one), a pattern, or a format.

#include "runner/grammar/json_schema/compiler.h"

namespace tandem::grammar::json_schema {

namespace {

class Formats {
 public:
  explicit Formats(GrammarBuilder& b) : b_(b) {}

  ExprId date() {
    const ExprId year =
        choice({seq({lit("000"), range('1', '9')}), seq({lit("00"), range('1', '9'), digit()}),
                seq({lit("0"), range('1', '9'), digit(), digit()}),
                seq({range('1', '9'), digit(), digit(), digit()})});
    const ExprId from_01 = seq({lit("0"), range('1', '9')});
    const ExprId day31 =
        choice({from_01, seq({range('1', '2'), digit()}), seq({lit("3"), range('0', '1')})});
    const ExprId day30 = choice({from_01, seq({range('1', '2'), digit()}), lit("30")});
    const ExprId day28 =
        choice({from_01, seq({lit("1"), digit()}), seq({lit("2"), range('0', '8')})});
    const ExprId month31 =
        choice({lit("01"), lit("03"), lit("05"), lit("07"), lit("08"), lit("10"), lit("12")});
    const ExprId month30 = choice({lit("04"), lit("06"), lit("09"), lit("11")});
    const ExprId any_year =
        seq({year, lit("-"),
             choice({seq({month31, lit("-"), day31}), seq({month30, lit("-"), day30}),
                     seq({lit("02-"), day28})})});
    // Leap years: divisible by 4 but not by 100 (the last two digits), or by 400 (the
    // first two digits divisible by 4, then 00).
    const ExprId by4 = choice({seq({lit("0"), set("48")}), seq({set("2468"), set("048")}),
                               seq({set("13579"), set("26")})});
    const ExprId leap = choice({seq({digit(), digit(), by4}), seq({by4, lit("00")})});
    return choice({any_year, seq({leap, lit("-02-29")})});
  }

  ExprId time() {
    const ExprId hour = choice({seq({range('0', '1'), digit()}), seq({lit("2"), range('0', '3')})});
    const ExprId sixty = seq({range('0', '5'), digit()});
    const ExprId fraction = b_.optional(seq({lit("."), b_.repeat(digit(), 1, 9)}));
    const ExprId offset = choice({lit("Z"), seq({set("+-"), hour, lit(":"), sixty})});
    return seq({hour, lit(":"), sixty, lit(":"), sixty, fraction, offset});
  }

  ExprId uuid() {
    const ExprId hex = b_.codepoints({{'0', '9'}, {'a', 'f'}, {'A', 'F'}});
    const auto hexes = [&](uint32_t n) { return b_.repeat(hex, n, n); };
    return seq({hexes(8), lit("-"), hexes(4), lit("-"), hexes(4), lit("-"), hexes(4), lit("-"),
                hexes(12)});
  }

  ExprId email() {
    const ExprId atext = b_.codepoints({{'A', 'Z'},
                                        {'a', 'z'},
                                        {'0', '9'},
                                        {'!', '!'},
                                        {'#', '\''},
                                        {'*', '+'},
                                        {'-', '-'},
                                        {'/', '/'},
                                        {'=', '='},
                                        {'?', '?'},
                                        {'^', '`'},
                                        {'{', '~'}});
    const ExprId local = seq({b_.plus(atext), b_.star(seq({lit("."), b_.plus(atext)}))});
    const ExprId alnum = b_.codepoints({{'A', 'Z'}, {'a', 'z'}, {'0', '9'}});
    const ExprId inner = b_.codepoints({{'A', 'Z'}, {'a', 'z'}, {'0', '9'}, {'-', '-'}});
    const ExprId label = seq({alnum, b_.optional(seq({b_.repeat(inner, 0, 61), alnum}))});
    return seq({local, lit("@"), label, b_.plus(seq({lit("."), label}))});
  }

 private:
  ExprId lit(const char* s) { return b_.literal(s); }
  ExprId digit() { return range('0', '9'); }
  ExprId range(char lo, char hi) { return b_.codepoints({{char32_t(lo), char32_t(hi)}}); }
  ExprId set(const char* chars) {
    std::vector<CodepointRange> ranges;
    for (const char* p = chars; *p; ++p) ranges.push_back({char32_t(*p), char32_t(*p)});
    return b_.codepoints(std::move(ranges));
  }
  ExprId seq(std::vector<ExprId> items) { return b_.sequence(std::move(items)); }
  ExprId choice(std::vector<ExprId> items) { return b_.choice(std::move(items)); }

  GrammarBuilder& b_;
};

ExprId format_content(SchemaCompiler& c, const std::string& format, const std::string& path) {
  Formats f(c.builder());
  if (format == "date") return f.date();
  if (format == "time") return f.time();
  if (format == "date-time")
    return c.builder().sequence({f.date(), c.builder().literal("T"), f.time()});
  if (format == "uuid") return f.uuid();
  if (format == "email") return f.email();
  c.fail(path, "format '" + format + "' is not supported (date, time, date-time, uuid, email are)");
}

}  // namespace

ExprId compile_string(SchemaCompiler& c, const Json& s, const std::string& path) {
  GrammarBuilder& b = c.builder();
  const bool bounded = s.contains("minLength") || s.contains("maxLength");
  const uint32_t min = count_keyword(c, s, "minLength", path, 0);
  const uint32_t max = count_keyword(c, s, "maxLength", path, GrammarBuilder::kUnbounded);
  const ExprId quote = b.literal("\"");
  if (const auto it = s.find("format"); it != s.end()) {
    if (!it->is_string()) c.fail(path, "'format' must be a string");
    if (bounded || s.contains("pattern"))
      c.fail(path, "'format' beside 'pattern', 'minLength' or 'maxLength' is not supported");
    return b.sequence({quote, format_content(c, *it, path), quote});
  }
  if (const auto it = s.find("pattern"); it != s.end()) {
    if (!it->is_string()) c.fail(path, "'pattern' must be a string");
    if (bounded) c.fail(path, "'pattern' beside 'minLength' or 'maxLength' is not supported");
    return b.sequence({quote, compile_pattern(c, *it, path), quote});
  }
  if (min > max) return b.nothing();
  return b.sequence({quote, b.repeat(c.string_char(), min, max), quote});
}

}  // namespace tandem::grammar::json_schema
