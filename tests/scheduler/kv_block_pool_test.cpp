#include "scheduler/kv_block_pool.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <gtest/gtest.h>

namespace tandem::TANDEM_UNITY_ID {
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

// The prefix cache: a block of tokens t[0..16) with a given parent.
std::vector<int32_t> tokens(int32_t start, int32_t n = 16) {
  std::vector<int32_t> t(n);
  for (int32_t i = 0; i < n; ++i) t[i] = start + i;
  return t;
}

// Blocks holding `seq` from its start, registered as a completed step would.
std::vector<int32_t> cached_sequence(KvBlockPool& pool, const std::vector<int32_t>& seq) {
  std::vector<int32_t> blocks;
  EXPECT_TRUE(pool.reserve(static_cast<int64_t>(seq.size()), blocks));
  for (size_t b = 0; b < seq.size() / 16; ++b) {
    std::vector<int32_t> t(seq.begin() + b * 16, seq.begin() + (b + 1) * 16);
    EXPECT_TRUE(pool.register_block(blocks[b], b == 0 ? -1 : blocks[b - 1], t));
  }
  return blocks;
}

TEST(KvBlockPool, AMatchTakesAReferenceToEachCachedBlockOfThePrefix) {
  KvBlockPool pool(8, 16);
  const std::vector<int32_t> seq = tokens(100, 48);
  std::vector<int32_t> owner = cached_sequence(pool, seq);
  std::vector<int32_t> other;
  std::vector<int32_t> query = tokens(100, 40);  // the first two blocks, then a partial one
  EXPECT_EQ(pool.match(query, 8, other), 2);
  EXPECT_EQ(other, std::vector<int32_t>(owner.begin(), owner.begin() + 2));
  EXPECT_EQ(pool.refcount(owner[0]), 2);
  EXPECT_EQ(pool.refcount(owner[2]), 1);
  std::vector<int32_t> capped;
  EXPECT_EQ(pool.match(query, 1, capped), 1);  // max_blocks caps it
  pool.release(capped);
  // A different first token finds nothing, even where later blocks agree.
  query[0] = 7;
  std::vector<int32_t> none;
  EXPECT_EQ(pool.match(query, 8, none), 0);
  EXPECT_TRUE(none.empty());
  pool.release(owner);
  EXPECT_EQ(pool.refcount(other[0]), 1);
  pool.release(other);
  EXPECT_EQ(pool.used(), 0);
  EXPECT_EQ(pool.cached(), 3);  // unreferenced, still cached
}

// A cache_salt names its own root: a salted sequence is found only under the same salt,
// never by the shared cache or another salt, though the tokens are the same; the same
// tokens may be registered under each salt, each its own blocks.
TEST(KvBlockPool, ASaltedSequenceIsFoundOnlyUnderItsSalt) {
  KvBlockPool pool(8, 16);
  const std::vector<int32_t> seq = tokens(100, 32);
  std::vector<int32_t> salted;
  ASSERT_TRUE(pool.reserve(32, salted));
  ASSERT_TRUE(pool.register_block(salted[0], -1, tokens(100), "tenant-a"));
  ASSERT_TRUE(pool.register_block(salted[1], salted[0], tokens(116), "tenant-a"));
  EXPECT_EQ(pool.cached_blocks(seq, 8, "tenant-a"), 2);
  EXPECT_EQ(pool.cached_blocks(seq, 8), 0);
  EXPECT_EQ(pool.cached_blocks(seq, 8, "tenant-b"), 0);
  EXPECT_EQ(pool.cached_blocks(seq, 8, "tenant-"), 0);
  std::vector<int32_t> shared = cached_sequence(pool, seq);  // the same tokens, unsalted
  EXPECT_NE(shared[0], salted[0]);
  std::vector<int32_t> found;
  EXPECT_EQ(pool.match(seq, 8, found), 2);
  EXPECT_EQ(found, shared);
  pool.release(found);
  EXPECT_EQ(pool.match(seq, 8, found, "tenant-a"), 2);
  EXPECT_EQ(found, salted);
  pool.release(found);
  pool.release(shared);
  pool.release(salted);
  EXPECT_EQ(pool.cached(), 4);
}

// The pacer's look at a queued prompt: as many blocks as match would find, and nothing taken
// (no reference, no move out of the LRU list: the blocks stay evictable in the same order).
TEST(KvBlockPool, CachedBlocksCountsWhatAMatchWouldFindAndTakesNothing) {
  KvBlockPool pool(4, 16);
  std::vector<int32_t> owner = cached_sequence(pool, tokens(100, 48));
  pool.release(owner);  // cached, unreferenced
  const std::vector<int32_t> query = tokens(100, 40);
  EXPECT_EQ(pool.cached_blocks(query, 8), 2);
  EXPECT_EQ(pool.cached_blocks(query, 1), 1);
  EXPECT_EQ(pool.cached_blocks(tokens(101, 40), 8), 0);
  EXPECT_EQ(pool.used(), 0);
  EXPECT_EQ(pool.free_blocks(), 4);
  std::vector<int32_t> taken;
  EXPECT_EQ(pool.match(query, 8, taken), pool.cached_blocks(query, 8));
  pool.release(taken);
  // Four fresh blocks evict the three cached ones, least recently used first, as before.
  std::vector<int32_t> fresh;
  ASSERT_TRUE(pool.reserve(64, fresh));
  EXPECT_EQ(pool.cached_blocks(query, 8), 0);
  pool.release(fresh);
}

TEST(KvBlockPool, UnusedCachedBlocksAreEvictedLeastRecentlyUsedFirst) {
  KvBlockPool pool(4, 16);
  std::vector<int32_t> a = cached_sequence(pool, tokens(0, 32));    // 2 blocks
  std::vector<int32_t> b = cached_sequence(pool, tokens(500, 32));  // 2 blocks
  const std::vector<int32_t> a_ids = a;
  pool.release(a);  // a's tail, then a's head, become the least recently used
  pool.release(b);
  EXPECT_EQ(pool.free_blocks(), 4);
  std::vector<int32_t> fresh;
  ASSERT_TRUE(pool.reserve(16, fresh));
  EXPECT_EQ(fresh[0], a_ids[1]);  // a's tail goes first
  EXPECT_EQ(pool.evictions(), 1u);
  std::vector<int32_t> hit;
  EXPECT_EQ(pool.match(tokens(0, 32), 2, hit), 1);  // a's head is still there
  pool.release(hit);
  std::vector<int32_t> hit_b;
  EXPECT_EQ(pool.match(tokens(500, 32), 2, hit_b), 2);  // using b makes it recent
  pool.release(hit_b);
  ASSERT_TRUE(pool.reserve(16, fresh));
  EXPECT_EQ(fresh[1], a_ids[0]);  // then a's head, the least recently used
  std::vector<int32_t> still_b;
  EXPECT_EQ(pool.match(tokens(500, 32), 2, still_b), 2);
  pool.release(still_b);
  pool.release(fresh);
}

// A reserve's blocks come in ascending order, so that a row's blocks tend to be one
// ascending run in the cache (the attention walk reads that fastest): from the free list
// and from evictions, which take a cached sequence deepest block first.
TEST(KvBlockPool, AReserveHandsOutItsBlocksInAscendingOrder) {
  KvBlockPool pool(6, 16);
  std::vector<int32_t> cached = cached_sequence(pool, tokens(0, 64));  // 4 blocks
  std::vector<int32_t> plain;
  ASSERT_TRUE(pool.reserve(32, plain));
  const std::set<int32_t> cached_ids(cached.begin(), cached.end());
  pool.release(cached);  // all four to the LRU list, the tail least recently used
  std::vector<int32_t> evicted;
  ASSERT_TRUE(pool.reserve(64, evicted));
  EXPECT_EQ(pool.evictions(), 4u);
  EXPECT_EQ(std::set<int32_t>(evicted.begin(), evicted.end()), cached_ids);
  EXPECT_TRUE(std::is_sorted(evicted.begin(), evicted.end()));
  std::vector<int32_t> mixed = {evicted[3], plain[1], evicted[0], plain[0]};
  std::vector<int32_t> kept = {evicted[1], evicted[2]};
  pool.release(mixed);
  std::vector<int32_t> again{99};  // appended after what the table holds
  ASSERT_TRUE(pool.reserve(64, again));
  EXPECT_EQ(again.front(), 99);
  EXPECT_TRUE(std::is_sorted(again.begin() + 1, again.end()));
  again.erase(again.begin());
  pool.release(again);
  pool.release(kept);
  EXPECT_EQ(pool.used(), 0);
}

TEST(KvBlockPool, AChildIsFoundOnlyThroughTheParentItWasRegisteredUnder) {
  // The child stays cached while its parent is evicted and the parent's id is handed out
  // again: even with the same tokens registered there, the child is not trusted.
  KvBlockPool pool(3, 16);
  std::vector<int32_t> blocks;
  ASSERT_TRUE(pool.reserve(32, blocks));
  ASSERT_TRUE(pool.register_block(blocks[0], -1, tokens(0)));
  ASSERT_TRUE(pool.register_block(blocks[1], blocks[0], tokens(16)));
  std::vector<int32_t> parent{blocks[0]}, child{blocks[1]};
  pool.release(parent);
  std::vector<int32_t> fresh;
  ASSERT_TRUE(pool.reserve(32, fresh));  // the free block and the evicted parent
  ASSERT_NE(std::find(fresh.begin(), fresh.end(), blocks[0]), fresh.end());
  ASSERT_TRUE(pool.register_block(blocks[0], -1, tokens(0)));
  std::vector<int32_t> hit;
  EXPECT_EQ(pool.match(tokens(0, 32), 2, hit), 1);
  pool.release(hit);
  pool.release(fresh);
  pool.release(child);
  EXPECT_EQ(pool.used(), 0);
}

TEST(KvBlockPool, TheSameContentRegisteredTwiceKeepsTheFirstBlock) {
  KvBlockPool pool(4, 16);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(pool.reserve(16, a));
  ASSERT_TRUE(pool.reserve(16, b));
  EXPECT_TRUE(pool.register_block(a[0], -1, tokens(1)));
  EXPECT_FALSE(pool.register_block(b[0], -1, tokens(1)));
  EXPECT_FALSE(pool.is_registered(b[0]));
  // A child of an unregistered block is not registered either: its chain is not findable.
  std::vector<int32_t> child;
  ASSERT_TRUE(pool.reserve(16, child));
  EXPECT_FALSE(pool.register_block(child[0], b[0], tokens(17)));
  const int32_t b_id = b[0];
  pool.release(b);
  EXPECT_EQ(pool.free_blocks(), 2);  // b went back to the free list, not the cache
  std::vector<int32_t> fresh;
  ASSERT_TRUE(pool.reserve(16, fresh));
  EXPECT_EQ(fresh[0], b_id);
  EXPECT_THROW(pool.register_block(fresh[0], -1, tokens(1, 8)), std::logic_error);  // not full
  pool.release(a);
  pool.release(child);
  pool.release(fresh);
  EXPECT_EQ(pool.used(), 0);
}

}  // namespace
}  // namespace tandem::TANDEM_UNITY_ID
