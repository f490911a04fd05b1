// Statements: if, for and loop.*, set and scoping, namespace, block set, filter, with, generation,
// macros. Every expected output below is what Python Jinja2 3.1 rendered for the same template and
// context, configured as transformers configures it (see jinja_test_support.h).
#include <gtest/gtest.h>

#include "tests/protocol/jinja/jinja_test_support.h"

namespace tandem::jinja::testing::TANDEM_UNITY_ID {
namespace {

// if / elif / else.
TEST(JinjaStatements, IfElifElse) {
  expect_renders({
      {"{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}", "{\"x\": 2}", "two"},
      {"{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}", "{\"x\": 5}", "many"},
      {"{% if not x %}empty{% endif %}", "{\"x\": []}", "empty"},
  });
}

// for: loop.*, the if filter, else, unpacking, strings, dicts, nesting, break and continue.
TEST(JinjaStatements, ForLoopVariablesFiltersElseAndUnpacking) {
  expect_renders({
      {"{% for m in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ "
       "loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
       "", "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;"},
      {"{% for m in ['a', 'b', 'c'] %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}", "",
       "[|b][a|c][b|]"},
      {"{% for m in ['a', 'b', 'c'] %}{{ loop.cycle('x', 'y') }}{% endfor %}", "", "xyx"},
      {"{% for m in [] %}x{% else %}nothing{% endfor %}", "", "nothing"},
      {"{% for m in [1, 2, 3, 4] if m is even %}{{ m }}{{ loop.index }}{{ loop.length }} {% endfor "
       "%}",
       "", "212 422 "},
      {"{% for m in [1, 2, 3, 4] if m > 9 %}{{ m }}{% else %}none passed{% endfor %}", "",
       "none passed"},
      {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", "{\"d\": {\"b\": 1, \"a\": 2}}",
       "b=1;a=2;"},
      {"{% for k in d %}{{ k }}{% endfor %}", "{\"d\": {\"b\": 1, \"a\": 2}}", "ba"},
      {"{% for (a, b) in [[1, 2], [3, 4]] %}{{ a + b }},{% endfor %}", "", "3,7,"},
      {"{% for c in 'héllo' %}{{ c }}.{% endfor %}", "", "h.é.l.l.o."},
      {"{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 3 %}{% break "
       "%}{% endif %}{{ i }}{% endfor %}",
       "", "02"},
      {"{% for i in range(2) %}{% for j in range(2) %}{{ i }}{{ j }}{{ loop.index }} {% endfor "
       "%}{% endfor %}",
       "", "001 012 101 112 "},
      {"{% for x in none %}{% endfor %}", "", "ERROR: 'NoneType' object is not iterable"},
      {"{% for x in undefined_thing %}x{% else %}empty{% endfor %}", "", "empty"},
  });
}

// set: scoping (a loop body gets a fresh scope each iteration), namespaces, block set, filter
// blocks, with, generation.
TEST(JinjaStatements, SetScopesNamespacesAndBlocks) {
  expect_renders({
      {"{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = i * 10 %}{{ x }} {% endfor %}{{ x }}",
       "", "110 120 1"},
      {"{% if true %}{% set y = 5 %}{% endif %}{{ y }}", "", "5"},
      {"{% set a, b = [1, 2] %}{{ b }}{{ a }}", "", "21"},
      {"{% set t = 1, 2 %}{{ t }}", "", "(1, 2)"},
      {"{% set ns = namespace(count=0, names=[]) %}{% for m in ['a', 'b'] %}{% set ns.count = "
       "ns.count + 1 %}{% set ns.names = ns.names + [m] %}{% endfor %}{{ ns.count }}{{ ns.names }}",
       "", "2['a', 'b']"},
      {"{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns['a'] }}{{ ns.c is defined "
       "}}",
       "", "121False"},
      {"{% set x %}block {{ 1 + 1 }}{% endset %}[{{ x }}]", "", "[block 2]"},
      {"{% set x | upper %}block{% endset %}{{ x }}", "", "BLOCK"},
      {"{% filter upper %}loud {{ 'text' }}{% endfilter %}", "", "LOUD TEXT"},
      {"{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a is defined }}", "", "3False"},
      {"{% generation %}kept {{ 1 }}{% endgeneration %}", "", "kept 1"},
  });
}

// macros: defaults, keywords, varargs/kwargs, recursion, late binding of the enclosing scope,
// argument errors.
TEST(JinjaStatements, MacrosTakeDefaultsKeywordsAndSeeTheirDefiningScope) {
  expect_renders({
      {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} "
       "{{ greet('B', '?') }} {{ greet(punct='.', name='C') }}",
       "", "Hi A! Hi B? Hi C."},
      {"{% macro m(a, b) %}[{{ a }}|{{ b }}|{{ b is defined }}]{% endmacro %}{{ m(1) }}", "",
       "[1||False]"},
      {"{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}", "",
       "(1, 2){'k': 3}"},
      {"{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% "
       "endmacro %}{{ fact(5) }}",
       "", "120"},
      {"{% set x = 1 %}{% macro show() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ show() }}", "",
       "2"},
      {"{% macro m() %}{% set inner = 1 %}{% endmacro %}{{ m() }}{{ inner is defined }}", "",
       "False"},
      {"{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}", "",
       "ERROR: macro 'm' takes not more than 1 argument(s)"},
      {"{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=2) }}", "",
       "ERROR: macro 'm' takes no keyword argument 'b'"},
      {"{% macro m(x) %}<{{ x }}>{% endmacro %}{{ m('a') ~ m('b') }}{{ m('c')|length }}", "",
       "<a><b>3"},
      {"{% print 1 + 2 %}", "", "3"},
  });
}
}  // namespace
}  // namespace tandem::jinja::testing::TANDEM_UNITY_ID
