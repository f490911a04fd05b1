// What a caller (the server) hands the scheduler, and how it hears back. A request's
// events arrive on the scheduler thread, in order, and end with exactly one on_finish or
// on_error; the sink must not block (the server posts them onto the session's strand).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/responses.h"  // Usage: completion_tokens counts EOS and stop tokens too
#include "protocol/sampling_params.h"

namespace tandem {

class RequestSink {
 public:
  virtual ~RequestSink() = default;
  virtual void on_text(std::string_view delta) = 0;  // valid UTF-8, never empty
  // reason: "stop" (EOS or a stop string), "length" (max_tokens or the context), "cancelled".
  virtual void on_finish(std::string_view reason, const Usage& usage) = 0;
  virtual void on_error(std::string_view message) = 0;
};

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, BOS included as the caller wants
  // Carried to the device unchanged. sampling.ignore_eos both bans EOS in the sampler and
  // stops the scheduler from finishing on it.
  SamplingParams sampling;
  int32_t max_tokens = 16;  // >= 1; generation also stops at the context length
  std::vector<std::string> stop;
  std::shared_ptr<RequestSink> sink;
};

enum class SubmitStatus {
  kAccepted,
  kQueueFull,     // the waiting queue is at --max-queue: the server answers 503
  kInvalid,       // the request can never run (message says why): 400
  kShuttingDown,  // 503
};

struct SubmitResult {
  SubmitStatus status = SubmitStatus::kAccepted;
  uint64_t id = 0;  // for cancel(); 0 unless accepted
  std::string message;
  bool accepted() const { return status == SubmitStatus::kAccepted; }
};

}  // namespace tandem
