#include "core/waits.hpp"
#include "rc/pending_updates.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/blocks.hpp"
#include "core/trace.hpp"
#include "ec/barriers.hpp"
#include "rc/copysets.hpp"
#include "memory/dirty.hpp"
#include "ec/protocol.hpp"
#include "transport/transport.hpp"
#include "ec/updates.hpp"
#include "memory/window.hpp"

namespace mw::pending_updates {
namespace {

using transport::Header;
using transport::MsgType;
using Bytes = std::span<const std::byte>;

struct UpdateExtra {
  uint64_t flush;     // the sender's flush number
  uint32_t want_ack;  // a release waits for this one
  uint32_t reserved;
};

// Update messages ask for an acknowledgement, the flusher's too: a release (or a
// barrier) waits for all of them, so that it also covers what the flusher took just
// before it (the marks are gone, and its own flush then has nothing to send for them).
// But a lock's release at two ranks waits for none (flush_release), and its messages
// ask for none either (in a lock-heavy program, one each doubled the update messages:
// docs/PERFORMANCE.md). A rank's messages to a peer arrive in order, so the next flush that waits
// covers them with its own acknowledged message to that peer, or with an empty one
// (sync_unacked) when it has nothing else to send there.
std::atomic<uint64_t> g_acks{0};   // acknowledgements received
std::atomic<uint64_t> g_asked{0};  // ... asked for: added under the progress role (as_handler)
std::atomic<uint64_t> g_flushes{0};  // changed under the progress role (as_handler)
// Per sender, the number of its last flush applied here (await_barrier_updates).
std::atomic<uint64_t> *g_applied_flush = nullptr;
std::atomic<uint64_t> g_unacked{0};  // members sent updates no acknowledgement covers yet (bits; changed as g_asked)

// The copyset pages (or the processor-consistent ones) that have marks. Looked for before
// the flush takes the progress role, which would keep this rank from serving anything
// meanwhile: a flush visits every copyset page, and with thousands of them a page request
// that came meanwhile waited a hundred times a fault's usual time (docs/PERFORMANCE.md, "Figures behind the code"). A page this misses
// has no marks to send: it is clean, or not yet shared (a home alone in the copyset,
// whose marks go with the page when another rank joins), or its marks were set after
// this look, on another thread, and go with the next flush.
blocks::Vector<uintptr_t> marked_pages(bool pc_only) {
  blocks::Vector<uintptr_t> out;  // blocks: see send_pending
  // Kept from flush to flush: a release of a lock copies the list, and a list allocated
  // each time cost more than the look itself (docs/PERFORMANCE.md, WATER's releases).
  // Never destroyed, as all module state: mw_finalize may flush from an exit handler,
  // after static and thread-local destructors have run.
  thread_local std::vector<uintptr_t> *t_shared = nullptr;
  if (!t_shared) t_shared = new std::vector<uintptr_t>;
  std::vector<uintptr_t> &shared = *t_shared;
  copysets::shared_pages(pc_only, shared);
  const size_t ps = copysets::page_size();
  for (uintptr_t page : shared)
    if (dirty::any(page, ps)) out.push_back(page);
  return out;
}

// An acknowledged update with no runs to each member that unacknowledged updates went to
// (see g_unacked): its acknowledgement says they are in place. Under the progress role.
void sync_unacked() {
  for (uint64_t left = g_unacked.exchange(0, std::memory_order_relaxed); left != 0; left &= left - 1) {
    const int m = __builtin_ctzll(left);
    const UpdateExtra ex{g_flushes.fetch_add(1, std::memory_order_relaxed) + 1, 1u, 0};
    g_asked.fetch_add(1, std::memory_order_release);
    updates::send(m, MsgType::kUpdateData, MsgType::kUpdate, 0, {}, &ex, sizeof ex, 0, transport::Bulk::kWait, {});
  }
}

// Takes the marks of those pages and sends them to the pages' other members: one message
// per member, each counted in g_asked if it wants an acknowledgement. Runs as a handler does
// (transport::as_handler), so that no copyset join is handled between reading a page's
// members and sending to them. `copy` (the flusher, processor-consistent pages only):
// the application thread goes on writing meanwhile, so the marks and the data are taken
// from a snapshot of the pages (copysets::take), a prefix of its stores, and sent
// from that copy; a release's flush runs on the application thread itself and sends the
// data from where it lies.
void send_pending(std::span<const uintptr_t> marked, bool pc_only, bool want_ack, bool copy) {
  const int me = protocol::rank(), np = protocol::nprocs();
  copysets::Snapshot snap;  // with `copy`: the data too; else only pages, runs and first
  copysets::take(marked, pc_only, copy, snap);
  const std::vector<copysets::SharedPage> &pages = snap.pages;
  const std::vector<Range> &runs = snap.runs;
  const std::vector<size_t> &first = snap.first;
  if (runs.empty()) {
    if (want_ack) sync_unacked();
    return;
  }
  // The lists below are blocks (core/blocks.hpp): a flush of thousands of pages lists
  // hundreds of thousands of runs, and malloc'd lists met fresh pages at every flush.
  blocks::Vector<const std::byte *> at;  // with `copy`: where each run's bytes lie in the copy
  if (copy) {
    at.reserve(runs.size());
    size_t off = 0;
    for (const Range &r : runs) {
      at.push_back(snap.data.data() + off);
      off += r.len;
    }
  }
  std::vector<blocks::Vector<timestamps::Run>> to(static_cast<size_t>(np));
  std::vector<blocks::Vector<const std::byte *>> to_from(static_cast<size_t>(np));
  std::vector<size_t> count(static_cast<size_t>(np));  // sized at once: no list grows by steps
  for (size_t i = 0; i < pages.size(); ++i)
    for (int m = 0; m < np; ++m)
      if (m != me && (pages[i].members >> m & 1)) count[static_cast<size_t>(m)] += first[i + 1] - first[i];
  for (int m = 0; m < np; ++m) {
    to[static_cast<size_t>(m)].reserve(count[static_cast<size_t>(m)]);
    if (copy) to_from[static_cast<size_t>(m)].reserve(count[static_cast<size_t>(m)]);
  }
  for (size_t i = 0; i < pages.size(); ++i) {
    const auto &p = pages[i];
    if (first[i] == first[i + 1]) continue;
    copysets::written(p.page);
    for (int m = 0; m < np; ++m)
      if (m != me && (p.members >> m & 1))
        for (size_t k = first[i]; k < first[i + 1]; ++k) {
          to[static_cast<size_t>(m)].push_back({runs[k].addr, runs[k].len, 0});
          if (copy) to_from[static_cast<size_t>(m)].push_back(at[k]);
        }
  }
  // A check build: the writes go with this rank's synchronization clock, and the home's
  // own are merged here (check/races.cpp: data races). The flusher's are not checked.
  const uint64_t race_clock = protocol::race_clock(!copy);
  if (race_clock)
    for (size_t i = 0; i < pages.size(); ++i) {
      if (copysets::home_of(pages[i].page) != me) continue;
      for (size_t k = first[i]; k < first[i + 1]; ++k)
        protocol::race_merged(me, race_clock, runs[k].addr, runs[k].len);
    }
  UpdateExtra ex{g_flushes.fetch_add(1, std::memory_order_relaxed) + 1, want_ack ? 1u : 0u, 0};
  for (int m = 0; m < np; ++m) {
    auto &runs_m = to[static_cast<size_t>(m)];
    if (runs_m.empty()) continue;
    // Counted before it goes: a send that waits runs handlers, the acknowledgement's too.
    if (want_ack) {
      g_asked.fetch_add(1, std::memory_order_release);
      g_unacked.fetch_and(~(uint64_t{1} << m), std::memory_order_relaxed);
    } else {
      g_unacked.fetch_or(uint64_t{1} << m, std::memory_order_relaxed);
    }
    updates::send(m, MsgType::kUpdateData, MsgType::kUpdate, 0, runs_m, &ex, sizeof ex, race_clock,
                  transport::Bulk::kWait, to_from[static_cast<size_t>(m)]);
  }
  if (want_ack) sync_unacked();
}

// An update message: head (updates.hpp) then the runs' bytes. Each run lies in one page;
// copysets::apply_update puts it there (or keeps it while the page is being fetched, or
// until the flush's last message if its page is processor consistent).
void apply(const Header &h, Bytes payload, bool last) {
  trace::Span applying(trace::Kind::kUpdate, h.sender);
  applying.count = payload.size();
  const updates::WithData u = updates::parse_with_data(h, payload, last ? sizeof(UpdateExtra) : 0);
  const uintptr_t page = copysets::page_size();
  std::vector<copysets::Piece> pieces;
  pieces.reserve(u.head.runs.size());
  const std::byte *data = u.data.data();
  for (const updates::RunDesc &d : u.head.runs) {
    if (!window::contains(reinterpret_cast<void *>(d.addr), d.len) ||
        (d.addr & ~(page - 1)) != ((d.addr + d.len - 1) & ~(page - 1)))
      protocol::malformed(h, "a run outside the shared window, or across pages");
    pieces.push_back({static_cast<uintptr_t>(d.addr), data, static_cast<size_t>(d.len)});
    if (h.clock && copysets::home_of(d.addr) == protocol::rank())  // a check build: races
      protocol::race_merged(h.sender, h.clock, d.addr, d.len);
    data += d.len;
  }
  UpdateExtra ex{};
  if (last) std::memcpy(&ex, u.head.extra.data(), sizeof ex);
  // A sender numbers its flushes from 1 up; a number that does not grow would let a rank
  // past a barrier before the flushes it stands for are in place (await_barrier_updates).
  if (last && ex.flush <= g_applied_flush[h.sender].load(std::memory_order_relaxed))
    protocol::malformed(h, "a flush number that does not increase");
  copysets::apply_update(h.sender, pieces, last, ex.flush);
  // A sender's messages arrive in order: all its flushes up to this one are in place.
  if (last) g_applied_flush[h.sender].store(ex.flush, std::memory_order_release);
  if (ex.want_ack) transport::send(h.sender, MsgType::kUpdateAck, nullptr, 0);
}

void on_update_data(const Header &h, Bytes payload) { apply(h, payload, false); }
void on_update(const Header &h, Bytes payload) { apply(h, payload, true); }
// One acknowledgement more than was asked for would let a later release return before
// its own updates are in place.
void on_ack(const Header &h, Bytes) {
  if (g_acks.load(std::memory_order_relaxed) >= g_asked.load(std::memory_order_acquire))
    protocol::malformed(h, "an acknowledgement of no update");
  g_acks.fetch_add(1, std::memory_order_release);
}

// The processor-consistency flusher: wakes every shortest flush interval. Never
// destroyed, as the transport's service thread: a rank that leaves without mw_finalize
// (exit(3), mw::fatal on any thread) would otherwise meet a joinable std::thread's
// destructor, whose std::terminate turned its exit status into SIGABRT.
struct Flusher {
  std::thread *thread = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
};
Flusher &g_fl = *new Flusher;

// What the flusher pushes, pushed now, under the progress role.
void push_processor_consistent() {
  if (copysets::shared_page_count() == 0) return;
  const blocks::Vector<uintptr_t> marked = marked_pages(true);
  if (!marked.empty()) send_pending(marked, true, true, true);
}

void flusher() {
  std::unique_lock<std::mutex> lk(g_fl.mu);
  while (!g_fl.stopping) {
    unsigned us = copysets::shortest_flush_us();
    g_fl.cv.wait_for(lk, std::chrono::microseconds(us ? us : 1000));
    if (g_fl.stopping) break;
    lk.unlock();
    transport::as_handler([] { push_processor_consistent(); });
    lk.lock();
  }
}

// At two ranks a lock's release sends nothing: its updates stay marks until a lock moves
// (see flush_release), and a barrier's flush asks for no acknowledgement where the
// barrier can carry its number (flush_for_barrier). Not with processor-consistent data
// (the flusher freezes what it takes; a grant's flush on the service thread could not),
// nor in a check build, whose race checks date each update by the release it follows.
bool two_ranks_unacknowledged() {
  return protocol::nprocs() == 2 && protocol::model() != protocol::Model::kProcessor &&
         copysets::shortest_flush_us() == 0 && !protocol::checking_races();
}

// A lock is about to move to the other rank (a grant, a revoke's answer), under the
// progress role: what this rank wrote since it last flushed goes first, unacknowledged
// as a release's, on whichever thread serves the lock. The application thread may be
// writing meanwhile: a byte it marks again after this takes its mark goes with the next
// flush, as at a release.
void on_lock_moving() {
  if (!copysets::enabled() || copysets::shared_page_count() == 0 || !two_ranks_unacknowledged()) return;
  const blocks::Vector<uintptr_t> marked = marked_pages(false);
  if (!marked.empty()) send_pending(marked, false, false, false);
}

}  // namespace

void init() {
  g_applied_flush = new std::atomic<uint64_t>[static_cast<size_t>(protocol::nprocs())]{};  // never freed
  protocol::set_lock_moving_hook(on_lock_moving);
  // A page this rank serves holds all it wrote there, and a processor-consistent page may
  // hold writes made after others it has not pushed yet: those go first, so that the
  // requester never sees a write without the ones issued before it.
  copysets::set_before_serving(push_processor_consistent);
  transport::on(MsgType::kUpdate, on_update);
  transport::on(MsgType::kUpdateData, on_update_data);
  transport::on(MsgType::kUpdateAck, on_ack);
}

namespace {
// offer: pages may move to their writers here (copysets::offer_homes), which waits for
// the writers' answers; not at mw_finalize, where a peer may have stopped serving.
// Nothing to push and nothing to wait for: the usual flush of a program with no
// release-consistent data shared, one load or three.
bool nothing_to_flush() {
  return copysets::shared_page_count() == 0 && g_unacked.load(std::memory_order_relaxed) == 0 &&
         g_acks.load(std::memory_order_acquire) >= g_asked.load(std::memory_order_acquire);
}

void flush(bool wait, bool offer) {
  if (!copysets::enabled() || nothing_to_flush()) return;
  uint64_t want = 0;
  trace::Span flushing(trace::Kind::kFlush);
  const blocks::Vector<uintptr_t> marked = marked_pages(false);
  flushing.count = marked.size();
  transport::as_handler([&] {
    if (offer) copysets::offer_homes();
    send_pending(marked, false, wait, false);
    want = g_asked.load();  // the flusher's messages sent before these included
  });
  copysets::await_answers();
  if (wait && g_acks.load(std::memory_order_acquire) < want) {
    waits::Waiting waiting(waits::Kind::kUpdateAcks, 0, -1);
    transport::progress_until([want] { return g_acks.load(std::memory_order_acquire) >= want; });
  }
}
}  // namespace

void flush() {
  copysets::join_landed();
  flush(true, true);
}

uint64_t flush_for_barrier(bool wait_for_acks) {
  copysets::join_landed();
  if (nothing_to_flush()) return g_flushes.load(std::memory_order_relaxed);
  const bool unacknowledged = !wait_for_acks && two_ranks_unacknowledged() && transport::shared_line(0) != nullptr;
  flush(!unacknowledged, true);
  return g_flushes.load(std::memory_order_relaxed);
}

void await_barrier_updates(const void *barrier) {
  // Updates come only to a rank that shares pages with the sender.
  if (copysets::shared_page_count() == 0) return;
  const uint64_t flush = barriers::announced();
  if (flush == 0) return;
  const int sender = 1 - protocol::rank();
  auto done = [sender, flush] { return g_applied_flush[sender].load(std::memory_order_acquire) >= flush; };
  if (done()) return;
  waits::Waiting waiting(waits::Kind::kBarrier, reinterpret_cast<uintptr_t>(barrier), sender);
  transport::progress_until([&done] { return done(); });
}

void flush_release() {
  copysets::join_landed();
  if (two_ranks_unacknowledged()) return;
  flush(protocol::nprocs() != 2, true);
}

void start_flusher() {
  if (!copysets::enabled() || copysets::shortest_flush_us() == 0) return;
  std::lock_guard<std::mutex> g(g_fl.mu);
  if (g_fl.thread || g_fl.stopping) return;
  g_fl.thread = new std::thread(flusher);
}

void finish() {
  std::thread *t;
  {
    std::lock_guard<std::mutex> g(g_fl.mu);
    g_fl.stopping = true;
    t = g_fl.thread;
    g_fl.thread = nullptr;
  }
  g_fl.cv.notify_all();
  if (t) {
    t->join();
    delete t;
  }
  flush(true, false);
}

}  // namespace mw::pending_updates
