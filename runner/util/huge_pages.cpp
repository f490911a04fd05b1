#include "runner/util/huge_pages.h"

#include <sanitizer/asan_interface.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <new>

namespace tandem {
namespace {

constexpr size_t kCarveAlign = 64;

// A poisoned gap after each carved buffer under ASan, as ASan's own allocator leaves: the
// buffers' sizes are multiples of 64, so without it an overrun would land in the next one
// unseen.
constexpr size_t kRedZone = kLargeSlabsPoisoned ? kCarveAlign : 0;

// n bytes aligned to `align`, rounded up to it; advised as huge pages where align is a huge
// page (advice only: where the kernel has THP off, the buffer works on 4 KiB pages).
uint8_t* aligned_pages(size_t n, size_t align) {
  const size_t rounded = (std::max<size_t>(n, 1) + align - 1) / align * align;
  auto* data = static_cast<uint8_t*>(std::aligned_alloc(align, rounded));
  if (data == nullptr) throw std::bad_alloc();
  if (align == kHugePageBytes) madvise(data, rounded, MADV_HUGEPAGE);
  return data;
}

// Buffers under a huge page, carved one after another from the current slab; a buffer that
// does not fit in what is left starts a new slab (the rest of the old one stays unused, its
// untouched pages unbacked). A slab is freed when its last buffer is. Under ASan a slab's
// bytes outside live buffers are poisoned, so an overrun into a neighbour, or a use after
// release, is still reported.
class SlabArena {
 public:
  uint8_t* allocate(size_t n) {
    const size_t rounded = round(n);
    std::lock_guard<std::mutex> lock(mu_);
    if (current_ == nullptr || current_->second.used + rounded > kLargeSlabBytes) {
      struct Free {
        void operator()(uint8_t* p) const { std::free(p); }
      };
      std::unique_ptr<uint8_t, Free> base(aligned_pages(kLargeSlabBytes, kHugePageBytes));
      current_ = &*slabs_.emplace(reinterpret_cast<uintptr_t>(base.get()), Slab{}).first;
      ASAN_POISON_MEMORY_REGION(base.release(), kLargeSlabBytes);  // the map owns it now
    }
    Slab& slab = current_->second;
    auto* p = reinterpret_cast<uint8_t*>(current_->first) + slab.used;
    slab.used += rounded;
    slab.live.emplace(reinterpret_cast<uintptr_t>(p), rounded);
    ASAN_UNPOISON_MEMORY_REGION(p, n);
    return p;
  }

  // False where p is not in a slab (a buffer with pages of its own).
  bool release(uint8_t* p) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slabs_.upper_bound(reinterpret_cast<uintptr_t>(p));
    if (it == slabs_.begin()) return false;
    --it;
    if (reinterpret_cast<uintptr_t>(p) >= it->first + kLargeSlabBytes) return false;
    auto buffer = it->second.live.find(reinterpret_cast<uintptr_t>(p));
    if (buffer == it->second.live.end()) {
      std::fprintf(stderr, "release_large: %p is not a live buffer of its slab\n",
                   static_cast<void*>(p));
      std::abort();
    }
    ASAN_POISON_MEMORY_REGION(p, buffer->second);  // a use after release is reported too
    it->second.live.erase(buffer);
    if (!it->second.live.empty()) return true;
    auto* base = reinterpret_cast<uint8_t*>(it->first);
    ASAN_UNPOISON_MEMORY_REGION(base, kLargeSlabBytes);
    std::free(base);
    if (current_ == &*it) current_ = nullptr;
    slabs_.erase(it);
    return true;
  }

  LargeSlabStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    LargeSlabStats stats{slabs_.size(), 0};
    for (const auto& [base, slab] : slabs_) stats.allocations += slab.live.size();
    return stats;
  }

 private:
  struct Slab {
    size_t used = 0;                   // bytes carved so far, from the base
    std::map<uintptr_t, size_t> live;  // buffers carved and not yet released: their bytes
  };
  static size_t round(size_t n) {
    return (std::max<size_t>(n, 1) + kCarveAlign - 1) / kCarveAlign * kCarveAlign + kRedZone;
  }

  std::mutex mu_;
  std::map<uintptr_t, Slab> slabs_;  // by base address
  std::pair<const uintptr_t, Slab>* current_ = nullptr;
};

// Never destroyed: a static object's buffers may be released after this file's statics go.
SlabArena& arena() {
  static auto* a = new SlabArena;
  return *a;
}

}  // namespace

LargeBytes allocate_large(size_t n) {
  if (n > kLargeSlabCarveMax) return LargeBytes(aligned_pages(n, kHugePageBytes));
  return LargeBytes(arena().allocate(n));
}

void release_large(uint8_t* p) {
  if (p == nullptr) return;
  if (!arena().release(p)) std::free(p);
}

LargeSlabStats large_slab_stats() { return arena().stats(); }

}  // namespace tandem
