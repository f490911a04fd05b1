// The sink a session gives the scheduler for each choice of its generation (session.cpp).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>

#include "server/session.h"

namespace tandem::server {

// The scheduler's events, posted onto the session's strand: the scheduler thread never
// blocks here and never touches the session's state.
class StrandSink final : public RequestSink {
 public:
  // timed: the session hears the admission's event, which llama-server's timings and a
  // streamed message_start need (a post the others are spared: an embeddings request may
  // hold thousands of inputs).
  // ids: each accepted token's id goes to the session, with the text it makes.
  StrandSink(std::shared_ptr<Session> session, net::any_io_executor strand, uint64_t serial,
             int32_t choice, bool timed = false, bool ids = false)
      : session_(std::move(session)),
        strand_(std::move(strand)),
        serial_(serial),
        choice_(choice),
        timed_(timed),
        keep_ids_(ids) {}

  void on_admitted(int32_t cached_tokens) override {
    if (!timed_) return;
    net::post(strand_, [s = session_, serial = serial_, choice = choice_, cached_tokens] {
      s->on_generation_admitted(serial, choice, cached_tokens);
    });
  }
  // Counted here, on the scheduler thread, and sent with the text they made: a post per
  // token would double the strand's work.
  void on_token(int32_t id) override {
    ++tokens_;
    if (keep_ids_) ids_.push_back(id);
  }
  void on_text(std::string_view delta) override {
    net::post(strand_, [s = session_, serial = serial_, choice = choice_, text = std::string(delta),
                        tokens = std::exchange(tokens_, 0), ids = std::exchange(ids_, {}),
                        at = Clock::now()]() mutable {
      if (!ids.empty()) s->on_generation_tokens(serial, choice, ids);
      s->on_generation_text(serial, choice, std::move(text), tokens, at);
    });
  }
  void on_logprobs(const TokenLogprobs& logprobs) override {
    net::post(strand_,
              [s = session_, serial = serial_, choice = choice_, one = logprobs]() mutable {
                s->on_generation_logprobs(serial, choice, {std::move(one)});
              });
  }
  void on_prompt_logprobs(std::span<const TokenLogprobs> logprobs) override {
    net::post(strand_,
              [s = session_, serial = serial_, choice = choice_,
               all = std::vector<TokenLogprobs>(logprobs.begin(), logprobs.end())]() mutable {
                s->on_generation_logprobs(serial, choice, std::move(all));
              });
  }
  void on_embedding(std::span<const float> embedding) override {
    net::post(strand_, [s = session_, serial = serial_, choice = choice_,
                        v = std::vector<float>(embedding.begin(), embedding.end())]() mutable {
      s->on_generation_embedding(serial, choice, std::move(v));
    });
  }
  // Kept for the finish that follows it, in the same post.
  void on_stop_string(std::string_view stop) override { stop_.text = stop; }
  void on_stop_token(int32_t token) override { stop_.token = token; }
  void on_finish(FinishReason reason, const Usage& usage) override {
    net::post(strand_,
              [s = session_, serial = serial_, choice = choice_, reason, usage, at = Clock::now(),
               stop = std::move(stop_), ids = std::exchange(ids_, {})]() mutable {
                if (!ids.empty()) s->on_generation_tokens(serial, choice, ids);
                s->on_generation_finish(serial, choice, reason, usage, at, std::move(stop));
              });
  }
  void on_error(ErrorKind kind, std::string_view) override {
    net::post(strand_,
              [s = session_, serial = serial_, kind] { s->on_generation_error(serial, kind); });
  }

 private:
  std::shared_ptr<Session> session_;
  net::any_io_executor strand_;
  uint64_t serial_;
  int32_t choice_;
  bool timed_;
  bool keep_ids_;
  int32_t tokens_ = 0;        // accepted since the last text
  std::vector<int32_t> ids_;  // and their ids, when kept
  StopReason stop_;           // what ended the output, where not EOS
};

}  // namespace tandem::server
