// The stress test's load: many HTTP/1.1 connections driven by one Boost.Asio io_context on
// the calling thread, each sending planned completion requests in turn and reading the
// answers, whole or as SSE, and hanging up on purpose where the plan says so (mid-stream
// or before the answer). Not thread-safe; one call runs to completion before it returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tandem::testing {

struct PlannedRequest {
  std::string target;  // /v1/completions or /v1/chat/completions
  std::string body;    // the JSON body
  bool stream = false;
  bool chat = false;
  // Hang-ups: after this many SSE events (stream), or this long after the request is
  // written (whole answers; 0: at once, without reading).
  enum class HangUp { kNever, kAfterEvents, kAfterDelay } hang_up = HangUp::kNever;
  int hang_up_events = 0;
  std::chrono::microseconds hang_up_delay{0};
  bool reset = false;  // hang up with a TCP reset (SO_LINGER 0), as a crashed client does
};

struct Outcome {
  enum class Kind {
    kCompleted,   // 200, finish_reason stop or length, the whole text read
    kOverloaded,  // 503 with Retry-After
    kHungUp,      // the client hung up as planned before the answer was complete
    kFailed,      // anything else: `error` says what
  };
  Kind kind = Kind::kFailed;
  int status = 0;
  std::string text;
  std::string finish_reason;
  std::string error;
  int events = 0;  // SSE events read
};

struct StormStats {
  int connections = 0;  // connections opened in all
  int peak_open = 0;    // connections open at once, at most
  bool all_connected_at_once = false;
  bool timed_out = false;  // the deadline passed with requests outstanding
  int outstanding = 0;     // requests without an outcome when it returned
};

// Opens `connections` connections to 127.0.0.1:port and waits until all are connected;
// then each takes the next planned request in turn, keeping its connection alive across
// answers and reconnecting after a hang-up. Returns one outcome per planned request; on
// the deadline the rest stay kFailed ("no outcome") and stats.timed_out is set.
std::vector<Outcome> run_storm(uint16_t port, const std::vector<PlannedRequest>& plan,
                               int connections, std::chrono::seconds deadline,
                               StormStats* stats = nullptr);

}  // namespace tandem::testing
