// The shared heap: alignment to the line size, reuse, the line size of each block, and
// a clear error for every request it must refuse.
#include "memory/heap.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "midway.h"
#include "memory/window.hpp"

namespace {

class HeapTest : public ::testing::Test {};

TEST_F(HeapTest, BlocksAreInTheWindowAndUsable) {
  void *p = mw_malloc(1000);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(mw_in_window(p));
  EXPECT_TRUE(mw::window::accessible(p, 1000));
  std::memset(p, 0xab, 1000);  // committed: no fault
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
  mw_free(p);
}

TEST_F(HeapTest, BlocksAreAlignedToTheirLineAndRecordIt) {
  for (size_t line = 1; line <= mw::window::page_size(); line *= 2) {
    char *p = static_cast<char *>(mw_malloc_lines(3 * line + 1, line));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % line, 0u) << "line " << line;
    EXPECT_EQ(mw::heap::line_of(p), line);
    EXPECT_EQ(mw::heap::line_of(p + 3 * line), line);
    mw_free(p);
  }
  void *q = mw_malloc(10);
  EXPECT_EQ(mw::heap::line_of(q), mw::heap::kDefaultLine);
  mw_free(q);
  int x;
  EXPECT_EQ(mw::heap::line_of(&x), 0u);
}

TEST_F(HeapTest, BlocksDoNotOverlapAndFreedSpaceIsReused) {
  std::vector<char *> blocks;
  for (int i = 1; i <= 50; ++i) {
    char *p = static_cast<char *>(mw_malloc(static_cast<size_t>(i) * 37));
    std::memset(p, i, static_cast<size_t>(i) * 37);
    blocks.push_back(p);
  }
  for (int i = 1; i <= 50; ++i)
    for (size_t j = 0; j < static_cast<size_t>(i) * 37; ++j)
      ASSERT_EQ(blocks[i - 1][j], static_cast<char>(i));
  char *first = blocks[0];
  for (char *p : blocks) mw_free(p);
  char *again = static_cast<char *>(mw_malloc(37));
  EXPECT_EQ(again, first);  // first fit after the spans were coalesced
  mw_free(again);
}

TEST_F(HeapTest, LargeBlocksAreCommittedWithTheirDirtyMap) {
  const size_t n = 200u << 20;  // spans several commit chunks
  char *p = static_cast<char *>(mw_malloc(n));
  p[0] = 1;
  p[n - 1] = 1;
  EXPECT_EQ(mw_dirty_count(p, n), 0u);
  mw_free(p);
}

TEST_F(HeapTest, FreeOfNullIsANoOp) { mw_free(nullptr); }

TEST_F(HeapTest, ZeroSizeIsAnError) {
  EXPECT_DEATH(mw_malloc(0), "midway: mw_malloc: size 0 is not a valid shared allocation \\(rank 0\\)");
}

TEST_F(HeapTest, BadLineSizesAreErrors) {
  EXPECT_DEATH(mw_malloc_lines(64, 0), "mw_malloc_lines: line size 0 is not a power of two");
  EXPECT_DEATH(mw_malloc_lines(64, 48), "mw_malloc_lines: line size 48 is not a power of two");
  EXPECT_DEATH(mw_malloc_lines(64, 2 * mw::window::page_size()),
               "mw_malloc_lines: line size [0-9]+ is not a power of two from 1 to the page size");
}

TEST_F(HeapTest, TooLargeIsAnError) {
  EXPECT_DEATH(mw_malloc(size_t{1} << 62),
               "mw_malloc: cannot allocate [0-9]+ bytes: this rank's part of the shared heap "
               "has [0-9]+ of [0-9]+ bytes left \\(rank 0\\)");
}

// Each says why the pointer is no block: what it points to instead.
TEST_F(HeapTest, FreeOfAnythingElseIsAnError) {
  int x;
  EXPECT_DEATH(mw_free(&x), "mw_free: 0x[0-9a-f]+ is not a live block from mw_malloc on this rank: "
                            "it is not shared memory \\(0x[0-9a-f]+\\): memory from malloc is freed with free");
  char *p = static_cast<char *>(mw_malloc(64));
  EXPECT_DEATH(mw_free(p + 8), "not a live block from mw_malloc on this rank: it is 8 bytes into the block of 64 "
                               "bytes at 0x[0-9a-f]+, not its start");
  mw_free(p);
  EXPECT_DEATH(mw_free(p), "not a live block from mw_malloc on this rank: no block of this rank starts there "
                           "\\(already freed, or never allocated\\)");  // double free
}

}  // namespace
