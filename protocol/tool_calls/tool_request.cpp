#include "protocol/tool_calls/tool_request.h"

namespace tandem {

std::vector<ToolFunction> ToolRequest::callable() const {
  if (choice.mode != ToolChoice::Mode::kNamed) return functions;
  std::vector<ToolFunction> named;
  for (const ToolFunction& function : functions) {
    if (function.name == choice.name) named.push_back(function);
  }
  return named;
}

}  // namespace tandem
