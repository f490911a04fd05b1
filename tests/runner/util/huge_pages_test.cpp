// allocate_large (runner/util/huge_pages.h): buffers of a huge page or more have 2 MiB-aligned
// pages of their own; smaller ones are carved from shared slabs of huge pages, 64-byte
// aligned, never overlapping, and a slab goes back when its last buffer does.
#include "runner/util/huge_pages.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace tandem::TANDEM_UNITY_ID {
namespace {

uintptr_t address(const LargeBytes& b) { return reinterpret_cast<uintptr_t>(b.get()); }

TEST(LargeBytes, ABufferOfAHugePageOrMoreHasAlignedPagesOfItsOwn) {
  const LargeSlabStats before = large_slab_stats();
  LargeBytes big = allocate_large(kHugePageBytes);
  LargeBytes bigger = allocate_large(3 * kHugePageBytes + 5);
  EXPECT_EQ(address(big) % kHugePageBytes, 0u);
  EXPECT_EQ(address(bigger) % kHugePageBytes, 0u);
  EXPECT_EQ(large_slab_stats().allocations, before.allocations);
  std::memset(bigger.get(), 7, 3 * kHugePageBytes + 5);
}

// Buffers of random sizes under a huge page, freed in random order: each is 64-byte aligned,
// counted in the slabs, holds what was written to it after all the others were (no two
// overlap), and once all are gone the slabs made for them are too.
TEST(LargeBytes, BuffersUnderAHugePageAreCarvedApartAndTheirSlabsGoWithThem) {
  const LargeSlabStats before = large_slab_stats();
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> size_of(1, kLargeSlabCarveMax);
  std::vector<LargeBytes> buffers;
  std::vector<size_t> sizes;
  size_t total = 0;
  while (total < 3 * kLargeSlabBytes) {  // enough to need several slabs
    sizes.push_back(buffers.empty() ? kLargeSlabCarveMax : size_of(rng));
    buffers.push_back(allocate_large(sizes.back()));
    total += sizes.back();
    ASSERT_EQ(address(buffers.back()) % 64, 0u);
    std::memset(buffers.back().get(), static_cast<int>(buffers.size() & 0xff), sizes.back());
  }
  const LargeSlabStats full = large_slab_stats();
  EXPECT_EQ(full.allocations, before.allocations + buffers.size());
  EXPECT_GE(full.slabs, before.slabs + 3);
  EXPECT_LE(full.slabs, before.slabs + buffers.size());

  std::vector<uintptr_t> starts;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto* p = buffers[i].get();
    const auto fill = static_cast<uint8_t>((i + 1) & 0xff);
    ASSERT_TRUE(std::all_of(p, p + sizes[i], [&](uint8_t b) { return b == fill; })) << i;
    starts.push_back(address(buffers[i]));
  }
  std::vector<size_t> order(buffers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return starts[a] < starts[b]; });
  for (size_t i = 1; i < order.size(); ++i)
    ASSERT_GE(starts[order[i]], starts[order[i - 1]] + sizes[order[i - 1]]);

  std::shuffle(buffers.begin(), buffers.end(), rng);
  buffers.resize(buffers.size() / 2);
  EXPECT_EQ(large_slab_stats().allocations, before.allocations + buffers.size());
  buffers.clear();
  const LargeSlabStats after = large_slab_stats();
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.slabs, before.slabs);
}

TEST(LargeBytes, AnOverrunIntoTheSlabPastABufferIsReportedUnderAsan) {
  if (!kLargeSlabsPoisoned) GTEST_SKIP() << "the slabs' poisoning is checked in the ASan build";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        LargeBytes a = allocate_large(128);
        LargeBytes b = allocate_large(128);
        volatile uint8_t* p = a.get();
        p[128] = 1;  // just past a, before b: the red zone between them
      },
      "use-after-poison");
}

TEST(LargeBytes, AUseOfACarvedBufferAfterItsReleaseIsReportedUnderAsan) {
  if (!kLargeSlabsPoisoned) GTEST_SKIP() << "the slabs' poisoning is checked in the ASan build";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        LargeBytes keep = allocate_large(64);  // keeps the slab alive
        LargeBytes a = allocate_large(256);
        volatile uint8_t* p = a.get();
        a.reset();
        p[0] = 1;
      },
      "use-after-poison");
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
