// Release consistency's messages between real processes (rc/): a peer that breaks the
// copyset protocol stops the receiving rank with an error naming the message, the sender
// and what is wrong, instead of corrupting its pages or their copysets.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "ec/protocol.hpp"
#include "ec/updates.hpp"
#include "malformed_job.hpp"
#include "memory/heap.hpp"
#include "memory/window.hpp"
#include "rc/copysets.hpp"
#include "rc/page_state.hpp"
#include "rc/pending_updates.hpp"

namespace mw {
namespace {

using test::append;
using test::Child;
using test::about;
using test::expect_stopped;
using test::expect_stopped_about;
using test::JobResult;
using test::one_message;
using test::send_parts;
using test::two_ranks;
using transport::MsgType;
using Bytes = std::vector<std::byte>;

// Three ranks, for the tests where a third rank takes part.
test::JobOptions three_ranks() {
  test::JobOptions o = two_ranks();
  o.nprocs = 3;
  return o;
}

// Each rank's protocol and heap, and rank 0's copysets: the rank under test.
void start_heap_job(Child &c, int nprocs) {
  protocol::start(c.rank(), nprocs);
  heap::init(c.rank(), nprocs);
  if (c.rank() == 0) {
    copysets::report_faults();
    copysets::init();
  }
}

// The first heap page of rank 1's part (heap::owner_of), found by bisection.
uintptr_t first_page_of_rank1() {
  uintptr_t lo = window::layout().heap_begin, hi = window::kEnd;
  while (hi - lo > window::page_size()) {
    const uintptr_t mid = (lo + (hi - lo) / 2) & ~(window::page_size() - 1);
    (heap::owner_of(mid) >= 1 ? hi : lo) = mid;
  }
  return hi;
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
                 "malformed COPYSET_JOIN message from rank 1" + about("page", window::kBase) +
                     ": no such rank");
}

TEST(Protocol, AnAcknowledgementOfNoJoinStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   copysets::PageMsg m{window::kBase};
                   transport::send(0, MsgType::kCopysetAck, &m, sizeof m);
                 }),
                 "malformed COPYSET_ACK message from rank 1" + about("page", window::kBase) +
                     ": no join of that page is under way");
}

TEST(Protocol, ARequestForAPageOutsideTheWindowStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   copysets::PageRequest q{0x1000, 1, 1, -1, 0};
                   transport::send(0, MsgType::kPageRequest, &q, sizeof q);
                 }),
                 "malformed PAGE_REQUEST message from rank 1" + about("page", 0x1000) +
                     ": not a page of the shared window");
}

TEST(Protocol, AnAnswerToNoLeaveStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   copysets::LeftAck a{window::kBase, 0};
                   transport::send(0, MsgType::kCopysetLeftAck, &a, sizeof a);
                 }),
                 "malformed COPYSET_LEFT_ACK message from rank 1" + about("page", window::kBase) +
                     ": no leave of that page is under way");
}

TEST(Protocol, AnAnswerToNoOfferStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   uint64_t taken = 1;
                   transport::send(0, MsgType::kHomeAnswer, &taken, sizeof taken);
                 }),
                 "malformed HOME_ANSWER message from rank 1: an answer to no offer");
}

TEST(Protocol, AnOfferThatIsNotAListOfPagesStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   const char five[5] = {};
                   transport::send(0, MsgType::kHomeOffer, five, sizeof five);
                 }),
                 "malformed HOME_OFFER message from rank 1: not a list of pages");
}

TEST(Protocol, AnOfferOfAPageTheSenderDidNotAllocateStopsTheReceiver) {
  // Static data: no rank allocated it, so no rank may offer it.
  expect_stopped(copyset_message_from_rank1([] {
                   uint64_t page = window::kBase;
                   transport::send(0, MsgType::kHomeOffer, &page, sizeof page);
                 }),
                 "malformed HOME_OFFER message from rank 1" + about("page", window::kBase) +
                     ": a page the sender did not allocate");
}

// Data unbound from a lock (rc/unbound.cpp): the holder's bytes for a range, and the answer.
void send_unbound(uint64_t addr, uint64_t len, size_t bytes) {
  const uint64_t head[3] = {0x1234, addr, len};
  std::vector<std::byte> data(bytes);
  const iovec h{const_cast<uint64_t *>(head), sizeof head}, b{data.data(), data.size()};
  transport::send(0, MsgType::kUnbound, std::span<const iovec>(&h, 1), std::span<const iovec>(&b, 1));
}

TEST(Protocol, UnboundDataShorterThanItsRangeStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] { send_unbound(window::kBase, 64, 32); }),
                 "malformed UNBOUND message from rank 1 about lock 0x1234: wrong length");
}

TEST(Protocol, UnboundDataOutsideTheWindowStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] { send_unbound(0x1000, 64, 64); }),
                 "malformed UNBOUND message from rank 1 about lock 0x1234: a range outside the shared window");
}

TEST(Protocol, AnAnswerToNoUnbindingStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   uint64_t lock = 0x1234;
                   transport::send(0, MsgType::kUnboundAck, &lock, sizeof lock);
                 }),
                 "malformed UNBOUND_ACK message from rank 1 about lock 0x1234: no mw_unbind of this rank waits for an answer");
}

// ---- Release consistency: copysets and pages ---------------------------------------------

// A heap page nobody's partition holds here (heap::init is not called): no rank's home.
uint64_t homeless_page() { return window::layout().heap_begin; }

TEST(Protocol, ALeaveOfAPageTheRankIsNotHomeOfStopsIt) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kCopysetLeave, copysets::PageMsg{homeless_page()});
                 }),
                 "malformed COPYSET_LEAVE message from rank 1" + about("page", homeless_page()) +
                     ": this rank is not the page's home");
}

TEST(Protocol, ALeaveOfAPageOutsideTheWindowStopsTheHome) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kCopysetLeave, copysets::PageMsg{window::kBase + 8});
                 }),
                 "malformed COPYSET_LEAVE message from rank 1" + about("page", window::kBase + 8) +
                     ": not a page of the shared window");
}

TEST(Protocol, ALeaveOfNoSuchRankStopsTheMember) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kCopysetLeft, copysets::MemberMsg{window::kBase, 5, 0});
                 }),
                 "malformed COPYSET_LEFT message from rank 1" + about("page", window::kBase) +
                     ": no such rank");
}

TEST(Protocol, ANoticeOfTheRanksOwnLeaveStopsIt) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kCopysetLeft, copysets::MemberMsg{window::kBase, 0, 0});
                 }),
                 "malformed COPYSET_LEFT message from rank 1" + about("page", window::kBase) +
                     ": this rank's own leave");
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
                 "malformed PAGE_REQUEST message from rank 1" + about("page", window::kBase) +
                     ": a request forwarded by a rank that did not "
                 "allocate the page, or for this rank");
}

TEST(Protocol, ARequestForAPageTheRankIsNotHomeOfStopsIt) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kPageRequest, copysets::PageRequest{homeless_page(), 1, 1, -1, 0});
                 }),
                 "malformed PAGE_REQUEST message from rank 1" + about("page", homeless_page()) +
                     ": this rank is not the page's home");
}

TEST(Protocol, APageOfTheWrongSizeStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] { send_parts(0, MsgType::kPageData, {}, Bytes(100)); }),
                 "malformed PAGE_DATA message from rank 1: not a page's worth of data");
}

TEST(Protocol, APageAnswerShorterThanItsHeadStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] { protocol::send_body(0, MsgType::kPageData, window::kBase); }),
                 "malformed PAGE_DATA message from rank 1: wrong length");
}

TEST(Protocol, APageAnswerLongerThanItsHeadStopsTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   Bytes head;
                   append(head, copysets::PageData{window::kBase, 3, copysets::kUnwritten, 0});
                   append(head, uint64_t{0});
                   send_parts(0, MsgType::kPageData, head);
                 }),
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
                 "malformed PAGE_DATA message from rank 1" + about("page", window::kBase) +
                     ": a page this rank did not ask for");
}

TEST(Protocol, PagesAheadNobodyAskedForStopTheReceiver) {
  expect_stopped(copyset_message_from_rank1([] {
                   protocol::send_body(0, MsgType::kPageData,
                                       copysets::AheadData{{window::kBase, 2, copysets::kAhead, 0}, 0, 0});
                 }),
                 "malformed PAGE_DATA message from rank 1" + about("page", window::kBase) +
                     ": pages this rank did not ask for");
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

// A rank past a two-rank barrier waits until it has applied the other's flushes up to
// the number announced (pending_updates::await_barrier_updates): numbers that do not grow would let
// it go on before they are in place.
TEST(Protocol, APendingUpdateWhoseFlushNumberDoesNotIncreaseStopsTheMember) {
  expect_stopped(one_message(1, release_consistency, [](int to) {
                   for (uint64_t flush : {2, 2}) {
                     Bytes head;
                     append(head, updates::Head{0, 0, uint32_t{sizeof(UpdateExtra)}});
                     append(head, UpdateExtra{flush, 0, 0});
                     send_parts(to, MsgType::kUpdate, head);
                   }
                 }),
                 "malformed UPDATE message from rank 1: a flush number that does not increase");
}

TEST(Protocol, AnAcknowledgementOfNoUpdateStopsTheWriter) {
  expect_stopped(one_message(1, release_consistency, [](int to) { transport::send(to, MsgType::kUpdateAck, nullptr, 0); }),
                 "malformed UPDATE_ACK message from rank 1: an acknowledgement of no update");
}

// Rank 0 allocates a heap page; rank 1 fetches it, then sends an update of it every
// millisecond, as a writer whose page should move to it does (copysets.cpp, "the writer
// becomes the home"). Rank 0 flushes every few milliseconds until, its own marks none and
// rank 1's updates there at two flushes in a row, it offers rank 1 the page; rank 1
// answers the offer of `offered` pages with `answer`.
void (*g_offer_answer)(int allocator, size_t offered);
std::atomic<uint64_t> g_offer_page{0};

JobResult offer_answered_by_rank1(void (*answer)(int, size_t)) {
  g_offer_answer = answer;
  return run_job(two_ranks(), [](Child &c) {
    start_heap_job(c, 2);
    using transport::Header;
    using Payload = std::span<const std::byte>;
    if (c.rank() == 0) {
      pending_updates::init();
    } else {
      // The page's address (rank 0 says it in a join notice, which two ranks never send).
      transport::on(MsgType::kCopysetJoin, [](const Header &h, Payload payload) {
        g_offer_page = protocol::read_body<copysets::MemberMsg>(h, payload).page;
      });
      transport::on(MsgType::kPageData, [](const Header &, Payload) {});
      transport::on(MsgType::kUpdateAck, [](const Header &, Payload) {});
      transport::on(MsgType::kHomeOffer, [](const Header &h, Payload payload) {
        g_offer_answer(h.sender, payload.size() / sizeof(uint64_t));
      });
    }
    c.start();
    if (c.rank() == 0) {
      const auto page = reinterpret_cast<uintptr_t>(
          heap::allocate(window::page_size(), heap::kDefaultLine, "mw_malloc"));
      protocol::send_body(1, MsgType::kCopysetJoin, copysets::MemberMsg{page, 0, 0});
      for (int i = 0; i < 500; i++) {  // the answer stops this rank long before
        pending_updates::flush();
        usleep(5000);
      }
    } else {
      transport::progress_until([] { return g_offer_page.load() != 0; });
      const uint64_t page = g_offer_page;
      protocol::send_body(0, MsgType::kPageRequest, copysets::PageRequest{page, 0, 1, -1, 0});
      for (uint64_t flush = 1; flush < 3000; flush++) {
        Bytes head;
        append(head, updates::Head{0, 1, uint32_t{sizeof(UpdateExtra)}});
        append(head, updates::RunDesc{page, 8, 0});
        append(head, UpdateExtra{flush, 1, 0});
        send_parts(0, MsgType::kUpdate, head, Bytes(8, std::byte{1}));
        usleep(1000);
      }
    }
    transport::close();
  });
}

TEST(Protocol, AnAnswerToAnOfferOfTheWrongLengthStopsTheAllocator) {
  expect_stopped(offer_answered_by_rank1([](int allocator, size_t offered) {
                   std::vector<uint64_t> taken((offered + 63) / 64 + 1, ~uint64_t{0});
                   transport::send(allocator, MsgType::kHomeAnswer, taken.data(), taken.size() * sizeof(uint64_t));
                 }),
                 "malformed HOME_ANSWER message from rank 1: an answer whose length does not match the offer's");
}

// ---- Release consistency: answers to a fetch under way ----------------------------------
//
// Rank 0 touches a page of rank 1's part of the heap (its home) and so asks for it; rank 1
// answers with `g_answer`. With `g_leave`, rank 0 then leaves the page's copyset and rank
// 1 answers the leave with `g_left`; with `again` too, rank 0 then touches the page again.
// With `next_first`, the page touched and left first is the one after: the page touched
// again then asks for it ahead, as a page it held before.

void (*g_answer)(int to, uint64_t page);
void (*g_left)(int to, uint64_t page);
bool g_leave, g_again, g_next_first;
std::atomic<int> g_answered{0};

JobResult fetch_answered_by_rank1(void (*answer)(int, uint64_t), void (*left)(int, uint64_t) = nullptr,
                                  bool again = false, bool next_first = false) {
  g_answer = answer;
  g_left = left;
  g_leave = left != nullptr;
  g_again = again;
  g_next_first = next_first;
  return run_job(two_ranks(), [](Child &c) {
    start_heap_job(c, 2);
    if (c.rank() != 0) {
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
      volatile char *first = g_next_first ? page + window::page_size() : page;
      *first = 0;  // a copyset fault (a write, so it asks for pages ahead too): the answer's handler stops this rank
      if (g_leave) copysets::leave(const_cast<char *>(first), window::page_size());
      if (g_again) *page = 0;  // a write: it asks for the page after too
    } else {
      transport::progress_until([] { return g_answered.load() == 1 + g_leave + g_again; });
    }
    transport::close();
  });
}

TEST(Protocol, AFetchedPageWhoseCopysetLacksTheFetcherStopsIt) {
  expect_stopped_about(fetch_answered_by_rank1([](int to, uint64_t page) {
                   protocol::send_body(to, MsgType::kPageData, copysets::PageData{page, 2, copysets::kUnwritten, 0});
                 }),
                       "malformed PAGE_DATA message from rank 1", "page", "a copyset without this rank");
}

TEST(Protocol, AFetchedPageMadeTheFetchersWithOtherMembersStopsIt) {
  expect_stopped_about(fetch_answered_by_rank1([](int to, uint64_t page) {
                   protocol::send_body(to, MsgType::kPageData, copysets::PageData{page, 3, copysets::kHomed, 0});
                 }),
                       "malformed PAGE_DATA message from rank 1", "page",
                       "a page made this rank's by a rank that did not allocate it");
}

TEST(Protocol, PagesAheadWithoutTheirDataStopTheFetcher) {
  expect_stopped_about(fetch_answered_by_rank1([](int to, uint64_t page) {
                   // The page after the one faulted on, said to come with its data, which is not there.
                   protocol::send_body(to, MsgType::kPageData, copysets::AheadData{{page, 2, copysets::kAhead, 0}, 2, 0});
                 }),
                       "malformed PAGE_DATA message from rank 1", "page", "not the pages' worth of data");
}

void unwritten_page(int to, uint64_t page) {
  protocol::send_body(to, MsgType::kPageData, copysets::PageData{page, 3, copysets::kUnwritten, 0});
}

TEST(Protocol, AnAnswerToALeaveNamingTheLeaverStopsIt) {
  expect_stopped_about(fetch_answered_by_rank1(unwritten_page,
                                         [](int to, uint64_t page) {
                                           protocol::send_body(to, MsgType::kCopysetLeftAck, copysets::LeftAck{page, 1});
                                         }),
                       "malformed COPYSET_LEFT_ACK message from rank 1", "page",
                       "a second answer, or members that are not other "
                 "ranks of the job");
}

TEST(Protocol, AnAnswerToALeaveNamingNoSuchRankStopsTheLeaver) {
  expect_stopped_about(fetch_answered_by_rank1(unwritten_page,
                                         [](int to, uint64_t page) {
                                           protocol::send_body(to, MsgType::kCopysetLeftAck,
                                                               copysets::LeftAck{page, uint64_t{1} << 5});
                                         }),
                       "malformed COPYSET_LEFT_ACK message from rank 1", "page",
                       "a second answer, or members that are not other "
                 "ranks of the job");
}

TEST(Protocol, APageAnswerWithoutDataForAPageHeldBeforeStopsTheFetcher) {
  // The page is fetched, left, and touched again: the copy it held is stale, so the page
  // must come with its data.
  expect_stopped_about(fetch_answered_by_rank1(unwritten_page,
                                         [](int to, uint64_t page) {
                                           protocol::send_body(to, MsgType::kCopysetLeftAck, copysets::LeftAck{page, 0});
                                         },
                                         true),
                       "malformed PAGE_DATA message from rank 1", "page",
                       "no data for a page this rank held before");
}

TEST(Protocol, PagesAheadWithoutDataForAPageHeldBeforeStopTheFetcher) {
  // Rank 0 fetches the page after the one it faults on, leaves it, and faults: the page
  // after, asked for ahead, is stale here and must come with its data.
  expect_stopped_about(fetch_answered_by_rank1(
                     [](int to, uint64_t page) {
                       if (g_answered.load() == 0) return unwritten_page(to, page);  // the page after
                       protocol::send_body(to, MsgType::kPageData,
                                           copysets::AheadData{{page, 2, copysets::kAhead, 0}, 0, 0});
                       unwritten_page(to, page);  // taken, the page after would have ended the fetch
                     },
                     [](int to, uint64_t page) {
                       protocol::send_body(to, MsgType::kCopysetLeftAck, copysets::LeftAck{page, 0});
                     },
                     true, true),
                       "malformed PAGE_DATA message from rank 1", "page",
                       "no data for a page this rank held before");
}

// Three ranks: rank 0 faults on the first page of rank 1's part of the heap; rank 1 passes
// the request on to rank 2, which answers it with `g_third_answers` (no correct rank
// does: only a page's home answers for it).
void (*g_third_answers)(int to, uint64_t page);

JobResult fetch_answered_by_rank2(void (*answer)(int, uint64_t)) {
  g_third_answers = answer;
  return run_job(three_ranks(), [](Child &c) {
    start_heap_job(c, 3);
    using transport::Header;
    using Payload = std::span<const std::byte>;
    if (c.rank() != 0) {
      transport::on(MsgType::kPageRequest, [](const Header &h, Payload payload) {
        const copysets::PageRequest q = protocol::read_body<copysets::PageRequest>(h, payload);
        if (h.sender == 0) protocol::send_body(2, MsgType::kPageRequest, q);
        else g_third_answers(0, q.page);
        g_answered++;
      });
    }
    c.start();
    if (c.rank() == 0) {
      const uintptr_t hi = first_page_of_rank1();
      *reinterpret_cast<volatile char *>(hi) = 0;  // a write (pages ahead asked for too): the answer's handler stops this rank
    } else {
      transport::progress_until([] { return g_answered.load() == 1; });
    }
    transport::close();
  });
}

TEST(Protocol, PagesAheadMadeTheFetchersByARankThatDidNotAllocateThemStopIt) {
  expect_stopped_about(fetch_answered_by_rank2([](int to, uint64_t page) {
                   // The page after the one faulted on, given away by rank 2 as if it were its home.
                   protocol::send_body(to, MsgType::kPageData, copysets::AheadData{{page, 2, copysets::kAhead, 0}, 0, 2});
                   // Taken, the page after would have ended the fetch.
                   protocol::send_body(to, MsgType::kPageData, copysets::PageData{page, 5, copysets::kUnwritten, 0});
                 }),
                       "malformed PAGE_DATA message from rank 2", "page",
                       "pages made this rank's by a rank that did not allocate them");
}

// Three ranks: rank 0 fetches a page homed at rank 1 whose copyset is all three, then
// leaves it. The home tells rank 2 (COPYSET_LEFT), which answers the leaver with
// `g_member_answers`; with `g_home_answers`, rank 2 then tells the home, which answers last,
// naming no other member.
void (*g_member_answers)(int leaver, uint64_t page);
bool g_home_answers;
std::atomic<int> g_handled{0};

JobResult leave_answered_by_ranks_1_and_2(void (*member_answers)(int, uint64_t), bool home_answers) {
  g_member_answers = member_answers;
  g_home_answers = home_answers;
  return run_job(three_ranks(), [](Child &c) {
    start_heap_job(c, 3);
    using transport::Header;
    using Payload = std::span<const std::byte>;
    if (c.rank() == 1) {
      transport::on(MsgType::kPageRequest, [](const Header &h, Payload payload) {
        const uint64_t page = protocol::read_body<copysets::PageRequest>(h, payload).page;
        protocol::send_body(h.sender, MsgType::kPageData, copysets::PageData{page, 7, copysets::kUnwritten, 0});
        g_handled++;
      });
      transport::on(MsgType::kCopysetLeave, [](const Header &h, Payload payload) {
        const uint64_t page = protocol::read_body<copysets::PageMsg>(h, payload).page;
        protocol::send_body(2, MsgType::kCopysetLeft, copysets::MemberMsg{page, h.sender, 0});
        g_handled++;
      });
      transport::on(MsgType::kCopysetAck, [](const Header &h, Payload payload) {  // rank 2 has answered
        const uint64_t page = protocol::read_body<copysets::PageMsg>(h, payload).page;
        protocol::send_body(0, MsgType::kCopysetLeftAck, copysets::LeftAck{page, 0});
        g_handled++;
      });
    } else if (c.rank() == 2) {
      transport::on(MsgType::kCopysetLeft, [](const Header &h, Payload payload) {
        const copysets::MemberMsg m = protocol::read_body<copysets::MemberMsg>(h, payload);
        g_member_answers(m.rank, m.page);
        if (g_home_answers) protocol::send_body(h.sender, MsgType::kCopysetAck, copysets::PageMsg{m.page});
        g_handled++;
      });
    }
    c.start();
    if (c.rank() == 0) {
      const uintptr_t hi = first_page_of_rank1();
      volatile char *page = reinterpret_cast<char *>(hi);
      (void)*page;
      copysets::leave(const_cast<char *>(page), window::page_size());  // an answer stops this rank
    } else {
      static int want;
      want = c.rank() == 1 ? 2 + g_home_answers : 1;
      transport::progress_until([] { return g_handled.load() == want; });
    }
    transport::close();
  });
}

TEST(Protocol, AMemberAnsweringALeaveTwiceStopsTheLeaver) {
  expect_stopped_about(leave_answered_by_ranks_1_and_2(
                     [](int leaver, uint64_t page) {
                       for (int i = 0; i < 2; i++)
                         protocol::send_body(leaver, MsgType::kCopysetLeftAck, copysets::LeftAck{page, 0});
                     },
                     false),
                       "malformed COPYSET_LEFT_ACK message from rank 2", "page",
                       "a second answer from a member");
}

TEST(Protocol, AnAnswerToALeaveFromARankTheHomeDoesNotNameStopsTheLeaver) {
  expect_stopped_about(leave_answered_by_ranks_1_and_2(
                     [](int leaver, uint64_t page) {
                       protocol::send_body(leaver, MsgType::kCopysetLeftAck, copysets::LeftAck{page, 0});
                     },
                     true),
                       "malformed COPYSET_LEFT_ACK message from rank 1", "page",
                       "an answer from a rank that is not a member");
}

TEST(Protocol, AMemberAnsweringALeaveNamingMembersStopsTheLeaver) {
  expect_stopped_about(leave_answered_by_ranks_1_and_2(
                     [](int leaver, uint64_t page) {
                       protocol::send_body(leaver, MsgType::kCopysetLeftAck, copysets::LeftAck{page, 2});
                     },
                     false),
                       "malformed COPYSET_LEFT_ACK message from rank 2", "page",
                       "a second answer from a member");
}

// Rank 0 becomes a member of a page homed at rank 1 (rank 1 serves it, members 0-2);
// then rank 2, which is not the home, sends rank 0 a copyset notice built by `notice`.
void (*g_notice)(uint64_t page);

JobResult member_notice_from_rank2(void (*notice)(uint64_t page)) {
  g_notice = notice;
  return run_job(three_ranks(), [](Child &c) {
    start_heap_job(c, 3);
    using transport::Header;
    using Payload = std::span<const std::byte>;
    static std::atomic<bool> done{false};
    if (c.rank() == 1) {
      transport::on(MsgType::kPageRequest, [](const Header &h, Payload payload) {
        const uint64_t page = protocol::read_body<copysets::PageRequest>(h, payload).page;
        protocol::send_body(h.sender, MsgType::kPageData, copysets::PageData{page, 7, copysets::kUnwritten, 0});
        done = true;
      });
    } else if (c.rank() == 2) {
      transport::on(MsgType::kCopysetAck, [](const Header &h, Payload payload) {  // rank 0 holds the page
        g_notice(protocol::read_body<copysets::PageMsg>(h, payload).page);
        done = true;
      });
    }
    c.start();
    if (c.rank() == 0) {
      const uintptr_t hi = first_page_of_rank1();
      volatile char *page = reinterpret_cast<char *>(hi);
      (void)*page;
      protocol::send_body(2, MsgType::kCopysetAck, copysets::PageMsg{hi});
      sleep(5);  // the notice stops this rank long before
    } else {
      transport::progress_until([] { return done.load(); });
    }
    transport::close();
  });
}

TEST(Protocol, AJoinNoticeFromARankNotTheHomeStopsTheMember) {
  expect_stopped_about(member_notice_from_rank2([](uint64_t page) {
                   protocol::send_body(0, MsgType::kCopysetJoin, copysets::MemberMsg{page, 1, 0});
                 }),
                       "malformed COPYSET_JOIN message from rank 2", "page",
                       "a member change not from the page's home");
}

TEST(Protocol, ALeaveNoticeFromARankNotTheHomeStopsTheMember) {
  expect_stopped_about(member_notice_from_rank2([](uint64_t page) {
                   protocol::send_body(0, MsgType::kCopysetLeft, copysets::MemberMsg{page, 1, 0});
                 }),
                       "malformed COPYSET_LEFT message from rank 2", "page",
                       "a member change not from the page's home");
}

}  // namespace
}  // namespace mw
