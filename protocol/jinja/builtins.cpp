// The constant tables behind find_filter and find_test.
#include "protocol/jinja/builtins.h"

#include "protocol/jinja/builtin_tables.h"
#include "protocol/jinja/error.h"

namespace tandem::jinja {
namespace {

Value unsupported_filter(Interpreter&, const Value&, const CallArgs&) {
  unsupported("this filter");  // the interpreter names it: see filter_supported
}

const FilterTable& filters() {
  static const FilterTable table = [] {
    FilterTable t;
    add_text_filters(t);
    add_sequence_filters(t);
    for (std::string_view name :
         {"batch", "slice", "groupby", "center", "filesizeformat", "pprint", "random", "striptags",
          "truncate", "urlencode", "urlize", "wordwrap", "xmlattr"}) {
      t[name] = unsupported_filter;
    }
    return t;
  }();
  return table;
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  const auto it = filters().find(name);
  return it == filters().end() ? nullptr : it->second;
}

bool filter_supported(std::string_view name) {
  const FilterFn filter = find_filter(name);
  return filter != nullptr && filter != unsupported_filter;
}

bool filter_reads_an_end(std::string_view name) {
  return name == "length" || name == "count" || name == "first" || name == "last";
}

TestFn find_test(std::string_view name) {
  static const TestTable table = [] {
    TestTable t;
    add_tests(t);
    return t;
  }();
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace tandem::jinja
