#include "server/access_log.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace tandem::server {

std::string access_log_line(const AccessRecord& record, int64_t unix_millis) {
  const nlohmann::json line = {{"time_ms", unix_millis},
                               {"route", record.route},
                               {"id", record.id},
                               {"user", record.user},
                               {"request_id", record.request_id},
                               {"prompt_tokens", record.prompt_tokens},
                               {"stream", record.stream}};
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

AccessLog::AccessLog(const std::string& path) : path_(path) {
  if (path == "-") {
    out_ = stderr;
    return;
  }
  out_ = std::fopen(path.c_str(), "a");
  if (out_ == nullptr) {
    throw std::runtime_error("cannot open the access log " + path + ": " + std::strerror(errno));
  }
  owned_ = true;
}

AccessLog::~AccessLog() {
  if (owned_) std::fclose(out_);
}

std::string AccessLog::reopen() {
  if (!owned_) return "";
  std::FILE* fresh = std::fopen(path_.c_str(), "a");
  if (fresh == nullptr) return path_ + ": " + std::strerror(errno);
  std::lock_guard lock(mutex_);
  std::fclose(out_);
  out_ = fresh;
  return "";
}

void AccessLog::record(const AccessRecord& record) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const std::string line =
      access_log_line(record, std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
  std::lock_guard lock(mutex_);
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

}  // namespace tandem::server
