#include "protocol/tool_calls/tool_request.h"

namespace tandem {

bool ToolRequest::may_call(const ToolFunction& function) const {
  return choice.mode != ToolChoice::Mode::kNamed || function.name == choice.name;
}

std::vector<ToolFunction> ToolRequest::callable() const {
  std::vector<ToolFunction> out;
  for (const ToolFunction& function : functions) {
    if (may_call(function)) out.push_back(function);
  }
  return out;
}

}  // namespace tandem
