// Entry and release consistency's messages between real processes: a peer that breaks the protocol
// stops the receiving rank with an error naming the message and the sender, instead of
// corrupting its shared data or its lock state.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "ec/barriers.hpp"
#include "fork_job.hpp"
#include "ec/locks.hpp"
#include "ec/protocol.hpp"
#include "ec/updates.hpp"
#include "rc/copysets.hpp"
#include "rc/page_state.hpp"

namespace mw {
namespace {

using test::Child;
using test::JobOptions;
using test::JobResult;
using transport::MsgType;

// Two ranks over shm, rank 0's error output kept.
JobOptions two_ranks() {
  JobOptions o;
  o.nprocs = 2;
  o.cfg.provider = "shm";
  o.cfg.all_local = true;
  o.capture_stderr = true;
  o.timeout_s = 20;
  return o;
}

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

template <class T>
void append(std::vector<std::byte> &v, const T &t) {
  const auto *p = reinterpret_cast<const std::byte *>(&t);
  v.insert(v.end(), p, p + sizeof t);
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

void expect_stopped(const JobResult &r, const char *what) {
  ASSERT_FALSE(r.timed_out);
  EXPECT_FALSE(WIFEXITED(r.status[0]) && WEXITSTATUS(r.status[0]) == 0);
  EXPECT_THAT(r.err[0], testing::HasSubstr(what));
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

}  // namespace
}  // namespace mw
