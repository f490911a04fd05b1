// Helpers for the interpreter's tests: render a template with a JSON context, compare with
// what Python Jinja2 (configured as transformers does) rendered for the same case.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "protocol/jinja/template.h"

namespace tandem::jinja::testing {

// A case whose expected output was rendered by Python Jinja2 3.1 with transformers'
// settings (trim_blocks, lstrip_blocks, loopcontrols, ImmutableSandboxedEnvironment,
// tojson = json.dumps(ensure_ascii=False), strftime_now pinned to 2024-07-26 12:00:00).
// "ERROR: message" where Jinja2 raised.
struct RenderCase {
  const char* source;
  const char* context;  // a JSON object of variables ("" for none); strings are from input
  const char* expected;
};

// The output, or "ERROR: " + the error's message (without its position).
std::string render(std::string_view source, std::string_view context_json = "");
// The segments of a render that must succeed.
std::vector<Segment> render_segments(std::string_view source, Variables variables);
// The error of a compile or render that must fail.
Error render_error(std::string_view source, std::string_view context_json = "");

void expect_renders(const std::vector<RenderCase>& cases);

}  // namespace tandem::jinja::testing
