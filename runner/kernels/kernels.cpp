// Kernel dispatch (which ISA runs), weight packing into the panel layout described in
// isa.h and the parallel split of a matmul over output panels. The arithmetic itself
// lives in avx2/matmul.cpp and avx512/matmul.cpp, over the loops of tile_loop.h and
// vector_loops.h; the scalar F16/BF16 conversions are runner/util/float16.h's.
#include "runner/kernels/kernels.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runner/gguf/quant.h"
#include "runner/kernels/isa.h"
#include "runner/kernels/quant_matmul.h"
#include "runner/kernels/quantize_q8.h"
#include "runner/kernels/shared_prep.h"
#include "runner/util/float16.h"
#include "runner/util/huge_pages.h"

namespace tandem::kernels {

namespace {
bool read_once_into_l2();
}  // namespace
bool detail::g_read_once_into_l2 = read_once_into_l2();

using detail::kPanel;
using detail::PackedType;
using detail::QuantKind;

namespace {

// Ranges of outputs a matmul is split into, per pool thread. A decode step of one row
// streams its weights from memory, and each range restarts that stream cold (the
// prefetchers and the software prefetch ahead start over): one range per thread there was
// 10-20% faster per step (BF16 and Q5_0 `BM_DecodeStep` M:1, and a Q4_K_M / BF16
// `tandem bench` at one stream). Batches compute more per byte and keep two per thread, so
// that a thread the hypervisor delays leaves an unclaimed range to the other; four (shorter
// streams, more restarts) were 3-10% slower on a Zen 5 (`BM_DecodeStep` BF16 M:16 and M:32,
// and the AVX2 path's BF16 and Q8_0 at M:8 and M:32). (The quantized decode step and the
// 16-bit and F32 batches split in guided rounds instead, kGuidedRounds below; two ranges a
// thread remain for the quantized batches' lane form.)
constexpr int64_t tasks_per_thread(int64_t n_rows) { return n_rows == 1 ? 1 : 2; }

// Whether the CPU has AMX-BF16 and the kernel lets this process use the tile state. Linux
// keeps AMX's 8 KiB of tile data off until a process asks (arch_prctl ARCH_REQ_XCOMP_PERM for
// XTILEDATA, once, for all its threads); an older kernel refuses, and the tile instructions
// would fault, so the BF16 matmuls then stay on AVX512-BF16.
bool amx_granted() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  constexpr unsigned kAmxBf16 = 1u << 22, kAmxTile = 1u << 24;
  if ((edx & kAmxBf16) == 0 || (edx & kAmxTile) == 0) return false;
  constexpr long kReqXcompPerm = 0x1023;  // ARCH_REQ_XCOMP_PERM
  constexpr long kXtiledata = 18;         // XFEATURE_XTILEDATA
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXtiledata) == 0;
}

// isa.h, g_read_once_into_l2: on an Intel CPU, unless TANDEM_PREFETCH=nta|l2 says otherwise
// (for comparisons).
bool read_once_into_l2() {
  const char* forced = std::getenv("TANDEM_PREFETCH");
  if (forced != nullptr && std::string_view(forced) == "l2") return true;
  if (forced != nullptr && std::string_view(forced) == "nta") return false;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
  char vendor[12];
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  return std::string_view(vendor, 12) == "GenuineIntel";
}

Isa hardware_isa() {
  static const Isa isa = [] {
    __builtin_cpu_init();
    // F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports has no "f16c".
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
    if (!avx2) {
      std::fputs("tandem: this CPU lacks AVX2+FMA+F16C, which the kernels need\n", stderr);
      std::abort();
    }
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    if (!avx512) return Isa::kAvx2;
    if (!__builtin_cpu_supports("avx512bf16")) return Isa::kAvx512;
    return amx_granted() ? Isa::kAmx : Isa::kAvx512Bf16;
  }();
  return isa;
}

// The hardware's ISA, lowered by TANDEM_ISA when that names a lower one.
Isa default_isa() {
  static const Isa isa = [] {
    const Isa hw = hardware_isa();
    const char* env = std::getenv("TANDEM_ISA");
    if (env == nullptr || *env == '\0') return hw;
    for (Isa candidate : {Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16, Isa::kAmx}) {
      if (std::string_view(env) == isa_name(candidate)) return std::min(candidate, hw);
    }
    std::fprintf(
        stderr, "tandem: ignoring TANDEM_ISA=%s (expected avx2, avx512, avx512bf16 or amx)\n", env);
    return hw;
  }();
  return isa;
}

std::atomic<int> g_isa_override{-1};

// AVX512-BF16's kernels with the BF16 matmul on AMX tiles.
const detail::IsaKernels& amx_kernels() {
  static const detail::IsaKernels kernels = [] {
    detail::IsaKernels k = detail::avx512bf16_kernels();
    k.matmul[static_cast<int>(PackedType::kBf16Pairs)] = detail::amx_bf16_panel_loop();
    return k;
  }();
  return kernels;
}

const detail::IsaKernels& active_kernels() {
  switch (detected_isa()) {
    case Isa::kAmx:
      return amx_kernels();
    case Isa::kAvx512Bf16:
      return detail::avx512bf16_kernels();
    case Isa::kAvx512:
      return detail::avx512_kernels();
    case Isa::kAvx2:
      break;
  }
  return detail::avx2_kernels();
}

// Zeroed storage on huge pages (runner/util/huge_pages.h): the weights are streamed end to
// end every step and 4 KiB pages would cost a TLB miss every 4 KiB.
struct AlignedBuffer {
  LargeBytes bytes;
  uint8_t* data = nullptr;
  size_t size = 0;

  // Zeroed to the next 64 bytes: a vector load at the end may read into them. Where the
  // caller writes all of the n bytes itself (`filled`), only the padding is zeroed: a
  // model's quantized weights are copied in whole, and zeroing them first wrote every
  // page twice at load.
  explicit AlignedBuffer(size_t n, bool filled = false)
      : bytes(allocate_large(padded(n))), data(bytes.get()), size(n) {
    const size_t from = filled ? n : 0;
    std::memset(data + from, 0, padded(n) - from);
  }
  static size_t padded(size_t n) { return (std::max<size_t>(n, 1) + 63) / 64 * 64; }
};

size_t panel_bytes_for(PackedType type, int64_t n_in) {
  switch (type) {
    case PackedType::kF32:
      return static_cast<size_t>(n_in) * kPanel * 4;
    case PackedType::kF16:
      return static_cast<size_t>(n_in) * kPanel * 2;
    case PackedType::kBf16Pairs:
      return static_cast<size_t>(detail::padded_pairs(n_in)) * kPanel * 4;
  }
  return 0;
}

bool has_avx512vnni() {
  static const bool vnni = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") != 0;
  }();
  return vnni;
}

// AVX-VNNI from CPUID leaf 7 subleaf 1 (EAX bit 4): clang's __builtin_cpu_supports has no
// "avxvnni". The OS's saving of the 256-bit state is hardware_isa()'s AVX2 check.
bool has_avx_vnni() {
  static const bool vnni = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
  }();
  return vnni;
}

// AMX-INT8 from CPUID leaf 7 (EDX bit 25); the tile state's permission is amx_granted's, which
// Isa::kAmx implies.
bool has_amx_int8() {
  static const bool int8 = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx & (1u << 25)) != 0;
  }();
  return int8;
}

// The quantized types with integer kernels (quant_matmul.h); their rows stay in GGUF blocks.
std::optional<QuantKind> quant_kind_of(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::kQ4_0:
      return QuantKind::kQ4_0;
    case gguf::TensorType::kQ4_1:
      return QuantKind::kQ4_1;
    case gguf::TensorType::kQ5_0:
      return QuantKind::kQ5_0;
    case gguf::TensorType::kQ5_1:
      return QuantKind::kQ5_1;
    case gguf::TensorType::kQ2_K:
      return QuantKind::kQ2_K;
    case gguf::TensorType::kQ3_K:
      return QuantKind::kQ3_K;
    case gguf::TensorType::kQ4_K:
      return QuantKind::kQ4_K;
    case gguf::TensorType::kQ5_K:
      return QuantKind::kQ5_K;
    case gguf::TensorType::kQ6_K:
      return QuantKind::kQ6_K;
    case gguf::TensorType::kIQ4_NL:
      return QuantKind::kIq4Nl;
    case gguf::TensorType::kIQ4_XS:
      return QuantKind::kIq4Xs;
    case gguf::TensorType::kQ8_0:
      return QuantKind::kQ8_0;
    default:
      return std::nullopt;
  }
}

// The activations each kind multiplies, as ggml's vec_dot_type: Q8_1 for the types with a
// min, Q8_K for the super-block types, Q8_0 for the rest.
detail::ActFormat act_format_of(QuantKind kind) {
  switch (kind) {
    case QuantKind::kQ4_1:
    case QuantKind::kQ5_1:
      return detail::ActFormat::kQ8_1;
    case QuantKind::kQ2_K:
    case QuantKind::kQ3_K:
    case QuantKind::kQ4_K:
    case QuantKind::kQ5_K:
    case QuantKind::kQ6_K:
    case QuantKind::kIq4Xs:
      return detail::ActFormat::kQ8_K;
    default:
      return detail::ActFormat::kQ8_0;
  }
}

// F16 and BF16 (in pairs of k) are packed as they are stored, and so are the types
// quant_kind_of names (as GGUF rows, Q8_0 among them). Anything else, and a mix of types, is
// widened exactly to F32 (gguf::dequantize_row), so it runs correctly if not fast.
PackedType packed_type_of(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::kF16:
      return PackedType::kF16;
    case gguf::TensorType::kBF16:
      return PackedType::kBf16Pairs;
    default:
      return PackedType::kF32;
  }
}

size_t row_bytes(gguf::TensorType type, int64_t n_in) {
  return static_cast<size_t>(gguf::tensor_bytes(type, static_cast<uint64_t>(n_in)));
}

}  // namespace

const char* isa_name(Isa isa) {
  constexpr const char* kNames[] = {"avx2", "avx512", "avx512bf16", "amx"};  // in Isa's order
  const auto i = static_cast<size_t>(isa);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

Isa detected_isa() {
  const int forced = g_isa_override.load(std::memory_order_relaxed);
  return forced >= 0 ? static_cast<Isa>(forced) : default_isa();
}

bool quant_uses_vnni() { return detected_isa() != Isa::kAvx2 && has_avx512vnni(); }

bool quant_uses_amx() { return detected_isa() == Isa::kAmx && has_amx_int8(); }

bool set_isa_for_testing(Isa isa) {
  if (isa > hardware_isa()) return false;
  g_isa_override.store(static_cast<int>(isa), std::memory_order_relaxed);
  return true;
}

struct PackedWeights::Impl {
  PackedType type = PackedType::kF32;
  int64_t n_out = 0;
  int64_t n_in = 0;
  size_t panel_bytes = 0;
  std::optional<QuantKind> quant;  // set: GGUF rows of row_bytes, the quantized path
  size_t row_bytes = 0;
  bool interleaved = false;  // the rows interleaved by sixteen (quant_interleave.h)
  std::unique_ptr<AlignedBuffer> buffer;
  // Sources of more than one type: each run of one type packed alone, its outputs the next
  // ones in order (no buffer of its own).
  std::vector<PackedWeights> parts;
};

PackedWeights::PackedWeights() : impl_(std::make_unique<Impl>()) {}
PackedWeights::PackedWeights(PackedWeights&&) noexcept = default;
PackedWeights& PackedWeights::operator=(PackedWeights&&) noexcept = default;
PackedWeights::~PackedWeights() = default;
int64_t PackedWeights::n_out() const { return impl_->n_out; }
int64_t PackedWeights::n_in() const { return impl_->n_in; }
size_t PackedWeights::bytes() const {
  size_t total = impl_->buffer ? impl_->buffer->size : 0;
  for (const PackedWeights& part : impl_->parts) total += part.bytes();
  return total;
}

Peak PackedWeights::peak() const {
  if (!impl_->parts.empty()) {  // the part with the most outputs sets the pace
    const PackedWeights* widest = &impl_->parts[0];
    for (const PackedWeights& part : impl_->parts)
      if (part.n_out() > widest->n_out()) widest = &part;
    return widest->peak();
  }
  if (impl_->quant) return Peak::kInt8Dot;  // AVX512-VNNI's step or AVX2's (ceilings.h)
  const bool bf16_dot = active_kernels().to_bf16_pairs != nullptr;
  if (impl_->type != PackedType::kBf16Pairs || !bf16_dot) return Peak::kF32Fma;
  return detected_isa() == Isa::kAmx ? Peak::kAmxBf16 : Peak::kBf16Dot;
}

// The rows of every source one after another, as they are stored.
PackedWeights PackedWeights::pack_quantized(std::span<const WeightSource> sources, int64_t n_out) {
  PackedWeights packed;
  Impl& impl = *packed.impl_;
  impl.quant = quant_kind_of(sources[0].type);
  impl.n_out = n_out;
  impl.n_in = sources[0].n_in;
  impl.row_bytes = row_bytes(sources[0].type, impl.n_in);
  impl.buffer = std::make_unique<AlignedBuffer>(impl.row_bytes * n_out, /*filled=*/true);
  impl.interleaved = detail::interleaves(*impl.quant, n_out, quant_uses_vnni());
  // Interleaved, the rows are moved from one run of stored rows: the file's own bytes where
  // there is one source (no copy of a matrix that may be hundreds of MB), else the sources
  // joined first (a group of sixteen may span two).
  std::vector<uint8_t> joined;
  const uint8_t* stored = static_cast<const uint8_t*>(sources[0].data);
  if (!impl.interleaved || sources.size() > 1) {
    if (impl.interleaved) joined.resize(impl.row_bytes * n_out);
    uint8_t* dst = impl.interleaved ? joined.data() : impl.buffer->data;
    for (const WeightSource& s : sources) {
      std::memcpy(dst, s.data, impl.row_bytes * s.n_out);
      dst += impl.row_bytes * s.n_out;
    }
    stored = joined.data();
  }
  if (impl.interleaved)
    detail::interleave_rows(*impl.quant, stored, n_out, impl.n_in, impl.buffer->data);
  return packed;
}

// Runs of one type, each packed as that type alone: llama-quantize's mixes put attn_v in
// another type than attn_q and attn_k on some layers (Q4_K_M: Q6_K, or Q8_0 where a row is
// not whole super-blocks), and widening the fused matrix to F32 would quadruple or worse
// its memory and leave the integer path.
PackedWeights PackedWeights::pack_parts(std::span<const WeightSource> sources, int64_t n_out) {
  PackedWeights packed;
  Impl& impl = *packed.impl_;
  impl.n_out = n_out;
  impl.n_in = sources[0].n_in;
  size_t begin = 0;
  for (size_t i = 1; i <= sources.size(); ++i) {
    if (i < sources.size() && sources[i].type == sources[begin].type) continue;
    impl.parts.push_back(pack(sources.subspan(begin, i - begin)));
    begin = i;
  }
  return packed;
}

namespace {

// Whether every F16 weight of the sources is exactly a BF16 value. An F16 GGUF converted
// from a BF16 checkpoint (most published models are trained and released in BF16) holds
// only such values, so packing it as BF16 loses nothing and gains the BF16 dot products
// (twice the F32 FMA rate). Random or F32-born F16 weights fail this and stay exact.
bool f16_values_are_bf16(std::span<const WeightSource> sources) {
  for (const WeightSource& s : sources) {
    const auto* h = static_cast<const uint16_t*>(s.data);
    const int64_t n = s.n_in * s.n_out;
    for (int64_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, h + i, 2);
      const float f = float_from_half(v);
      if (float_from_bfloat(bfloat_from_float(f)) != f && f == f) return false;
    }
  }
  return true;
}

}  // namespace

PackedWeights PackedWeights::pack(std::span<const WeightSource> sources) {
  if (sources.empty()) throw std::invalid_argument("PackedWeights::pack: no sources");
  const int64_t n_in = sources[0].n_in;
  int64_t n_out = 0;
  bool same_type = true;
  for (const WeightSource& s : sources) {
    if (s.n_in != n_in || s.n_in <= 0 || s.n_out <= 0 || s.data == nullptr) {
      throw std::invalid_argument("PackedWeights::pack: sources need the same n_in, data and rows");
    }
    same_type = same_type && s.type == sources[0].type;
    n_out += s.n_out;
  }
  for (const WeightSource& s : sources) {
    if (n_in % gguf::block_elements(s.type) != 0) {
      throw std::invalid_argument(std::string("PackedWeights::pack: ") + gguf::type_name(s.type) +
                                  " rows must be whole blocks");
    }
  }
  if (!same_type) return pack_parts(sources, n_out);
  if (quant_kind_of(sources[0].type)) return pack_quantized(sources, n_out);
  PackedType type = packed_type_of(sources[0].type);
  if (type == PackedType::kF16 && f16_values_are_bf16(sources)) type = PackedType::kBf16Pairs;
  PackedWeights packed;
  Impl& impl = *packed.impl_;
  impl.type = type;
  impl.n_out = n_out;
  impl.n_in = n_in;
  impl.panel_bytes = panel_bytes_for(type, n_in);
  const int64_t n_panels = (n_out + kPanel - 1) / kPanel;
  impl.buffer = std::make_unique<AlignedBuffer>(impl.panel_bytes * n_panels);

  std::vector<float> widened(type == PackedType::kF32 ? n_in : 0);
  int64_t o = 0;
  for (const WeightSource& s : sources) {
    const size_t stride = row_bytes(s.type, n_in);
    for (int64_t r = 0; r < s.n_out; ++r, ++o) {
      const uint8_t* src = static_cast<const uint8_t*>(s.data) + r * stride;
      uint8_t* panel = impl.buffer->data + (o / kPanel) * impl.panel_bytes;
      const int64_t lane = o % kPanel;
      switch (type) {
        case PackedType::kF32: {
          dequantize_row(s.type, src, widened.data(), n_in);
          float* dst = reinterpret_cast<float*>(panel);
          for (int64_t k = 0; k < n_in; ++k) dst[k * kPanel + lane] = widened[k];
          break;
        }
        case PackedType::kF16: {
          uint16_t* dst = reinterpret_cast<uint16_t*>(panel);
          for (int64_t k = 0; k < n_in; ++k) std::memcpy(&dst[k * kPanel + lane], src + 2 * k, 2);
          break;
        }
        case PackedType::kBf16Pairs: {
          uint16_t* dst = reinterpret_cast<uint16_t*>(panel);
          for (int64_t k = 0; k < n_in; ++k) {
            uint16_t v;
            std::memcpy(&v, src + 2 * k, 2);
            // F16 here holds only BF16 values (f16_values_are_bf16): converted exactly.
            if (s.type == gguf::TensorType::kF16) v = bfloat_from_float(float_from_half(v));
            dst[(k / 2) * 2 * kPanel + lane * 2 + (k & 1)] = v;
          }
          break;
        }
      }
    }
  }
  return packed;
}

namespace {

using detail::kRowsToSharePrep;
using detail::SharedPrep;

// The quantized path: activations quantized once per call (into a buffer that lives as
// long as the submitting thread; from kRowsToSharePrep rows by the tasks together), then
// ranges of outputs over the pool. The ranges are whole multiples of kQuantUnit outputs
// (the rows decoded together), not of the 64-wide panels, so that a 576-output matrix
// splits as evenly over two threads at M = 1 as at 32.
constexpr int64_t kQuantUnit = 16;
// Interleaved weights (quant_interleave.h) are computed a whole group of rows at a time: a
// range that split a group would compute it on both sides.
static_assert(kQuantUnit % detail::kInterleaveRows == 0);
// From how many rows a batch takes the lane form (quant_lanes.h); below, the streamed form
// (quant_streams.h: each span decoded in registers once for every row). AVX-512 VNNI: from 9,
// AVX2: from 4. The streamed form against the lane forms it replaced (VNNI's folded one up
// to 8 rows), on a Zen 5, alternating: `BM_DecodeStep<kQ5_0>` VNNI M:2 5.79 -> 3.92 ms, M:3
// 6.27 -> 4.71; `BM_QuantMatmul` 2048 x 2048 in L2, medians of 6-8 rounds, streamed / lane:
// M:5 0.62-0.65, M:6 0.70-0.73, M:7 0.67-0.78, M:8 0.76-0.85 (from DRAM 0.88-0.91); AVX2
// (TANDEM_ISA=avx2) M:2 7.85 -> 5.90 (the row form before), M:3 9.08 -> 7.38, but M:4 9.2-9.4
// -> 10.4-10.7, so AVX2 keeps its lane form there.
// From how many rows a batch of interleaved quantized weights takes AMX-INT8: one tile of
// activation rows. At 16 the two forms were level (`bench_matmul` `BM_QuantMatmul` in L2,
// Q5_0 576 wide 64-69 -> 61-62 us, Q4_K 88 -> 84), at 32 AMX ahead (Q5_0 125-130 -> 107-118,
// Q4_K 161-166 -> 115-122, Q6_K 176 -> 104).
constexpr int64_t kAmxQuantRows = 16;

int64_t lanes_from_rows(bool vnni) {
  return (vnni ? detail::kVnniStreamRows : detail::kAvx2StreamRows) + 1;
}

// A quantized decode step's ranges (one activation row), and a 16-bit or F32 batch's
// (matmul below), guided: a first round of one range per thread holds 70% of the outputs,
// then a round of 20% and one of 10%, each shared evenly by the threads. Ranges are claimed
// in order, so whichever thread finishes its share first takes the next, and the two end
// within a small range of each other; with one range per thread, the thread the hypervisor
// or the other work on its core slowed held the other idle at every step's 120-odd matmuls
// (22% of both threads' time spun in the pool, `perf` of `tandem generate` on smollm2
// Q4_K_M). A round's share in thousandths, cumulative:
constexpr int64_t kGuidedRounds[] = {0, 700, 900, 1000};
constexpr int64_t kGuidedRoundCount = 3;

// Where task t of a guided split over `threads` starts, in parts of 1000 * threads.
int64_t guided_start(int64_t t, int64_t threads) {
  const int64_t round = t / threads, i = t % threads;
  if (round >= kGuidedRoundCount) return 1000 * threads;
  const int64_t share = kGuidedRounds[round + 1] - kGuidedRounds[round];
  return kGuidedRounds[round] * threads + i * share;
}

// The first unit of task t of n_tasks (n_tasks == the end): even ranges, or, where the
// matmul is guided, the rounds above.
int64_t range_start(int64_t t, int64_t n_tasks, int64_t n_units, int64_t guided_threads) {
  if (guided_threads == 0) return t * n_units / n_tasks;
  return n_units * guided_start(t, guided_threads) / (1000 * guided_threads);
}

void quant_matmul(ThreadPool& pool, const PackedWeights::Impl& impl, const float* x, int64_t n_rows,
                  float* y) {
  const bool vnni = quant_uses_vnni();  // picks both the activation layout and the loop
  // A few rows stream (quant_streams.h); more are laid out across lanes (quant_lanes.h).
  const bool streamed = n_rows < lanes_from_rows(vnni);
  // Interleaved weights take row-major activations at every batch (quant_interleaved.h).
  const bool row_major = streamed || impl.interleaved;
  // Batches of interleaved weights on the tile unit where the CPU has AMX-INT8: the same
  // bits (amx/quant_matmul.cpp), so the choice may follow speed alone.
  const bool amx = impl.interleaved && n_rows >= kAmxQuantRows && quant_uses_amx();
  thread_local detail::QuantizedActivations activations;
  struct Quantizing {
    detail::ActFormat format;
    const float* x;
    detail::QuantizedActivations* out;
    static void work(const void* ctx, int64_t begin, int64_t end) {
      const auto* q = static_cast<const Quantizing*>(ctx);
      detail::quantize_blocks(q->format, q->x, begin, end, *q->out);
    }
  } quantizing{act_format_of(*impl.quant), x, &activations};
  // Batches multiply activations laid out across rows (quant_lanes.h), copied so as they
  // are quantized.
  detail::prepare_rows(quantizing.format, n_rows, impl.n_in, activations, !row_major);
  struct Job {
    detail::QuantMatmulArgs args;
    detail::QuantLoop loop;
    int64_t n_units;
    int64_t n_tasks;
    int64_t guided_threads;  // 0: even ranges
  } job;
  job.args = {*impl.quant,     impl.buffer->data, impl.row_bytes, impl.n_in,
              impl.n_out,      activations.view,  n_rows,         y,
              impl.interleaved};
  job.loop = amx              ? detail::amx_quant_loop()
             : vnni           ? detail::avx512vnni_quant_loop()
             : has_avx_vnni() ? detail::avxvnni_quant_loop()
                              : detail::avx2_quant_loop();
  job.n_units = (impl.n_out + kQuantUnit - 1) / kQuantUnit;
  job.n_tasks = std::min<int64_t>(job.n_units, tasks_per_thread(n_rows) * pool.size());
  // Guided where every round's ranges still hold a unit or more.
  const bool guided = streamed && pool.size() > 1 &&
                      job.n_units * (kGuidedRounds[3] - kGuidedRounds[2]) >= 1000 * pool.size();
  job.guided_threads = guided ? pool.size() : 0;
  if (guided) job.n_tasks = kGuidedRoundCount * pool.size();
  auto range = [](const Job& j, int64_t t) {
    const int64_t begin = range_start(t, j.n_tasks, j.n_units, j.guided_threads) * kQuantUnit;
    const int64_t end = std::min(
        range_start(t + 1, j.n_tasks, j.n_units, j.guided_threads) * kQuantUnit, j.args.n_out);
    if (begin < end) j.loop(j.args, begin, end);
  };
  SharedPrep prep;
  prep.start(&Quantizing::work, &quantizing,
             n_rows * (impl.n_in / detail::act_block(quantizing.format)),
             job.n_tasks > 1 && n_rows >= kRowsToSharePrep);
  if (job.n_tasks <= 1) return range(job, 0);
  const Job* j = &job;
  SharedPrep* p = &prep;
  pool.parallel_for(job.n_tasks, [j, p, range](int64_t t) {
    p->help_and_wait();
    range(*j, t);
  });
}

}  // namespace

void* detail::quant_scratch(size_t bytes) {
  thread_local std::vector<uint8_t> scratch;
  if (scratch.size() < bytes + 64) scratch.resize(bytes + 64);  // room to align
  const auto at = reinterpret_cast<uintptr_t>(scratch.data());
  return scratch.data() + (64 - at % 64) % 64;
}

void matmul(ThreadPool& pool, const PackedWeights& w, const float* x, int64_t n_rows, float* y) {
  const PackedWeights::Impl& impl = w.impl();
  if (n_rows <= 0 || impl.n_out == 0) return;
  if (!impl.parts.empty()) {
    // Each part into a scratch of its own width, then copied into its columns of y.
    thread_local std::vector<float> part_y;
    int64_t offset = 0;
    for (const PackedWeights& part : impl.parts) {
      const int64_t n = part.n_out();
      if (part_y.size() < static_cast<size_t>(n_rows * n)) part_y.resize(n_rows * n);
      matmul(pool, part, x, n_rows, part_y.data());
      for (int64_t m = 0; m < n_rows; ++m)
        std::memcpy(y + m * impl.n_out + offset, part_y.data() + m * n, n * sizeof(float));
      offset += n;
    }
    return;
  }
  if (impl.quant) return quant_matmul(pool, impl, x, n_rows, y);
  const detail::IsaKernels& isa = active_kernels();

  struct Job {
    detail::MatmulArgs args;
    detail::PanelLoop loop;
    int64_t n_tasks;
    int64_t guided_threads;  // 0: even ranges
  } job;
  job.args.panels = impl.buffer->data;
  job.args.panel_bytes = impl.panel_bytes;
  job.args.n_in = impl.n_in;
  job.args.n_out = impl.n_out;
  job.args.x = x;
  job.args.n_rows = n_rows;
  job.args.y = y;
  job.loop = isa.matmul[static_cast<int>(impl.type)];

  // A few contiguous ranges of panels per thread (tasks_per_thread): each task's weight
  // stream stays long and sequential (what the prefetchers like). A batch splits in guided
  // rounds (kGuidedRounds), as the quantized decode step does, its ranges cut between row
  // tiles where they end inside a panel (tile_loop.h, TaskShare): with two ranges a thread,
  // the submitter waited for the other thread 7% of its time in a 32-row BF16 step's
  // matmuls (the other thread's ranges ran 4% slower), a range's time at the end of each.
  const int64_t n_panels = (impl.n_out + kPanel - 1) / kPanel;
  job.n_tasks = std::min<int64_t>(n_panels, tasks_per_thread(n_rows) * pool.size());
  job.guided_threads = n_rows > 1 && pool.size() > 1 ? pool.size() : 0;
  if (job.guided_threads > 0) job.n_tasks = kGuidedRoundCount * pool.size();
  // Activations rounded to BF16 once per call into a buffer that lives as long as the
  // thread, so steps allocate nothing: few rows on the submitting thread, many shared by
  // the tasks (below).
  struct Rounding {
    decltype(isa.to_bf16_pairs) round;
    const float* x;
    uint32_t* pairs;
    int64_t n_in;
    static void work(const void* ctx, int64_t begin, int64_t end) {
      const auto* r = static_cast<const Rounding*>(ctx);
      r->round(r->x + begin * r->n_in, end - begin, r->n_in,
               r->pairs + begin * detail::padded_pairs(r->n_in));
    }
  } rounding{isa.to_bf16_pairs, x, nullptr, impl.n_in};
  SharedPrep prep;
  if (impl.type == PackedType::kBf16Pairs && isa.to_bf16_pairs != nullptr) {
    thread_local std::vector<uint32_t> pairs;
    const size_t needed = static_cast<size_t>(n_rows) * detail::padded_pairs(impl.n_in);
    if (pairs.size() < needed) pairs.resize(needed);
    job.args.x_pairs = rounding.pairs = pairs.data();
    prep.start(&Rounding::work, &rounding, n_rows, job.n_tasks > 1 && n_rows >= kRowsToSharePrep);
  }
  if (job.n_tasks <= 1) {
    job.loop(job.args, 0, 1, 1);
    return;
  }
  const Job* j = &job;  // two pointers: std::function keeps them without allocating
  SharedPrep* p = &prep;
  pool.parallel_for(job.n_tasks, [j, p](int64_t t) {
    p->help_and_wait();
    if (j->guided_threads == 0) return j->loop(j->args, t, t + 1, j->n_tasks);
    j->loop(j->args, guided_start(t, j->guided_threads), guided_start(t + 1, j->guided_threads),
            1000 * j->guided_threads);
  });
}

void dequantize_row(gguf::TensorType type, const void* src, float* dst, int64_t n) {
  if (n % gguf::block_elements(type) != 0) {
    throw std::invalid_argument(std::string("dequantize_row: ") + gguf::type_name(type) +
                                " needs whole blocks");
  }
  gguf::dequantize_row(type, src, n, dst);
}

float dot(const float* a, const float* b, int64_t n) { return active_kernels().dot(a, b, n); }

void axpy(float a, const float* x, float* y, int64_t n) { active_kernels().axpy(a, x, y, n); }

void dot_rows(const float* q, const float* k, int64_t stride, int64_t count, int64_t n,
              float* out) {
  active_kernels().dot_rows(q, k, stride, count, n, out);
}

void axpy_rows(const float* w, const float* v, int64_t stride, int64_t count, int64_t n, float* y) {
  active_kernels().axpy_rows(w, v, stride, count, n, y);
}

namespace {
int kv_elements(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::kF32:
      return static_cast<int>(detail::KvElements::kF32);
    case gguf::TensorType::kF16:
      return static_cast<int>(detail::KvElements::kF16);
    case gguf::TensorType::kBF16:
      return static_cast<int>(detail::KvElements::kBf16);
    case gguf::TensorType::kQ8_0:
      return static_cast<int>(detail::KvElements::kQ8_0);
    default:
      throw std::invalid_argument(std::string("attention: no kernel for KV elements of type ") +
                                  gguf::type_name(type));
  }
}
}  // namespace

void dot_rows(gguf::TensorType type, const float* q, const void* k, int64_t stride, int64_t count,
              int64_t n, float* out) {
  active_kernels().kv_dot_rows[kv_elements(type)](q, static_cast<const uint8_t*>(k), stride, count,
                                                  n, out);
}

void axpy_rows(gguf::TensorType type, const float* w, const void* v, int64_t stride, int64_t count,
               int64_t n, float* y) {
  active_kernels().kv_axpy_rows[kv_elements(type)](w, static_cast<const uint8_t*>(v), stride, count,
                                                   n, y);
}

void dot_rows_multi(gguf::TensorType type, const float* q, int64_t q_stride, int n_q, const void* k,
                    int64_t stride, int64_t count, int64_t n, float* out, int64_t out_stride) {
  active_kernels().kv_dot_rows_multi[kv_elements(type)](
      q, q_stride, n_q, static_cast<const uint8_t*>(k), stride, count, n, out, out_stride);
}

void dot_keys(gguf::TensorType type, const float* const* q, int n_q, const void* kt, int64_t block,
              int64_t keys, int64_t n, float* const* out) {
  const detail::KvDotKeys f = active_kernels().kv_dot_keys[kv_elements(type)];
  if (f == nullptr)
    throw std::invalid_argument(std::string("attention: no transposed keys of type ") +
                                gguf::type_name(type));
  f(q, n_q, static_cast<const uint8_t*>(kt), block, keys, n, out);
}

void dot_keys_pair(gguf::TensorType type, const float* const* q, int n_q, const void* kt0,
                   const void* kt1, int64_t block, int64_t keys0, int64_t keys1, int64_t n,
                   float* const* out0, float* const* out1) {
  const detail::KvDotKeysPair f = active_kernels().kv_dot_keys_pair[kv_elements(type)];
  if (f == nullptr) {
    dot_keys(type, q, n_q, kt0, block, keys0, n, out0);
    return dot_keys(type, q, n_q, kt1, block, keys1, n, out1);
  }
  f(q, n_q, static_cast<const uint8_t*>(kt0), static_cast<const uint8_t*>(kt1), block, keys0, keys1,
    n, out0, out1);
}

void widen_rows(gguf::TensorType type, const void* v, int64_t stride, int64_t count, int64_t n,
                float* out, int64_t out_stride) {
  const detail::KvWidenRows f = active_kernels().kv_widen_rows[kv_elements(type)];
  if (f == nullptr)
    throw std::invalid_argument(std::string("widen_rows: no widening of type ") +
                                gguf::type_name(type));
  f(static_cast<const uint8_t*>(v), stride, count, n, out, out_stride);
}

void axpy_rows_multi(gguf::TensorType type, const float* w, int64_t w_stride, int n_q,
                     const void* v, int64_t stride, int64_t count, int64_t n, float* y,
                     int64_t y_stride) {
  active_kernels().kv_axpy_rows_multi[kv_elements(type)](
      w, w_stride, n_q, static_cast<const uint8_t*>(v), stride, count, n, y, y_stride);
}

void axpy_rows_gathered(const float* const* w, float* const* y, int n_rows, const float* v,
                        int64_t v_stride, int64_t count, int64_t n) {
  active_kernels().axpy_rows_gathered(w, y, n_rows, v, v_stride, count, n);
}

void scaled_exp_sums(float* x, int64_t stride, int n_rows, int64_t n, float scale, float* max,
                     float* sums) {
  active_kernels().scaled_exp_sums(x, stride, n_rows, n, scale, max, sums);
}

void to_half(const float* x, uint16_t* out, int64_t n) { active_kernels().to_half(x, out, n); }

void to_bfloat(const float* x, uint16_t* out, int64_t n) { active_kernels().to_bfloat(x, out, n); }

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  active_kernels().silu_mul(gate, up, out, n);
}

}  // namespace tandem::kernels
