// Errors: a template that does not compile names the line and column of the problem; a
// render that fails names the line; raise_exception carries exactly its message; a construct
// tandem lacks is refused by name, never rendered wrongly.
#include <gtest/gtest.h>

#include <string>

#include "tests/protocol/jinja/jinja_test_support.h"

namespace tandem::jinja::testing::TANDEM_UNITY_ID {
namespace {

void expect_syntax_error(const std::string& source, int line, int column,
                         const std::string& message_part) {
  const Error error = render_error(source);
  EXPECT_EQ(error.kind(), ErrorKind::kSyntax) << source;
  EXPECT_EQ(error.line(), line) << source;
  EXPECT_EQ(error.column(), column) << source;
  EXPECT_NE(error.message().find(message_part), std::string::npos)
      << source << "\n  message: " << error.message();
}

TEST(JinjaErrors, SyntaxErrorsNameLineAndColumn) {
  expect_syntax_error("a\n{% foo %}", 2, 4, "Encountered unknown tag 'foo'.");
  expect_syntax_error("a\n{% if x %}\nb", 3, 2, "the 'if' block needs 'elif' or 'else' or 'endif'");
  expect_syntax_error("{{ 'abc }}", 1, 4, "unterminated string");
  expect_syntax_error("x\n  {{ 1 + }}", 2, 10, "unexpected 'end of print statement'");
  expect_syntax_error("{{ a ? b }}", 1, 6, "unexpected character '?'");
  expect_syntax_error("{{ x | nofilter }}", 1, 8, "No filter named 'nofilter'.");
  expect_syntax_error("{% break %}", 1, 4, "'break' outside loop");
  expect_syntax_error("{% macro m(a=1, b) %}{% endmacro %}", 1, 18,
                      "non-default argument follows default argument");
  expect_syntax_error("{{ x }", 1, 6, "unexpected '}'");
  expect_syntax_error("{% if x %}{% endfor %}", 1, 14, "Encountered unknown tag 'endfor'.");
}

TEST(JinjaErrors, ConstructsTandemLacksAreRefusedByName) {
  expect_syntax_error("{% include 'x' %}", 1, 4, "unsupported: the 'include' tag");
  expect_syntax_error("{% call m() %}{% endcall %}", 1, 4, "unsupported: the 'call' tag");
  expect_syntax_error("{% for x in y recursive %}{% endfor %}", 1, 15,
                      "unsupported: recursive loops");
  // A filter Jinja2 has and tandem lacks fails the template at load, even in a branch
  // that may never run: a server learns it at startup, not from a user's request.
  expect_syntax_error("{{ [1, 2]|batch(1)|list }}", 1, 11,
                      "unsupported by tandem's Jinja interpreter: the 'batch' filter");
  expect_syntax_error("{% if false %}{{ x|wordwrap }}{% endif %}", 1, 20,
                      "unsupported by tandem's Jinja interpreter: the 'wordwrap' filter");
  EXPECT_EQ(render("{{ 'x'.zfill(3) }}"),
            "ERROR: unsupported by tandem's Jinja interpreter: the str method 'zfill'");
  EXPECT_EQ(render("{{ '{:>4}'.format(1) }}"),
            "ERROR: unsupported by tandem's Jinja interpreter: str.format specs ('{:>4}')");
  EXPECT_EQ(render("{{ '%x'|format(1) }}"),
            "ERROR: unsupported by tandem's Jinja interpreter: format spec %x");
  EXPECT_EQ(render("{{ strftime_now('%U') }}"),
            "ERROR: unsupported by tandem's Jinja interpreter: the strftime directive %U");
  EXPECT_EQ(render("{{ 2 ** 70 }}"),
            "ERROR: unsupported by tandem's Jinja interpreter: integers beyond 64 bits");
  EXPECT_EQ(render("{{ range(3) }}"),
            "ERROR: unsupported by tandem's Jinja interpreter: printing a range object");
}

TEST(JinjaErrors, RenderErrorsNameTheLine) {
  const Error error =
      render_error("line1\n{% if true %}\n  {{ m.a.b }}\n{% endif %}", R"({"m": {}})");
  EXPECT_EQ(error.kind(), ErrorKind::kRender);
  EXPECT_EQ(error.message(), "'dict object' has no attribute 'a'");
  EXPECT_EQ(error.line(), 3);
  EXPECT_EQ(std::string(error.what()), "line 3, column 9: 'dict object' has no attribute 'a'");
}

TEST(JinjaErrors, RaiseExceptionCarriesExactlyItsMessage) {
  const Error error =
      render_error("ok\n{{ raise_exception('Conversation roles must alternate') }}");
  EXPECT_EQ(error.kind(), ErrorKind::kRaised);
  EXPECT_EQ(error.message(), "Conversation roles must alternate");
  EXPECT_EQ(std::string(error.what()), "Conversation roles must alternate");
}

TEST(JinjaErrors, RunawayTemplatesStopWithAnError) {
  EXPECT_EQ(render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
            "ERROR: maximum recursion depth exceeded in macro calls");
  EXPECT_EQ(render("{{ 'x' * 100000000 }}"),
            "ERROR: unsupported by tandem's Jinja interpreter: strings over 16 MiB");
  EXPECT_EQ(render("{% set ns = namespace(s='x' * 100000) %}{% for i in range(10) %}"
                   "{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
            "ERROR: unsupported by tandem's Jinja interpreter: strings over 16 MiB");
  EXPECT_EQ(render("{{ ('a,' * 1100000).split(',')|length }}"),
            "ERROR: unsupported by tandem's Jinja interpreter: lists over 1048576 items");
  EXPECT_EQ(render("{% for i in range(100000) %}{% for j in range(200) %}{% endfor %}{% endfor %}"),
            "ERROR: unsupported by tandem's Jinja interpreter: templates running over 16000000 "
            "loop iterations and macro calls");
  const std::string deep = std::string(500, '(') + "1" + std::string(500, ')');
  EXPECT_EQ(render_error("{{ " + deep + " }}").kind(), ErrorKind::kSyntax);
}

TEST(JinjaErrors, TheSourceMustBeUtf8) {
  const Error error = render_error("{{ 'a' }}\xff");
  EXPECT_EQ(error.kind(), ErrorKind::kSyntax);
  EXPECT_EQ(error.message(), "the template source is not valid UTF-8");
}

}  // namespace
}  // namespace tandem::jinja::testing::TANDEM_UNITY_ID
