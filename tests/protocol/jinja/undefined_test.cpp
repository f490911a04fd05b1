// Undefined values and errors, as Jinja2's default Undefined and sandbox behave.
// Every expected output below is what Python Jinja2 3.1 rendered for the same template and
// context, configured as transformers configures it (see jinja_test_support.h).
#include <gtest/gtest.h>

#include "tests/protocol/jinja/jinja_test_support.h"

namespace tandem::jinja::testing::TANDEM_UNITY_ID {
namespace {

// Undefined: prints as "", iterates as nothing, and fails where Jinja2 fails, with its message.
TEST(JinjaUndefined, UndefinedBehavesLikeJinja2DefaultUndefined) {
  expect_renders({
      {"[{{ missing }}] [{{ missing|trim }}] [{{ missing|length }}] [{{ missing|default('d') }}] "
       "[{{ missing ~ 'x' }}] [{% for x in missing %}x{% endfor %}] [{{ missing is defined }}] [{{ "
       "missing == missing }}] [{{ 'a' in missing }}] [{{ missing|list }}] [{{ missing|string }}] "
       "[{{ missing|upper }}]",
       "", "[] [] [0] [d] [x] [] [False] [True] [False] [[]] [] []"},
      {"[{{ m.a }}] [{{ m['a'] }}] [{{ m.a is defined }}] [{{ m.a|default('d') }}] [{{ m.get('a') "
       "}}] [{{ m.a is none }}] [{% if m.a %}t{% else %}f{% endif %}]",
       "{\"m\": {}}", "[] [] [False] [d] [None] [False] [f]"},
      {"{{ m.a.b }}", "{\"m\": {}}", "ERROR: 'dict object' has no attribute 'a'"},
      {"{{ m.a.b is defined }}", "{\"m\": {}}", "ERROR: 'dict object' has no attribute 'a'"},
      {"{{ missing.b }}", "", "ERROR: 'missing' is undefined"},
      {"{{ missing['b'] }}", "", "ERROR: 'missing' is undefined"},
      {"{{ missing + 1 }}", "", "ERROR: 'missing' is undefined"},
      {"{{ missing < 1 }}", "", "ERROR: 'missing' is undefined"},
      {"{{ missing() }}", "", "ERROR: 'missing' is undefined"},
      {"{{ l[5].x }}", "{\"l\": [1]}", "ERROR: list object has no element 5"},
      {"{{ n.x }}|{{ n['x'] }}|{{ n[0] }}", "{\"n\": null}", "||"},
      {"{{ 'abc'.nope }}|", "", "|"},
      {"{{ 'abc'.nope() }}", "", "ERROR: 'str object' has no attribute 'nope'"},
      {"{{ (1 if false).x }}", "",
       "ERROR: the inline if-expression on line 1 evaluated to false and no else section was "
       "defined."},
  });
}

// raise_exception(message).
TEST(JinjaUndefined, RaiseExceptionStopsRenderingWithTheMessage) {
  expect_renders({
      {"{{ raise_exception('Only user and assistant roles are supported!') }}", "",
       "ERROR: Only user and assistant roles are supported!"},
      {"before{% if true %}{{ raise_exception('stop ' ~ 1) }}{% endif %}", "", "ERROR: stop 1"},
  });
}

// unknown filters and tests: compile errors, except inside an if or a conditional expression.
TEST(JinjaUndefined, UnknownFiltersFailAtCompileTimeOutsideConditions) {
  expect_renders({
      {"{% if false %}{{ x|from_json }}{% endif %}ok", "", "ok"},
      {"{% if true %}{{ x|from_json }}{% endif %}ok", "",
       "ERROR: No filter named 'from_json' found."},
      {"{{ 'a' if x|from_json else 'b' }}", "", "ERROR: No filter named 'from_json' found."},
      {"{{ x is nonexistent_test }}", "", "ERROR: No test named 'nonexistent_test'."},
  });
}

// other runtime errors.
TEST(JinjaUndefined, RuntimeErrors) {
  expect_renders({
      {"{% set x = 5 %}{% set x.attr = 1 %}", "",
       "ERROR: cannot assign attribute on non-namespace object"},
      {"{% set a, b = [1, 2, 3] %}", "", "ERROR: too many values to unpack (expected 2)"},
      {"{{ [1, 2]|select|length }}", "", "ERROR: object of type 'generator' has no len()"},
      {"{{ [1][0:1:0] }}", "", "ERROR: slice step cannot be zero"},
      {"{{ range(200000)|length }}", "",
       "ERROR: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000)."},
  });
}
}  // namespace
}  // namespace tandem::jinja::testing::TANDEM_UNITY_ID
