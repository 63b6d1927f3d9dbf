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

// Release consistency's page data: rank 1 sends rank 0 a PAGE_DATA naming, among the
// flushes the page holds (kApplied), flushes of rank 0 itself.
TEST(Protocol, APageListingFlushesOfTheReceiverStopsIt) {
  JobResult r = run_job(two_ranks(), [](Child &c) {
    protocol::start(c.rank(), 2);
    copysets::init();
    c.start();
    if (c.rank() == 1) {
      std::vector<std::byte> head(copysets::page_size());
      copysets::PageData d{window::kBase, 3, copysets::kApplied, 1};
      copysets::Applied a{0, 0, 7};
      iovec h[2] = {{&d, sizeof d}, {&a, sizeof a}}, b{head.data(), head.size()};
      transport::send(0, MsgType::kPageData, std::span<const iovec>(h, 2), std::span<const iovec>(&b, 1));
    } else {
      sleep(5);  // the handler stops this rank long before
    }
    transport::close();
  });
  ASSERT_FALSE(r.timed_out);
  EXPECT_FALSE(WIFEXITED(r.status[0]) && WEXITSTATUS(r.status[0]) == 0);
  EXPECT_THAT(r.err[0], testing::HasSubstr("malformed PAGE_DATA message from rank 1: flushes of a rank that "
                                           "is not another member of the copyset"));
}

}  // namespace
}  // namespace mw
