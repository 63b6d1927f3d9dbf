// The dirty map: exact marks, clipping to the window, and the run scanner the
// consistency protocols use to collect what a rank wrote.
#include "memory/dirty.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "midway.h"
#include "memory/window.hpp"

namespace {

class DirtyMapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    len_ = 3 * 4096 + 123;
    buf_ = static_cast<unsigned char *>(mw_malloc_lines(len_, 1));
    ASSERT_NE(buf_, nullptr);
    mw_dirty_clear(buf_, len_);
  }
  void TearDown() override { mw_free(buf_); }

  uintptr_t at(size_t i) const { return reinterpret_cast<uintptr_t>(buf_ + i); }

  unsigned char *buf_ = nullptr;
  size_t len_ = 0;
};

TEST_F(DirtyMapTest, FreshAllocationIsClean) { EXPECT_EQ(mw_dirty_count(buf_, len_), 0u); }

TEST_F(DirtyMapTest, MarksExactlyTheRange) {
  mw::dirty::mark(buf_ + 10, 7);
  EXPECT_EQ(mw_dirty_count(buf_, len_), 7u);
  EXPECT_EQ(mw_dirty_count(buf_ + 10, 7), 7u);
  EXPECT_EQ(mw_dirty_count(buf_ + 9, 1), 0u);
  EXPECT_EQ(mw_dirty_count(buf_ + 17, 1), 0u);
}

// Rows as __mw_mark_rows marks them, byte for byte: every combination of alignment,
// length and stride of the fast paths (whole shadow bytes, rows that touch) and the
// general one, against marking the rows one by one.
TEST_F(DirtyMapTest, RowsMarkExactlyTheirBytes) {
  for (size_t start : {0, 3, 8, 64})
    for (size_t len : {1, 5, 8, 16, 24, 32, 64, 72, 128})
      for (size_t stride : {len, len + 1, len + 8, 2 * len, 3 * len + 8, len / 2 + 1})
        for (size_t rows : {1, 2, 7, 40}) {
          if (start + (rows - 1) * stride + len > len_) continue;
          mw_dirty_clear(buf_, len_);
          mw::dirty::mark_rows(buf_ + start, len, static_cast<ptrdiff_t>(stride), rows);
          std::vector<bool> want(len_, false);
          for (size_t r = 0; r < rows; ++r)
            for (size_t i = 0; i < len; ++i) want[start + r * stride + i] = true;
          for (size_t i = 0; i < len_; ++i)
            ASSERT_EQ(mw_dirty_count(buf_ + i, 1), want[i] ? 1u : 0u)
                << "byte " << i << " of rows at +" << start << ", " << rows << " of " << len
                << " bytes, " << stride << " apart";
        }
}

TEST_F(DirtyMapTest, RowsOutsideTheWindowAreIgnored) {
  std::vector<uint64_t> heap(64);
  mw::dirty::mark_rows(heap.data(), 16, 64, 8);
  mw::dirty::mark_rows(buf_, 8, 16, 0);
  mw::dirty::mark_rows(buf_, 0, 16, 8);
  EXPECT_EQ(mw_dirty_count(buf_, len_), 0u);
}

TEST_F(DirtyMapTest, ClearUnmarksOnlyTheRange) {
  mw::dirty::mark(buf_, 100);
  mw_dirty_clear(buf_ + 20, 30);
  EXPECT_EQ(mw_dirty_count(buf_, 100), 70u);
  EXPECT_EQ(mw_dirty_count(buf_ + 20, 30), 0u);
}

TEST_F(DirtyMapTest, MarkOutsideTheWindowIsIgnored) {
  int private_data[16];
  mw::dirty::mark(private_data, sizeof private_data);  // must not touch any shadow
  std::vector<char> heap(64);
  mw::dirty::mark(heap.data(), heap.size());
  EXPECT_EQ(mw_dirty_count(buf_, len_), 0u);
}

// Runs found by the scanner equal runs found byte by byte, for random patterns at every
// alignment, including runs that touch the ends of the scanned range.
TEST_F(DirtyMapTest, RunsMatchAByteByByteScan) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {
    mw_dirty_clear(buf_, len_);
    std::vector<bool> want(len_, false);
    const int nruns = static_cast<int>(rng() % 12);
    for (int r = 0; r < nruns; ++r) {
      size_t b = rng() % len_;
      size_t l = 1 + rng() % (trial % 2 ? 40 : 700);
      l = std::min(l, len_ - b);
      mw::dirty::mark(buf_ + b, l);
      for (size_t i = b; i < b + l; ++i) want[i] = true;
    }
    const size_t from = rng() % 64, to = len_ - rng() % 64;
    std::vector<std::pair<uintptr_t, size_t>> expected, got;
    for (size_t i = from; i < to;) {
      if (!want[i]) { ++i; continue; }
      size_t s = i;
      while (i < to && want[i]) ++i;
      expected.emplace_back(at(s), i - s);
    }
    mw::dirty::for_each_run(at(from), to - from,
                            [&](uintptr_t b, size_t l) { got.emplace_back(b, l); });
    ASSERT_EQ(got, expected) << "trial " << trial;
  }
}

// any() (a flush's look at each page it shares): one marked byte anywhere in the page is
// seen, whichever vector width the CPU gave it; marks just outside the page are not.
TEST_F(DirtyMapTest, AnySeesOneMarkAnywhereInAPageAndNothingOutside) {
  const uintptr_t page = (at(0) + 4095) & ~uintptr_t{4095};
  ASSERT_LE(page + 2 * 4096, at(len_));
  EXPECT_FALSE(mw::dirty::any(page, 4096));
  for (size_t i = 0; i < 4096; i += 61) {  // every shadow word, at varied bits
    mw::dirty::mark(reinterpret_cast<void *>(page + i), 1);
    EXPECT_TRUE(mw::dirty::any(page, 4096)) << "byte " << i;
    mw_dirty_clear(reinterpret_cast<void *>(page + i), 1);
  }
  mw::dirty::mark(reinterpret_cast<void *>(page + 4095), 1);
  EXPECT_TRUE(mw::dirty::any(page, 4096));
  EXPECT_FALSE(mw::dirty::any(page + 4096, 4096));
  mw_dirty_clear(reinterpret_cast<void *>(page + 4095), 1);
  mw::dirty::mark(reinterpret_cast<void *>(page - 1), 1);
  mw::dirty::mark(reinterpret_cast<void *>(page + 4096), 1);
  EXPECT_FALSE(mw::dirty::any(page, 4096));
  EXPECT_TRUE(mw::dirty::any(page + 4096, 4096));
}

TEST_F(DirtyMapTest, CountOutsideSharedMemoryIsAnError) {
  int x = 0;
  EXPECT_DEATH(mw_dirty_count(&x, sizeof x),
               "midway: mw_dirty_count: \\[0x[0-9a-f]+, \\+4\\) is not shared memory.*"
               "\\(rank 0\\)");
  EXPECT_DEATH(mw_dirty_clear(&x, sizeof x), "mw_dirty_clear: .* is not shared memory");
}

}  // namespace

// dirty::take: what a release's flush and the barrier take. It returns the maximal runs
// of marked bytes, clears exactly what it returns, and leaves kept ranges (bound bytes on
// a page bound in part) marked and out of the runs.
class DirtyTakeTest : public DirtyMapTest {
 protected:
  // buf_ is 64-byte aligned (mw_malloc_lines(.., 1) aligns to 16: round up).
  uintptr_t base() const { return (at(0) + 63) & ~uintptr_t{63}; }
  std::vector<mw::Range> take(size_t off, size_t len, const std::vector<mw::Range> &keep = {}) {
    std::vector<mw::Range> out;
    mw::dirty::take(base() + off, len, keep, out);
    return out;
  }
  void mark(size_t off, size_t len) { mw::dirty::mark(reinterpret_cast<void *>(base() + off), len); }
  size_t marked(size_t off, size_t len) { return mw_dirty_count(reinterpret_cast<void *>(base() + off), len); }
};

namespace mw {
bool operator==(const Range &a, const Range &b) { return a.addr == b.addr && a.len == b.len; }
}  // namespace mw

namespace {

TEST_F(DirtyTakeTest, TakesMaximalRunsAndClearsThem) {
  mark(3, 5);
  mark(60, 10);    // across the boundary of two 64-byte groups: one run
  mark(128, 64);   // a whole group
  mark(192, 1);    // and the first byte of the next: the same run
  const std::vector<mw::Range> got = take(0, 512);
  const std::vector<mw::Range> want{{base() + 3, 5}, {base() + 60, 10}, {base() + 128, 65}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(marked(0, 512), 0u);
  EXPECT_TRUE(take(0, 512).empty()) << "taken marks are gone";
}

TEST_F(DirtyTakeTest, AppendsAndStaysInsideItsRange) {
  mark(0, 256);
  std::vector<mw::Range> out{{1, 1}};
  mw::dirty::take(base() + 64, 64, {}, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1], (mw::Range{base() + 64, 64}));
  EXPECT_EQ(marked(0, 64), 64u);
  EXPECT_EQ(marked(128, 128), 128u);
}

// The application thread's take (exclusive: whole shadow lines read and cleared with plain
// loads and stores) finds the same runs and leaves the same marks as the atomic one, on
// patterns with whole lines marked, clean lines, partial lines, runs across lines and
// kept ranges.
TEST_F(DirtyTakeTest, TheApplicationThreadsTakeAgreesWithTheAtomicOne) {
  const uintptr_t line0 = (base() + 511) & ~uintptr_t{511};
  const size_t off = line0 - base(), len = 2048;
  ASSERT_LE(off + len + 64, len_ - (base() - at(0)));
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::pair<size_t, size_t>> marks;  // (offset from line0, length)
    const int n = static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i) {
      const size_t at = rng() % len;
      size_t l = rng() % 3 == 0 ? 512 * (1 + rng() % 2) : 1 + rng() % 200;
      if (rng() % 2) l = std::min(l, len - at);
      marks.emplace_back(at, std::min(l, len - at));
    }
    if (round % 4 == 0) marks.emplace_back(512, 512);  // one whole line, at least
    if (round % 4 == 1) marks.emplace_back(300, 1100);  // a run going on into whole lines and out
    if (round % 4 == 2) marks.emplace_back(0, len);     // every line whole: one run
    if (round % 4 == 3) {  // a run that ends with a line, a clean line, a run from the next line's start
      marks.emplace_back(0, 512);
      marks.emplace_back(1024, 100);
    }
    std::vector<mw::Range> keep;
    if (round % 5 == 0) keep.push_back({line0 + 1024 + rng() % 400, 1 + rng() % 100});
    std::vector<mw::Range> got[2];
    size_t left[2];
    for (int exclusive = 0; exclusive < 2; ++exclusive) {
      for (const auto &[a, l] : marks) mark(off + a, l);
      mw::dirty::take(line0, len, keep, got[exclusive], exclusive != 0);
      left[exclusive] = marked(off, len);
      mw_dirty_clear(reinterpret_cast<void *>(line0), len);
    }
    EXPECT_EQ(got[1], got[0]) << "round " << round;
    EXPECT_EQ(left[1], left[0]) << "round " << round;
  }
}

// A long mark made again is passed over while nothing has cleared marks (dirty.cpp,
// "marks made again"), and made again once anything has: a take of any part of it, a
// clear, on this thread or another. A mark passed over after a clear would lose the
// write it stands for.
TEST_F(DirtyTakeTest, ARememberedMarkIsMadeAgainAfterATakeOrAClear) {
  const size_t len = 2 * 4096;
  mark(0, len);
  ASSERT_EQ(marked(0, len), len);
  mark(0, len);  // remembered: nothing to do, and nothing lost
  EXPECT_EQ(marked(0, len), len);
  take(64, 128);  // part of it
  EXPECT_EQ(marked(0, len), len - 128);
  mark(0, len);
  EXPECT_EQ(marked(0, len), len) << "a take of part of a remembered mark";
  mw_dirty_clear(reinterpret_cast<void *>(base() + 1000), 3);
  mark(0, len);
  EXPECT_EQ(marked(0, len), len) << "a clear of part of it";
  std::thread([&] { take(0, 4096); }).join();
  mark(0, len);
  EXPECT_EQ(marked(0, len), len) << "a take on another thread";
}

TEST_F(DirtyTakeTest, RememberedRowsAreMarkedAgainAfterATake) {
  auto rows = [&] { mw::dirty::mark_rows(reinterpret_cast<void *>(base() + 4), 500, 512, 20); };
  rows();
  ASSERT_EQ(marked(0, 20 * 512), 20u * 500);
  for (int round = 0; round < 3; ++round) {
    rows();
    EXPECT_EQ(marked(0, 20 * 512), 20u * 500);
    take(512 * 7, 512);  // one row
    EXPECT_EQ(marked(0, 20 * 512), 19u * 500);
    rows();
    EXPECT_EQ(marked(0, 20 * 512), 20u * 500) << "round " << round;
  }
  // Other rows at the same place are other marks: one more row, with nothing cleared
  // since the 20 were remembered.
  mw::dirty::mark_rows(reinterpret_cast<void *>(base() + 4), 500, 512, 21);
  EXPECT_EQ(marked(0, 21 * 512), 21u * 500);
}

// Rows that touch or overlap are remembered as the range they cover (FFT's butterflies
// mark a whole row at each level, as rows whose length doubles), so another shape of the
// same range is passed over: after a take it must be made again, and a range one row
// longer or rows that overlap must mark exactly what they cover.
TEST_F(DirtyTakeTest, RowsThatTouchAreRememberedAsOneRange) {
  auto rows = [&](size_t len, ptrdiff_t stride, size_t n) {
    mw::dirty::mark_rows(reinterpret_cast<void *>(base()), len, stride, n);
  };
  rows(64, 64, 64);
  ASSERT_EQ(marked(0, 8192), 4096u);
  rows(128, 128, 32);  // the same 4096 bytes
  EXPECT_EQ(marked(0, 8192), 4096u);
  take(1024, 64);
  rows(256, 256, 16);
  EXPECT_EQ(marked(0, 8192), 4096u) << "the same range after a take";
  rows(100, 64, 64);  // overlapping rows: 63 * 64 + 100 bytes
  EXPECT_EQ(marked(0, 8192), 63u * 64 + 100);
  rows(64, 64, 65);
  EXPECT_EQ(marked(0, 8192), 65u * 64) << "one row more is another range";
}

// The application marks the same rows after each of its writes while another thread
// takes them, fences it and reads the data, as a home serving a page does: the last
// value written reaches the taker, whatever the marks passed over in between.
TEST_F(DirtyTakeTest, NoWriteIsLostWhileAnotherThreadTakesRememberedMarks) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two cores";
  mw::dirty::start_fences(true);
  constexpr size_t kRows = 8, kLen = 504, kStride = 512;
  constexpr int kWrites = 20000;
  unsigned char *rows = reinterpret_cast<unsigned char *>(base());
  std::atomic<bool> done{false};
  std::vector<unsigned char> last(kRows * kStride, 0);
  std::thread taker([&] {
    std::vector<mw::Range> runs;
    for (bool final = false;;) {
      final = done.load(std::memory_order_acquire);
      runs.clear();
      mw::dirty::take(base(), kRows * kStride, {}, runs);
      if (!runs.empty()) mw::dirty::fence_application();
      for (const mw::Range &r : runs)
        for (uintptr_t a = r.addr; a < r.end(); ++a)
          last[a - base()] = __atomic_load_n(reinterpret_cast<unsigned char *>(a), __ATOMIC_RELAXED);
      if (final) break;
    }
  });
  for (int w = 1; w <= kWrites; ++w) {
    for (size_t r = 0; r < kRows; ++r)
      for (size_t i = 0; i < kLen; ++i)
        __atomic_store_n(&rows[r * kStride + i], static_cast<unsigned char>(w), __ATOMIC_RELAXED);
    mw::dirty::mark_rows(rows, kLen, kStride, kRows);
  }
  done.store(true, std::memory_order_release);
  taker.join();
  for (size_t r = 0; r < kRows; ++r)
    for (size_t i = 0; i < kLen; ++i)
      ASSERT_EQ(last[r * kStride + i], static_cast<unsigned char>(kWrites)) << "row " << r << " byte " << i;
}

TEST_F(DirtyTakeTest, KeptRangesAreNeitherTakenNorCleared) {
  mark(0, 200);
  const std::vector<mw::Range> keep{{base() + 10, 20}, {base() + 100, 60}};
  const std::vector<mw::Range> got = take(0, 256, keep);
  const std::vector<mw::Range> want{{base(), 10}, {base() + 30, 70}, {base() + 160, 40}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(marked(10, 20), 20u);
  EXPECT_EQ(marked(100, 60), 60u);
  EXPECT_EQ(marked(0, 256), 80u);
}

// The race a conditional mark opens (dirty.hpp, fence_application), as a store-buffering
// litmus test. The application thread stores `data` and then loads `mark`, without a
// barrier between them, as compiled code does; the taker sets `mark` with an atomic
// exchange (a take's atomic AND), fences the application, and reads `data`. Every store
// the application made before a load that still found the old mark must be read. Returns
// how many of `rounds` read less.
int stale_reads(bool fence, int rounds) {
  struct alignas(64) Line {
    std::atomic<uint64_t> v{0};
  };
  Line data, mark, seen, go;
  std::thread app([&] {
    uint64_t j = 0;
    for (int r = 1; r <= rounds; ++r) {
      while (go.v.load(std::memory_order_acquire) != static_cast<uint64_t>(r)) __builtin_ia32_pause();
      for (;;) {
        data.v.store(++j, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);  // the compiler keeps the order
        if (mark.v.load(std::memory_order_relaxed) == static_cast<uint64_t>(r)) break;
      }
      seen.v.store(j, std::memory_order_release);  // j's load found the new mark; j - 1's did not
    }
  });
  std::minstd_rand rng(7);
  int stale = 0;
  for (int r = 1; r <= rounds; ++r) {
    seen.v.store(0, std::memory_order_relaxed);
    go.v.store(static_cast<uint64_t>(r), std::memory_order_release);
    for (unsigned k = rng() % 2000; k > 0; --k) __builtin_ia32_pause();  // the application runs
    mark.v.exchange(static_cast<uint64_t>(r), std::memory_order_seq_cst);
    if (fence) mw::dirty::fence_application();
    const uint64_t read = data.v.load(std::memory_order_relaxed);
    uint64_t j;
    while ((j = seen.v.load(std::memory_order_acquire)) == 0) __builtin_ia32_pause();
    if (read + 1 < j) ++stale;
  }
  app.join();
  return stale;
}

// Two cores running both threads at once show the race without a fence; with either
// kind of fence it never happens. Where the control shows nothing (one free core), the
// test cannot tell, and says so.
void expect_no_stale_reads(bool membarrier) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two cores";
  const int control = stale_reads(false, 3000);
  if (control == 0) GTEST_SKIP() << "no stale read in 3000 rounds without a fence: the threads did not run at once";
  const bool registered = mw::dirty::start_fences(membarrier);
  if (membarrier && !registered) GTEST_SKIP() << "membarrier(2) is not available here";
  EXPECT_EQ(stale_reads(true, 3000), 0) << "without a fence, " << control << " of 3000 rounds read stale data";
}

TEST(ApplicationFence, MembarrierMakesTheApplicationsStoresVisible) { expect_no_stale_reads(true); }

TEST(ApplicationFence, ShootdownMakesTheApplicationsStoresVisible) { expect_no_stale_reads(false); }

}  // namespace
