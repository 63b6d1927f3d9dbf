// Deadlocks from every rank's wait record (waits::describe_deadlock), for the waits of
// semaphores, condition variables and fork/join: the states test/e2e/hangs.c cannot hold
// still (a join whose workers have all ended is only on its way to returning).
#include "core/waits.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using mw::waits::Kind;
using mw::waits::Snapshot;

Snapshot waiting(Kind kind, uint64_t object = 0, int peer = -1) {
  Snapshot s;
  s.valid = true;
  s.rec.kind = static_cast<uint32_t>(kind);
  s.rec.object = object;
  s.rec.peer = peer;
  return s;
}

TEST(DeadlockTest, SemaphoresAndConditionsNobodyIsLeftToPostOrSignal) {
  EXPECT_EQ(mw::waits::describe_deadlock({waiting(Kind::kSemaphore, 0x1000, 0), waiting(Kind::kCondition, 0x2000, 0)}),
            "  rank 0: no rank is left to post it\n  rank 1: no rank is left to signal it\n");
}

TEST(DeadlockTest, ASemaphoreIsNoDeadlockWhileAnotherRankRunsOrIsServed) {
  Snapshot running;
  running.valid = true;  // kind kNone: it may post
  EXPECT_EQ(mw::waits::describe_deadlock({waiting(Kind::kSemaphore, 0x1000, 1), running}), "");
  // A page is served by its home's service thread: that rank goes on, and may post.
  EXPECT_EQ(mw::waits::describe_deadlock({waiting(Kind::kSemaphore, 0x1000, 1), waiting(Kind::kPage, 0x3000, 0)}),
            "");
}

TEST(DeadlockTest, AJoinIsStuckOnlyWhileAWorkerWaitsInsideTheForkedFunction) {
  // Every worker waits for its next start: they have ended the function, and their
  // word is on its way to the creator.
  EXPECT_EQ(mw::waits::describe_deadlock({waiting(Kind::kJoin), waiting(Kind::kFork, 0, 0), waiting(Kind::kFork, 0, 0)}),
            "");
  EXPECT_EQ(mw::waits::describe_deadlock(
                {waiting(Kind::kJoin), waiting(Kind::kFork, 0, 0), waiting(Kind::kSemaphore, 0x1000, 0)}),
            "  rank 0: rank 2 will not end the forked function\n  rank 1: rank 0 will not fork\n"
            "  rank 2: no rank is left to post it\n");
}

Snapshot in_acquire(uint64_t lock, uint64_t holding) {
  Snapshot s = waiting(Kind::kLock, lock);
  s.rec.nheld = 1;
  s.rec.held[0] = holding;
  return s;
}

TEST(DeadlockTest, ALockCycleIsADeadlockWhileAnotherRankRuns) {
  Snapshot running;
  running.valid = true;  // kind kNone
  std::vector<int> involved;
  EXPECT_EQ(mw::waits::describe_deadlock({running, in_acquire(0x10, 0x20), in_acquire(0x20, 0x10)}, &involved),
            "  rank 1: held by rank 2\n  rank 2: held by rank 1\n");
  EXPECT_EQ(involved, (std::vector<int>{1, 2}));
  // A chain that ends at the running rank is not: it may release what it holds.
  Snapshot holder = running;
  holder.rec.nheld = 1;
  holder.rec.held[0] = 0x30;
  EXPECT_EQ(mw::waits::describe_deadlock({holder, in_acquire(0x30, 0x20), in_acquire(0x20, 0x40)}, &involved), "");
  EXPECT_TRUE(involved.empty());
}

TEST(DeadlockTest, WaitsAreDescribedByKind) {
  Snapshot s = waiting(Kind::kSemaphore, 0x1000, 1);
  EXPECT_EQ(mw::waits::describe(s.rec, nullptr, 1), "semaphore 0x1000, its manager rank 1");
  s = waiting(Kind::kCondition, 0x2000, 0);
  EXPECT_EQ(mw::waits::describe(s.rec, nullptr, 1), "condition variable 0x2000, its manager rank 0");
  s = waiting(Kind::kFork, 0, 0);
  EXPECT_EQ(mw::waits::describe(s.rec, nullptr, 1), "the next mw_fork, its creator rank 0");
  s = waiting(Kind::kJoin);
  EXPECT_EQ(mw::waits::describe(s.rec, nullptr, 1), "mw_join: the other ranks' ends of the fork");
}

}  // namespace
