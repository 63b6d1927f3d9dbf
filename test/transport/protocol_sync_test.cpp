// Fork/join, semaphores and condition variables (sync/) between real processes: a peer
// that breaks their protocol stops the receiving rank with an error naming the message,
// the sender and what is wrong, instead of running a function it was not sent, ending a
// join early or letting a wait return without its turn.
#include <gtest/gtest.h>

#include <cstdint>

#include "ec/locks.hpp"
#include "ec/protocol.hpp"
#include "ec/updates.hpp"
#include "malformed_job.hpp"
#include "memory/window.hpp"
#include "sync/fork.hpp"
#include "sync/semaphores.hpp"

namespace mw {
namespace {

using test::about;
using test::expect_stopped;
using test::JobResult;
using test::one_message;
using transport::MsgType;

void sync(int) {
  fork::init();
  semaphores::init();
}

// ---- Fork/join: rank 0 forks, every other rank joins ----

TEST(ProtocolSync, AForkFromARankOtherThanTheCreatorStopsTheReceiver) {
  expect_stopped(one_message(1, sync, [](int to) { protocol::send_body(to, MsgType::kForkStart, uint64_t{0}); }),
                 "malformed FORK_START message from rank 1: a fork from a rank other than 0");
}

TEST(ProtocolSync, AForkOfTheWrongLengthStopsTheWorker) {
  expect_stopped(one_message(0, sync, [](int to) { protocol::send_body(to, MsgType::kForkStart, uint32_t{0}); }),
                 "malformed FORK_START message from rank 0: wrong length", 1);
}

TEST(ProtocolSync, AForkOfAnAddressThatIsNotCodeStopsTheWorker) {
  // A heap address: data, not a function, in every rank.
  static const uint64_t data = reinterpret_cast<uint64_t>(new int(0));
  expect_stopped(one_message(0, sync, [](int to) { protocol::send_body(to, MsgType::kForkStart, data); }),
                 "malformed FORK_START message from rank 0: a fork of an address that is not code in this program", 1);
}

TEST(ProtocolSync, AJoinAtARankOtherThanTheCreatorStopsIt) {
  expect_stopped(one_message(0, sync, [](int to) { protocol::send_body(to, MsgType::kForkJoined, uint64_t{0}); }),
                 "malformed FORK_JOINED message from rank 0: a join at a rank other than 0", 1);
}

TEST(ProtocolSync, AJoinOfNoOutstandingForkStopsTheCreator) {
  expect_stopped(one_message(1, sync, [](int to) { protocol::send_body(to, MsgType::kForkJoined, uint64_t{0}); }),
                 "malformed FORK_JOINED message from rank 1: a join of no outstanding fork");
}

// Barrier-bound data a join carries comes only while a fork is outstanding. (Data to a
// worker from a rank other than 0 needs a third rank to send it.)
TEST(ProtocolSync, ForkDataOfNoOutstandingForkStopsTheCreator) {
  expect_stopped(one_message(1, sync, [](int to) {
                   updates::send(to, MsgType::kForkData, MsgType::kForkData, 0, {}, nullptr, 0, 0);
                 }),
                 "malformed FORK_DATA message from rank 1: fork data of no outstanding fork");
}

// ---- Semaphores and condition variables: kept by the manager of their address ----
//
// Objects go to managers as locks do (locks::manager_of): kObject0 is managed by rank 0,
// the receiver below, kObject1 by rank 1, the sender.

const uint64_t kObject0 = window::kBase, kObject1 = window::kBase + 16;

struct Body {  // semaphores.cpp's: the object, and for COND_SIGNAL whether to wake all
  uint64_t addr, all;
};

// Rank 1 sends rank 0 one message of `type` about `object`.
JobResult sync_message_from_rank1(MsgType type, uint64_t object) {
  static MsgType s_type;
  static uint64_t s_object;
  s_type = type, s_object = object;
  return one_message(1, sync, [](int to) { protocol::send_body(to, s_type, Body{s_object, 0}); });
}

TEST(ProtocolSync, RequestsForAnObjectTheRankDoesNotManageStopIt) {
  expect_stopped(sync_message_from_rank1(MsgType::kSemWait, kObject1),
                 "malformed SEM_WAIT message from rank 1" + about("semaphore", kObject1) +
                     ": a request for a semaphore this rank does not manage");
  expect_stopped(sync_message_from_rank1(MsgType::kSemPost, kObject1),
                 "malformed SEM_POST message from rank 1" + about("semaphore", kObject1) +
                     ": a request for a semaphore this rank does not manage");
  expect_stopped(sync_message_from_rank1(MsgType::kCondWait, kObject1),
                 "malformed COND_WAIT message from rank 1" + about("condition variable", kObject1) +
                     ": a request for a condition variable this rank does not "
                 "manage");
  expect_stopped(sync_message_from_rank1(MsgType::kCondSignal, kObject1),
                 "malformed COND_SIGNAL message from rank 1" + about("condition variable", kObject1) +
                     ": a request for a condition variable this rank does not "
                 "manage");
}

TEST(ProtocolSync, ARequestOfTheWrongLengthStopsTheManager) {
  expect_stopped(one_message(1, sync, [](int to) { protocol::send_body(to, MsgType::kSemPost, kObject0); }),
                 "malformed SEM_POST message from rank 1: wrong length");
}

TEST(ProtocolSync, AnAnswerFromARankThatDoesNotManageTheObjectStopsTheReceiver) {
  expect_stopped(sync_message_from_rank1(MsgType::kSemGrant, kObject0),
                 "malformed SEM_GRANT message from rank 1" + about("semaphore", kObject0) +
                     ": an answer from a rank that does not manage the object");
}

TEST(ProtocolSync, AnswersNobodyAskedForStopTheReceiver) {
  expect_stopped(sync_message_from_rank1(MsgType::kSemGrant, kObject1),
                 "malformed SEM_GRANT message from rank 1" + about("semaphore", kObject1) +
                     ": an answer this rank did not ask for");
  expect_stopped(sync_message_from_rank1(MsgType::kCondQueued, kObject1),
                 "malformed COND_QUEUED message from rank 1" + about("condition variable", kObject1) +
                     ": an answer this rank did not ask for");
  expect_stopped(sync_message_from_rank1(MsgType::kCondWake, kObject1),
                 "malformed COND_WAKE message from rank 1" + about("condition variable", kObject1) +
                     ": an answer this rank did not ask for");
}

}  // namespace
}  // namespace mw
