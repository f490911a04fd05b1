// Splits a Server-Sent Events byte stream into the data payloads of its events, however
// the bytes are cut into reads. Handles LF and CRLF line ends and multi-line data fields;
// ignores comments and other fields. One object per stream; not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tandem::bench {

class SseReader {
 public:
  // Feeds bytes; returns the data of every event the bytes completed, in order.
  std::vector<std::string> feed(std::string_view bytes);

 private:
  std::string line_;  // the current, unterminated line
  std::string data_;  // the current event's data so far
  bool has_data_ = false;
};

}  // namespace tandem::bench
