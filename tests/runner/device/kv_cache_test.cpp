// The KV cache's element types: what a slot stores, what it costs, and the attention
// kernels that read each type directly (law: they give exactly what the F32 kernels give
// on the widened values, on every ISA, so a type changes the rounding of K and V and
// nothing else).
#include "runner/device/kv_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "runner/kernels/kernels.h"
#include "runner/util/float16.h"
#include "tests/common/isa_scope.h"
#include "tests/common/test_support.h"

namespace tandem::TANDEM_UNITY_ID {
namespace {

using testing::IsaScope;
using testing::normal_floats;
using testing::runnable_isas;

constexpr KvType kAllKvTypes[] = {KvType::kF32, KvType::kF16, KvType::kBf16, KvType::kQ8_0};

// n stored elements widened back to F32, by the GGUF dequantizer (independent of the
// kernels under test).
std::vector<float> widen(const KvCache& kv, const uint8_t* stored, int64_t n) {
  std::vector<float> out(n);
  kernels::dequantize_row(kv_tensor_type(kv.type()), stored, out.data(), n);
  return out;
}

TEST(KvCache, TypeNamesParseBack) {
  for (KvType t : kAllKvTypes) EXPECT_EQ(parse_kv_type(kv_type_name(t)), t);
  EXPECT_FALSE(parse_kv_type("fp16").has_value());
  EXPECT_FALSE(parse_kv_type("").has_value());
}

TEST(KvCache, BytesPerTokenFollowTheType) {
  // smollm2-135m's shape: 30 layers, 3 KV heads of 64.
  EXPECT_EQ(KvCache::bytes_per_token(30, 192, KvType::kF32), 30u * 2 * 192 * 4);
  EXPECT_EQ(KvCache::bytes_per_token(30, 192, KvType::kF16), 30u * 2 * 192 * 2);
  EXPECT_EQ(KvCache::bytes_per_token(30, 192, KvType::kBf16), 30u * 2 * 192 * 2);
  EXPECT_EQ(KvCache::bytes_per_token(30, 192, KvType::kQ8_0), 30u * 2 * 6 * 34);
  KvCache kv(2, 64, 3, KvType::kF16, 32);
  EXPECT_EQ(kv.slot_stride(), 128u);
  EXPECT_EQ(kv.head_bytes(), 64u);
  EXPECT_EQ(kv.bytes(), 2u * 3 * 2 * 16 * 128);
}

TEST(KvCache, StoresRoundToTheTypeAndKeepSlotsApart) {
  for (KvType t : kAllKvTypes) {
    KvCache kv(2, 64, 2, t, 32);
    const auto k = normal_floats(64, 1), v = normal_floats(64, 2), other = normal_floats(64, 3);
    kv.store(1, 1, 5, k.data(), v.data());
    kv.store(1, 1, 6, other.data(), other.data());  // the next slot
    kv.store(0, 1, 5, other.data(), other.data());  // the same slot of another layer
    std::vector<float> k_back(64);
    kv.read_k(1, 1, 5, k_back.data());
    std::vector<float> v_back(64);
    kv.read_v(1, 1, 5, v_back.data());
    for (int i = 0; i < 64; ++i) {
      switch (t) {
        case KvType::kF32:
          EXPECT_EQ(k_back[i], k[i]);
          break;
        case KvType::kF16:
          EXPECT_EQ(k_back[i], float_from_half(half_from_float(k[i])));
          break;
        case KvType::kBf16:
          EXPECT_EQ(k_back[i], float_from_bfloat(bfloat_from_float(k[i])));
          break;
        case KvType::kQ8_0: {
          // Half a step of the block's scale (amax / 127), plus the scale's F16 rounding.
          float amax = 0;
          for (int j = i / 32 * 32; j < i / 32 * 32 + 32; ++j)
            amax = std::max(amax, std::abs(k[j]));
          EXPECT_NEAR(k_back[i], k[i], amax / 127 * 0.5 + std::abs(k[i]) * 1e-3);
          break;
        }
      }
      EXPECT_NEAR(v_back[i], v[i], 0.05) << kv_type_name(t);
    }
  }
}

// A block's V (and Q8_0's K) is held by KV heads: each head's values of the block's slots
// one run, the heads' runs one after another (V's right after the block's K; kv_cache.h,
// v_head, k_head), each holding the slot's stored values of that head and nothing of
// another slot, block or layer; read_v (read_k) gathers a slot's vector back.
TEST(KvCache, ValuesAreHeldByHeadsOneRunEach) {
  for (KvType t : kAllKvTypes) {
    const int32_t hd = 32, kv_dim = 3 * hd, bs = 5;
    KvCache kv(2, kv_dim, 3, t, hd, bs);
    ASSERT_EQ(kv.head_bytes(), kv_element_offset(t, hd)) << kv_type_name(t);
    std::vector<std::vector<float>> values;
    for (int32_t s = 0; s < bs; ++s) {
      values.push_back(normal_floats(kv_dim, 40 + s));
      const auto k = normal_floats(kv_dim, 80 + s), other = normal_floats(kv_dim, 90 + s);
      kv.store(1, 2, s, k.data(), values.back().data());
      kv.store(1, 1, s, other.data(), other.data());  // the block before
      kv.store(0, 2, s, other.data(), other.data());  // the same block of another layer
    }
    const uint8_t* base = kv.v_head(1, 2, 0, 0);
    EXPECT_EQ(base, kv.k_block(1, 2) + static_cast<size_t>(bs) * kv.slot_stride());
    for (int32_t s = 0; s < bs; ++s) {
      std::vector<float> vector(kv_dim), key(kv_dim);
      kv.read_v(1, 2, s, vector.data());
      kv.read_k(1, 2, s, key.data());
      const auto k = normal_floats(kv_dim, 80 + s);
      for (int32_t h = 0; h < 3; ++h) {
        const uint8_t* run = kv.v_head(1, 2, h, s);
        EXPECT_EQ(run, base + static_cast<size_t>(h * bs + s) * kv.head_bytes());
        const auto got = widen(kv, run, hd);
        for (int32_t i = 0; i < hd; ++i) {
          EXPECT_EQ(got[i], vector[h * hd + i]) << kv_type_name(t);
          EXPECT_NEAR(got[i], values[s][h * hd + i], 0.05) << kv_type_name(t);
        }
        if (kv.k_transposed()) continue;
        const uint8_t* keys = kv.k_head(1, 2, h, s);
        EXPECT_EQ(keys, kv.k_block(1, 2) + static_cast<size_t>(h * bs + s) * kv.head_bytes());
        const auto got_k = widen(kv, keys, hd);
        for (int32_t i = 0; i < hd; ++i) {
          EXPECT_EQ(got_k[i], key[h * hd + i]) << kv_type_name(t);
          EXPECT_NEAR(got_k[i], k[h * hd + i], 0.05) << kv_type_name(t);
        }
      }
    }
  }
  EXPECT_THROW(KvCache(2, 64, 2, KvType::kF16, 48), std::invalid_argument);  // no whole heads
}

// A copy of a block's first slots (a shared prefix's partial last block, handed to a
// request that will write the rest) carries their keys and values in every type and
// layer, whatever the layout (K transposed or held by heads, V held by heads).
TEST(KvCache, CopiedSlotsReadBackAsTheOriginalsInEveryType) {
  for (KvType t : kAllKvTypes) {
    const int32_t hd = 32, kv_dim = 3 * hd, bs = 7;
    KvCache kv(2, kv_dim, 3, t, hd, bs);
    for (int32_t l = 0; l < 2; ++l)
      for (int32_t s = 0; s < bs; ++s) {
        const auto k = normal_floats(kv_dim, 300 + 10 * l + s);
        const auto v = normal_floats(kv_dim, 400 + 10 * l + s);
        kv.store(l, 2, s, k.data(), v.data());
      }
    kv.copy_slots(2, 0, 5);
    for (int32_t l = 0; l < 2; ++l)
      for (int32_t s = 0; s < 5; ++s) {
        std::vector<float> k0(kv_dim), k2(kv_dim), v0(kv_dim), v2(kv_dim);
        kv.read_k(l, 0, s, k0.data());
        kv.read_k(l, 2, s, k2.data());
        kv.read_v(l, 0, s, v0.data());
        kv.read_v(l, 2, s, v2.data());
        EXPECT_EQ(k0, k2) << kv_type_name(t) << " layer " << l << " slot " << s;
        EXPECT_EQ(v0, v2) << kv_type_name(t) << " layer " << l << " slot " << s;
      }
  }
}

// prefault zeroes the first blocks of one layer, K and V, and nothing else: the next block,
// the other layers and the local group past its own size keep what they hold.
TEST(KvCache, PrefaultZeroesTheFirstBlocksOfALayerAndNothingElse) {
  for (KvType t : kAllKvTypes) {
    const int32_t hd = 32, kv_dim = 2 * hd, bs = 4;
    // Layer 1 local, in a group of 2 blocks; layers 0 and 2 global, 3 blocks.
    KvCache kv(3, kv_dim, 3, t, hd, bs, {false, true, false}, 2);
    const auto k = normal_floats(kv_dim, 7), v = normal_floats(kv_dim, 8);
    for (int32_t l = 0; l < 3; ++l)
      for (int32_t b = 0; b < (l == 1 ? 2 : 3); ++b)
        for (int32_t s = 0; s < bs; ++s) kv.store(l, b, s, k.data(), v.data());
    std::vector<float> stored_k(kv_dim), stored_v(kv_dim);
    kv.read_k(0, 0, 0, stored_k.data());
    kv.read_v(0, 0, 0, stored_v.data());
    const size_t block_bytes = 2 * static_cast<size_t>(bs) * kv.slot_stride();
    EXPECT_EQ(kv.prefault(0, 2), 2 * block_bytes) << kv_type_name(t);
    EXPECT_EQ(kv.prefault(1, 9), 2 * block_bytes) << "clamped to the local group";
    EXPECT_EQ(kv.prefault(2, 0), 0u);
    const std::vector<float> zeros(kv_dim, 0.0f);
    std::vector<float> got(kv_dim);
    for (int32_t l = 0; l < 3; ++l)
      for (int32_t b = 0; b < (l == 1 ? 2 : 3); ++b)
        for (int32_t s = 0; s < bs; ++s) {
          const bool zeroed = (l == 0 && b < 2) || l == 1;
          kv.read_k(l, b, s, got.data());
          EXPECT_EQ(got, zeroed ? zeros : stored_k) << kv_type_name(t) << " " << l << " " << b;
          kv.read_v(l, b, s, got.data());
          EXPECT_EQ(got, zeroed ? zeros : stored_v) << kv_type_name(t) << " " << l << " " << b;
        }
  }
}

TEST(KvCache, Q8_0NeedsHeadsOfWholeBlocks) {
  EXPECT_THROW(KvCache(2, 64, 2, KvType::kQ8_0, 16), std::invalid_argument);
  EXPECT_NO_THROW(KvCache(2, 64, 2, KvType::kQ8_0, 32));
  EXPECT_NO_THROW(KvCache(2, 64, 2, KvType::kF16, 16));
}

// The typed attention kernels against the F32 ones on the widened values: bit for bit,
// on every ISA this CPU runs, for each head and over whole and partial blocks. The row
// kernels read a head's part of the vectors held by heads, slot after slot: V, and K
// where not transposed (Q8_0); both are tried.
TEST(KvCache, AttentionKernelsReadEachTypeAsItsWidenedValues) {
  for (kernels::Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (KvType t : kAllKvTypes) {
      for (int64_t hd : {32, 64}) {
        const int32_t kv_dim = static_cast<int32_t>(2 * hd), count = 13;
        KvCache kv(1, kv_dim, 1, t, static_cast<int32_t>(hd), count);
        std::vector<float> widened(static_cast<size_t>(count) * kv_dim);
        for (int32_t j = 0; j < count; ++j) {
          const auto x = normal_floats(kv_dim, 10 + j);
          kv.store(0, 0, j, x.data(), x.data());
          kv.read_v(0, 0, j, widened.data() + j * kv_dim);
        }
        const auto q = normal_floats(hd, 7), weights = normal_floats(count, 8);
        for (int head = 0; head < 2; ++head) {
          // The head's values, and (Q8_0) its keys, which hold the same rounded values.
          std::vector<std::pair<const uint8_t*, size_t>> sources = {
              {kv.v_head(0, 0, head, 0), kv.head_bytes()}};
          if (!kv.k_transposed()) sources.push_back({kv.k_head(0, 0, head, 0), kv.head_bytes()});
          const float* kf = widened.data() + head * hd;
          for (const auto& [k, stride] : sources) {
            for (int32_t n_rows : {1, 5, count}) {
              std::vector<float> got(n_rows), want(n_rows);
              kernels::dot_rows(kv_tensor_type(t), q.data(), k, static_cast<int64_t>(stride),
                                n_rows, hd, got.data());
              kernels::dot_rows(q.data(), kf, kv_dim, n_rows, hd, want.data());
              EXPECT_EQ(got, want) << kernels::isa_name(isa) << " " << kv_type_name(t);
              std::vector<float> y = normal_floats(hd, 9), y_want = y;
              kernels::axpy_rows(kv_tensor_type(t), weights.data(), k, static_cast<int64_t>(stride),
                                 n_rows, hd, y.data());
              kernels::axpy_rows(weights.data(), kf, kv_dim, n_rows, hd, y_want.data());
              EXPECT_EQ(y, y_want) << kernels::isa_name(isa) << " " << kv_type_name(t);
            }
          }
        }
      }
    }
  }
}

}  // namespace
// The grouped forms (several query heads over one KV head) give each query the one-query
// kernels' results bit for bit, on every ISA and type, for group sizes past the kernels'
// register groups, head sizes off their vector multiples, and partial groups of keys
// (over V's vectors, as above).
TEST(KvCache, GroupedAttentionKernelsGiveEachQueryItsOwnResultBitForBit) {
  for (kernels::Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (KvType t : kAllKvTypes) {
      for (int64_t hd : {32, 64, 96, 128}) {
        if (t == KvType::kQ8_0 && hd % 32 != 0) continue;
        const int32_t kv_dim = static_cast<int32_t>(hd), count = 13;
        KvCache kv(1, kv_dim, 1, t, static_cast<int32_t>(hd), count);
        for (int32_t j = 0; j < count; ++j) {
          const auto x = normal_floats(kv_dim, 30 + j), y = normal_floats(kv_dim, 60 + j);
          kv.store(0, 0, j, x.data(), y.data());
        }
        const uint8_t* values = kv.v_head(0, 0, 0, 0);
        for (int n_q : {1, 2, 3, 4, 5, 7}) {
          const auto q = normal_floats(n_q * hd, 7);
          const auto w = normal_floats(n_q * count, 8);
          const auto y0 = normal_floats(n_q * hd, 9);
          for (int32_t n_keys : {1, 3, 4, 5, count}) {
            const std::string label = std::string(kernels::isa_name(isa)) + " " + kv_type_name(t) +
                                      " hd " + std::to_string(hd) + " n_q " + std::to_string(n_q) +
                                      " keys " + std::to_string(n_keys);
            std::vector<float> got(n_q * count, -1.f), want(n_q * count, -1.f);
            kernels::dot_rows_multi(kv_tensor_type(t), q.data(), hd, n_q, values, kv.head_bytes(),
                                    n_keys, hd, got.data(), count);
            std::vector<float> y = y0, y_want = y0;
            kernels::axpy_rows_multi(kv_tensor_type(t), w.data(), count, n_q, values,
                                     kv.head_bytes(), n_keys, hd, y.data(), hd);
            for (int a = 0; a < n_q; ++a) {
              kernels::dot_rows(kv_tensor_type(t), q.data() + a * hd, values, kv.head_bytes(),
                                n_keys, hd, want.data() + a * count);
              kernels::axpy_rows(kv_tensor_type(t), w.data() + a * count, values, kv.head_bytes(),
                                 n_keys, hd, y_want.data() + a * hd);
            }
            ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4)) << label;
            ASSERT_EQ(0, std::memcmp(y.data(), y_want.data(), y.size() * 4)) << label;
          }
        }
      }
    }
  }
}

// A prefill tile widens a block's values once (widen_rows) and sums its queries over the F32
// rows: widen_rows must give the dequantizer's values exactly, and axpy_rows_multi over
// those rows the stored type's bits, on every ISA, for head sizes off the kernels' vector
// multiples (and widen_rows' tails) and every count of keys (else a prompt's tokens would differ
// from decode's); axpy_rows_gathered over them gives each row the same bits. Q8_0's keys,
// held like its values, are widened once for a tile too: dot_rows_multi over the widened
// rows gives the stored keys' scores.
TEST(KvCache, ValuesWidenedOnceGiveTheStoredTypesSumsBitForBit) {
  for (kernels::Isa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (KvType t : kAllKvTypes) {
      for (int64_t hd : {32, 36, 40, 64, 80, 96, 128}) {
        if (t == KvType::kQ8_0 && hd % 32 != 0) continue;
        const int32_t kv_dim = static_cast<int32_t>(2 * hd), count = 13;
        KvCache kv(1, kv_dim, 1, t, static_cast<int32_t>(hd), count);
        for (int32_t j = 0; j < count; ++j) {
          const auto x = normal_floats(kv_dim, 90 + j);
          kv.store(0, 0, j, x.data(), x.data());
        }
        const std::string label = std::string(kernels::isa_name(isa)) + " " + kv_type_name(t) +
                                  " hd " + std::to_string(hd);
        // Rows 2 .. count - 1 of the second head, into rows kv_dim + 3 floats apart.
        const int64_t width = kv_dim + 3, first = 2, n_rows = count - first;
        std::vector<float> wide(static_cast<size_t>(count * width), -7.f);
        kernels::widen_rows(kv_tensor_type(t), kv.v_head(0, 0, 1, first), kv.head_bytes(), n_rows,
                            hd, wide.data() + first * width, width);
        for (int64_t j = first; j < count; ++j) {
          std::vector<float> w(kv_dim);
          kv.read_v(0, 0, static_cast<int32_t>(j), w.data());
          ASSERT_EQ(0, std::memcmp(wide.data() + j * width, w.data() + hd, hd * 4)) << label;
          ASSERT_EQ(wide[j * width + hd], -7.f) << label << ": wrote past n";
        }
        if (!kv.k_transposed()) {
          std::vector<float> keys(static_cast<size_t>(n_rows * hd));
          kernels::widen_rows(kv_tensor_type(t), kv.k_head(0, 0, 1, first), kv.head_bytes(), n_rows,
                              hd, keys.data(), hd);
          for (int n_q : {1, 3, 4, 7}) {
            const auto q = normal_floats(n_q * hd, 11);
            std::vector<float> got(n_q * count, -1.f), want(n_q * count, -1.f);
            kernels::dot_rows_multi(gguf::TensorType::kF32, q.data(), hd, n_q, keys.data(), hd * 4,
                                    n_rows, hd, got.data(), count);
            kernels::dot_rows_multi(kv_tensor_type(t), q.data(), hd, n_q, kv.k_head(0, 0, 1, first),
                                    kv.head_bytes(), n_rows, hd, want.data(), count);
            ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4))
                << label << " keys, n_q " << n_q;
          }
        }
        for (int n_q : {1, 2, 3, 4, 7, 13}) {
          const auto w = normal_floats(n_q * count, 8), y0 = normal_floats(n_q * hd, 9);
          for (int64_t n_keys : {int64_t{1}, int64_t{4}, n_rows}) {
            std::vector<float> y = y0, y_want = y0;
            kernels::axpy_rows_multi(gguf::TensorType::kF32, w.data(), count, n_q,
                                     wide.data() + first * width, width * 4, n_keys, hd, y.data(),
                                     hd);
            kernels::axpy_rows_multi(kv_tensor_type(t), w.data(), count, n_q,
                                     kv.v_head(0, 0, 1, first), kv.head_bytes(), n_keys, hd,
                                     y_want.data(), hd);
            ASSERT_EQ(0, std::memcmp(y.data(), y_want.data(), y.size() * 4))
                << label << " n_q " << n_q << " keys " << n_keys;
            // The same rows through axpy_rows_gathered (a tile's queries over a block they
            // all see), given in reverse order.
            std::vector<float> y_gathered = y0;
            std::vector<const float*> ws;
            std::vector<float*> ys;
            for (int a = n_q - 1; a >= 0; --a) {
              ws.push_back(w.data() + a * count);
              ys.push_back(y_gathered.data() + a * hd);
            }
            kernels::axpy_rows_gathered(ws.data(), ys.data(), n_q, wide.data() + first * width,
                                        width, n_keys, hd);
            ASSERT_EQ(0, std::memcmp(y_gathered.data(), y_want.data(), y.size() * 4))
                << label << " gathered, n_q " << n_q << " keys " << n_keys;
          }
        }
      }
    }
  }
  EXPECT_THROW(kernels::widen_rows(gguf::TensorType::kQ4_0, nullptr, 0, 0, 32, nullptr, 32),
               std::invalid_argument);
}

}  // namespace tandem::TANDEM_UNITY_ID
