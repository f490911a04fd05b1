#include "runner/model/forward_profile.h"

namespace tandem {

const char* forward_phase_name(ForwardPhase phase) {
  switch (phase) {
    case ForwardPhase::kEmbed:
      return "embed";
    case ForwardPhase::kQkv:
      return "qkv";
    case ForwardPhase::kRopeStore:
      return "rope_store";
    case ForwardPhase::kAttention:
      return "attention";
    case ForwardPhase::kAttnOut:
      return "attn_out";
    case ForwardPhase::kAttnResidual:
      return "attn_residual";
    case ForwardPhase::kGateUp:
      return "gate_up";
    case ForwardPhase::kActivation:
      return "activation";
    case ForwardPhase::kDown:
      return "down";
    case ForwardPhase::kFfnResidual:
      return "ffn_residual";
    case ForwardPhase::kOutput:
      return "output";
    case ForwardPhase::kSample:
      return "sample";
  }
  return "?";
}

double ForwardProfile::total() const {
  double sum = 0;
  for (double s : seconds) sum += s;
  return sum;
}

}  // namespace tandem
