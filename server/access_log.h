// The access log: one JSON line per accepted generation request (when it was accepted,
// the route, the response id, the client's `user` and X-Request-Id, the prompt's length,
// whether it streams), so an operator can tie a response id or a user to a request. JSON, so that
// a `user` holding newlines or quotes cannot forge a line. Thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace tandem::server {

struct AccessRecord {
  std::string route;  // "/v1/completions", "/v1/chat/completions", "/v1/responses", ...
  std::string id;     // the response id
  std::string user;   // the request's `user`, empty when none
  int64_t prompt_tokens = 0;
  bool stream = false;
  std::string request_id;  // the client's X-Request-Id header, empty when none
};

class AccessLog {
 public:
  // path "-": standard error; otherwise a file appended to. Throws std::runtime_error
  // naming the path when it cannot be opened.
  explicit AccessLog(const std::string& path);
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  void record(const AccessRecord& record);
  // Opens the path again (SIGHUP), so that logrotate's rename-and-create rotation gets the
  // new records in the new file rather than in the renamed (or deleted) one. On failure the
  // old file is kept, and the reason returned; "" on success or for standard error.
  std::string reopen();

 private:
  std::string path_;
  std::mutex mutex_;
  std::FILE* out_ = nullptr;
  bool owned_ = false;
};

// One record as its log line (without the newline).
std::string access_log_line(const AccessRecord& record, int64_t unix_millis);

}  // namespace tandem::server
