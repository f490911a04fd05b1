#include "runner/grammar/builder.h"

#include <algorithm>

namespace tandem::grammar {

namespace {

constexpr char32_t kMaxCodepoint = 0x10FFFF;
constexpr char32_t kSurrogateFirst = 0xD800;
constexpr char32_t kSurrogateLast = 0xDFFF;

}  // namespace

RuleId GrammarBuilder::rule(std::string_view name) {
  if (auto found = find_rule(name)) return *found;
  const auto id = static_cast<RuleId>(rules_.size());
  rules_.push_back(-1);
  rule_names_.emplace_back(name);
  rule_ids_.emplace(std::string(name), id);
  return id;
}

std::optional<RuleId> GrammarBuilder::find_rule(std::string_view name) const {
  const auto it = rule_ids_.find(std::string(name));
  if (it == rule_ids_.end()) return std::nullopt;
  return it->second;
}

void GrammarBuilder::define(RuleId rule, ExprId body) {
  rules_.at(static_cast<size_t>(rule)) = body;
}

bool GrammarBuilder::defined(RuleId rule) const {
  return rules_.at(static_cast<size_t>(rule)) >= 0;
}

const std::string& GrammarBuilder::rule_name(RuleId rule) const {
  return rule_names_.at(static_cast<size_t>(rule));
}

ExprId GrammarBuilder::body(RuleId rule) const { return rules_.at(static_cast<size_t>(rule)); }

ExprId GrammarBuilder::add(Expr expr) {
  exprs_.push_back(std::move(expr));
  return static_cast<ExprId>(exprs_.size() - 1);
}

ExprId GrammarBuilder::empty() { return add({.kind = ExprKind::kEmpty}); }

ExprId GrammarBuilder::nothing() { return add({.kind = ExprKind::kNothing}); }

ExprId GrammarBuilder::literal(std::string_view bytes) {
  if (bytes.empty()) return empty();
  return add({.kind = ExprKind::kLiteral, .text = std::string(bytes)});
}

ExprId GrammarBuilder::byte_range(uint8_t lo, uint8_t hi) {
  if (lo > hi) return nothing();
  return add({.kind = ExprKind::kBytes, .lo = lo, .hi = hi});
}

ExprId GrammarBuilder::codepoints(std::vector<CodepointRange> ranges) {
  ranges = normalize(std::move(ranges));
  if (ranges.empty()) return nothing();
  return add({.kind = ExprKind::kCodepoints, .ranges = std::move(ranges)});
}

ExprId GrammarBuilder::any_codepoint() { return codepoints({{0, kMaxCodepoint}}); }

ExprId GrammarBuilder::sequence(std::vector<ExprId> items) {
  if (items.empty()) return empty();
  if (items.size() == 1) return items[0];
  return add({.kind = ExprKind::kSequence, .items = std::move(items)});
}

ExprId GrammarBuilder::choice(std::vector<ExprId> items) {
  if (items.empty()) return nothing();
  if (items.size() == 1) return items[0];
  return add({.kind = ExprKind::kChoice, .items = std::move(items)});
}

ExprId GrammarBuilder::repeat(ExprId item, uint32_t min, uint32_t max) {
  if (min > max) return nothing();
  if (max == 0) return empty();
  if (min == 1 && max == 1) return item;
  return add({.kind = ExprKind::kRepeat, .min = min, .max = max, .items = {item}});
}

ExprId GrammarBuilder::ref(RuleId rule) { return add({.kind = ExprKind::kRule, .rule = rule}); }

std::vector<CodepointRange> GrammarBuilder::normalize(std::vector<CodepointRange> ranges) {
  std::vector<CodepointRange> split;
  for (CodepointRange r : ranges) {
    r.last = std::min(r.last, kMaxCodepoint);
    if (r.first > r.last) continue;
    // Surrogates are not scalar values: UTF-8 cannot encode them.
    if (r.first < kSurrogateFirst && r.last >= kSurrogateFirst)
      split.push_back({r.first, kSurrogateFirst - 1});
    if (r.last > kSurrogateLast && r.first <= kSurrogateLast)
      split.push_back({kSurrogateLast + 1, r.last});
    if (r.last < kSurrogateFirst || r.first > kSurrogateLast) split.push_back(r);
  }
  std::sort(split.begin(), split.end(),
            [](CodepointRange a, CodepointRange b) { return a.first < b.first; });
  std::vector<CodepointRange> merged;
  for (CodepointRange r : split) {
    if (!merged.empty() && r.first <= merged.back().last + 1)
      merged.back().last = std::max(merged.back().last, r.last);
    else
      merged.push_back(r);
  }
  return merged;
}

std::vector<CodepointRange> GrammarBuilder::complement(const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> out;
  char32_t next = 0;
  for (CodepointRange r : ranges) {
    if (r.first > next) out.push_back({next, r.first - 1});
    next = r.last + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return normalize(std::move(out));
}

}  // namespace tandem::grammar
