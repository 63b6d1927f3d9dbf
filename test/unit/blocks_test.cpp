// Reusable blocks (core/blocks.hpp): a block given back is taken again without new pages,
// a small request between two large ones does not cost the large one its pages, and what
// is kept stays within the bound.
#include "core/blocks.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstring>
#include <vector>

namespace {

using mw::blocks::Block;
using mw::blocks::take;

long minor_faults() {
  rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

TEST(Blocks, ABlockGivenBackIsTakenAgainWithItsPagesInPlace) {
  std::byte *first;
  {
    Block b = take(1 << 20, "a test buffer");
    ASSERT_TRUE(b);
    EXPECT_GE(b.capacity(), size_t{1} << 20);
    std::memset(b.data(), 1, 1 << 20);
    first = b.data();
  }
  const uint64_t maps = mw::blocks::mappings();
  const long faults = minor_faults();
  Block again = take(900 << 10, "a test buffer");
  std::memset(again.data(), 2, 900 << 10);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(mw::blocks::mappings(), maps);
  EXPECT_LT(minor_faults() - faults, 8) << "filling a reused block met fresh pages";
}

TEST(Blocks, ASmallRequestBetweenTwoLargeOnesLeavesALargeBlockForTheSecond) {
  { Block warm = take(3 << 20, "a test buffer"); }
  Block small = take(20 << 10, "a test buffer");
  std::memset(small.data(), 3, 20 << 10);
  { Block large = take(3 << 20, "a test buffer"); std::memset(large.data(), 4, 3 << 20); }
  small.reset();
  // Both are back: a large request again maps nothing.
  const uint64_t maps = mw::blocks::mappings();
  Block large = take(3 << 20, "a test buffer");
  EXPECT_GE(large.capacity(), size_t{3} << 20);
  EXPECT_EQ(mw::blocks::mappings(), maps);
}

TEST(Blocks, WhatIsKeptStaysWithinTheBound) {
  std::vector<Block> held;
  for (int i = 0; i < 40; ++i) held.push_back(take(2 << 20, "a test buffer"));
  held.clear();
  EXPECT_LE(mw::blocks::kept_bytes(), mw::blocks::kKeepBytes);
  EXPECT_GT(mw::blocks::kept_bytes(), 0u);
  // A block larger than the bound goes back to the kernel, not to the pool.
  const size_t kept = mw::blocks::kept_bytes();
  { Block huge = take(mw::blocks::kKeepBytes + 1, "a test buffer"); }
  EXPECT_EQ(mw::blocks::kept_bytes(), kept);
}

TEST(Blocks, AMovedBlockHasOneOwnerAndAnEmptyOneGivesNothingBack) {
  Block a = take(100, "a test buffer");
  std::byte *p = a.data();
  Block b = std::move(a);
  EXPECT_FALSE(a);
  EXPECT_EQ(b.data(), p);
  const size_t kept = mw::blocks::kept_bytes();
  { Block dead = std::move(a); }
  EXPECT_EQ(mw::blocks::kept_bytes(), kept) << "an empty block was given back";
  Block c;
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(mw::blocks::kept_bytes(), kept);
}

}  // namespace
