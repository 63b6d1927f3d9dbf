// Bindings (core/bindings.hpp): the byte ranges bound to one lock or barrier, kept
// sorted and merged. Checked against a byte map under random adds and removes.
#include "core/bindings.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace mw {
namespace {

constexpr uintptr_t kBase = 0x40000000;
constexpr size_t kSpan = 512;

// The ranges a byte map makes, merged as Bindings keeps them.
std::vector<Range> ranges_of(const std::vector<bool> &bound) {
  std::vector<Range> out;
  for (size_t i = 0; i < bound.size();) {
    if (!bound[i]) {
      i++;
      continue;
    }
    size_t j = i;
    while (j < bound.size() && bound[j]) j++;
    out.push_back({kBase + i, j - i});
    i = j;
  }
  return out;
}

void expect_same(const Bindings &b, const std::vector<bool> &bound, int step) {
  const std::vector<Range> want = ranges_of(bound);
  ASSERT_EQ(b.ranges().size(), want.size()) << "after step " << step;
  for (size_t i = 0; i < want.size(); i++) {
    EXPECT_EQ(b.ranges()[i].addr, want[i].addr) << "range " << i << " after step " << step;
    EXPECT_EQ(b.ranges()[i].len, want[i].len) << "range " << i << " after step " << step;
  }
}

TEST(Bindings, AddAndRemoveKeepTheRangesSortedMergedAndExact) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; trial++) {
    Bindings b;
    std::vector<bool> bound(kSpan, false);
    for (int step = 0; step < 200; step++) {
      const size_t at = rng() % kSpan, len = 1 + rng() % std::min<size_t>(40, kSpan - at);
      const bool add = rng() % 3 != 0;
      if (add)
        b.add(kBase + at, len);
      else
        b.remove(kBase + at, len);
      for (size_t i = at; i < at + len; i++) bound[i] = add;
      expect_same(b, bound, step);
      if (HasFatalFailure()) return;
      // overlapping() finds a bound byte of any window that has one, and none otherwise.
      const size_t q = rng() % kSpan, qlen = 1 + rng() % std::min<size_t>(16, kSpan - q);
      bool any = false;
      for (size_t i = q; i < q + qlen; i++) any = any || bound[i];
      const Range *r = b.overlapping(kBase + q, kBase + q + qlen);
      EXPECT_EQ(r != nullptr, any) << "window [" << q << ", +" << qlen << ") at step " << step;
      if (r) EXPECT_TRUE(r->addr < kBase + q + qlen && r->end() > kBase + q);
    }
  }
}

TEST(Bindings, AssignTakesRangesInAnyOrderAndMergesThem) {
  Bindings b;
  b.assign({{kBase + 100, 10}, {kBase, 50}, {kBase + 50, 20}, {kBase + 105, 30}});
  ASSERT_EQ(b.ranges().size(), 2u);
  EXPECT_EQ(b.ranges()[0].addr, kBase);
  EXPECT_EQ(b.ranges()[0].len, 70u);
  EXPECT_EQ(b.ranges()[1].addr, kBase + 100);
  EXPECT_EQ(b.ranges()[1].len, 35u);
}

}  // namespace
}  // namespace mw
