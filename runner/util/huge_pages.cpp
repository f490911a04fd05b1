#include "runner/util/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>

namespace tandem {

LargeBytes allocate_large(size_t n) {
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t align = n >= kHugePage ? kHugePage : 64;
  const size_t rounded = (std::max<size_t>(n, 1) + align - 1) / align * align;
  auto* data = static_cast<uint8_t*>(std::aligned_alloc(align, rounded));
  if (data == nullptr) throw std::bad_alloc();
  // Advice only: where the kernel has THP off, the buffer works on 4 KiB pages.
  if (align == kHugePage) madvise(data, rounded, MADV_HUGEPAGE);
  return LargeBytes(data);
}

}  // namespace tandem
