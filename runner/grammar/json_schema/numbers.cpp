// Numbers and integers with bounds. Integers: the exact decimal language of a range, digit
// by digit. Numbers with integer bounds: a number written I.F (no exponent) is compared to
// an integer c through its integral part I and whether the fraction F is zero:
//   M >= c  <=>  I >= c            M > c  <=>  I > c, or I = c and F != 0
//   M <= c  <=>  I < c, or I = c and F = 0          M < c  <=>  I < c
// applied to M = v on the non-negative side and M = -v after a minus sign.

#include <algorithm>
#include <cmath>
#include <optional>

#include "runner/grammar/json_schema/compiler.h"

namespace tandem::grammar::json_schema {

namespace {

constexpr int64_t kLargest = 9'999'999'999'999'999;  // 16 digits

enum class Fraction { kAny, kZero, kNonZero };

struct Piece {  // integral part in [lo, hi], fraction of the given kind
  int64_t lo, hi;
  Fraction fraction;
};

class Ranges {
 public:
  Ranges(SchemaCompiler& c) : c_(c), b_(c.builder()) {}

  // The canonical decimals of [lo, hi] (either sign).
  ExprId integers(int64_t lo, int64_t hi) {
    std::vector<ExprId> items;
    if (lo < 0)
      items.push_back(b_.sequence({b_.literal("-"), naturals(-std::min(hi, int64_t{-1}), -lo)}));
    if (hi >= 0) items.push_back(naturals(std::max(lo, int64_t{0}), hi));
    return b_.choice(std::move(items));
  }

  // Non-negative integers in [lo, hi], grouped by digit count.
  ExprId naturals(int64_t lo, int64_t hi) {
    std::vector<ExprId> items;
    int64_t low = 0, high = 9;
    for (int digits = 1; digits <= 16 && low <= hi; ++digits) {
      const int64_t a = std::max(lo, low), z = std::min(hi, high);
      if (a <= z) items.push_back(same_length(std::to_string(a), std::to_string(z)));
      low = high + 1;
      high = high * 10 + 9;
    }
    return b_.choice(std::move(items));
  }

  ExprId fraction(Fraction kind) {
    const ExprId dot = b_.literal(".");
    switch (kind) {
      case Fraction::kAny:
        return b_.optional(b_.sequence({dot, c_.digits(1, 16)}));
      case Fraction::kZero:
        return b_.optional(b_.sequence({dot, b_.repeat(b_.literal("0"), 1, 16)}));
      case Fraction::kNonZero:
        return b_.sequence({dot, b_.repeat(b_.literal("0"), 0, 15), b_.codepoints({{'1', '9'}}),
                            c_.digits(0, 15)});
    }
    return b_.nothing();
  }

 private:
  // Decimals of one length between x and y, digit by digit.
  ExprId same_length(const std::string& x, const std::string& y) {
    if (x == y) return b_.literal(x);
    if (x[0] == y[0])
      return b_.sequence({b_.literal(x.substr(0, 1)), same_length(x.substr(1), y.substr(1))});
    const size_t rest = x.size() - 1;
    const bool x_zeros = x.find_first_not_of('0', 1) == std::string::npos;
    const bool y_nines = y.find_first_not_of('9', 1) == std::string::npos;
    std::vector<ExprId> items;
    if (!x_zeros)
      items.push_back(b_.sequence(
          {b_.literal(x.substr(0, 1)), same_length(x.substr(1), std::string(rest, '9'))}));
    const char first = x_zeros ? x[0] : static_cast<char>(x[0] + 1);
    const char last = y_nines ? y[0] : static_cast<char>(y[0] - 1);
    if (first <= last)
      items.push_back(
          b_.sequence({b_.codepoints({{char32_t(first), char32_t(last)}}),
                       c_.digits(static_cast<uint32_t>(rest), static_cast<uint32_t>(rest))}));
    if (!y_nines)
      items.push_back(b_.sequence(
          {b_.literal(y.substr(0, 1)), same_length(std::string(rest, '0'), y.substr(1))}));
    return b_.choice(std::move(items));
  }

  SchemaCompiler& c_;
  GrammarBuilder& b_;
};

// A bound, exact: `floor` and `ceil` are the integers around it (equal for an integer),
// clipped to +-1e17, beyond every generated integer. A bound written as a JSON integer is
// read exactly (int64 or uint64); one written otherwise is a double, exact below 2^53 and,
// from 1e17 on, beyond the clipping whatever its rounding: between the two it may not be the
// number the schema wrote, and is refused.
struct Bound {
  int64_t floor, ceil;
  bool exclusive;
};

constexpr int64_t kClip = 100'000'000'000'000'000;  // 1e17

Bound bound_of(SchemaCompiler& c, const Json& value, const char* key, bool exclusive,
               const std::string& path) {
  if (value.is_number_unsigned()) {
    const int64_t v = static_cast<int64_t>(std::min<uint64_t>(value.get<uint64_t>(), kClip));
    return {v, v, exclusive};
  }
  if (value.is_number_integer()) {
    const int64_t v = std::clamp<int64_t>(value.get<int64_t>(), -kClip, kClip);
    return {v, v, exclusive};
  }
  const double v = value.get<double>();
  if (std::fabs(v) >= 9007199254740992.0 && std::fabs(v) < 1e17)
    c.fail(path, std::string("'") + key + "' " + value.dump() +
                     " is beyond 2^53 and not an integer literal: it may not be exact "
                     "(write it as an integer)");
  const auto clip = [](double d) { return static_cast<int64_t>(std::clamp(d, -1e17, 1e17)); };
  return {clip(std::floor(v)), clip(std::ceil(v)), exclusive};
}

// The tightest of the two keywords' bounds (for a lower bound, the larger; at a tie, the
// exclusive one). Tightness is decided on integers: the exact value when integral, else
// the side the bound excludes.
std::optional<Bound> read_bound(SchemaCompiler& c, const Json& s, const char* inclusive,
                                const char* exclusive, bool lower, const std::string& path) {
  std::optional<Bound> bound;
  for (const char* key : {inclusive, exclusive}) {
    const auto it = s.find(key);
    if (it == s.end()) continue;
    if (!it->is_number() || !std::isfinite(it->get<double>()))
      c.fail(path, std::string("'") + key +
                       "' must be a number (draft 4's boolean form is not supported)");
    const Bound b = bound_of(c, *it, key, key == exclusive, path);
    const auto at = [&](const Bound& x) { return lower ? x.floor : x.ceil; };
    const bool tighter = !bound || (lower ? at(b) > at(*bound) : at(b) < at(*bound)) ||
                         (at(b) == at(*bound) && (b.exclusive || b.floor != b.ceil));
    if (tighter) bound = b;
  }
  return bound;
}

std::vector<Piece> meet(const std::vector<Piece>& a, const std::vector<Piece>& b) {
  std::vector<Piece> out;
  for (const Piece& x : a) {
    for (const Piece& y : b) {
      const int64_t lo = std::max(x.lo, y.lo), hi = std::min(x.hi, y.hi);
      if (lo > hi) continue;
      if (x.fraction != Fraction::kAny && y.fraction != Fraction::kAny && x.fraction != y.fraction)
        continue;
      out.push_back({lo, hi, x.fraction == Fraction::kAny ? y.fraction : x.fraction});
    }
  }
  return out;
}

// M >= c (or > c when `strict`): c integral.
std::vector<Piece> at_least(int64_t c, bool strict) {
  if (!strict) return {{std::max<int64_t>(c, 0), kLargest, Fraction::kAny}};
  if (c < 0) return {{0, kLargest, Fraction::kAny}};
  return {{c + 1, kLargest, Fraction::kAny}, {c, c, Fraction::kNonZero}};
}

// M <= c (or < c when `strict`).
std::vector<Piece> at_most(int64_t c, bool strict) {
  if (c < 0 || (strict && c == 0)) return {};
  if (strict) return {{0, c - 1, Fraction::kAny}};
  return {{0, c - 1, Fraction::kAny}, {c, c, Fraction::kZero}};
}

}  // namespace

ExprId compile_number(SchemaCompiler& c, const Json& s, const std::string& path, bool integer) {
  GrammarBuilder& b = c.builder();
  const auto lower = read_bound(c, s, "minimum", "exclusiveMinimum", true, path);
  const auto upper = read_bound(c, s, "maximum", "exclusiveMaximum", false, path);
  const bool int32 = integer && s.contains("format") && s["format"] == "int32";
  const bool float32 = !integer && s.contains("format") && s["format"] == "float";
  // Bounds are integers of at most 16 digits, so a bounded number is within float's range.
  if (!lower && !upper && !int32)
    return integer ? c.integer() : float32 ? c.float_number() : c.number();
  Ranges ranges(c);
  if (integer) {
    int64_t lo = int32 ? INT32_MIN : -kLargest, hi = int32 ? INT32_MAX : kLargest;
    if (lower) lo = std::max(lo, lower->exclusive ? lower->floor + 1 : lower->ceil);
    if (upper) hi = std::min(hi, upper->exclusive ? upper->ceil - 1 : upper->floor);
    // Generated integers have at most 16 digits: a range beyond them is refused as such,
    // not as a schema nothing satisfies.
    if (lo > kLargest || hi < -kLargest) {
      c.fail(path, std::string("an integer's bounds beyond 16 digits (") +
                       (lo > kLargest ? "minimum" : "maximum") +
                       ") are not supported: generated integers have at most 16 digits");
    }
    return lo > hi ? b.nothing() : ranges.integers(lo, hi);
  }
  for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    const auto it = s.find(key);
    if (it != s.end() && std::trunc(it->get<double>()) != it->get<double>())
      c.fail(path, "a number's bounds must be integers (" + it->dump() + " is not)");
  }
  // Constraints on M for the non-negative side (v = M) and the negative side (v = -M).
  std::vector<Piece> positive{{0, kLargest, Fraction::kAny}}, negative = positive;
  if (lower) {
    const int64_t l = lower->floor;
    positive = meet(positive, at_least(l, lower->exclusive));
    negative = meet(negative, at_most(-l, lower->exclusive));
  }
  if (upper) {
    const int64_t u = upper->floor;
    positive = meet(positive, at_most(u, upper->exclusive));
    negative = meet(negative, at_least(-u, upper->exclusive));
  }
  std::vector<ExprId> items;
  for (const Piece& p : positive)
    items.push_back(b.sequence({ranges.naturals(p.lo, p.hi), ranges.fraction(p.fraction)}));
  for (const Piece& p : negative)
    items.push_back(
        b.sequence({b.literal("-"), ranges.naturals(p.lo, p.hi), ranges.fraction(p.fraction)}));
  return b.choice(std::move(items));
}

}  // namespace tandem::grammar::json_schema
