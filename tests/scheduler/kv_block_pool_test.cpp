#include "scheduler/kv_block_pool.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <gtest/gtest.h>

namespace tandem {
namespace {

TEST(KvBlockPool, BlocksForRoundsUpToWholeBlocks) {
  KvBlockPool pool(8, 16);
  EXPECT_EQ(pool.blocks_for(0), 0);
  EXPECT_EQ(pool.blocks_for(1), 1);
  EXPECT_EQ(pool.blocks_for(16), 1);
  EXPECT_EQ(pool.blocks_for(17), 2);
  EXPECT_EQ(pool.blocks_for(128), 8);
}

TEST(KvBlockPool, ReserveHandsOutDistinctBlocksAndCountsThem) {
  KvBlockPool pool(8, 16);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(pool.reserve(40, a));  // 3 blocks
  ASSERT_TRUE(pool.reserve(64, b));  // 4 blocks
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(b.size(), 4u);
  std::set<int32_t> all(a.begin(), a.end());
  all.insert(b.begin(), b.end());
  EXPECT_EQ(all.size(), 7u);
  EXPECT_TRUE(std::all_of(all.begin(), all.end(), [](int32_t id) { return id >= 0 && id < 8; }));
  EXPECT_EQ(pool.used(), 7);
  EXPECT_EQ(pool.free_blocks(), 1);
}

TEST(KvBlockPool, ReserveIsAllOrNothing) {
  KvBlockPool pool(4, 16);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(pool.reserve(48, a));
  EXPECT_FALSE(pool.can_reserve(17));
  EXPECT_FALSE(pool.reserve(17, b));
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(pool.used(), 3);
  EXPECT_TRUE(pool.reserve(16, b));
  EXPECT_EQ(pool.free_blocks(), 0);
}

TEST(KvBlockPool, ReleaseReturnsEveryBlockAndClearsTheTable) {
  KvBlockPool pool(4, 16);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.reserve(64, a));
  pool.release(a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(pool.used(), 0);
  EXPECT_TRUE(pool.reserve(64, a));
}

TEST(KvBlockPool, ReleasingTwiceIsCaught) {
  KvBlockPool pool(4, 16);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.reserve(20, a));
  std::vector<int32_t> copy = a;
  pool.release(a);
  EXPECT_THROW(pool.release(copy), std::logic_error);
  std::vector<int32_t> twice;
  ASSERT_TRUE(pool.reserve(16, twice));
  twice.push_back(twice.front());
  EXPECT_THROW(pool.release(twice), std::logic_error);
  std::vector<int32_t> bogus{99};
  EXPECT_THROW(pool.release(bogus), std::logic_error);
}

TEST(KvBlockPool, AFreedBlockIsTheNextOneHandedOut) {
  // LIFO reuse makes a block freed too early collide with its next owner at once,
  // so the simulated device's KV check catches early frees.
  KvBlockPool pool(8, 16);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(pool.reserve(16, a));
  const int32_t freed = a[0];
  pool.release(a);
  ASSERT_TRUE(pool.reserve(16, b));
  EXPECT_EQ(b[0], freed);
}

TEST(KvBlockPool, RejectsEmptyGeometry) {
  EXPECT_THROW(KvBlockPool(0, 16), std::invalid_argument);
  EXPECT_THROW(KvBlockPool(4, 0), std::invalid_argument);
}

}  // namespace
}  // namespace tandem
