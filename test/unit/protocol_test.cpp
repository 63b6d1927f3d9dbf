// The entry-consistency protocols on the in-process transport (loopback_transport.hpp):
// this process is rank 0 of a job of 3, and each test plays ranks 1 and 2. The code under
// test is the runtime's own: the lock state machine (request, forward, grant, readers,
// revokes, the exclusive wait), barrier coalescing at the manager, the timestamp interval
// map and the batching of updates.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "core/error.hpp"
#include "ec/barriers.hpp"
#include "ec/locks.hpp"
#include "ec/protocol.hpp"
#include "ec/timestamps.hpp"
#include "ec/updates.hpp"
#include "loopback_transport.hpp"
#include "memory/dirty.hpp"
#include "memory/heap.hpp"
#include "midway.h"

namespace {

namespace lb = mw::transport::loopback;
using mw::locks::wire::GrantExtra;
using mw::locks::wire::LockOnly;
using mw::locks::wire::Request;
using mw::transport::MsgType;

constexpr int kMe = 0, kRanks = 3;

class ProtocolJob : public ::testing::Environment {
 public:
  void SetUp() override {
    mw::g_rank = kMe;
    mw::protocol::start(kMe, kRanks);
    mw::heap::init(kMe, kRanks);
    lb::start(kMe, kRanks);
    mw::locks::init();
    mw::barriers::init();
  }
};
const auto *const kJob = ::testing::AddGlobalTestEnvironment(new ProtocolJob);

// Shared memory from this rank's part of the heap; never freed (records outlive tests).
std::byte *shared(size_t len, size_t line = 64) {
  return static_cast<std::byte *>(mw::heap::allocate(len, line, "test"));
}

// A lock no test has used, managed by `manager` (locks are 16 bytes: neighbours go to
// different managers).
mw_lock_t *lock_managed_by(int manager) {
  static mw_lock_t *pool = reinterpret_cast<mw_lock_t *>(shared(sizeof(mw_lock_t) * 1024));
  static size_t next = 0;
  for (;;) {
    mw_lock_t *l = &pool[next++];
    if (mw::locks::manager_of(reinterpret_cast<uintptr_t>(l)) == manager) return l;
  }
}

uint64_t addr(const void *p) { return reinterpret_cast<uint64_t>(p); }

mw::transport::Header header_of(const lb::Message &m, int from) {
  mw::transport::Header h{};
  h.type = static_cast<uint16_t>(m.type);
  h.sender = from;
  h.payload_len = m.head.size();
  h.bulk_len = m.bulk.size();
  return h;
}

// The fields a grant carries after its runs (checked by the runtime's own reader).
GrantExtra extra_of(const lb::Message &m) {
  const mw::updates::Parsed p = mw::updates::parse(header_of(m, kMe), m.head, sizeof(GrantExtra));
  GrantExtra ex;
  std::memcpy(&ex, p.extra.data(), sizeof ex);
  return ex;
}

// Rank `from` grants lock l to this rank: encoded by the runtime's own writer
// (updates::send, as locks.cpp's grant() does), delivered as from `from`, carrying
// `bytes` as the runs' data (as they lie at the granting rank).
void grant_from(int from, mw_lock_t *l, mw_mode_t mode, uint64_t tenure, uint64_t clock,
                std::vector<mw::timestamps::Run> runs = {}, std::vector<std::byte> bytes = {}) {
  GrantExtra ex{static_cast<uint32_t>(mode), 0, tenure};
  ASSERT_TRUE(lb::sent().empty()) << "messages of this rank the test did not look at";
  mw::updates::send(kMe, MsgType::kGrantData, MsgType::kLockGrant, addr(l), runs, &ex, sizeof ex, clock);
  for (lb::Message m : lb::sent()) {
    if (!bytes.empty()) m.bulk = bytes;
    lb::deliver(from, m);
  }
}

class LockTest : public ::testing::Test {
 protected:
  void SetUp() override { lb::start(kMe, kRanks); }
  void TearDown() override { lb::set_peers(nullptr); }
};

// A request goes to the lock's manager; the grant ends the wait; the owner then takes
// and leaves the lock with no message at all.
TEST_F(LockTest, RequestGoesToTheManagerAndTheGrantEndsTheWait) {
  mw_lock_t *l = lock_managed_by(1);
  int requests = 0;
  lb::set_peers([&] {
    for (const lb::Message &m : lb::sent()) {
      ASSERT_EQ(m.type, MsgType::kLockRequest);
      EXPECT_EQ(m.dest, 1) << "to the manager";
      const Request r = m.body<Request>();
      EXPECT_EQ(r.lock, addr(l));
      EXPECT_EQ(r.rank, kMe);
      EXPECT_EQ(r.mode, static_cast<uint32_t>(MW_EXCLUSIVE));
      EXPECT_EQ(r.t_seen, 0u) << "never saw the lock";
      ++requests;
      grant_from(1, l, MW_EXCLUSIVE, 1, 40);  // rank 1, manager and first owner
    }
  });
  mw::locks::acquire(l, MW_EXCLUSIVE);
  EXPECT_EQ(requests, 1);
  mw::locks::release(l);
  lb::set_peers(nullptr);
  for (int i = 0; i < 100; ++i) {
    mw::locks::acquire(l, MW_EXCLUSIVE);
    mw::locks::release(l);
  }
  EXPECT_TRUE(lb::sent().empty()) << "the owner re-acquires with no message";
}

// The manager numbers exclusive requests as it routes them (each opens a tenure) and
// sends every request to the rank of the latest tenure, stamped with it.
TEST_F(LockTest, TheManagerRoutesEachRequestToTheLatestTenure) {
  mw_lock_t *l = lock_managed_by(kMe);  // starts here, free: this rank owns tenure 0
  lb::deliver_body(1, MsgType::kLockRequest, Request{addr(l), 1, MW_EXCLUSIVE, 0, 0, 0, 0});
  std::vector<lb::Message> out = lb::sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, MsgType::kLockGrant) << "the owner is free: granted at once";
  EXPECT_EQ(out[0].dest, 1);
  EXPECT_EQ(extra_of(out[0]).mode, static_cast<uint32_t>(MW_EXCLUSIVE));
  EXPECT_EQ(extra_of(out[0]).tenure, 1u) << "rank 1 owns tenure 1";

  lb::deliver_body(2, MsgType::kLockRequest, Request{addr(l), 2, MW_NONEXCLUSIVE, 0, 0, 0, 0});
  out = lb::sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, MsgType::kLockForward);
  EXPECT_EQ(out[0].dest, 1) << "to the probable owner";
  Request fwd = out[0].body<Request>();
  EXPECT_EQ(fwd.rank, 2);
  EXPECT_EQ(fwd.tenure, 1u);
  EXPECT_EQ(fwd.opens, 0u) << "a non-exclusive request opens no tenure";

  lb::deliver_body(2, MsgType::kLockRequest, Request{addr(l), 2, MW_EXCLUSIVE, 0, 0, 0, 0});
  fwd = lb::sent().at(0).body<Request>();
  EXPECT_EQ(fwd.tenure, 1u);
  EXPECT_EQ(fwd.opens, 2u);
  lb::deliver_body(1, MsgType::kLockRequest, Request{addr(l), 1, MW_NONEXCLUSIVE, 0, 0, 0, 0});
  out = lb::sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dest, 2) << "now rank 2's tenure is the latest";
  EXPECT_EQ(out[0].body<Request>().tenure, 2u);
}

// The owner grants non-exclusive copies and keeps the lock; an exclusive acquire then
// waits until every reader has given its copy back.
TEST_F(LockTest, AnExclusiveAcquireWaitsForEveryReader) {
  mw_lock_t *l = lock_managed_by(kMe);
  for (int r : {1, 2}) {
    lb::deliver_body(r, MsgType::kLockRequest, Request{addr(l), r, MW_NONEXCLUSIVE, 0, 0, 0, 0});
    std::vector<lb::Message> out = lb::sent();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].type, MsgType::kLockGrant);
    EXPECT_EQ(out[0].dest, r);
    EXPECT_EQ(extra_of(out[0]).mode, static_cast<uint32_t>(MW_NONEXCLUSIVE));
  }
  std::set<int> revoked;
  lb::set_peers([&] {
    for (const lb::Message &m : lb::sent()) {
      ASSERT_EQ(m.type, MsgType::kLockRevoke);
      EXPECT_EQ(m.body<LockOnly>().lock, addr(l));
      EXPECT_TRUE(revoked.insert(m.dest).second) << "one revoke per reader";
      // Not yet answered by both: the acquire must still be waiting.
      lb::deliver_body(m.dest, MsgType::kLockRevokeAck, LockOnly{addr(l)});
    }
  });
  mw::locks::acquire(l, MW_EXCLUSIVE);
  EXPECT_EQ(revoked, (std::set<int>{1, 2}));

  // Held exclusively here, a request waits for the release.
  lb::set_peers(nullptr);
  lb::deliver_body(2, MsgType::kLockRequest, Request{addr(l), 2, MW_NONEXCLUSIVE, 0, 0, 0, 0});
  EXPECT_TRUE(lb::sent().empty());
  mw::locks::release(l);
  std::vector<lb::Message> out = lb::sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, MsgType::kLockGrant);
  EXPECT_EQ(out[0].dest, 2);
}

// A reader re-acquires its copy with no message until a revoke takes it back: at once if
// it does not hold it, at its release if it does.
TEST_F(LockTest, AReaderKeepsItsCopyUntilRevoked) {
  mw_lock_t *l = lock_managed_by(1);
  int requests = 0;
  lb::set_peers([&] {
    for (const lb::Message &m : lb::sent()) {
      ASSERT_EQ(m.type, MsgType::kLockRequest);
      ++requests;
      grant_from(1, l, MW_NONEXCLUSIVE, 0, 10);
    }
  });
  mw::locks::acquire(l, MW_NONEXCLUSIVE);
  mw::locks::release(l);
  mw::locks::acquire(l, MW_NONEXCLUSIVE);
  mw::locks::release(l);
  EXPECT_EQ(requests, 1) << "the copy is re-acquired with no message";

  lb::deliver_body(1, MsgType::kLockRevoke, LockOnly{addr(l)});
  std::vector<lb::Message> out = lb::sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, MsgType::kLockRevokeAck) << "not held: answered at once";
  EXPECT_EQ(out[0].dest, 1);

  mw::locks::acquire(l, MW_NONEXCLUSIVE);
  EXPECT_EQ(requests, 2) << "revoked: asked again";
  lb::deliver_body(1, MsgType::kLockRevoke, LockOnly{addr(l)});
  EXPECT_TRUE(lb::sent().empty()) << "held: answered at the release";
  mw::locks::release(l);
  out = lb::sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, MsgType::kLockRevokeAck);
}

// A grant carries the bound data the acquirer lacks, stamped; the acquirer asks next
// time with the clock of its last grant.
TEST_F(LockTest, AGrantLandsItsDataAndTheNextRequestSaysWhenItWasSeen) {
  mw_lock_t *l = lock_managed_by(2);
  std::byte *data = shared(256);
  std::memset(data, 0, 256);
  std::vector<std::byte> wanted(100);
  for (size_t i = 0; i < wanted.size(); ++i) wanted[i] = std::byte(i * 7 + 1);
  std::vector<uint64_t> seen;
  lb::set_peers([&] {
    for (const lb::Message &m : lb::sent()) {
      if (m.type != MsgType::kLockRequest) continue;
      seen.push_back(m.body<Request>().t_seen);
      grant_from(2, l, MW_EXCLUSIVE, seen.size(), 77, {{addr(data), 100, 70}}, wanted);
    }
  });
  mw::locks::acquire(l, MW_EXCLUSIVE);
  EXPECT_TRUE(std::equal(data, data + 100, wanted.begin())) << "the grant's data is in place";
  mw::locks::release(l);
  // Another rank takes the lock (routed here by its manager, rank 2, in this tenure);
  // this rank then asks again, saying when it last saw the lock: its grant's clock.
  lb::deliver_body(2, MsgType::kLockForward, Request{addr(l), 1, MW_EXCLUSIVE, 0, 0, 1, 2});
  std::vector<lb::Message> out = lb::sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, MsgType::kLockGrant);
  EXPECT_EQ(out[0].dest, 1);
  mw::locks::acquire(l, MW_EXCLUSIVE);
  mw::locks::release(l);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], 0u) << "never saw the lock";
  EXPECT_GE(seen[1], 77u) << "saw it as of its grant";
}

TEST(LockMisuseDeathTest, AcquiringAHeldLockStops) {
  mw_lock_t *l = lock_managed_by(kMe);
  EXPECT_EXIT(
      {
        mw::locks::acquire(l, MW_EXCLUSIVE);
        mw::locks::acquire(l, MW_EXCLUSIVE);
      },
      ::testing::ExitedWithCode(1), "mw_acquire: lock 0x[0-9a-f]+ is already held by this rank");
}

TEST(LockMisuseDeathTest, AGrantNobodyAskedForStops) {
  mw_lock_t *l = lock_managed_by(1);
  EXPECT_EXIT(grant_from(1, l, MW_EXCLUSIVE, 1, 5), ::testing::ExitedWithCode(1),
              "malformed LOCK_GRANT message from rank 1 about lock 0x[0-9a-f]+: a grant this rank did not ask for");
}

// ---- Barriers: the manager (rank 0) coalesces ----

TEST(BarrierTest, TheManagerSendsEachRankTheOthersUpdates) {
  lb::start(kMe, kRanks);
  auto *b = reinterpret_cast<mw_barrier_t *>(shared(sizeof(mw_barrier_t)));
  std::byte *data = shared(512);
  mw::barriers::bind(b, data, 512);
  std::memset(data, 0, 512);
  mw::dirty::clear(data, 512);
  // Ranks 1 and 2 arrive with what they wrote: 1 wrote [0, 10), 2 wrote [100, 120).
  auto arrive = [&](int r, uint64_t at, size_t len) {
    std::vector<std::byte> bytes(len, std::byte(r));
    mw::barriers::wire::ArriveExtra ex{1, 0, 0};
    mw::updates::send(kMe, MsgType::kBarrierData, MsgType::kBarrierArrive, addr(b),
                      std::vector<mw::timestamps::Run>{{addr(data) + at, len, 0}}, &ex, sizeof ex, 3);
    for (lb::Message m : lb::sent()) {
      m.bulk = bytes;
      lb::deliver(r, m);
    }
  };
  lb::set_peers([&] {
    static bool once = false;
    if (std::exchange(once, true)) return;
    arrive(1, 0, 10);
    arrive(2, 100, 20);
  });
  // This rank wrote [300, 304).
  std::memset(data + 300, 9, 4);
  mw::dirty::mark(data + 300, 4);
  mw::barriers::cross(b, false, 0);
  lb::set_peers(nullptr);
  std::vector<lb::Message> out = lb::sent();
  ASSERT_EQ(out.size(), 2u);
  for (const lb::Message &m : out) {
    EXPECT_EQ(m.type, MsgType::kBarrierRelease);
    const mw::updates::Parsed p =
        mw::updates::parse(header_of(m, kMe), m.head, sizeof(mw::barriers::wire::ReleaseExtra));
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    for (const auto &d : p.runs) runs.emplace_back(d.addr - addr(data), d.len);
    if (m.dest == 1)
      EXPECT_EQ(runs, (std::vector<std::pair<uint64_t, uint64_t>>{{100, 20}, {300, 4}}));
    else
      EXPECT_EQ(runs, (std::vector<std::pair<uint64_t, uint64_t>>{{0, 10}, {300, 4}}));
  }
  EXPECT_EQ(data[0], std::byte(1)) << "the arrivals' data landed at the manager";
  EXPECT_EQ(data[119], std::byte(2));
}

// ---- Timestamps: the interval map ----

class TimestampTest : public ::testing::Test {
 protected:
  void SetUp() override {
    p_ = addr(shared(4096));
    mw::dirty::clear(reinterpret_cast<void *>(p_), 4096);
  }
  void mark(size_t off, size_t len) { mw::dirty::mark(reinterpret_cast<void *>(p_ + off), len); }
  std::vector<mw::timestamps::Run> collect(size_t off, size_t len, uint64_t since) {
    std::vector<mw::timestamps::Run> out;
    mw::timestamps::collect(p_ + off, len, since, out);
    return out;
  }
  uint64_t p_ = 0;
};

MATCHER_P3(RunIs, at, len, stamp, "") { return arg.addr == at && arg.len == len && arg.stamp == stamp; }

TEST_F(TimestampTest, ADirtyByteStampsItsLineClippedToTheRange) {
  mark(10, 5);
  EXPECT_TRUE(mw::timestamps::stamp_dirty(p_, 4096, 64, 7));
  EXPECT_EQ(mw::dirty::count(reinterpret_cast<void *>(p_), 4096), 0u) << "stamping clears the marks";
  EXPECT_THAT(collect(0, 4096, 0), ::testing::ElementsAre(RunIs(p_, 64u, 7u)));
  EXPECT_TRUE(collect(0, 4096, 7).empty()) << "nothing later than 7";
  EXPECT_FALSE(mw::timestamps::stamp_dirty(p_, 4096, 64, 8)) << "nothing dirty";

  mark(1000, 1);
  mw::timestamps::stamp_dirty(p_ + 990, 20, 64, 9);  // the line [960, 1024) clipped to [990, 1010)
  EXPECT_THAT(collect(900, 200, 8), ::testing::ElementsAre(RunIs(p_ + 990, 20u, 9u)));
}

TEST_F(TimestampTest, ARunWrittenInOneGoIsOneEntryAndLaterStampsCutIt) {
  mark(128, 1024);
  mw::timestamps::stamp_dirty(p_, 4096, 64, 5);
  EXPECT_THAT(collect(0, 4096, 0), ::testing::ElementsAre(RunIs(p_ + 128, 1024u, 5u)));
  mw::timestamps::record(p_ + 512, 64, 9);  // an update received for the middle
  EXPECT_THAT(collect(0, 4096, 5), ::testing::ElementsAre(RunIs(p_ + 512, 64u, 9u)));
  // Adjacent runs come back merged, carrying the later stamp.
  EXPECT_THAT(collect(0, 4096, 0), ::testing::ElementsAre(RunIs(p_ + 128, 1024u, 9u)));
  EXPECT_THAT(collect(600, 100, 0), ::testing::ElementsAre(RunIs(p_ + 600, 100u, 5u)));
}

// ---- Updates: batching ----

std::vector<mw::timestamps::Run> runs_in(const std::vector<lb::Message> &msgs, size_t extra_len) {
  std::vector<mw::timestamps::Run> all;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const bool last = i + 1 == msgs.size();
    const mw::updates::Parsed p = mw::updates::parse(header_of(msgs[i], kMe), msgs[i].head, last ? extra_len : 0);
    for (const auto &d : p.runs) all.push_back({d.addr, d.len, d.stamp});
  }
  std::sort(all.begin(), all.end(), [](auto &a, auto &b) { return a.addr < b.addr; });
  return all;
}

TEST(UpdateTest, WhatFitsOneEagerMessageGoesAsOne) {
  lb::start(kMe, kRanks);
  std::byte *d = shared(4096);
  const uint64_t extra = 42;
  mw::updates::send(1, MsgType::kBarrierData, MsgType::kBarrierRelease, 0,
                    std::vector<mw::timestamps::Run>{{addr(d), 100, 1}, {addr(d) + 200, 100, 2}}, &extra,
                    sizeof extra, 0);
  std::vector<lb::Message> out = lb::sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, MsgType::kBarrierRelease);
  EXPECT_EQ(out[0].bulk.size(), 200u);
}

TEST(UpdateTest, ShortRunsArePackedEagerlyAndLongOnesGoApart) {
  constexpr size_t kEager = 16384;
  lb::start(kMe, kRanks, kEager);
  std::byte *d = shared(2 << 20);
  std::vector<mw::timestamps::Run> runs;
  for (uint64_t k = 0; k < 600; ++k) runs.push_back({addr(d) + k * 128, 64, k});            // short
  for (uint64_t k = 0; k < 300; ++k) runs.push_back({addr(d) + (1 << 20) + k * 3000, 2500, k});  // long
  const uint64_t extra = 7;
  mw::updates::send(1, MsgType::kGrantData, MsgType::kLockGrant, 0, runs, &extra, sizeof extra, 0);
  std::vector<lb::Message> out = lb::sent();
  ASSERT_GE(out.size(), 4u);
  for (size_t i = 0; i < out.size(); ++i) {
    const bool last = i + 1 == out.size();
    EXPECT_EQ(out[i].type, last ? MsgType::kLockGrant : MsgType::kGrantData) << i;
    const mw::updates::Parsed p = mw::updates::parse(header_of(out[i], kMe), out[i].head, last ? sizeof extra : 0);
    EXPECT_LE(p.runs.size(), mw::updates::kMaxRunsPerMessage);
    const bool shorts = p.runs.front().len <= 2048;
    for (const auto &r : p.runs) EXPECT_EQ(r.len <= 2048, shorts) << "short and long runs travel apart";
    if (shorts) EXPECT_LE(out[i].head.size() + out[i].bulk.size(), kEager) << "packed eagerly";
  }
  std::vector<mw::timestamps::Run> want = runs;
  std::sort(want.begin(), want.end(), [](auto &a, auto &b) { return a.addr < b.addr; });
  const std::vector<mw::timestamps::Run> got = runs_in(out, sizeof extra);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(got[i].addr == want[i].addr && got[i].len == want[i].len && got[i].stamp == want[i].stamp) << i;
}

TEST(UpdateTest, RunsFromACopyTravelWithTheCopysBytes) {
  lb::start(kMe, kRanks);
  std::byte *d = shared(4096);
  std::memset(d, 1, 64);
  std::vector<std::byte> copy(64, std::byte(5));
  const std::byte *from[] = {copy.data()};
  mw::updates::send(2, MsgType::kBarrierData, MsgType::kBarrierRelease, 0,
                    std::vector<mw::timestamps::Run>{{addr(d), 64, 0}}, nullptr, 0, 0,
                    mw::transport::Bulk::kWait, from);
  std::vector<lb::Message> out = lb::sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].bulk, copy);
}

}  // namespace
