// Kernel dispatch (which ISA runs), weight packing into the panel layout described in
// isa.h and the parallel split of a matmul over output panels (the quantized matmul's is
// quant_dispatch.cpp's). The arithmetic itself
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
#include "runner/kernels/packed_impl.h"
#include "runner/kernels/quant_matmul.h"
#include "runner/kernels/shared_prep.h"
#include "runner/util/float16.h"

namespace tandem::kernels {

namespace {
bool read_once_into_l2();
}  // namespace
bool detail::g_read_once_into_l2 = read_once_into_l2();
bool detail::g_widen_chunks = [] {
  const char* forced = std::getenv("TANDEM_WIDEN");
  return forced == nullptr || std::string_view(forced) != "off";
}();

using detail::guided_end;
using detail::guided_start;
using detail::kGuidedParts;
using detail::kGuidedRoundCount;
using detail::kPanel;
using detail::kRowsToSharePrep;
using detail::PackedType;
using detail::QuantKind;
using detail::SharedPrep;
using detail::tasks_per_thread;

namespace {

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

bool cpu_is_intel() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
  char vendor[12];
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  return std::string_view(vendor, 12) == "GenuineIntel";
}

// isa.h, g_read_once_into_l2: on an Intel CPU, unless TANDEM_PREFETCH=nta|l2 says otherwise
// (for comparisons).
bool read_once_into_l2() {
  const char* forced = std::getenv("TANDEM_PREFETCH");
  if (forced != nullptr && std::string_view(forced) == "l2") return true;
  if (forced != nullptr && std::string_view(forced) == "nta") return false;
  return cpu_is_intel();
}

}  // namespace

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

bool bf16_dot_outruns_fma() { return !cpu_is_intel(); }

Isa choose_isa(Isa hardware, bool bf16_dot_faster, const char* env) {
  const Isa preferred = hardware == Isa::kAvx512Bf16 && !bf16_dot_faster ? Isa::kAvx512 : hardware;
  if (env == nullptr || *env == '\0') return preferred;
  for (Isa candidate : {Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16, Isa::kAmx}) {
    if (std::string_view(env) == isa_name(candidate)) return std::min(candidate, hardware);
  }
  std::fprintf(stderr,
               "tandem: ignoring TANDEM_ISA=%s (expected avx2, avx512, avx512bf16 or amx)\n", env);
  return preferred;
}

namespace {

Isa default_isa() {
  static const Isa isa =
      choose_isa(hardware_isa(), bf16_dot_outruns_fma(), std::getenv("TANDEM_ISA"));
  return isa;
}

std::atomic<int> g_isa_override{-1};

// AVX512-BF16's kernels with the BF16 matmul on AMX tiles.
const detail::IsaKernels& amx_kernels() {
  static const detail::IsaKernels kernels = [] {
    detail::IsaKernels k = detail::avx512bf16_kernels();
    k.matmul[static_cast<int>(PackedType::kBf16Pairs)] = detail::amx_bf16_panel_loop();
    k.calls_epilogue[static_cast<int>(PackedType::kBf16Pairs)] = false;
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

// AVX-VNNI from CPUID leaf 7 subleaf 1 (EAX bit 4): clang's __builtin_cpu_supports has no
// "avxvnni". The OS's saving of the 256-bit state is hardware_isa()'s AVX2 check.
bool detail::has_avx_vnni() {
  static const bool vnni = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
  }();
  return vnni;
}

// The activations each kind multiplies, as ggml's vec_dot_type: Q8_1 for the types with a
// min, Q8_K for the super-block types, Q8_0 for the rest.
detail::ActFormat detail::act_format_of(QuantKind kind) {
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

bool quant_uses_vnni() { return detected_isa() != Isa::kAvx2 && has_avx512vnni(); }

bool quant_uses_amx() { return detected_isa() == Isa::kAmx && has_amx_int8(); }

bool set_isa_for_testing(Isa isa) {
  if (isa > hardware_isa()) return false;
  g_isa_override.store(static_cast<int>(isa), std::memory_order_relaxed);
  return true;
}

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
  if (detail::quant_pieces_fit(impl)) {
    int64_t col = 0;
    for (const PackedWeights& part : impl.parts) {
      impl.pieces.push_back({&part.impl(), col});
      col += part.n_out();
    }
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

void matmul(ThreadPool& pool, const PackedWeights& w, const float* x, int64_t n_rows, float* y) {
  matmul(pool, w, x, n_rows, y, MatmulEpilogue{});
}

bool matmul(ThreadPool& pool, const PackedWeights& w, const float* x, int64_t n_rows, float* y,
            const MatmulEpilogue& epilogue) {
  const PackedWeights::Impl& impl = w.impl();
  if (n_rows <= 0 || impl.n_out == 0) return true;
  if (!impl.pieces.empty()) {
    // Quantized parts (llama-quantize's mixes: a layer's attn_v of its own type) in one job,
    // each writing its columns of y, the activations quantized once for all of them.
    detail::quant_matmul(pool, impl.pieces, impl.n_out, x, n_rows, y);
    return false;
  }
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
    return false;
  }
  if (impl.quant) {
    const detail::QuantPiece whole{&impl, 0};
    detail::quant_matmul(pool, {&whole, 1}, impl.n_out, x, n_rows, y);
    return false;
  }
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
  job.args.epilogue = epilogue.fn;
  job.args.epilogue_ctx = epilogue.ctx;

  // A few contiguous ranges of panels per thread (tasks_per_thread): each task's weight
  // stream stays long and sequential (what the prefetchers like). A batch splits in guided
  // rounds (kGuidedRounds), as the quantized decode step does, its ranges cut between row
  // tiles where they end inside a panel (tile_loop.h, TaskShare): with two ranges a thread,
  // the submitter waited for the other thread 7% of its time in a 32-row BF16 step's
  // matmuls (the other thread's ranges ran 4% slower), a range's time at the end of each.
  const int64_t n_panels = (impl.n_out + kPanel - 1) / kPanel;
  job.n_tasks = std::min<int64_t>(n_panels, tasks_per_thread(n_rows) * pool.size());
  job.guided_threads = n_rows > 1 && pool.size() > 1 ? pool.size() : 0;
  if (job.guided_threads > 0) {
    job.n_tasks = kGuidedRoundCount * pool.size();
    job.args.region_parts = kGuidedParts;
  }
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
  const bool epilogue_ran =
      epilogue.fn == nullptr || isa.calls_epilogue[static_cast<int>(impl.type)];
  if (job.n_tasks <= 1) {
    job.loop(job.args, 0, 1, 1);
    return epilogue_ran;
  }
  const Job* j = &job;  // two pointers: std::function keeps them without allocating
  SharedPrep* p = &prep;
  pool.parallel_for(job.n_tasks, [j, p](int64_t t) {
    p->help_and_wait();
    if (j->guided_threads == 0) return j->loop(j->args, t, t + 1, j->n_tasks);
    j->loop(j->args, guided_start(t, j->guided_threads), guided_end(t, j->guided_threads),
            kGuidedParts * j->guided_threads);
  });
  return epilogue_ran;
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
