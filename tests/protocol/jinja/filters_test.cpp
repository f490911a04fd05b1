// Filters and the Python methods of strings, dicts and lists.
// Every expected output below is what Python Jinja2 3.1 rendered for the same template and
// context, configured as transformers configures it (see jinja_test_support.h).
#include <gtest/gtest.h>

#include "tests/protocol/jinja/jinja_test_support.h"

namespace tandem::jinja::testing::TANDEM_UNITY_ID {
namespace {

// filters on strings and numbers (case mapping follows Python: full Unicode, final sigma).
TEST(JinjaFilters, StringFilters) {
  expect_renders({
      {"[{{ '  a b \\n'|trim }}] [{{ 'xxaxx'|trim('x') }}] {{ 'MiXed'|upper }} {{ 'MiXed'|lower }} "
       "{{ 'hello world-foo(bar'|title }} {{ 'hELLO wORLD'|capitalize }}",
       "", "[a b] [a] MIXED mixed Hello World-Foo(Bar Hello world"},
      {"{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'Ünïcödé'|upper }} {{ "
       "'ÀÉÎ'|lower }} {{ 'straße'|upper }}",
       "", "bbb bba ÜNÏCÖDÉ àéî STRASSE"},
      {"{{ 'x\\ny\\n\\nz'|indent(2) }}|{{ 'x\\ny'|indent(2, true) }}|{{ 'x\\n\\ny'|indent(2, "
       "blank=true) }}|{{ 'x\\ny'|indent('> ') }}",
       "", "x\n  y\n\n  z|  x\n  y|x\n  \n  y|x\n> y"},
      {"{{ 'one two  three'|wordcount }} {{ 5|string }}{{ none|string }} {{ [1]|string }} {{ 'a<b "
       "& \"c\" \\'d\\''|escape }} {{ 'x'|safe }}",
       "", "3 5None [1] a&lt;b &amp; &#34;c&#34; &#39;d&#39; x"},
      {"{{ '%s=%d'|format('a', 3) }} {{ '42'|int }} {{ '1.9'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} "
       "{{ 3.9|int }} {{ '0x1A'|int(base=16) }} {{ '2.5'|float }} {{ 'x'|float }} {{ 3|float }}",
       "", "a=3 42 1 0 7 3 26 2.5 0.0 3.0"},
      {"{{ -3|abs }} {{ (-3)|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ "
       "2.1|round(0, 'ceil') }} {{ 2.9|round(method='floor') }} {{ 7|round }}",
       "", "3 3 2.0 4.0 2.67 3.0 2.0 7"},
      {"{{ 'Tiếng Việt ĐẶC'|lower }} {{ 'ａｂｃ'|upper }} {{ 'ΟΔΥΣΣΕΥΣ ΣΑΣ.'|lower }} {{ "
       "'ǆemal'|capitalize }} {{ 'ǅx'.title() }} {{ 'ǅ'.islower() }} {{ 'ﬁsh'.upper() }} {{ "
       "'ΑΣ'|title }}",
       "", "tiếng việt đặc ＡＢＣ οδυσσευς σας. ǅemal ǅx False FISH Ασ"},
      {"{{ x|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }} {{ 0|d('zero', "
       "boolean=true) }} {{ 'v'|default('d') }}",
       "", "d None d zero v"},
  });
}

// tojson: transformers' json.dumps(x, ensure_ascii=False, indent, separators, sort_keys).
TEST(JinjaFilters, TojsonIsJsonDumpsWithEnsureAsciiFalse) {
  expect_renders({
      {"{{ [1, 'a', none, true, 1.5]|tojson }} {{ {'b': {'c': [1, 2]}, 'a': "
       "'é\\u2028\\x7f'}|tojson }}",
       "",
       "[1, \"a\", null, true, 1.5] {\"b\": {\"c\": [1, 2]}, \"a\": \"é\u2028\x7f"
       "\"}"},
      {"{{ {'b': 1, 'a': [1, {}, []]}|tojson(indent=2) }}", "",
       "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    {},\n    []\n  ]\n}"},
      {"{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }} {{ [1, 2]|tojson(separators=(',', ':')) }} "
       "{{ 'é🦙'|tojson(ensure_ascii=true) }} {{ 'q\"\\\\\\n\\t\\x01'|tojson }}",
       "", "{\"a\": 2, \"b\": 1} [1,2] \"\\u00e9\\ud83e\\udd99\" \"q\\\"\\\\\\n\\t\\u0001\""},
      {"{{ {1: 'a', none: 'b', true: 'c', 2.5: 'd'}|tojson }} {{ 1e100|tojson }} {{ 3.0|tojson }}",
       "", "{\"1\": \"c\", \"null\": \"b\", \"2.5\": \"d\"} 1e+100 3.0"},
      {"{{ x|tojson }}", "", "ERROR: Object of type Undefined is not JSON serializable"},
  });
}

// filters on sequences: generators (select, map, ...) are single-pass and always true.
TEST(JinjaFilters, SequenceFilters) {
  expect_renders({
      {"{{ [1, 2, 3]|length }} {{ 'héllo'|length }} {{ {'a': 1}|count }} {{ x|length }} {{ [3, "
       "1]|first }} {{ [3, 1]|last }} {{ 'abc'|first }} {{ []|first }}|",
       "", "3 5 1 0 3 1 a |"},
      {"{{ 'ab'|list }} {{ {'a': 1, 'b': 2}|list }} {{ x|list }} {{ (1, 2)|list }}", "",
       "['a', 'b'] ['a', 'b'] [] [1, 2]"},
      {"{{ ['a', 'b']|join(', ') }} {{ [1, none, 'x']|join }} {{ users|join(', ', "
       "attribute='name') }}",
       "{\"users\": [{\"name\": \"ann\"}, {\"name\": \"bob\"}]}", "a, b 1Nonex ann, bob"},
      {"{% for k, v in d|items %}{{ k }}{{ v }}{% endfor %} {% for k, v in d|dictsort %}{{ k }}{{ "
       "v }}{% endfor %} {% for k, v in d|dictsort(by='value', reverse=true) %}{{ k }}{% endfor %}",
       "{\"d\": {\"b\": 1, \"A\": 3, \"c\": 2}}", "b1A3c2 A3b1c2 Acb"},
      {"{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', "
       "'c']|sort(case_sensitive=true) }} {{ [3, 1, 2]|sort(reverse=true) }} {{ "
       "users|sort(attribute='age')|map(attribute='name')|list }}",
       "{\"users\": [{\"name\": \"ann\", \"age\": 40}, {\"name\": \"bob\", \"age\": 30}]}",
       "[1, 2, 3] ['A', 'b', 'c'] ['A', 'b', 'c'] [3, 2, 1] ['bob', 'ann']"},
      {"{{ [1, 2, 3]|reverse|list }} {{ 'abc'|reverse }} {{ ['a', 'A', 'b', 'a']|unique|list }} {{ "
       "['a', 'A']|unique(case_sensitive=true)|list }}",
       "", "[3, 2, 1] cba ['a', 'b'] ['a', 'A']"},
      {"{{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ ['b', 'A']|min }} {{ users|max(attribute='age') "
       "}} {{ []|min }}|{{ [1, 2, 3]|sum }} {{ users|sum(attribute='age') }} {{ [[1], "
       "[2]]|sum(start=[]) }}",
       "{\"users\": [{\"name\": \"ann\", \"age\": 40}, {\"name\": \"bob\", \"age\": 30}]}",
       "1 3 A {'name': 'ann', 'age': 40} |6 70 [1, 2]"},
      {"{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3, 4]|reject('odd')|list }} {{ [0, 1, '', "
       "'a']|select|list }} {{ [1, 5, 9]|select('gt', 4)|list }}",
       "", "[1, 3] [2, 4] [1, 'a'] [5, 9]"},
      {"{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }} {{ "
       "msgs|rejectattr('role', 'eq', 'user')|list|length }} {{ msgs|selectattr('tool')|list }}",
       "{\"msgs\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"assistant\", "
       "\"content\": \"b\"}, {\"role\": \"user\", \"content\": \"c\"}]}",
       "['a', 'c'] 1 []"},
      {"{{ ['a', 'b']|map('upper')|list }} {{ msgs|map(attribute='x', default='-')|list }} {{ "
       "[1.5, 2.5]|map('round')|list }} {{ msgs|map(attribute='role')|join('/') }}",
       "{\"msgs\": [{\"role\": \"user\"}, {\"role\": \"tool\", \"x\": 1}]}",
       "['A', 'B'] ['-', 1] [2.0, 2.0] user/tool"},
      {"{{ m|attr('role') }} {{ {'a': {'b': [5, 6]}}|map(attribute='a')|list }} {{ [{'a': {'b': "
       "[5, 6]}}]|map(attribute='a.b.1')|list }}",
       "{\"m\": {\"role\": \"user\"}}", " [Undefined] [6]"},
      {"{% set g = [1, 2]|select %}{{ g|list }}{{ g|list }} {% if [0]|select %}truthy{% endif %}",
       "", "[1, 2][] truthy"},
  });
}

// Python str methods.
TEST(JinjaFilters, StringMethods) {
  expect_renders({
      {"[{{ '  a  '.strip() }}][{{ 'xxax'.lstrip('x') }}][{{ 'axx'.rstrip('x') }}][{{ '\\n  "
       "a'.lstrip('\\n') }}][{{ 'a b'.strip('ab') }}]",
       "", "[a][ax][a][  a][ ]"},
      {"{{ 'a b  c'.split() }} {{ ' a,b,,c '.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ "
       "'a,b,c'.rsplit(',', 1) }} {{ '  a b  c  '.split(none, 1) }} {{ '  a b  c  '.rsplit(none, "
       "1) }} {{ 'a\\nb\\r\\nc'.splitlines() }}",
       "",
       "['a', 'b', 'c'] [' a', 'b', '', 'c '] ['a', 'b,c'] ['a,b', 'c'] ['a', 'b  c  '] ['  a b', "
       "'c'] ['a', 'b', 'c']"},
      {"{{ 'abc'.startswith('a') }} {{ 'abc'.startswith(('x', 'b')) }} {{ 'abc'.endswith('bc') }} "
       "{{ 'abc'.startswith('b', 1) }} {{ 'a-b-c'.replace('-', '+') }} {{ 'a-b-c'.replace('-', "
       "'+', 1) }} {{ 'ab'.replace('', '.') }}",
       "", "True False True True a+b+c a+b-c .a.b."},
      {"{{ 'hello World'.upper() }} {{ 'HeLLo'.lower() }} {{ 'hello wORLD 1st'.title() }} {{ "
       "'hELLO'.capitalize() }} {{ 'HeLLo'.swapcase() }}",
       "", "HELLO WORLD hello Hello World 1St Hello hEllO"},
      {"{{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ "
       "'héllo'.find('l') }} {{ 'hello'.index('e') }} {{ 'banana'.count('a') }} {{ [1, 1, "
       "2].count(1) }} {{ [5, 6].index(6) }}",
       "", "2 3 -1 2 1 3 2 1"},
      {"{{ ', '.join(['a', 'b']) }} {{ '{} and {}'.format('x', 'y') }} {{ '{0}{1}{0}'.format('a', "
       "'b') }} {{ '{name}!'.format(name='n') }} {{ '{!r}'.format('q') }} {{ '{{}}'.format() }}",
       "", "a, b x and y aba n! 'q' {}"},
      {"{{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ 'a1'.isalnum() }} {{ ' \\t'.isspace() }} {{ "
       "'abc'.islower() }} {{ 'ABC'.isupper() }} {{ 'prefix-x'.removeprefix('prefix-') }} {{ "
       "'x.txt'.removesuffix('.txt') }}",
       "", "True True True True True True x x"},
  });
}

// dict and list methods; the immutable sandbox refuses the ones that change a value.
TEST(JinjaFilters, DictAndListMethodsAndTheImmutableSandbox) {
  expect_renders({
      {"{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 0) }} {{ d.keys()|list }} {{ "
       "d.values()|list }} {{ d.items()|list }} {{ d.items()|length }}",
       "{\"d\": {\"a\": 1, \"b\": 2}}", "1 None 0 ['a', 'b'] [1, 2] [('a', 1), ('b', 2)] 2"},
      {"{{ l.append(1) }}", "{\"l\": []}",
       "ERROR: access to attribute 'append' of 'list' object is unsafe."},
      {"{{ d.pop('a') }}", "{\"d\": {\"a\": 1}}",
       "ERROR: access to attribute 'pop' of 'dict' object is unsafe."},
  });
}
}  // namespace
}  // namespace tandem::jinja::testing::TANDEM_UNITY_ID
