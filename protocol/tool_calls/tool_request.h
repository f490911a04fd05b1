// A chat request's tools (OpenAI's `tools`, `tool_choice`, `parallel_tool_calls`) as plain
// values: protocol reads them, the server renders them into the chat template, constrains
// the output to a call (tool_choice "required" or a named function) and parses the output
// into calls (tool_call_parser.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tandem {

struct ToolFunction {
  std::string name;
  // The function's JSON Schema for its arguments, the grammar's when a call is constrained:
  // with "type": "object" added where the request's names no type (tool_fields.cpp), and
  // {"type": "object", "properties": {}, "additionalProperties": false} when it has none.
  // The template renders `definitions`, as sent.
  nlohmann::ordered_json parameters;
};

struct ToolChoice {
  enum class Mode {
    kNone,      // tools are shown to the template, the output is plain content
    kAuto,      // the output is parsed for calls in the model family's format
    kRequired,  // the output is constrained to one or more calls of any of the tools
    kNamed,     // the output is constrained to calls of `name`
  };
  Mode mode = Mode::kAuto;
  std::string name;  // kNamed only
};

struct ToolRequest {
  // Every tool's definition as the request sent it (validated): the template's `tools`.
  // null when the request has none.
  nlohmann::ordered_json definitions = nullptr;
  std::vector<ToolFunction> functions;  // in the request's order
  ToolChoice choice;                    // "auto" when tools are given, else "none"
  bool parallel = true;                 // parallel_tool_calls: more than one call allowed

  bool any() const { return !functions.empty(); }
  // Whether the output is read for calls (auto, required, named).
  bool parses() const { return any() && choice.mode != ToolChoice::Mode::kNone; }
  // Whether the output is constrained to calls (required, named).
  bool constrains() const {
    return any() &&
           (choice.mode == ToolChoice::Mode::kRequired || choice.mode == ToolChoice::Mode::kNamed);
  }
  // Whether a constrained output may call `function`: the named one, or any.
  bool may_call(const ToolFunction& function) const;
  // The functions a constrained output may call, in the request's order.
  std::vector<ToolFunction> callable() const;
};

}  // namespace tandem
