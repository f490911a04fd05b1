// Where a forward pass spends its time, phase by phase (bench_forward prints it; any caller
// may attach one to a ForwardPass or a CpuExecutor). Each phase is the wall time from the
// end of the one before to its own end on the submitting thread, so the phases of a step
// add up to the step: a pool job's time includes its dispatch and the wait for its slowest
// task, which is what the step pays for it.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace tandem {

enum class ForwardPhase : uint8_t {
  kEmbed,         // embeddings, the first norm, RoPE's angles, the attention tiles' plan
  kQkv,           // the fused Q, K, V matmul
  kRopeStore,     // q and k norms and RoPE, K and V into the cache
  kAttention,     // attention over the paged cache
  kAttnOut,       // the output projection
  kAttnResidual,  // the residual add and the FFN's norm
  kGateUp,        // the fused gate and up matmul
  kActivation,    // the gated activation
  kDown,          // the down projection
  kFfnResidual,   // the residual add and the next layer's norm
  kOutput,        // the output norm and the logits
  kSample,        // the fused sampler (CpuExecutor)
};
inline constexpr int kForwardPhaseCount = 12;

// "embed", "qkv", "rope_store", "attention", "attn_out", "attn_residual", "gate_up",
// "activation", "down", "ffn_residual", "output", "sample".
const char* forward_phase_name(ForwardPhase phase);

struct ForwardProfile {
  std::array<double, kForwardPhaseCount> seconds{};  // summed over the steps
  int64_t steps = 0;                                 // forward passes timed
  void clear() { *this = ForwardProfile{}; }
  double total() const;
};

// Charges the time since the last mark to a phase; does nothing without a profile.
class PhaseClock {
 public:
  using Clock = std::chrono::steady_clock;
  explicit PhaseClock(ForwardProfile* profile) : profile_(profile) {
    if (profile_ != nullptr) last_ = Clock::now();
  }
  void mark(ForwardPhase phase) {
    if (profile_ == nullptr) return;
    const Clock::time_point now = Clock::now();
    profile_->seconds[static_cast<int>(phase)] +=
        std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }

 private:
  ForwardProfile* profile_;
  Clock::time_point last_;
};

}  // namespace tandem
