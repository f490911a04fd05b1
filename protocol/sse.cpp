#include "protocol/sse.h"

namespace tandem {

std::string sse_data(std::string_view json) {
  std::string event;
  event.reserve(json.size() + 8);
  event += "data: ";
  event += json;
  event += "\n\n";
  return event;
}

std::string sse_event(std::string_view type, std::string_view json) {
  std::string event;
  event.reserve(type.size() + json.size() + 16);
  event += "event: ";
  event += type;
  event += '\n';
  event += sse_data(json);
  return event;
}

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace tandem
