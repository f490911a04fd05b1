// A literal reading of the infill step (sampler.h, step 5; llama.cpp's
// llama_sampler_infill_apply) for the infill tests: the kept set from reference.h, every pair
// of tokens compared in the double loop as llama.cpp does, plain float arithmetic in rank
// order. The Sampler's grouped merge (infill.cpp) must give the same survivors and masses.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "protocol/sampling_params.h"
#include "runner/sampler/kernels.h"
#include "tests/runner/sampler/reference.h"

namespace tandem::testing {

struct InfillVocab {
  std::vector<std::string> pieces;  // by id; an id past the end has ""
  std::vector<int32_t> eog;
  int32_t eot = -1;  // the EOT answer; -1: none usable (the row bans it, or there is none)

  bool is_eog(int32_t id) const {
    for (int32_t e : eog)
      if (e == id) return true;
    return false;
  }
  std::string piece(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < pieces.size() ? pieces[id] : std::string();
  }
};

struct InfillSurvivor {
  int32_t id;
  float p;              // the step's probability (merged masses included)
  float z = 0;          // the tempered logit, which the draw reads
  bool merged = false;  // merged into another token: never drawn
};

// The tokens left for the draw, in rank order, with their probabilities.
inline std::vector<InfillSurvivor> reference_infill(std::span<const float> logits,
                                                    const SamplingParams& params,
                                                    const InfillVocab& vocab) {
  const std::vector<float> z = tempered(logits, params.temperature);
  const std::vector<int32_t> kept = reference_kept(logits, params);  // rank order
  struct Entry {
    int32_t id;
    float p;
    bool removed;
    float z;
  };
  std::vector<Entry> cur;
  float sum = 0.0f;
  for (int32_t id : kept) {
    const float e = sampler_kernels::exp_shifted(z[id] - z[kept.front()]);
    sum += e;
    cur.push_back({id, e, false, z[id]});
  }
  for (Entry& t : cur) t.p /= sum;

  // Keeps the entries `keep` accepts and renormalizes them.
  const auto keep_normalized = [&](auto keep) {
    std::vector<Entry> out;
    float total = 0.0f;
    for (const Entry& t : cur) {
      if (keep(t)) {
        total += t.p;
        out.push_back(t);
      }
    }
    for (Entry& t : out) t.p /= total;
    cur = out;
  };
  const auto survivors = [&] {
    std::vector<InfillSurvivor> out;
    for (const Entry& t : cur) out.push_back({t.id, t.p, t.z, t.removed});
    return out;
  };

  // 1. The end when it holds enough of the mass.
  float p_eog = 0.0f, p_txt = 0.0f;
  for (const Entry& t : cur) {
    if (vocab.is_eog(t.id)) {
      p_eog += t.p;
    } else {
      p_txt += t.p;
    }
  }
  if (3.0f * p_eog * static_cast<float>(cur.size()) > p_txt) {
    keep_normalized([&](const Entry& t) { return vocab.is_eog(t.id); });
    return survivors();
  }

  // 2. Every ordered pair, i0's piece a prefix of i1's: the likelier takes the other's mass.
  for (size_t i0 = 0; i0 < cur.size(); ++i0) {
    for (size_t i1 = 0; i1 < cur.size(); ++i1) {
      if (cur[i0].removed) break;
      if (i0 == i1 || cur[i1].removed) continue;
      const std::string a = vocab.piece(cur[i0].id), b = vocab.piece(cur[i1].id);
      if (!a.empty() && a.size() <= b.size() && b.compare(0, a.size(), a) == 0) {
        size_t dst = i0, src = i1;
        if (cur[i1].p > cur[i0].p) std::swap(dst, src);
        cur[dst].p += cur[src].p;
        cur[src].p = 0.0f;
        cur[src].removed = true;
      }
    }
  }

  // 3. Text below 0.2 goes; nothing left: the EOT token (or, where it cannot be given, the
  // tokens not merged away).
  int n_non_eog = 0;
  for (const Entry& t : cur) n_non_eog += !vocab.is_eog(t.id) && t.p >= 0.2f;
  if (n_non_eog == 0) {
    if (vocab.eot >= 0) return {{vocab.eot, 1.0f}};
    keep_normalized([](const Entry& t) { return !t.removed; });
    return survivors();
  }
  keep_normalized([&](const Entry& t) { return vocab.is_eog(t.id) || t.p >= 0.2f; });

  // 4. Text below 1 / (n + 1) goes.
  const float threshold = 1.0f / static_cast<float>(n_non_eog + 1);
  keep_normalized([&](const Entry& t) { return vocab.is_eog(t.id) || t.p >= threshold; });
  return survivors();
}

// The contract's draw over the survivors, llama.cpp's dist after the step: the softmax of
// their tempered logits, by Gumbel-max: argmax of z + the plain path's noise for the id,
// merged-away tokens left out.
inline int32_t reference_infill_token(const std::vector<InfillSurvivor>& survivors, uint64_t seed,
                                      int64_t position) {
  if (survivors.size() == 1) return survivors[0].id;
  float best = -std::numeric_limits<float>::infinity();
  int32_t token = -1;
  for (const InfillSurvivor& s : survivors) {
    if (s.merged) continue;
    const float v = s.z + sampler_kernels::gumbel_noise(seed, position, s.id);
    if (v > best || (v == best && s.id < token)) {
      best = v;
      token = s.id;
    }
  }
  return token;
}

}  // namespace tandem::testing
