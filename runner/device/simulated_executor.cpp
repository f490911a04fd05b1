#include "runner/device/simulated_executor.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>

namespace tandem {

namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

[[noreturn]] void fail(const StepRow& row, const std::string& what) {
  throw std::runtime_error("simulated device: request " + std::to_string(row.request_id) + ": " +
                           what);
}

}  // namespace

SimulatedExecutor::SimulatedExecutor(SimulatedDeviceConfig config) : config_(std::move(config)) {
  if (config_.vocab_size <= 0 || config_.kv_block_size <= 0 || config_.kv_blocks <= 0 ||
      config_.context_length <= 0 || config_.kv_local_blocks < 0 ||
      (config_.kv_local_blocks > 0 && config_.sliding_window <= 0)) {
    throw std::invalid_argument("simulated device: sizes must be positive");
  }
  alphabet_ = config_.alphabet;
  if (alphabet_.empty()) {
    for (int32_t id = 0; id < config_.vocab_size; ++id) {
      if (std::find(config_.eog_ids.begin(), config_.eog_ids.end(), id) == config_.eog_ids.end()) {
        alphabet_.push_back(id);
      }
    }
  }
  if (config_.verify_kv) {
    kv_.resize(static_cast<size_t>(config_.kv_blocks) * config_.kv_block_size);
    local_kv_.resize(static_cast<size_t>(config_.kv_local_blocks) * config_.kv_block_size);
  }
}

DeviceInfo SimulatedExecutor::info() const {
  DeviceInfo info{config_.vocab_size, config_.context_length, config_.kv_block_size,
                  config_.kv_blocks, config_.eog_ids};
  info.verifies = true;
  info.kv_local_blocks = config_.kv_local_blocks;
  info.sliding_window = config_.kv_local_blocks > 0 ? config_.sliding_window : 0;
  return info;
}

int32_t SimulatedExecutor::next_token(int32_t last, int32_t position,
                                      const SamplingParams& sampling, bool ban_stop) const {
  uint64_t h = mix((static_cast<uint64_t>(static_cast<uint32_t>(last)) << 32) |
                   static_cast<uint32_t>(position));
  if (sampling.temperature > 0) h = mix(h ^ mix(sampling.seed));
  const double u = static_cast<double>(h >> 11) * 0x1.0p-53;
  if (!config_.eog_ids.empty() && !sampling.ignore_eos && !ban_stop &&
      u < config_.eos_probability) {
    return config_.eog_ids.front();
  }
  return alphabet_[mix(h) % alphabet_.size()];
}

void SimulatedExecutor::verify_and_write_kv(const StepRow& row) {
  const int64_t end = static_cast<int64_t>(row.position) + static_cast<int64_t>(row.tokens.size());
  const int64_t bs = config_.kv_block_size;
  if (row.position < 0 || end > config_.context_length) fail(row, "position past the context");
  if (static_cast<int64_t>(row.kv_blocks.size()) * bs < end) {
    fail(row, "block table does not cover position " + std::to_string(end - 1));
  }
  // The blocks this step writes (checking the whole table every step would cost the
  // benchmarks O(context) per row).
  for (int64_t b = row.position / bs; b < (end + bs - 1) / bs; ++b) {
    if (row.kv_blocks[b] < 0 || row.kv_blocks[b] >= config_.kv_blocks) {
      fail(row, "block id out of range");
    }
  }
  if (!config_.verify_kv) return;
  auto slot = [&](int64_t p) -> KvSlot& { return kv_[row.kv_blocks[p / bs] * bs + p % bs]; };
  auto chain = [&](int64_t p, int32_t token) {
    const uint64_t before = p == 0 ? 0 : slot(p - 1).chain;
    return mix(before ^ mix((static_cast<uint64_t>(static_cast<uint32_t>(token)) << 32) |
                            static_cast<uint32_t>(p)));
  };
  for (int64_t p = 0; p < row.position; ++p) {
    const KvSlot& s = slot(p);
    if (s.position != p || s.chain != chain(p, s.token)) {
      fail(row, "KV at position " + std::to_string(p) +
                    " does not continue the sequence before it (overwritten or never written)");
    }
  }
  for (int64_t p = row.position; p < end; ++p) {
    const int32_t token = row.tokens[p - row.position];
    slot(p) = KvSlot{static_cast<int32_t>(p), token, chain(p, token)};
  }
  if (config_.kv_local_blocks > 0) verify_and_write_local_kv(row);
}

// The local table: every slot a query of this row can see (the window behind its first
// query) must be what the global table holds there, after that table was verified; the
// row's new slots are copied from it. A block dropped (kNoBlock) must be wholly before
// the window.
void SimulatedExecutor::verify_and_write_local_kv(const StepRow& row) {
  const int64_t end = static_cast<int64_t>(row.position) + static_cast<int64_t>(row.tokens.size());
  const int64_t bs = config_.kv_block_size;
  if (static_cast<int64_t>(row.kv_local_blocks.size()) * bs < end)
    fail(row, "local block table does not cover position " + std::to_string(end - 1));
  const int64_t first_seen = std::max<int64_t>(0, row.position - config_.sliding_window + 1);
  for (int64_t b = first_seen / bs; b < (end + bs - 1) / bs; ++b) {
    const int32_t id = row.kv_local_blocks[b];
    if (id < 0) fail(row, "local block " + std::to_string(b) + " dropped inside the window");
    if (id >= config_.kv_local_blocks) fail(row, "local block id out of range");
  }
  auto global = [&](int64_t p) -> const KvSlot& {
    return kv_[row.kv_blocks[p / bs] * bs + p % bs];
  };
  auto local = [&](int64_t p) -> KvSlot& {
    return local_kv_[row.kv_local_blocks[p / bs] * bs + p % bs];
  };
  for (int64_t p = first_seen; p < row.position; ++p) {
    const KvSlot& s = local(p);
    if (s.position != p || s.chain != global(p).chain)
      fail(row, "local KV at position " + std::to_string(p) +
                    " is not this sequence's (overwritten or never written)");
  }
  for (int64_t p = row.position; p < end; ++p) local(p) = global(p);
}

// The slots keep their position, token and chain: a copy continues the sequence it came
// from, so the reads that follow pass only if that sequence is the reader's own prefix.
void SimulatedExecutor::copy_kv(const StepRow& row) {
  const KvSlotCopy& copy = row.kv_copy;
  if (copy.slots <= 0) return;
  const int32_t bs = config_.kv_block_size;
  if (copy.from < 0 || copy.from >= config_.kv_blocks || copy.to < 0 ||
      copy.to >= config_.kv_blocks || copy.slots > bs) {
    fail(row, "KV slot copy out of range");
  }
  if (!config_.verify_kv) return;
  for (int32_t s = 0; s < copy.slots; ++s) kv_[copy.to * bs + s] = kv_[copy.from * bs + s];
}

// The drawn token when the grammar allows it, else the next allowed id after it (cyclic):
// still a function of the row alone. The matcher then advances, as the real sampler's does.
int32_t SimulatedExecutor::constrain(grammar::Matcher& matcher, int32_t drawn) {
  mask_.resize(matcher.mask_words());
  matcher.fill_mask(mask_);
  const auto allowed = [&](int32_t id) { return ((mask_[id / 32] >> (id % 32)) & 1u) != 0; };
  const int32_t n = std::min<int32_t>(config_.vocab_size, static_cast<int32_t>(mask_.size() * 32));
  int32_t token = drawn;
  for (int32_t k = 0; k < n; ++k) {
    const int32_t id = (drawn + k) % n;
    if (allowed(id)) {
      token = id;
      break;
    }
  }
  matcher.advance(token);
  return token;
}

void SimulatedExecutor::execute(const StepPlan& plan, std::span<int32_t> tokens) {
  run(plan, tokens, nullptr);
}

void SimulatedExecutor::execute_step(const StepPlan& plan, StepResult& result) {
  result.tokens.assign(plan.rows.size(), kNoToken);
  run(plan, result.tokens, &result.accepted);
}

// A verify row: the token after each of its tokens in turn, as single-token decode rows
// would draw it, until one differs from the draft after it; `accepted` counts the matches.
int32_t SimulatedExecutor::verify(const StepRow& row, int32_t& accepted) {
  const auto count = static_cast<int32_t>(row.tokens.size());
  for (int32_t j = 0;; ++j) {
    const int32_t position = row.position + j;
    int32_t token =
        next_token(row.tokens[j], position, row.sampling, position + 1 < row.stop_banned_until);
    if (row.grammar) token = constrain(*row.grammar, token);
    if (j + 1 == count || token != row.tokens[j + 1]) return token;
    ++accepted;
  }
}

void SimulatedExecutor::run(const StepPlan& plan, std::span<int32_t> tokens,
                            std::vector<int32_t>* accepted) {
  const auto start = std::chrono::steady_clock::now();
  for (const StepRow& row : plan.rows) copy_kv(row);  // before any row runs, as the CPU's
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    const StepRow& row = plan.rows[i];
    if (row.tokens.empty()) fail(row, "a row with no tokens");
    verify_and_write_kv(row);
    if (row.verify) {
      if (accepted == nullptr) fail(row, "a verify row needs execute_step");
      accepted->resize(plan.rows.size(), 0);
      tokens[i] = verify(row, (*accepted)[i]);
      continue;
    }
    const int32_t last = row.position + static_cast<int32_t>(row.tokens.size()) - 1;
    tokens[i] = row.sample ? next_token(row.tokens.back(), last, row.sampling,
                                        last + 1 < row.stop_banned_until)
                           : kNoToken;
    if (row.sample && row.grammar) tokens[i] = constrain(*row.grammar, tokens[i]);
  }
  const auto latency =
      config_.step_latency + config_.row_latency * static_cast<int64_t>(plan.rows.size());
  if (latency.count() > 0) {
    const auto until = start + latency;
    if (config_.spin_latency) {
      while (std::chrono::steady_clock::now() < until) __builtin_ia32_pause();
    } else {
      std::this_thread::sleep_until(until);
    }
  }
}

}  // namespace tandem
