// llama-server's `samplers`: the filters a request's chain applies, in its order, as names
// ("top_k", "top_p", "infill", ...) or llama.cpp's letters ("kpi"). Read for the native
// endpoints (native_request.h). Internal to protocol/: throws request_fields::RequestRejected
// like the other readers.
#pragma once

#include "protocol/request_fields.h"
#include "protocol/sampling_params.h"

namespace tandem::request_fields {

// llama-server's default chain (common_params_sampling's samplers), in llama.cpp's letters:
// penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature.
inline constexpr const char* kLlamaDefaultChain = "edskypmxt";

// What a chain asks of SamplingParams beyond the fields (native_request.h sets them).
struct SamplerChain {
  bool infill = false;            // llama.cpp's infill filter
  bool temperature_last = false;  // top_p and infill read the raw logits (SamplingParams)
  bool min_p_last = false;        // min_p cuts what top_p kept
  // adaptive-p, when the chain names it (SamplingParams::adaptive_*; below 0: off).
  float adaptive_target = -1.0f;
  float adaptive_decay = 0.9f;
  // Sets the flags and adaptive-p's fields on sampling.
  void apply_to(SamplingParams& sampling) const {
    sampling.infill = infill;
    sampling.temperature_last = temperature_last;
    sampling.min_p_last = min_p_last;
    sampling.adaptive_target = adaptive_target;
    sampling.adaptive_decay = adaptive_decay;
  }
};

// Reads native's `samplers` (absent: llama-server's default chain, "edskypmxt") against the
// sampling fields already set in completion, the /v1/completions body being built: a filter the
// chain leaves out is turned off there (temperature left out is 1, penalties left out are neutral),
// and the fields of filters this server lacks (dry, typ_p, xtc, top_n_sigma) are dropped when the
// chain leaves those out, since llama-server then ignores them too. The order of the
// filters that act becomes SamplerChain's flags: the temperature before top_p (vLLM's
// order) or after it and infill (llama.cpp's default), min_p before top_k and top_p or
// after top_p (min_p's place relative to the temperature changes its value, exactly). An
// order the sampler has no form for (penalties after a filter, top_p before top_k, a filter
// after infill, the temperature between top_p and infill) is a 400 naming `samplers`.
SamplerChain apply_sampler_chain(const Json& native, Json& completion);

// Whether the body's mirostat (a number other than 0) replaces llama.cpp's chain: its
// stages (adaptive_p too) then never act.
bool mirostat_replaces_chain(const Json& body);

// The chain native's `samplers` names (absent: llama-server's default), as llama-server's
// generation_settings shows it: llama.cpp's names ("top_k"), whichever spelling was sent.
Json sampler_chain_names(const Json& native);

}  // namespace tandem::request_fields
