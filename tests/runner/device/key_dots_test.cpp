// Keys stored transposed within a KV block (KvCache::k_transposed) and the kernel that
// scores them (kernels::dot_keys): what a store writes and a copy moves, and each score
// against a scalar reference written from the documented order, bit for bit on every ISA
// (so a key's score cannot depend on its lane, its chunk of keys, the queries beside it
// in a call, or the ISA), and against a double-precision dot.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runner/device/kv_cache.h"
#include "runner/kernels/kernels.h"
#include "tests/common/isa_scope.h"
#include "tests/common/test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::IsaScope;
using testing::normal_floats;
using testing::runnable_isas;

constexpr KvType kTransposedTypes[] = {KvType::kF32, KvType::kF16, KvType::kBf16};

// kernels.h's order for one score: four chains over i = p mod 4, each FMA rounded once,
// then (c0 + c1) + (c2 + c3).
float reference_score(const float* q, const float* k, int64_t n) {
  float c[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < n; ++i) c[i % 4] = std::fma(q[i], k[i], c[i % 4]);
  return (c[0] + c[1]) + (c[2] + c[3]);
}

TEST(KeyDots, OnlyQ8_0KeepsKeysAsVectors) {
  for (KvType t : kTransposedTypes) EXPECT_TRUE(KvCache(1, 64, 1, t, 32).k_transposed());
  EXPECT_FALSE(KvCache(1, 64, 1, KvType::kQ8_0, 32).k_transposed());
  KvCache kv(1, 64, 1, KvType::kF16, 32, 16);
  EXPECT_EQ(kv.k_row_bytes(), 16u * 2);
}

// Every slot's keys read back whole from their rows, and a copy of a block's first slots
// carries their keys and values.
TEST(KeyDots, StoredKeysReadBackAndCopy) {
  for (KvType t : kTransposedTypes) {
    const int32_t bs = 13, kv_dim = 96;
    KvCache kv(2, kv_dim, 3, t, 32, bs);
    std::vector<std::vector<float>> stored;
    for (int32_t s = 0; s < bs; ++s) {
      const auto k = normal_floats(kv_dim, 100 + s), v = normal_floats(kv_dim, 200 + s);
      kv.store(1, 2, s, k.data(), v.data());
      std::vector<float> back(kv_dim);
      kv.read_k(1, 2, s, back.data());
      for (int32_t i = 0; i < kv_dim; ++i)
        ASSERT_NEAR(back[i], k[i], t == KvType::kF32 ? 0.0 : std::abs(k[i]) / 128)
            << kv_type_name(t);
      stored.push_back(back);
    }
    kv.copy_slots(2, 0, 5);
    for (int32_t s = 0; s < 5; ++s) {
      std::vector<float> back(kv_dim), v_to(kv_dim), v_from(kv_dim);
      kv.read_k(1, 0, s, back.data());
      EXPECT_EQ(back, stored[s]) << kv_type_name(t) << " slot " << s;
      kv.read_v(1, 0, s, v_to.data());
      kv.read_v(1, 2, s, v_from.data());
      EXPECT_EQ(v_to, v_from) << kv_type_name(t) << " slot " << s;
    }
  }
}

TEST(KeyDots, ScoresFollowTheDocumentedOrderOnEveryIsa) {
  for (kernels::Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (KvType t : kTransposedTypes) {
      for (int32_t bs : {4, 13, 16, 32}) {
        for (int64_t hd : {30, 64, 80}) {
          const int32_t kv_dim = static_cast<int32_t>(2 * hd);
          KvCache kv(1, kv_dim, 2, t, static_cast<int32_t>(hd), bs);
          std::vector<std::vector<float>> keys(bs, std::vector<float>(kv_dim));
          for (int32_t s = 0; s < bs; ++s) {
            const auto x = normal_floats(kv_dim, 10 + s);
            kv.store(0, 1, s, x.data(), x.data());
            kv.read_k(0, 1, s, keys[s].data());
          }
          for (int n_q : {1, 3, 6, 7, 13}) {
            const auto q = normal_floats(n_q * hd, 7);
            for (int32_t n_keys : {1, bs / 2 + 1, bs}) {
              for (int head = 0; head < 2; ++head) {
                const std::string label = std::string(kernels::isa_name(isa)) + " " +
                                          kv_type_name(t) + " block " + std::to_string(bs) +
                                          " hd " + std::to_string(hd) + " n_q " +
                                          std::to_string(n_q) + " keys " + std::to_string(n_keys);
                std::vector<float> got(static_cast<size_t>(n_q) * bs, -7.f);
                std::vector<const float*> qs;
                std::vector<float*> outs;
                for (int a = 0; a < n_q; ++a) {
                  qs.push_back(q.data() + a * hd);
                  outs.push_back(got.data() + a * bs);
                }
                const uint8_t* kt =
                    kv.k_block(0, 1) + kv_element_offset(t, head * hd) * static_cast<size_t>(bs);
                kernels::dot_keys(kv_tensor_type(t), qs.data(), n_q, kt, bs, n_keys, hd,
                                  outs.data());
                for (int a = 0; a < n_q; ++a) {
                  for (int32_t j = 0; j < bs; ++j) {
                    const float* k = keys[j].data() + head * hd;
                    if (j >= n_keys) {  // never written
                      ASSERT_EQ(got[a * bs + j], -7.f) << label;
                      continue;
                    }
                    const float want = reference_score(q.data() + a * hd, k, hd);
                    ASSERT_EQ(0, std::memcmp(&got[a * bs + j], &want, 4)) << label << " key " << j;
                    double exact = 0, scale = 0;
                    for (int64_t i = 0; i < hd; ++i) {
                      exact += static_cast<double>(q[a * hd + i]) * k[i];
                      scale += std::abs(static_cast<double>(q[a * hd + i]) * k[i]);
                    }
                    ASSERT_NEAR(got[a * bs + j], exact, 1e-6 * scale) << label;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

// Two blocks scored in one call (a decode row's walk, attention.cpp decode_pair): each
// block's scores are the documented order's bits, as two dot_keys calls give them, and keys
// past each block's count are never written, on every ISA (AVX-512's pair kernel, and the
// two calls where the ISA has none or the block is not whole vectors).
TEST(KeyDots, PairsScoreEachBlockInTheDocumentedOrder) {
  for (kernels::Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (KvType t : kTransposedTypes) {
      for (int32_t bs : {13, 16, 32}) {
        const int64_t hd = 64;
        KvCache kv(1, static_cast<int32_t>(2 * hd), 2, t, static_cast<int32_t>(hd), bs);
        std::vector<float> keys[2][64];
        for (int32_t b = 0; b < 2; ++b)
          for (int32_t s = 0; s < bs; ++s) {
            const auto x = normal_floats(2 * hd, 40 + 64 * b + s);
            kv.store(0, b, s, x.data(), x.data());
            keys[b][s].resize(2 * hd);
            kv.read_k(0, b, s, keys[b][s].data());
          }
        // From 6 queries AVX-512 takes six at a time (key_pair_seq), the rest three or fewer.
        for (int n_q : {1, 2, 3, 4, 7, 12, 14}) {
          const auto q = normal_floats(n_q * hd, 9);
          for (int32_t keys0 : {bs / 2 + 1, bs}) {
            for (int32_t keys1 : {1, bs / 2 + 1, bs}) {
              const std::string label = std::string(kernels::isa_name(isa)) + " " +
                                        kv_type_name(t) + " block " + std::to_string(bs) + " n_q " +
                                        std::to_string(n_q) + " keys " + std::to_string(keys0) +
                                        "+" + std::to_string(keys1);
              std::vector<float> got[2] = {std::vector<float>(n_q * bs, -7.f),
                                           std::vector<float>(n_q * bs, -7.f)};
              std::vector<const float*> qs;
              std::vector<float*> outs[2];
              for (int a = 0; a < n_q; ++a) {
                qs.push_back(q.data() + a * hd);
                for (int b = 0; b < 2; ++b) outs[b].push_back(got[b].data() + a * bs);
              }
              const size_t head = kv_element_offset(t, hd) * static_cast<size_t>(bs);
              kernels::dot_keys_pair(kv_tensor_type(t), qs.data(), n_q, kv.k_block(0, 0) + head,
                                     kv.k_block(0, 1) + head, bs, keys0, keys1, hd, outs[0].data(),
                                     outs[1].data());
              for (int b = 0; b < 2; ++b)
                for (int a = 0; a < n_q; ++a)
                  for (int32_t j = 0; j < bs; ++j) {
                    const float got_score = got[b][a * bs + j];
                    if (j >= (b == 0 ? keys0 : keys1)) {
                      ASSERT_EQ(got_score, -7.f) << label << " block " << b << " key " << j;
                      continue;
                    }
                    const float want =
                        reference_score(q.data() + a * hd, keys[b][j].data() + hd, hd);
                    ASSERT_EQ(0, std::memcmp(&got_score, &want, 4))
                        << label << " block " << b << " query " << a << " key " << j;
                  }
            }
          }
        }
      }
    }
  }
}

TEST(KeyDots, Q8_0KeysHaveNoTransposedKernel) {
  const float q[32] = {};
  const float* qs[1] = {q};
  float out[16];
  float* outs[1] = {out};
  const uint8_t block[34 * 16] = {};
  EXPECT_THROW(kernels::dot_keys(gguf::TensorType::kQ8_0, qs, 1, block, 16, 16, 32, outs),
               std::invalid_argument);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
