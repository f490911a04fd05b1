// Small random-weight models written on the fly for the test suites: make-model's shapes,
// plus a qwen2 variant (QKV bias, NeoX RoPE) that make-model does not offer.
#pragma once

#include <filesystem>
#include <string>

#include "runner/gguf/gguf.h"

namespace tandem::testing {

// make-model's "tiny" shape in the given dtype.
std::filesystem::path write_tiny_llama(const std::filesystem::path& dir, gguf::TensorType dtype,
                                       uint64_t seed = 1);

// A tiny qwen2 model: tiny's shape plus Q/K/V biases, NeoX RoPE, tied embeddings.
// heads > 0 replaces tiny's 4 heads (2 KV heads): 2 gives 32-wide heads, 1 KV head, as a
// Q8_0 KV cache needs.
std::filesystem::path write_tiny_qwen2(const std::filesystem::path& dir, gguf::TensorType dtype,
                                       uint64_t seed = 2, int64_t heads = 0);

// A tiny phi3 128k-style model: tiny's shape with phi3's fused attn_qkv and [gate; up]
// ffn_up, NeoX RoPE, a 512-token context trained from an original 64, LongRoPE's
// rope_factors_long/short.weight (deliberately far apart) and the attention factor the
// converter writes for that scaling, sqrt(1 + ln(512 / 64) / ln(64)).
inline constexpr int32_t kTinyPhi3Context = 512;
inline constexpr int32_t kTinyPhi3OriginalContext = 64;
std::filesystem::path write_tiny_phi3_long_rope(const std::filesystem::path& dir,
                                                gguf::TensorType dtype, uint64_t seed = 3);

}  // namespace tandem::testing
