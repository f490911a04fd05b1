#include "tests/protocol/jinja/jinja_test_support.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "protocol/jinja/json.h"

namespace tandem::jinja::testing {
namespace {

DateTime pinned_clock() { return DateTime{2024, 7, 26, 12, 0, 0}; }

Variables variables_from(std::string_view context_json) {
  Variables variables;
  if (context_json.empty()) return variables;
  const auto context = nlohmann::ordered_json::parse(context_json);
  for (auto it = context.begin(); it != context.end(); ++it) {
    variables.emplace_back(it.key(), from_json(it.value(), true));
  }
  return variables;
}

std::variant<std::vector<Segment>, Error> compile_and_render(std::string_view source,
                                                             Variables variables) {
  auto compiled = Template::compile(source);
  if (auto* error = std::get_if<Error>(&compiled)) return *error;
  return std::get<Template>(compiled).render(std::move(variables), pinned_clock);
}

}  // namespace

std::string render(std::string_view source, std::string_view context_json) {
  const auto result = compile_and_render(source, variables_from(context_json));
  if (const auto* error = std::get_if<Error>(&result)) return "ERROR: " + error->message();
  std::string out;
  for (const Segment& segment : std::get<std::vector<Segment>>(result)) out += segment.text;
  return out;
}

std::vector<Segment> render_segments(std::string_view source, Variables variables) {
  auto result = compile_and_render(source, std::move(variables));
  if (const auto* error = std::get_if<Error>(&result)) {
    ADD_FAILURE() << "render failed: " << error->what();
    return {};
  }
  return std::get<std::vector<Segment>>(std::move(result));
}

Error render_error(std::string_view source, std::string_view context_json) {
  const auto result = compile_and_render(source, variables_from(context_json));
  if (const auto* error = std::get_if<Error>(&result)) return *error;
  ADD_FAILURE() << "rendered without an error: " << source;
  return Error(ErrorKind::kRender, "");
}

void expect_renders(const std::vector<RenderCase>& cases) {
  for (const RenderCase& c : cases) {
    EXPECT_EQ(render(c.source, c.context), c.expected)
        << "template: " << c.source << "\ncontext: " << c.context;
  }
}

}  // namespace tandem::jinja::testing
