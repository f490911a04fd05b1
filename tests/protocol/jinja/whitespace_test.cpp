// The lexer's whitespace control: trim_blocks, lstrip_blocks, '-' and '+', raw, newlines.
// Every expected output below is what Python Jinja2 3.1 rendered for the same template and
// context, configured as transformers configures it (see jinja_test_support.h).
#include <gtest/gtest.h>

#include "tests/protocol/jinja/jinja_test_support.h"

namespace tandem::jinja::testing::TANDEM_UNITY_ID {
namespace {

// trim_blocks and lstrip_blocks: block and comment tags own their line; expression tags do not.
TEST(JinjaWhitespace, TrimBlocksAndLstripBlocksApplyToBlockAndCommentTags) {
  expect_renders({
      {"a\n{% if true %}\nb\n{% endif %}\nc", "", "a\nb\nc"},
      {"a\n    {% if true %}\n    b\n    {% endif %}\nc", "", "a\n    b\nc"},
      {"a  {% if true %}b{% endif %}  c", "", "a  b  c"},
      {"a\n  {{ 'b' }}\nc", "", "a\n  b\nc"},
      {"a\n  {# note #}\nb", "", "a\nb"},
      {"{% for i in [1, 2] %}\n  {{ i }}\n{% endfor %}\n", "", "  1\n  2\n"},
      {"{{ 'a' }}\n{{ 'b' }}", "", "a\nb"},
      {"  {% set x = 1 %}  {{ x }}", "", "  1"},
  });
}

// "-" strips all whitespace on its side; "+" keeps what lstrip_blocks or trim_blocks would take.
TEST(JinjaWhitespace, MinusStripsAndPlusKeepsWhitespace) {
  expect_renders({
      {"a\n  {%+ if true %}b{% endif %}", "", "a\n  b"},
      {"{% if true +%}\nb{% endif %}", "", "\nb"},
      {"a   {%- if true -%}   b   {%- endif -%}   c", "", "abc"},
      {"a\n\n  {{- 'b' -}}  \n\nc", "", "abc"},
      {"a {#- note -#} b", "", "ab"},
      {"{% for i in [1, 2] -%}\n  {{ i }}\n{%- endfor %}", "", "12"},
      {"{%- if true %}\n\n  x{% endif %}", "", "\n  x"},
  });
}

// raw blocks; line endings read as "\n"; one trailing newline dropped.
TEST(JinjaWhitespace, RawBlocksNewlinesAndTheTrailingNewline) {
  expect_renders({
      {"{% raw %}{{ not evaluated }}{% endraw %}", "", "{{ not evaluated }}"},
      {"x\n", "", "x"},
      {"x\n\n", "", "x\n"},
      {"a\r\nb\rc\n", "", "a\nb\nc"},
  });
}
}  // namespace
}  // namespace tandem::jinja::testing::TANDEM_UNITY_ID
