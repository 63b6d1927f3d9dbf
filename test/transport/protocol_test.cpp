// Entry and release consistency's messages between real processes: a peer that breaks the protocol
// stops the receiving rank with an error naming the message and the sender, instead of
// corrupting its shared data or its lock state.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

#include "ec/barriers.hpp"
#include "ec/locks.hpp"
#include "ec/protocol.hpp"
#include "ec/updates.hpp"
#include "malformed_job.hpp"
#include "memory/heap.hpp"
#include "memory/window.hpp"
#include "rc/pending_updates.hpp"
#include "rc/copysets.hpp"
#include "rc/page_state.hpp"

namespace mw {
namespace {

using test::append;
using test::Child;
using test::expect_stopped;
using test::JobResult;
using test::one_message;
using test::send_parts;
using test::two_ranks;
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
    append(head, updates::Head{0x40000000, 0, 16});
    append(head, uint64_t{MW_EXCLUSIVE});  // GrantExtra: mode, reserved
    append(head, uint64_t{1});             // GrantExtra: tenure
  });
  ASSERT_FALSE(r.timed_out);
  EXPECT_FALSE(WIFEXITED(r.status[0]) && WEXITSTATUS(r.status[0]) == 0);
  EXPECT_THAT(r.err[0], testing::HasSubstr(
                            "malformed LOCK_GRANT message from rank 1: a grant this rank did not ask for (rank 0)"));
}

TEST(Protocol, AGrantCarryingDataOutsideTheWindowIsNotApplied) {
  JobResult r = grant_from_rank1([](std::vector<std::byte> &head, std::vector<std::byte> &bulk) {
    append(head, updates::Head{0x40000000, 1, 16});
    append(head, updates::RunDesc{0x1000, 8, 1});  // not shared memory
    append(head, uint64_t{MW_EXCLUSIVE});
    append(head, uint64_t{1});
    bulk.assign(8, std::byte{0x5a});
  });
  ASSERT_FALSE(r.timed_out);
  EXPECT_FALSE(WIFEXITED(r.status[0]) && WEXITSTATUS(r.status[0]) == 0);
  EXPECT_THAT(r.err[0], testing::HasSubstr(
                            "malformed LOCK_GRANT message from rank 1: a run lies outside the shared window"));
}

// Release consistency's copyset messages: rank 1 sends rank 0 one message, built by
// `send`; rank 0, whose copysets are set up but which has asked for nothing, must stop
// naming the message, its sender and what is wrong with it.
JobResult copyset_message_from_rank1(void (*send)()) {
  return run_job(two_ranks(), [send](Child &c) {
    protocol::start(c.rank(), 2);
    copysets::init();
    c.start();
    if (c.rank() == 1) send();
    else sleep(5);  // the handler stops this rank long before
    transport::close();
  });
}

// A page with the flushes it holds (kApplied): `count` entries, the first naming `rank`.
void send_applied(uint32_t count, int32_t rank, bool with_page) {
  std::vector<std::byte> page(copysets::page_size());
  copysets::PageData d{window::kBase, 3, copysets::kApplied, count};
  copysets::Applied a{rank, 0, 7};
  iovec h[2] = {{&d, sizeof d}, {&a, sizeof a}}, b{page.data(), page.size()};
  transport::send(0, MsgType::kPageData, std::span<const iovec>(h, 2), std::span<const iovec>(&b, with_page ? 1 : 0));
}

TEST(Protocol, APageListingFlushesOfTheReceiverStopsIt) {
  expect_stopped(copyset_message_from_rank1([] { send_applied(1, 0, true); }),
                 "malformed PAGE_DATA message from rank 1: flushes of a rank that is not another member of the copyset");
}

TEST(Protocol, APageShorterThanItsListStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] { send_applied(1, 1, false); }),
                 "malformed PAGE_DATA message from rank 1: wrong length");
}

TEST(Protocol, AJoinOfNoSuchRankStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   copysets::MemberMsg m{window::kBase, 7, 0};
                   transport::send(0, MsgType::kCopysetJoin, &m, sizeof m);
                 }),
                 "malformed COPYSET_JOIN message from rank 1: no such rank");
}

TEST(Protocol, AnAcknowledgementOfNoJoinStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   copysets::PageMsg m{window::kBase};
                   transport::send(0, MsgType::kCopysetAck, &m, sizeof m);
                 }),
                 "malformed COPYSET_ACK message from rank 1: no join of that page is under way");
}

TEST(Protocol, ARequestForAPageOutsideTheWindowStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   copysets::PageRequest q{0x1000, 1, 1, -1, 0};
                   transport::send(0, MsgType::kPageRequest, &q, sizeof q);
                 }),
                 "malformed PAGE_REQUEST message from rank 1: not a page of the shared window");
}

TEST(Protocol, AnAnswerToNoLeaveStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   copysets::LeftAck a{window::kBase, 0};
                   transport::send(0, MsgType::kCopysetLeftAck, &a, sizeof a);
                 }),
                 "malformed COPYSET_LEFT_ACK message from rank 1: no leave of that page is under way");
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

using locks::wire::GrantExtra;
using locks::wire::LockOnly;
using locks::wire::Request;

JobResult lock_message_from_rank1(void (*send)(int to)) { return one_message(1, entry, send); }

TEST(Protocol, ALockRequestOfNoSuchRankStopsTheManager) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kLockRequest, Request{kLock0, 7, MW_EXCLUSIVE, 0, 0, 0, 0, 0});
                 }),
                 "malformed LOCK_REQUEST message from rank 1: no such rank");
}

TEST(Protocol, ALockRequestOfNoSuchModeStopsTheManager) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kLockRequest, Request{kLock0, 1, 9, 0, 0, 0, 0, 0});
                 }),
                 "malformed LOCK_REQUEST message from rank 1: no such mode");
}

TEST(Protocol, ALockRequestToARankThatDoesNotManageTheLockStopsIt) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kLockRequest, Request{kLock1, 1, MW_EXCLUSIVE, 0, 0, 0, 0, 0});
                 }),
                 "malformed LOCK_REQUEST message from rank 1: a request for a lock this rank does not manage");
}

TEST(Protocol, ALockRequestOfTheWrongLengthStopsTheManager) {
  expect_stopped(lock_message_from_rank1([](int to) { protocol::send_body(to, MsgType::kLockRequest, kLock0); }),
                 "malformed LOCK_REQUEST message from rank 1: wrong length");
}

TEST(Protocol, AForwardedExclusiveRequestThatOpensNoTenureStopsTheOwner) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kLockForward, Request{kLock1, 1, MW_EXCLUSIVE, 0, 0, 3, 3, 0});
                 }),
                 "malformed LOCK_FORWARD message from rank 1: an exclusive request that opens no tenure");
}

TEST(Protocol, ARequestForwardedByARankThatDoesNotManageTheLockStopsTheOwner) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kLockForward, Request{kLock0, 1, MW_EXCLUSIVE, 0, 0, 0, 1, 0});
                 }),
                 "malformed LOCK_FORWARD message from rank 1: a routed request not from the lock's manager");
}

TEST(Protocol, ARequestForwardedForATenureTheRankNeitherOwnsNorWaitsForStopsIt) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kLockForward, Request{kLock1, 1, MW_EXCLUSIVE, 0, 0, 5, 6, 0});
                 }),
                 "malformed LOCK_FORWARD message from rank 1: a request for a tenure this rank neither owns nor waits for");
}

TEST(Protocol, AGrantOfNoSuchModeStopsTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   Bytes head;
                   append(head, updates::Head{kLock1, 0, sizeof(GrantExtra)});
                   append(head, GrantExtra{9, 0, 1});
                   send_parts(to, MsgType::kLockGrant, head);
                 }),
                 "malformed LOCK_GRANT message from rank 1: no such mode");
}

// Rank 1 answers rank 0's request for kLock1 with an exclusive grant that opens no tenure.
std::atomic<bool> g_granted{false};

TEST(Protocol, AnExclusiveGrantOfNoTenureStopsTheAcquirer) {
  JobResult r = run_job(two_ranks(), [](Child &c) {
    protocol::start(c.rank(), 2);
    heap::init(c.rank(), 2);
    if (c.rank() == 0) {
      entry(0);
    } else {
      transport::on(MsgType::kLockRequest, [](const transport::Header &h, std::span<const std::byte> payload) {
        const Request q = protocol::read_body<Request>(h, payload);
        Bytes head;
        append(head, updates::Head{q.lock, 0, sizeof(GrantExtra)});
        append(head, GrantExtra{MW_EXCLUSIVE, 0, 0});
        send_parts(h.sender, MsgType::kLockGrant, head);
        g_granted = true;
      });
    }
    c.start();
    // A lock of rank 0's part of the heap that rank 1 manages.
    auto *l = reinterpret_cast<mw_lock_t *>(window::layout().heap_begin + 16);
    if (c.rank() == 0) locks::acquire(l, MW_EXCLUSIVE);  // the grant's handler stops this rank
    else transport::progress_until([] { return g_granted.load(); });
    transport::close();
  });
  expect_stopped(r, "malformed LOCK_GRANT message from rank 1: an exclusive grant of no tenure");
}

TEST(Protocol, BindingsOfTheWrongLengthStopTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   Bytes words;
                   append(words, kLock1);
                   send_parts(to, MsgType::kLockBindings, words);
                 }),
                 "malformed LOCK_BINDINGS message from rank 1: wrong length");
}

TEST(Protocol, BindingsOutsideTheWindowStopTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   Bytes words;
                   for (uint64_t w : {kLock1, uint64_t{1}, uint64_t{0x1000}, uint64_t{8}}) append(words, w);
                   send_parts(to, MsgType::kLockBindings, words);
                 }),
                 "malformed LOCK_BINDINGS message from rank 1: a bound range outside the shared window");
}

TEST(Protocol, ARevokeOfTheWrongLengthStopsTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) { protocol::send_body(to, MsgType::kLockRevoke, uint32_t{1}); }),
                 "malformed LOCK_REVOKE message from rank 1: wrong length");
}

TEST(Protocol, AnAnswerToNoRevokeStopsTheRank) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   protocol::send_body(to, MsgType::kLockRevokeAck, LockOnly{kLock0});
                 }),
                 "malformed LOCK_REVOKE_ACK message from rank 1: an answer to no revoke");
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
                   append(head, GrantExtra{MW_EXCLUSIVE, 0, 1});
                   send_parts(to, MsgType::kLockGrant, head, Bytes(8, std::byte{1}));
                 }),
                 "malformed LOCK_GRANT message from rank 1: the runs do not add up to the data carried");
}

TEST(Protocol, AnArrivalWithoutItsFieldsStopsTheManager) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   Bytes head;
                   append(head, updates::Head{kLock0, 0, 0});
                   send_parts(to, MsgType::kBarrierArrive, head);
                 }),
                 "malformed BARRIER_ARRIVE message from rank 1: unexpected fields after the runs");
}

// ---- Entry consistency: barriers (rank 0 manages them all) ------------------------------

void arrive_at(int to, uint64_t epoch) {
  Bytes head;
  append(head, updates::Head{kLock0, 0, sizeof(barriers::wire::ArriveExtra)});
  append(head, barriers::wire::ArriveExtra{epoch, 0, 0});
  send_parts(to, MsgType::kBarrierArrive, head);
}

TEST(Protocol, AnArrivalAtARankThatManagesNoBarrierStopsIt) {
  expect_stopped(one_message(0, entry, [](int to) { arrive_at(to, 1); }),
                 "malformed BARRIER_ARRIVE message from rank 0: this rank manages no barrier", 1);
}

TEST(Protocol, ARankArrivingTwiceAtOneCrossingStopsTheManager) {
  expect_stopped(lock_message_from_rank1([](int to) {
                   arrive_at(to, 1);
                   arrive_at(to, 1);
                 }),
                 "malformed BARRIER_ARRIVE message from rank 1: it arrived twice");
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
                 "malformed BARRIER_RELEASE message from rank 1: a crossing this rank is not in");
}

// ---- Release consistency: copysets and pages ---------------------------------------------

// A heap page nobody's partition holds here (heap::init is not called): no rank's home.
uint64_t homeless_page() { return window::layout().heap_begin; }

TEST(Protocol, ALeaveOfAPageTheRankIsNotHomeOfStopsIt) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kCopysetLeave, copysets::PageMsg{homeless_page()});
                 }),
                 "malformed COPYSET_LEAVE message from rank 1: this rank is not the page's home");
}

TEST(Protocol, ALeaveOfAPageOutsideTheWindowStopsTheHome) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kCopysetLeave, copysets::PageMsg{window::kBase + 8});
                 }),
                 "malformed COPYSET_LEAVE message from rank 1: not a page of the shared window");
}

TEST(Protocol, ALeaveOfNoSuchRankStopsTheMember) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kCopysetLeft, copysets::MemberMsg{window::kBase, 5, 0});
                 }),
                 "malformed COPYSET_LEFT message from rank 1: no such rank");
}

TEST(Protocol, ANoticeOfTheRanksOwnLeaveStopsIt) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kCopysetLeft, copysets::MemberMsg{window::kBase, 0, 0});
                 }),
                 "malformed COPYSET_LEFT message from rank 1: this rank's own leave");
}

TEST(Protocol, AJoinOfTheWrongLengthStopsTheMember) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kCopysetJoin, copysets::PageMsg{window::kBase});
                 }),
                 "malformed COPYSET_JOIN message from rank 1: wrong length");
}

TEST(Protocol, ARequestForwardedForTheHomeItselfStopsIt) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kPageRequest, copysets::PageRequest{window::kBase, 1, 1, 0, 0});
                 }),
                 "malformed PAGE_REQUEST message from rank 1: a request forwarded by a rank that did not "
                 "allocate the page, or for this rank");
}

TEST(Protocol, ARequestForAPageTheRankIsNotHomeOfStopsIt) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kPageRequest, copysets::PageRequest{homeless_page(), 1, 1, -1, 0});
                 }),
                 "malformed PAGE_REQUEST message from rank 1: this rank is not the page's home");
}

TEST(Protocol, APageOfTheWrongSizeStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] { send_parts(0, MsgType::kPageData, {}, Bytes(100)); }),
                 "malformed PAGE_DATA message from rank 1: not a page's worth of data");
}

TEST(Protocol, APageAnswerShorterThanItsHeadStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] { protocol::send_body(0, MsgType::kPageData, window::kBase); }),
                 "malformed PAGE_DATA message from rank 1: wrong length");
}

TEST(Protocol, APageAnswerWithoutItsDataStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kPageData, copysets::PageData{window::kBase, 3, copysets::kOk, 0});
                 }),
                 "malformed PAGE_DATA message from rank 1: a page without its data");
}

TEST(Protocol, APageNobodyAskedForStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kPageData,
                                       copysets::PageData{window::kBase, 3, copysets::kUnwritten, 0});
                 }),
                 "malformed PAGE_DATA message from rank 1: a page this rank did not ask for");
}

TEST(Protocol, PagesAheadNobodyAskedForStopTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kPageData,
                                       copysets::AheadData{{window::kBase, 2, copysets::kAhead, 0}, 0, 0});
                 }),
                 "malformed PAGE_DATA message from rank 1: pages this rank did not ask for");
}

// ---- Release consistency: pending updates ------------------------------------------------

void release_consistency(int) {
  copysets::init();
  pending_updates::init();
}

struct UpdateExtra {  // pending_updates.cpp's: the flush, whether it wants an answer
  uint64_t flush;
  uint32_t want_ack, reserved;
};

// An update message as pending_updates sends it: its head, then the runs' bytes.
JobResult update_from_rank1(MsgType type, uint32_t nruns, std::vector<updates::RunDesc> runs, size_t data,
                            bool extra) {
  static MsgType s_type;
  static uint32_t s_nruns;
  static std::vector<updates::RunDesc> s_runs;
  static size_t s_data;
  static bool s_extra;
  s_type = type, s_nruns = nruns, s_runs = runs, s_data = data, s_extra = extra;
  return one_message(1, release_consistency, [](int to) {
    Bytes head;
    append(head, updates::Head{0, s_nruns, s_extra ? uint32_t{sizeof(UpdateExtra)} : 0});
    for (const updates::RunDesc &d : s_runs) append(head, d);
    if (s_extra) append(head, UpdateExtra{1, 0, 0});
    send_parts(to, s_type, head, Bytes(s_data, std::byte{1}));
  });
}

TEST(Protocol, APendingUpdateShorterThanAnUpdateHeadStopsTheMember) {
  expect_stopped(one_message(1, release_consistency,
                             [](int to) { protocol::send_body(to, MsgType::kUpdate, uint64_t{0}); }),
                 "malformed UPDATE message from rank 1: shorter than an update head");
}

TEST(Protocol, APendingUpdateOfTooManyRunsStopsTheMember) {
  expect_stopped(update_from_rank1(MsgType::kUpdate, updates::kMaxRunsPerMessage + 1, {}, 0, true),
                 "malformed UPDATE message from rank 1: too many runs");
}

TEST(Protocol, APendingUpdateShorterThanItsHeadStopsTheMember) {
  expect_stopped(update_from_rank1(MsgType::kUpdateData, 2, {}, 0, false),
                 "malformed UPDATE_DATA message from rank 1: shorter than its head");
}

TEST(Protocol, ALastPendingUpdateWithoutItsFieldsStopsTheMember) {
  expect_stopped(update_from_rank1(MsgType::kUpdate, 0, {}, 0, false),
                 "malformed UPDATE message from rank 1: unexpected fields after the runs");
}

TEST(Protocol, APendingUpdateWhoseRunsPassItsDataStopsTheMember) {
  expect_stopped(update_from_rank1(MsgType::kUpdateData, 1, {{window::kBase, 64, 0}}, 8, false),
                 "malformed UPDATE_DATA message from rank 1: runs past the data carried");
}

TEST(Protocol, APendingUpdateWithDataBeyondItsRunsStopsTheMember) {
  expect_stopped(update_from_rank1(MsgType::kUpdateData, 0, {}, 8, false),
                 "malformed UPDATE_DATA message from rank 1: data beyond its runs");
}

TEST(Protocol, APendingUpdateAcrossPagesStopsTheMember) {
  expect_stopped(update_from_rank1(MsgType::kUpdate, 1, {{window::kBase + window::page_size() - 8, 16, 0}}, 16, true),
                 "malformed UPDATE message from rank 1: a run outside the shared window, or across pages");
}

TEST(Protocol, APendingUpdateOutsideTheWindowStopsTheMember) {
  expect_stopped(update_from_rank1(MsgType::kUpdateData, 1, {{0x1000, 16, 0}}, 16, false),
                 "malformed UPDATE_DATA message from rank 1: a run outside the shared window, or across pages");
}

TEST(Protocol, AnAcknowledgementOfNoUpdateStopsTheWriter) {
  expect_stopped(one_message(1, release_consistency, [](int to) { transport::send(to, MsgType::kUpdateAck, nullptr, 0); }),
                 "malformed UPDATE_ACK message from rank 1: an acknowledgement of no update");
}

// ---- Release consistency: answers to a fetch under way ----------------------------------
//
// Rank 0 touches a page of rank 1's part of the heap (its home) and so asks for it; rank 1
// answers with `g_answer`. With `g_leave`, rank 0 then leaves the page's copyset and rank
// 1 answers the leave with `g_left`.

void (*g_answer)(int to, uint64_t page);
void (*g_left)(int to, uint64_t page);
bool g_leave;
std::atomic<int> g_answered{0};

JobResult fetch_answered_by_rank1(void (*answer)(int, uint64_t), void (*left)(int, uint64_t) = nullptr) {
  g_answer = answer;
  g_left = left;
  g_leave = left != nullptr;
  return run_job(two_ranks(), [](Child &c) {
    protocol::start(c.rank(), 2);
    heap::init(c.rank(), 2);
    if (c.rank() == 0) {
      copysets::report_faults();
      copysets::init();
    } else {
      transport::on(MsgType::kPageRequest, [](const transport::Header &h, std::span<const std::byte> payload) {
        g_answer(h.sender, protocol::read_body<copysets::PageRequest>(h, payload).page);
        g_answered++;
      });
      transport::on(MsgType::kCopysetLeave, [](const transport::Header &h, std::span<const std::byte> payload) {
        g_left(h.sender, protocol::read_body<copysets::PageMsg>(h, payload).page);
        g_answered++;
      });
    }
    c.start();
    if (c.rank() == 0) {
      // The first page of rank 1's part of the heap.
      uintptr_t lo = window::layout().heap_begin, hi = window::kEnd;
      while (hi - lo > window::page_size()) {
        const uintptr_t mid = (lo + (hi - lo) / 2) & ~(window::page_size() - 1);
        (heap::owner_of(mid) >= 1 ? hi : lo) = mid;
      }
      volatile char *page = reinterpret_cast<char *>(hi);
      (void)*page;  // a copyset fault: the answer's handler stops this rank
      if (g_leave) copysets::leave(const_cast<char *>(page), window::page_size());
    } else {
      transport::progress_until([] { return g_answered.load() == (g_leave ? 2 : 1); });
    }
    transport::close();
  });
}

TEST(Protocol, AFetchedPageWhoseCopysetLacksTheFetcherStopsIt) {
  expect_stopped(fetch_answered_by_rank1([](int to, uint64_t page) {
                   protocol::send_body(to, MsgType::kPageData, copysets::PageData{page, 2, copysets::kUnwritten, 0});
                 }),
                 "malformed PAGE_DATA message from rank 1: a copyset without this rank");
}

TEST(Protocol, AFetchedPageMadeTheFetchersWithOtherMembersStopsIt) {
  expect_stopped(fetch_answered_by_rank1([](int to, uint64_t page) {
                   protocol::send_body(to, MsgType::kPageData, copysets::PageData{page, 3, copysets::kHomed, 0});
                 }),
                 "malformed PAGE_DATA message from rank 1: a page made this rank's by a rank that did not allocate it");
}

TEST(Protocol, PagesAheadWithoutTheirDataStopTheFetcher) {
  expect_stopped(fetch_answered_by_rank1([](int to, uint64_t page) {
                   // The page after the one faulted on, said to come with its data, which is not there.
                   protocol::send_body(to, MsgType::kPageData, copysets::AheadData{{page, 2, copysets::kAhead, 0}, 2, 0});
                 }),
                 "malformed PAGE_DATA message from rank 1: not the pages' worth of data");
}

void unwritten_page(int to, uint64_t page) {
  protocol::send_body(to, MsgType::kPageData, copysets::PageData{page, 3, copysets::kUnwritten, 0});
}

TEST(Protocol, AnAnswerToALeaveNamingTheLeaverStopsIt) {
  expect_stopped(fetch_answered_by_rank1(unwritten_page,
                                         [](int to, uint64_t page) {
                                           protocol::send_body(to, MsgType::kCopysetLeftAck, copysets::LeftAck{page, 1});
                                         }),
                 "malformed COPYSET_LEFT_ACK message from rank 1: a second answer, or members that are not other "
                 "ranks of the job");
}

TEST(Protocol, AnAnswerToALeaveNamingNoSuchRankStopsTheLeaver) {
  expect_stopped(fetch_answered_by_rank1(unwritten_page,
                                         [](int to, uint64_t page) {
                                           protocol::send_body(to, MsgType::kCopysetLeftAck,
                                                               copysets::LeftAck{page, uint64_t{1} << 5});
                                         }),
                 "malformed COPYSET_LEFT_ACK message from rank 1: a second answer, or members that are not other "
                 "ranks of the job");
}

}  // namespace
}  // namespace mw
