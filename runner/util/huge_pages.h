// Large buffers that every step walks through (the packed weights, streamed end to end;
// the KV cache, whose slots a batch touches all over): 2 MiB-aligned and advised to the
// kernel as transparent huge pages, so a step costs a TLB entry per 2 MiB, not per 4 KiB
// (with 4 KiB pages the KV cache's writes alone took a page walk each: about 5% of a
// 32-row decode step). Below one huge page, 64-byte aligned. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace tandem {

struct FreeBytes {
  void operator()(uint8_t* p) const { std::free(p); }
};
using LargeBytes = std::unique_ptr<uint8_t[], FreeBytes>;

// n bytes (at least 1), uninitialized: untouched pages cost nothing until first written.
// Throws std::bad_alloc.
LargeBytes allocate_large(size_t n);

}  // namespace tandem
