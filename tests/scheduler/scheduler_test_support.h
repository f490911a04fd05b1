// Test doubles for the scheduler suites: a byte-level tokenizer (id b < 256 is byte b,
// 256 is EOS), a sink that records every event and flags any event after the last one,
// and a scripted executor whose tokens are a function of (request id, position).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "runner/device/device.h"
#include "runner/device/simulated_executor.h"
#include "runner/tokenizer/tokenizer.h"
#include "scheduler/request.h"

namespace tandem {

// gtest prints outcomes by name.
inline void PrintTo(FinishReason reason, std::ostream* os) { *os << finish_reason_name(reason); }
inline void PrintTo(ErrorKind kind, std::ostream* os) { *os << error_kind_name(kind); }

}  // namespace tandem

namespace tandem::testing {

inline constexpr int32_t kFakeEos = 256;

class ByteTokenizer : public Tokenizer {
 public:
  ByteTokenizer() {
    for (int i = 0; i < 256; ++i) texts_.push_back(std::string(1, static_cast<char>(i)));
    texts_.push_back("</s>");
    for (int i = 257; i < 260; ++i) texts_.push_back("<unused>");
  }
  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              std::span<const Range>) const override {
    return encode(text, add_special, false);
  }
  std::vector<int32_t> encode(std::string_view text, bool, bool) const override {
    std::vector<int32_t> ids;
    for (unsigned char c : text) ids.push_back(c);
    return ids;
  }
  std::string token_bytes(int32_t id, bool render_special = false) const override {
    if (id >= 0 && id < 256) return texts_[id];
    if (render_special && id >= 256 && id < vocab_size()) return texts_[id];
    return "";
  }
  int32_t vocab_size() const override { return static_cast<int32_t>(texts_.size()); }
  int32_t bos_id() const override { return -1; }
  int32_t eos_id() const override { return kFakeEos; }
  const std::vector<int32_t>& eog_ids() const override { return eog_; }
  bool add_bos() const override { return false; }
  const std::string& token_text(int32_t id) const override { return texts_.at(id); }
  int32_t find_token(std::string_view text) const override {
    for (size_t i = 0; i < texts_.size(); ++i) {
      if (texts_[i] == text) return static_cast<int32_t>(i);
    }
    return -1;
  }

 private:
  std::vector<std::string> texts_;
  std::vector<int32_t> eog_{kFakeEos};
};

// Records a request's events. Thread-safe, so threaded tests can read it while it fills;
// done() waits for the final event (an event, not a sleep).
class RecordingSink : public RequestSink {
 public:
  void on_text(std::string_view delta) override {
    std::lock_guard lock(mutex_);
    if (ended_) ++events_after_end_;
    if (delta.empty()) ++empty_deltas_;
    text_ += delta;
    ++deltas_;
  }
  void on_finish(FinishReason reason, const Usage& usage) override {
    std::lock_guard lock(mutex_);
    if (ended_) ++events_after_end_;
    ended_ = true;
    reason_ = reason;
    usage_ = usage;
    cv_.notify_all();
  }
  void on_error(ErrorKind kind, std::string_view message) override {
    std::lock_guard lock(mutex_);
    if (ended_) ++events_after_end_;
    ended_ = true;
    error_kind_ = kind;
    error_ = message;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return ended_; });
  }

  std::string text() const { return locked(text_); }
  std::optional<FinishReason> reason() const { return locked(reason_); }  // nullopt: none
  std::optional<ErrorKind> error_kind() const { return locked(error_kind_); }
  std::string error() const { return locked(error_); }
  Usage usage() const { return locked(usage_); }
  bool ended() const { return locked(ended_); }
  int events_after_end() const { return locked(events_after_end_); }
  int empty_deltas() const { return locked(empty_deltas_); }

 private:
  template <typename T>
  T locked(const T& value) const {
    std::lock_guard lock(mutex_);
    return value;
  }
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::string text_, error_;
  std::optional<FinishReason> reason_;
  std::optional<ErrorKind> error_kind_;
  Usage usage_;
  bool ended_ = false;
  int deltas_ = 0;
  int events_after_end_ = 0;
  int empty_deltas_ = 0;
};

// Tokens from a script: script(request_id, position of the new token).
class ScriptedExecutor : public StepExecutor {
 public:
  using Script = std::function<int32_t(uint64_t request_id, int32_t position)>;
  ScriptedExecutor(Script script, DeviceInfo info) : script_(std::move(script)), info_(info) {}
  DeviceInfo info() const override { return info_; }
  void execute(const StepPlan& plan, std::span<int32_t> tokens) override {
    for (size_t i = 0; i < plan.rows.size(); ++i) {
      const StepRow& row = plan.rows[i];
      if (row.sample) {
        tokens[i] = script_(row.request_id, row.position + static_cast<int32_t>(row.tokens.size()));
      }
    }
  }

 private:
  Script script_;
  DeviceInfo info_;
};

// A simulated device of `kv_blocks` 16-token blocks whose tokens are letters, with the
// byte tokenizer's vocabulary, a 256-token context, and no end-of-sequence of its own.
inline SimulatedDeviceConfig letters_device(int32_t kv_blocks) {
  SimulatedDeviceConfig config;
  config.vocab_size = 260;
  config.context_length = 256;
  config.kv_blocks = kv_blocks;
  config.eog_ids = {kFakeEos};
  config.eos_probability = 0;
  for (int32_t c = 'a'; c <= 'z'; ++c) config.alphabet.push_back(c);
  return config;
}

inline DeviceInfo fake_device_info(int32_t context = 256, int32_t kv_blocks = 64) {
  return DeviceInfo{260, context, 16, kv_blocks, {kFakeEos}};
}

// `token` for every row until step number `fail_at` (from 1), which throws `what`, as a
// CUDA error or an allocation would on a real device.
class FailingExecutor : public StepExecutor {
 public:
  FailingExecutor(int fail_at, std::string what, int32_t token)
      : fail_at_(fail_at), what_(std::move(what)), token_(token) {}
  DeviceInfo info() const override { return fake_device_info(); }
  void execute(const StepPlan& plan, std::span<int32_t> tokens) override {
    if (++steps_ == fail_at_) throw std::runtime_error(what_);
    for (size_t i = 0; i < plan.rows.size(); ++i) tokens[i] = token_;
  }

 private:
  int fail_at_;
  std::string what_;
  int32_t token_;
  int steps_ = 0;
};

}  // namespace tandem::testing
