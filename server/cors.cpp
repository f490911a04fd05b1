#include "server/cors.h"

namespace tandem::server {

std::string cors_origin_for(const std::string& allowed, std::string_view origin) {
  if (allowed == "*") return "*";
  if (origin.empty() || allowed.empty()) return "";
  size_t start = 0;
  while (start <= allowed.size()) {
    size_t end = allowed.find(',', start);
    if (end == std::string::npos) end = allowed.size();
    std::string_view item(allowed.data() + start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == origin) return std::string(origin);
    start = end + 1;
  }
  return "";
}

HttpAnswer preflight_answer(std::string_view requested_headers) {
  HttpAnswer answer;
  answer.status = 204;
  answer.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  answer.headers.emplace_back("Access-Control-Allow-Headers",
                              requested_headers.empty() ? std::string("Authorization, Content-Type")
                                                        : std::string(requested_headers));
  answer.headers.emplace_back("Access-Control-Max-Age", "600");
  return answer;
}

}  // namespace tandem::server
