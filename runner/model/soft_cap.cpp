#include "runner/model/soft_cap.h"

#include <algorithm>
#include <cmath>

#include "runner/sampler/kernels.h"

namespace tandem {

void soft_cap(float* x, int64_t n, float cap, float pre) {
  if (cap <= 0) return;
  const sampler_kernels::Kernels& kernels = sampler_kernels::detected();
  const float inv = pre / cap;
  constexpr int64_t kChunk = 1024;  // a stack buffer of the exps
  float e[kChunk];
  for (int64_t at = 0; at < n; at += kChunk) {
    const int32_t m = static_cast<int32_t>(std::min(kChunk, n - at));
    float* v = x + at;
    for (int32_t i = 0; i < m; ++i) e[i] = -2.0f * std::fabs(v[i] * inv);
    kernels.exp_shifted(e, m, 0.0f, e);
    for (int32_t i = 0; i < m; ++i) {
      const float t = v[i] * inv;
      // Odd, so the sign is t's (copysign also keeps -0 where the polynomial gave +0).
      float r;
      if (std::fabs(t) < 0.625f) {
        const float s = t * t;
        const float p =
            (((-5.70498872745e-3f * s + 2.06390887954e-2f) * s - 5.37397155531e-2f) * s +
             1.33314422036e-1f) *
                s -
            3.33332819422e-1f;
        r = p * s * t + t;
      } else {
        r = (1.0f - e[i]) / (1.0f + e[i]);
      }
      v[i] = cap * std::copysign(r, t);
    }
  }
}

}  // namespace tandem
