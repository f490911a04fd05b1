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

struct Bound {
  double value;
  bool exclusive;
};

std::optional<Bound> read_bound(SchemaCompiler& c, const Json& s, const char* inclusive,
                                const char* exclusive, bool lower, const std::string& path) {
  std::optional<Bound> bound;
  for (const char* key : {inclusive, exclusive}) {
    const auto it = s.find(key);
    if (it == s.end()) continue;
    if (!it->is_number() || !std::isfinite(it->get<double>()))
      c.fail(path, std::string("'") + key +
                       "' must be a number (draft 4's boolean form is not supported)");
    const Bound b{it->get<double>(), key == exclusive};
    const bool tighter = !bound || (lower ? b.value > bound->value : b.value < bound->value) ||
                         (b.value == bound->value && b.exclusive);
    if (tighter) bound = b;
  }
  return bound;
}

int64_t clamp(double v) { return static_cast<int64_t>(std::clamp(v, -1e17, 1e17)); }

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
  if (!lower && !upper) return integer ? c.integer() : c.number();
  Ranges ranges(c);
  if (integer) {
    int64_t lo = -kLargest, hi = kLargest;
    if (lower)
      lo = std::max(lo, lower->exclusive ? clamp(std::floor(lower->value)) + 1
                                         : clamp(std::ceil(lower->value)));
    if (upper)
      hi = std::min(hi, upper->exclusive ? clamp(std::ceil(upper->value)) - 1
                                         : clamp(std::floor(upper->value)));
    return lo > hi ? b.nothing() : ranges.integers(lo, hi);
  }
  for (const auto& bound : {lower, upper})
    if (bound && std::trunc(bound->value) != bound->value)
      c.fail(path, "a number's bounds must be integers (" + Json(bound->value).dump() + " is not)");
  // Constraints on M for the non-negative side (v = M) and the negative side (v = -M).
  std::vector<Piece> positive{{0, kLargest, Fraction::kAny}}, negative = positive;
  if (lower) {
    const int64_t l = clamp(lower->value);
    positive = meet(positive, at_least(l, lower->exclusive));
    negative = meet(negative, at_most(-l, lower->exclusive));
  }
  if (upper) {
    const int64_t u = clamp(upper->value);
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
