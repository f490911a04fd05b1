// Internal to protocol/jinja: the files that fill the constant tables of builtins.h.
#pragma once

#include <string_view>
#include <unordered_map>

#include "protocol/jinja/builtins.h"

namespace tandem::jinja {

using FilterTable = std::unordered_map<std::string_view, FilterFn>;
using TestTable = std::unordered_map<std::string_view, TestFn>;

void add_text_filters(FilterTable& table);      // filters_text.cpp
void add_sequence_filters(FilterTable& table);  // filters_sequence.cpp
void add_tests(TestTable& table);               // is_tests.cpp

// Optional string argument: nullopt for none or not given, else its str().
std::optional<std::string> optional_string(const BoundArgs& args, size_t i);

}  // namespace tandem::jinja
