// Entry consistency's messages between real processes (ec/): a peer that breaks the
// protocol stops the receiving rank with an error naming the message, the sender and what
// is wrong, instead of corrupting its shared data or its lock state. Release consistency's
// are in protocol_rc_test.cpp, fork/join's and semaphores' in protocol_sync_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <vector>

#include "ec/barriers.hpp"
#include "ec/locks.hpp"
#include "ec/protocol.hpp"
#include "ec/updates.hpp"
#include "malformed_job.hpp"
#include "memory/heap.hpp"
#include "memory/window.hpp"

namespace mw {
namespace {

using test::append;
using test::Child;
using test::about;
using test::expect_stopped;
using test::JobResult;
using test::one_message;
using test::send_parts;
using test::two_ranks;
using locks::wire::GrantExtra;
using transport::MsgType;
using Bytes = std::vector<std::byte>;

// Rank 1 sends rank 0 one lock grant, made by `build`; rank 0 just lets it arrive.
JobResult grant_from_rank1(void (*build)(std::vector<std::byte> &head, std::vector<std::byte> &bulk)) {
  return run_job(two_ranks(), [build](Child &c) {
    protocol::start(c.rank(), 2);
    locks::init();
    barriers::init();
    c.start();
    if (c.rank() == 1) {
      std::vector<std::byte> head, bulk;
      build(head, bulk);
      iovec h{head.data(), head.size()}, b{bulk.data(), bulk.size()};
      transport::send(0, MsgType::kLockGrant, std::span<const iovec>(&h, 1),
                      std::span<const iovec>(&b, bulk.empty() ? 0 : 1), 1);
    } else {
      sleep(5);  // the grant's handler stops this rank long before
    }
    transport::close();
  });
}

TEST(Protocol, AGrantNobodyAskedForStopsTheRankNamingTheSender) {
  JobResult r = grant_from_rank1([](std::vector<std::byte> &head, std::vector<std::byte> &) {
    append(head, updates::Head{0x40000000, 0, sizeof(GrantExtra)});
    append(head, GrantExtra{MW_EXCLUSIVE, 0, 1, {}});
  });
  ASSERT_FALSE(r.timed_out);
  EXPECT_FALSE(WIFEXITED(r.status[0]) && WEXITSTATUS(r.status[0]) == 0);
  EXPECT_THAT(r.err[0], testing::HasSubstr("malformed LOCK_GRANT message from rank 1" + about("lock", 0x40000000) +
                                           ": a grant this rank did not ask for (rank 0)"));
}

TEST(Protocol, AGrantCarryingDataOutsideTheWindowIsNotApplied) {
  JobResult r = grant_from_rank1([](std::vector<std::byte> &head, std::vector<std::byte> &bulk) {
    append(head, updates::Head{0x40000000, 1, sizeof(GrantExtra)});
    append(head, updates::RunDesc{0x1000, 8, 1});  // not shared memory
    append(head, GrantExtra{MW_EXCLUSIVE, 0, 1, {}});
    bulk.assign(8, std::byte{0x5a});
  });
  ASSERT_FALSE(r.timed_out);
  EXPECT_FALSE(WIFEXITED(r.status[0]) && WEXITSTATUS(r.status[0]) == 0);
  EXPECT_THAT(r.err[0], testing::HasSubstr("malformed LOCK_GRANT message from rank 1" + about("lock", 0x40000000) +
                                           ": a run lies outside the shared window"));
}

// ---- Entry consistency: locks ----------------------------------------------------------
//
// Locks go to managers by address (locks::manager_of): kLock0 is managed by rank 0, the
// receiver below, kLock1 by rank 1, the sender. Neither is ever acquired unless a test
// says so.

const uint64_t kLock0 = window::kBase, kLock1 = window::kBase + 16;

void entry(int) {
  locks::init();
  barriers::init();
}

using locks::wire::LockOnly;
using locks::wire::Request;

JobResult lock_message_from_rank1(void (*send)(int to)) { return one_message(1, entry, send); }

TEST(Protocol, ALockRequestOfNoSuchRankStopsTheManager) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kLockRequest, Request{kLock0, 7, MW_EXCLUSIVE, 0, 0, 0, 0, 0});
                 }),
                 "malformed LOCK_REQUEST message from rank 1" + about("lock", kLock0) + ": no such rank");
}

TEST(Protocol, ALockRequestOfNoSuchModeStopsTheManager) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kLockRequest, Request{kLock0, 1, 9, 0, 0, 0, 0, 0});
                 }),
                 "malformed LOCK_REQUEST message from rank 1" + about("lock", kLock0) + ": no such mode");
}

TEST(Protocol, ALockRequestToARankThatDoesNotManageTheLockStopsIt) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kLockRequest, Request{kLock1, 1, MW_EXCLUSIVE, 0, 0, 0, 0, 0});
                 }),
                 "malformed LOCK_REQUEST message from rank 1" + about("lock", kLock1) +
                     ": a request for a lock this rank does not manage");
}

TEST(Protocol, ALockRequestOfTheWrongLengthStopsTheManager) {
  expect_stopped(lock_message_from_rank1([](int to) { protocol::send_body(to, MsgType::kLockRequest, kLock0); }),
                 "malformed LOCK_REQUEST message from rank 1: wrong length");
}

TEST(Protocol, AForwardedExclusiveRequestThatOpensNoTenureStopsTheOwner) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kLockForward, Request{kLock1, 1, MW_EXCLUSIVE, 0, 0, 3, 3, 0});
                 }),
                 "malformed LOCK_FORWARD message from rank 1" + about("lock", kLock1) +
                     ": an exclusive request that opens no tenure");
}

TEST(Protocol, ARequestForwardedByARankThatDoesNotManageTheLockStopsTheOwner) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kLockForward, Request{kLock0, 1, MW_EXCLUSIVE, 0, 0, 0, 1, 0});
                 }),
                 "malformed LOCK_FORWARD message from rank 1" + about("lock", kLock0) +
                     ": a routed request not from the lock's manager");
}

TEST(Protocol, ARequestForwardedForATenureTheRankNeitherOwnsNorWaitsForStopsIt) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kLockForward, Request{kLock1, 1, MW_EXCLUSIVE, 0, 0, 5, 6, 0});
                 }),
                 "malformed LOCK_FORWARD message from rank 1" + about("lock", kLock1) +
                     ": a request for a tenure this rank neither owns nor waits for");
}

TEST(Protocol, AGrantOfNoSuchModeStopsTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   Bytes head;
                   append(head, updates::Head{kLock1, 0, sizeof(GrantExtra)});
                   append(head, GrantExtra{9, 0, 1, {}});
                   send_parts(to, MsgType::kLockGrant, head);
                 }),
                 "malformed LOCK_GRANT message from rank 1" + about("lock", kLock1) + ": no such mode");
}

// Rank 0 acquires a lock rank 1 manages, and so waits for its grant; rank 1 answers the
// request with `g_answer`.
void (*g_answer)(int to, const Request &q);
std::atomic<bool> g_answered{false};

JobResult request_answered_by_rank1(void (*answer)(int to, const Request &q)) {
  g_answer = answer;
  return run_job(two_ranks(), [](Child &c) {
    protocol::start(c.rank(), 2);
    heap::init(c.rank(), 2);
    if (c.rank() == 0) {
      entry(0);
    } else {
      transport::on(MsgType::kLockRequest, [](const transport::Header &h, std::span<const std::byte> payload) {
        g_answer(h.sender, protocol::read_body<Request>(h, payload));
        g_answered = true;
      });
    }
    c.start();
    // A lock of rank 0's part of the heap that rank 1 manages.
    auto *l = reinterpret_cast<mw_lock_t *>(window::layout().heap_begin + 16);
    if (c.rank() == 0) locks::acquire(l, MW_EXCLUSIVE);  // the answer's handler stops this rank
    else transport::progress_until([] { return g_answered.load(); });
    transport::close();
  });
}

// ... with a grant whose fields after its runs `extra` makes from the request.
GrantExtra (*g_extra)(const Request &q);

JobResult granted_by_rank1(GrantExtra (*extra)(const Request &q)) {
  g_extra = extra;
  return request_answered_by_rank1([](int to, const Request &q) {
    Bytes head;
    append(head, updates::Head{q.lock, 0, sizeof(GrantExtra)});
    append(head, g_extra(q));
    send_parts(to, MsgType::kLockGrant, head);
  });
}

TEST(Protocol, AnExclusiveGrantOfNoTenureStopsTheAcquirer) {
  expect_stopped(granted_by_rank1([](const Request &) { return GrantExtra{MW_EXCLUSIVE, 0, 0, {}}; }),
                 "malformed LOCK_GRANT message from rank 1" + about("lock", kLock1) +
                     ": an exclusive grant of no tenure");
}

// A grant may carry the granter's own request for the lock back (ec/locks.cpp, "Asking
// back"): one that names another rank or another tenure, or comes with a grant that is not
// exclusive, stops the acquirer before it serves anyone with it.
TEST(Protocol, ARequestAskedBackForAnotherRankStopsTheAcquirer) {
  expect_stopped(granted_by_rank1([](const Request &q) {  // rank 0's request, not rank 1's
                   return GrantExtra{MW_EXCLUSIVE, 1, 1, Request{q.lock, 0, MW_EXCLUSIVE, 1, 0, 1, 2, 0}};
                 }),
                 "malformed LOCK_GRANT message from rank 1" + about("lock", kLock1) +
                     ": a request asked back that is not the granter's own");
}

TEST(Protocol, ARequestAskedBackForALaterTenureStopsTheAcquirer) {
  expect_stopped(granted_by_rank1([](const Request &q) {  // tenure 5, where the grant is of tenure 1
                   return GrantExtra{MW_EXCLUSIVE, 1, 1, Request{q.lock, 1, MW_EXCLUSIVE, 1, 0, 5, 6, 0}};
                 }),
                 "malformed LOCK_GRANT message from rank 1" + about("lock", kLock1) +
                     ": a request asked back for another tenure than the one granted");
}

TEST(Protocol, ARequestAskedBackWithASharedGrantStopsTheAcquirer) {
  expect_stopped(granted_by_rank1([](const Request &q) {
                   return GrantExtra{MW_NONEXCLUSIVE, 1, 0, Request{q.lock, 1, MW_EXCLUSIVE, 1, 0, 0, 1, 0}};
                 }),
                 "malformed LOCK_GRANT message from rank 1" + about("lock", kLock1) +
                     ": a request asked back with a grant that is not exclusive");
}

TEST(Protocol, GrantDataNobodyAskedForStopsTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   Bytes head;
                   append(head, updates::Head{kLock1, 0, 0});
                   send_parts(to, MsgType::kGrantData, head);
                 }),
                 "malformed GRANT_DATA message from rank 1" + about("lock", kLock1) +
                     ": data of a grant this rank did not ask for");
}

TEST(Protocol, BindingsNobodyAskedForStopTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   Bytes words;
                   for (uint64_t w : {kLock1, uint64_t{1}}) append(words, w);
                   send_parts(to, MsgType::kLockBindings, words);
                 }),
                 "malformed LOCK_BINDINGS message from rank 1" + about("lock", kLock1) +
                     ": bindings of a grant this rank did not ask for");
}

TEST(Protocol, BindingsOfTheWrongLengthStopTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   Bytes words;
                   append(words, kLock1);
                   send_parts(to, MsgType::kLockBindings, words);
                 }),
                 "malformed LOCK_BINDINGS message from rank 1: wrong length");
}

TEST(Protocol, BindingsOutsideTheWindowStopTheAcquirer) {
  expect_stopped(request_answered_by_rank1([](int to, const Request &q) {
                   Bytes words;
                   for (uint64_t w : {q.lock, q.bind_version + 1, uint64_t{0x1000}, uint64_t{8}}) append(words, w);
                   send_parts(to, MsgType::kLockBindings, words);
                 }),
                 "malformed LOCK_BINDINGS message from rank 1" + about("lock", kLock1) +
                     ": a bound range outside the shared window");
}

TEST(Protocol, ARevokeOfTheWrongLengthStopsTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) { protocol::send_body(to, MsgType::kLockRevoke, uint32_t{1}); }),
                 "malformed LOCK_REVOKE message from rank 1: wrong length");
}

TEST(Protocol, AnAnswerToNoRevokeStopsTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kLockRevokeAck, LockOnly{kLock0});
                 }),
                 "malformed LOCK_REVOKE_ACK message from rank 1" + about("lock", kLock0) +
                     ": an answer to no revoke");
}

// ---- Entry consistency: the update heads of grants and barriers (ec/updates.cpp) --------

TEST(Protocol, AnUpdateShorterThanItsHeadStopsTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   Bytes head;
                   append(head, kLock1);
                   send_parts(to, MsgType::kGrantData, head);
                 }),
                 "malformed GRANT_DATA message from rank 1: shorter than an update head");
}

TEST(Protocol, AnUpdateOfTooManyRunsStopsTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   Bytes head;
                   append(head, updates::Head{kLock0, updates::kMaxRunsPerMessage + 1, 0});
                   send_parts(to, MsgType::kBarrierData, head);
                 }),
                 "malformed BARRIER_DATA message from rank 1: too many runs");
}

TEST(Protocol, AnUpdateWhoseHeadMissesRunsStopsTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   Bytes head;
                   append(head, updates::Head{kLock0, 2, 8});
                   send_parts(to, MsgType::kBarrierRelease, head);
                 }),
                 "malformed BARRIER_RELEASE message from rank 1: the head's length does not match its run count");
}

TEST(Protocol, AnUpdateCarryingDataNoRunNamesStopsTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   Bytes head;
                   append(head, updates::Head{kLock1, 0, sizeof(GrantExtra)});
                   append(head, GrantExtra{MW_EXCLUSIVE, 0, 1, {}});
                   send_parts(to, MsgType::kLockGrant, head, Bytes(8, std::byte{1}));
                 }),
                 "malformed LOCK_GRANT message from rank 1" + about("lock", kLock1) +
                     ": the runs do not add up to the data carried");
}

TEST(Protocol, AnArrivalWithoutItsFieldsStopsTheManager) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   Bytes head;
                   append(head, updates::Head{kLock0, 0, 0});
                   send_parts(to, MsgType::kBarrierArrive, head);
                 }),
                 "malformed BARRIER_ARRIVE message from rank 1" + about("barrier", kLock0) +
                     ": unexpected fields after the runs");
}

// ---- Entry consistency: barriers (rank 0 manages them all) ------------------------------

void arrive_at(int to, uint64_t epoch) {
  Bytes head;
  append(head, updates::Head{kLock0, 0, sizeof(barriers::wire::ArriveExtra)});
  append(head, barriers::wire::ArriveExtra{epoch, 0, 0});
  send_parts(to, MsgType::kBarrierArrive, head);
}

// A rank's bindings of a barrier at its first crossing (barriers.cpp, Digest).
struct BindingsDigest {
  uint64_t barrier, ranges, bytes, hash;
};

TEST(Protocol, BarrierBindingsAtARankThatManagesNoBarrierStopIt) {
  expect_stopped(one_message(0, entry, [](int to) {
                   protocol::send_body(to, MsgType::kBarrierBindings, BindingsDigest{kLock0, 0, 0, 0});
                 }),
                 "malformed BARRIER_BINDINGS message from rank 0" + about("barrier", window::kBase) +
                     ": bindings sent to a rank that is not the barriers' manager", 1);
}

TEST(Protocol, BarrierBindingsSentTwiceStopTheManager) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kBarrierBindings, BindingsDigest{kLock0, 0, 0, 0});
                   protocol::send_body(to, MsgType::kBarrierBindings, BindingsDigest{kLock0, 0, 0, 0});
                 }),
                 "malformed BARRIER_BINDINGS message from rank 1" + about("barrier", window::kBase) +
                     ": a first crossing's bindings sent twice");
}

TEST(Protocol, BarrierBindingsOfAnAddressOutsideTheWindowStopTheManager) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kBarrierBindings, BindingsDigest{0x1000, 0, 0, 0});
                 }),
                 "malformed BARRIER_BINDINGS message from rank 1: a barrier outside the shared window");
}

TEST(Protocol, AnArrivalAtARankThatManagesNoBarrierStopsIt) {
  expect_stopped(one_message(0, entry, [](int to) { arrive_at(to, 1); }),
                 "malformed BARRIER_ARRIVE message from rank 0" + about("barrier", window::kBase) +
                     ": this rank manages no barrier", 1);
}

TEST(Protocol, ARankArrivingTwiceAtOneCrossingStopsTheManager) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   arrive_at(to, 1);
                   arrive_at(to, 1);
                 }),
                 "malformed BARRIER_ARRIVE message from rank 1" + about("barrier", window::kBase) +
                     ": it arrived twice");
}

TEST(Protocol, AnArrivalForACrossingNotOpenStopsTheManager) {
  char want[128];
  std::snprintf(want, sizeof want, "mw_barrier: barrier 0x%llx: rank 1 arrived for its crossing 5 while crossing 1 is open",
                static_cast<unsigned long long>(kLock0));  // a barrier no symbol names
  expect_stopped(lock_message_from_rank1([](int to) { arrive_at(to, 5); }), want);
}

TEST(Protocol, AReleaseOfACrossingTheRankIsNotInStopsIt) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   Bytes head;
                   append(head, updates::Head{kLock0, 0, sizeof(barriers::wire::ReleaseExtra)});
                   append(head, barriers::wire::ReleaseExtra{1});
                   send_parts(to, MsgType::kBarrierRelease, head);
                 }),
                 "malformed BARRIER_RELEASE message from rank 1" + about("barrier", window::kBase) +
                     ": a crossing this rank is not in");
}

// Data of a release, sent by the manager to a rank that is not crossing the barrier: it
// would overwrite the rank's data behind its back.
TEST(Protocol, BarrierDataOfACrossingTheRankIsNotInStopsIt) {
  expect_stopped(one_message(0, entry,
                             [](int to) {
                               Bytes head;
                               append(head, updates::Head{kLock0, 0, 0});
                               send_parts(to, MsgType::kBarrierData, head);
                             }),
                 "malformed BARRIER_DATA message from rank 0" + about("barrier", window::kBase) +
                     ": data of a crossing this rank is not in",
                 1);
}

}  // namespace
}  // namespace mw
