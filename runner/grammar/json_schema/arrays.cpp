// Arrays: prefixItems position by position, then `items` for the rest, between minItems
// and maxItems elements in all.

#include <algorithm>

#include "runner/grammar/json_schema/compiler.h"

namespace tandem::grammar::json_schema {

ExprId compile_array(SchemaCompiler& c, const Json& s, const std::string& path) {
  GrammarBuilder& b = c.builder();
  constexpr uint32_t kUnbounded = GrammarBuilder::kUnbounded;
  std::vector<ExprId> prefix;
  if (const auto it = s.find("prefixItems"); it != s.end()) {
    if (!it->is_array()) c.fail(path, "'prefixItems' must be an array of schemas");
    for (size_t i = 0; i < it->size(); ++i)
      prefix.push_back(c.schema((*it)[i], path + "/prefixItems/" + std::to_string(i)));
  }
  const auto items = s.find("items");
  if (items != s.end() && items->is_array())
    c.fail(path, "'items' as an array (draft 4 tuples) is not supported; use 'prefixItems'");
  const bool more = items == s.end() || *items != Json(false);
  const ExprId item = items == s.end() ? c.any_value() : c.schema(*items, path + "/items");

  const uint32_t min = count_keyword(c, s, "minItems", path, 0);
  uint32_t max = count_keyword(c, s, "maxItems", path, kUnbounded);
  const auto k = static_cast<uint32_t>(prefix.size());
  if (!more) max = std::min(max, k);
  if (min > max) return b.nothing();

  const ExprId ws = c.ws();
  const ExprId comma = b.sequence({b.literal(","), ws});
  const ExprId item_ws = b.sequence({item, ws});
  const ExprId comma_item = b.sequence({comma, item_ws});
  // The elements after the prefix: between rest_min and rest_max of them.
  ExprId rest = b.empty();
  if (more && max > k) {
    const uint32_t rest_min = min > k ? min - k : 0;
    const uint32_t rest_max = max == kUnbounded ? kUnbounded : max - k;
    if (k > 0) {
      rest = b.repeat(comma_item, rest_min, rest_max);
    } else {
      const ExprId run =
          b.sequence({item_ws, b.repeat(comma_item, rest_min > 0 ? rest_min - 1 : 0,
                                        rest_max == kUnbounded ? kUnbounded : rest_max - 1)});
      rest = rest_min > 0 ? run : b.optional(run);
    }
  }
  for (uint32_t i = std::min(k, max); i-- > 0;) {
    const ExprId element = b.sequence({i == 0 ? b.empty() : comma, prefix[i], ws, rest});
    rest = i < min ? element : b.optional(element);
  }
  return b.sequence({b.literal("["), ws, rest, b.literal("]")});
}

}  // namespace tandem::grammar::json_schema
