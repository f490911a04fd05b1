// Large buffers that every step walks through (the packed weights, streamed end to end;
// the KV cache, whose slots a batch touches all over): on transparent huge pages, so a step
// costs a TLB entry per 2 MiB, not per 4 KiB (with 4 KiB pages the KV cache's writes alone
// took a page walk each: about 5% of a 32-row decode step). A buffer of a huge page or more
// is 2 MiB-aligned and advised on its own. A smaller one (a small model's matrices: all of
// smollm2-135m's but ffn gate/up are under 2 MiB) is carved, 64-byte aligned, from a shared
// slab of huge pages: aligned to 64 bytes on its own, it sat on 4 KiB pages, and a decode
// step streamed it at 0.70-0.78 of the rate a matrix on huge pages reached (design.md).
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace tandem {

void release_large(uint8_t* p);  // allocate_large's deleter (nullptr: nothing)

struct FreeBytes {
  void operator()(uint8_t* p) const { release_large(p); }
};
using LargeBytes = std::unique_ptr<uint8_t[], FreeBytes>;

// n bytes (at least 1), uninitialized: untouched pages cost nothing until first written.
// Throws std::bad_alloc.
LargeBytes allocate_large(size_t n);

// The shared slabs the buffers under a huge page come from (for tests and diagnostics).
struct LargeSlabStats {
  size_t slabs = 0;        // slabs allocated now
  size_t allocations = 0;  // live buffers carved from them
};
LargeSlabStats large_slab_stats();

// The slabs' size (a multiple of the huge page, each slab aligned to one) and the largest
// buffer carved from them; a buffer above kLargeSlabCarveMax gets its own pages.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
inline constexpr size_t kLargeSlabBytes = 16 * kHugePageBytes;
inline constexpr size_t kLargeSlabCarveMax = kHugePageBytes - 1;

// Whether the slabs' bytes outside live buffers are poisoned for ASan (an ASan build): each
// carved buffer is then followed by a poisoned gap, and a released one is poisoned.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kLargeSlabsPoisoned = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kLargeSlabsPoisoned = true;
#else
inline constexpr bool kLargeSlabsPoisoned = false;
#endif
#else
inline constexpr bool kLargeSlabsPoisoned = false;
#endif

}  // namespace tandem
