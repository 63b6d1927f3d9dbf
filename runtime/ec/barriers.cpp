#include "core/waits.hpp"
#include "ec/barriers.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/bindings.hpp"
#include "memory/dirty.hpp"
#include "core/error.hpp"
#include "ec/locks.hpp"
#include "ec/protocol.hpp"
#include "core/stats.hpp"
#include "ec/timestamps.hpp"
#include "transport/transport.hpp"
#include "ec/updates.hpp"
#include "memory/window.hpp"

namespace mw::barriers {
namespace {

using transport::Header;
using transport::MsgType;
using Bytes = std::span<const std::byte>;
using timestamps::Run;

constexpr int kManager = 0;

using wire::ArriveExtra;
using wire::kReleaseBySlot;
using wire::ReleaseExtra;

// ---- Crossing through shared words ----
//
// When every rank is on this host the transport gives each rank two cache lines in a
// page the whole job maps (transport::shared_line; kDoorbell, i.e. shm). A crossing with
// no data to move then needs no message: through the transport an arrival and a release
// are a round trip (each message polled out of shm's queue, validated and handled),
// through the line a store each way (docs/PERFORMANCE.md, "Figures behind the code"). A
// rank that waits for its release crosses nothing else meanwhile, so it has at most one
// arrival and one release in flight, and its lines hold them. The first line is written
// by its rank only, the second by the manager only, so that neither side's stores take
// from the other a line it is reading:
//
//   kArrivalSeq    the rank's slot arrivals so far; stored last (release order), so the
//                  manager that sees it move reads the three words below whole.
//   kArrivalAddr   the barrier
//   kArrivalEpoch  the rank's crossing of it (ArriveExtra::epoch)
//   kArrivalClock  the rank's Lamport clock (as a message header would carry it)
//   kCpu           1 + the CPU the rank last crossed on: a waiter whose peer shares its
//                  CPU yields instead of spinning
//   kReleaseSeq    (second line) the manager's slot releases of this rank so far; stored last
//   kReleaseClock  the manager's clock at the release
//
// What goes by message, as before: arrivals with runs; every mw_barrier_final arrival
// (non-managers do not wait there, so their next arrival could overwrite the line before
// the manager read it); releases with runs; every crossing without a shared page (tcp,
// several hosts). A release with no runs goes through the line if the rank waits on it
// (a slot arrival, or an ARRIVE flagged kReleaseBySlot). The manager takes slot arrivals
// into the same bookkeeping as messages (arrive(): seen, the final/non-final check,
// check_finalized), wherever it may have to notice one: its own arrival, its wait, a
// FINALIZING, its mw_finalize. After each store the writer rings the reader's application
// thread (transport::ring_waiter); a waiter reads the words in its predicate
// (transport::wait_shared), so asleep it is woken, and awake the ring costs one load.
//
// Two ranks: each arrival is the other's release, as in MPI_Barrier's exchange. The
// manager's arrival with no runs goes into its own line too (kArrivalSeq..kArrivalClock,
// there a seqlock: odd while written; the arrival before it moves to kPrevAddr..
// kPrevClock, and kTaken says how many of rank 1's slot arrivals it had taken). Rank 1,
// whose own arrival went through its line, leaves as soon as it sees the manager's
// arrival at its crossing there, the last one or the one before (the manager cannot be
// two crossings ahead: it needs rank 1's next arrival to finish the next one), and the
// manager, having taken rank 1's arrival, completes the crossing without a release: one
// store's latency after the later arrival, not the round trip through the manager. Both
// leave at the same clock, max(arrival clocks)+1, as a release would carry. Rank 1 may so
// be on its way before the manager took its arrival, and arrive again: its arrivals
// alternate between two sets of words (kArrivalAddr.. for odd ones, kArrivalAddr2.. for
// even ones), and it leaves only once the arrival before the one it is leaving has been
// taken, so that its next does not overwrite an arrival not taken. The manager takes line
// arrivals before a message's (on_arrive), which may overtake them.
enum : size_t {
  // The first cache line, written by the line's rank only:
  kArrivalSeq,
  kArrivalAddr,
  kArrivalEpoch,
  kArrivalClock,
  kCpu,
  kTaken = 5,         // the manager's line, two ranks (above)
  kArrivalAddr2 = 5,  // another rank's line: kArrivalAddr..kArrivalClock of its even-numbered arrivals
  // The second, written by the manager only:
  kReleaseSeq = 8,
  kReleaseClock,
  kPrevAddr = 8,  // the manager's line, two ranks: its arrival before the one in the first (above)
  kPrevEpoch,
  kPrevClock,
  // Two ranks: what the other rank announces (cross), stored by it into this line before
  // an arrival, when it changes. The reader looks at its own line (announced()), and
  // only when it may be sent updates: a look, even there, cost a fifth of a two-rank
  // crossing with nothing to move (docs/PERFORMANCE.md, "A two-rank barrier's flush").
  kAnnouncedHere = 15,
};

// Word w (kArrivalAddr..kArrivalClock) of a rank's slot arrival number seq.
size_t arrival_word(uint64_t seq, size_t w) { return (seq & 1) ? w : w - kArrivalAddr + kArrivalAddr2; }

// Is the exchange above on? Two ranks sharing a page.
bool exchange() { return protocol::nprocs() == 2; }

// Rank 1 of two: has the manager published its arrival at crossing `epoch` of barrier
// `addr` (its last or the one before)? Then its clock there. The seqlock is read whole.
bool manager_arrived(uintptr_t addr, uint64_t epoch, uint64_t *clock) {
  transport::SharedLine *const line = transport::shared_line(kManager);
  const uint64_t seq = line->word[kArrivalSeq].load(std::memory_order_acquire);
  if (seq & 1) return false;
  bool found = false;
  uint64_t at_clock = 0;
  for (const auto &[a, e, c] : {std::tuple{kArrivalAddr, kArrivalEpoch, kArrivalClock},
                                std::tuple{kPrevAddr, kPrevEpoch, kPrevClock}})
    if (!found && line->word[a].load(std::memory_order_relaxed) == addr &&
        line->word[e].load(std::memory_order_relaxed) == epoch) {
      found = true;
      at_clock = line->word[c].load(std::memory_order_relaxed);
    }
  std::atomic_thread_fence(std::memory_order_acquire);
  if (!found || line->word[kArrivalSeq].load(std::memory_order_relaxed) != seq) return false;
  *clock = at_clock;
  return true;
}

// Records in this rank's line the CPU it runs on (stored only when it changes: peers
// read it at every crossing).
void note_cpu(transport::SharedLine *line) {
  const auto cpu = static_cast<uint64_t>(sched_getcpu() + 1);
  if (line->word[kCpu].load(std::memory_order_relaxed) != cpu)
    line->word[kCpu].store(cpu, std::memory_order_relaxed);
}

// Did a rank this one may be waiting for last cross on this CPU? Then it runs only once
// this thread gives the core up, and spinning for it would only delay it. (A crosser
// waits for the manager; the manager for everyone.)
bool peer_on_my_cpu() {
  const auto cpu = static_cast<uint64_t>(sched_getcpu() + 1);
  for (int r = 0; r < protocol::nprocs(); ++r) {
    if (r == protocol::rank() || (protocol::rank() != kManager && r != kManager)) continue;
    transport::SharedLine *line = transport::shared_line(r);
    if (line && line->word[kCpu].load(std::memory_order_relaxed) == cpu) return true;
  }
  return false;
}

// A rank's bindings of one barrier, told apart by their count, bytes and a hash of the
// ranges: the start-up calls must be the same on every rank (audit 28: a rank that
// skipped mw_barrier_bind neither sent its writes with the crossings nor received the
// others', silently).
struct Digest {
  uint64_t barrier, ranges, bytes, hash;
  bool operator==(const Digest &) const = default;
};

Digest digest_of(uintptr_t addr, const Bindings &b) {
  Digest d{addr, 0, 0, 1469598103934665603ull};
  for (const Range &r : b.ranges()) {
    d.ranges++;
    d.bytes += r.len;
    for (uint64_t v : {static_cast<uint64_t>(r.addr), static_cast<uint64_t>(r.len)}) d.hash = (d.hash ^ v) * 1099511628211ull;
  }
  return d;
}

struct Barrier {
  uintptr_t addr = 0;
  Bindings bindings;
  uint64_t crossings = 0;                // by this rank
  bool waiting = false;                  // this rank waits for a release
  std::atomic<uint64_t> released{0};     // the last crossing released here
  // The slot release this rank waits for (its kReleaseSeq value), 0 if none.
  uint64_t slot_release = 0;
  // At the manager: the crossing being gathered.
  uint64_t open = 1;
  int arrived = 0;
  bool final = false;
  std::vector<char> seen;
  std::vector<char> by_slot;  // the rank waits on its line for a release with no runs
  // Completing the open crossing now would send no message: every arrival so far had no
  // runs and, but the manager's, waits on its line. Then a thread that is not running
  // as a handler may complete it (take_slot_arrivals(false)).
  bool quiet = true;
  // At the manager, two ranks: its arrival went into its line, and rank 1's came through
  // its own; the largest clock of the two (the crossing's clock is one more).
  bool published = false, peer_by_line = false;
  uint64_t exchange_clock = 0;
  std::vector<std::pair<int, std::vector<Run>>> arrivals;
  // At the manager, per rank: the runs of an arrival too big for one message, from its
  // messages before the last (BARRIER_DATA), which on_arrive joins to the last one's.
  std::vector<std::vector<Run>> parts;
  // At the manager: each rank's bindings of this barrier at its first crossing
  // (BARRIER_BINDINGS), and its own, once it has crossed (digests: see Digest).
  std::vector<std::optional<Digest>> first_bindings;
  std::optional<Digest> own_bindings;
};

// Never destroyed (as all module state the service thread touches): a rank that
// exits without mw_finalize runs static destructors while the service thread still
// serves peers.
std::unordered_map<uintptr_t, std::unique_ptr<Barrier>> &g_barriers =
    *new std::unordered_map<uintptr_t, std::unique_ptr<Barrier>>;  // under protocol::mu()
std::vector<int> &g_finalized = *new std::vector<int>;  // ranks that have reached mw_finalize

// Slot state, under protocol::mu(). At a non-manager: its slot arrivals and the slot
// releases it has seen so far, and whether a crossing of this rank uses its line (one
// at a time: a second thread crossing another barrier meanwhile goes by messages). At
// the manager: per rank, the last slot arrival it has taken (read without the mutex to
// see whether there is anything to take) and its slot releases so far.
uint64_t g_arrivals = 0, g_releases_seen = 0;
bool g_slot_busy = false;
// The manager: its line's seqlock count.
uint64_t g_published = 0;
std::atomic<uint64_t> *g_taken = nullptr;
std::vector<uint64_t> &g_released = *new std::vector<uint64_t>;

int me() { return protocol::rank(); }

Barrier &get(uintptr_t addr) {
  auto &slot = g_barriers[addr];
  if (!slot) {
    slot = std::make_unique<Barrier>();
    slot->addr = addr;
    slot->seen.assign(static_cast<size_t>(protocol::nprocs()), 0);
    slot->by_slot.assign(static_cast<size_t>(protocol::nprocs()), 0);
    slot->parts.resize(static_cast<size_t>(protocol::nprocs()));
    slot->first_bindings.resize(static_cast<size_t>(protocol::nprocs()));
  }
  return *slot;
}

const char *call_of(bool final) { return final ? "mw_barrier_final" : "mw_barrier"; }

std::string ranks_that(const Barrier &k, bool arrived) {
  std::string s;
  for (int r = 0; r < protocol::nprocs(); ++r)
    if ((k.seen[static_cast<size_t>(r)] != 0) == arrived) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

// The last crossing of k released at this rank, counting a slot release it has not yet
// taken, or a crossing the manager has arrived at (two ranks: the exchange); its
// application thread may still be asleep when the manager's FINALIZING comes.
uint64_t released(const Barrier &k) {
  if (k.slot_release != 0) {
    transport::SharedLine *line = transport::shared_line(me());
    uint64_t clock;
    if (line && (line->word[kReleaseSeq].load(std::memory_order_acquire) >= k.slot_release ||
                 (exchange() && manager_arrived(k.addr, k.crossings, &clock))))
      return k.crossings;
  }
  return k.released.load(std::memory_order_acquire);
}

// A rank has reached mw_finalize: any barrier it has not crossed can never complete.
void check_finalized(const char *call, const Barrier &k) {
  for (int f : g_finalized) {
    if (me() == kManager && k.arrived > 0 && !k.seen[static_cast<size_t>(f)])
      fatal(call,
            "barrier %s can never complete: rank(s) %s reached it, but rank %d has reached "
            "mw_finalize without crossing it (every rank must cross a barrier as often)",
            protocol::barrier_name(reinterpret_cast<void *>(k.addr)).c_str(), ranks_that(k, true).c_str(), f);
    // Another waiting rank cannot tell a rank that never crossed from one whose release
    // is in flight, except for the manager, which releases before it can finalize.
    if (f == kManager && me() != kManager && k.waiting && released(k) < k.crossings)
      fatal(call,
            "barrier %s can never complete: this rank waits at it, but rank %d has reached "
            "mw_finalize without crossing it (every rank must cross a barrier as often)",
            protocol::barrier_name(reinterpret_cast<void *>(k.addr)).c_str(), f);
  }
}

// The union of the runs of every arrival but rank r's, in address order.
std::vector<Run> lacking(const Barrier &k, int r) {
  std::vector<Run> all;
  for (const auto &[rank, runs] : k.arrivals)
    if (rank != r) all.insert(all.end(), runs.begin(), runs.end());
  std::sort(all.begin(), all.end(), [](const Run &a, const Run &b) { return a.addr < b.addr; });
  std::vector<Run> out;
  for (const Run &x : all) {
    if (!out.empty() && x.addr <= out.back().addr + out.back().len) {
      uintptr_t end = std::max(out.back().addr + out.back().len, x.addr + x.len);
      out.back().len = end - out.back().addr;
    } else {
      out.push_back(x);
    }
  }
  return out;
}

// Releases rank r through its line (see above); the caller rings it after.
uint64_t g_crossed_clock = 0;  // crossed_clock(); under the mutex

void release_by_slot(int r, uint64_t clock) {
  transport::SharedLine *line = transport::shared_line(r);
  line->word[kReleaseClock].store(clock, std::memory_order_relaxed);
  line->word[kReleaseSeq].store(++g_released[static_cast<size_t>(r)], std::memory_order_release);
}

// Two ranks that wrote the same bytes in this phase (each arrival's runs are exactly the
// bytes its rank wrote): reported, for the first such bytes of the crossing.
void find_double_writes(const Barrier &k) {
  struct Written {
    uintptr_t begin, end;
    int rank;
  };
  std::vector<Written> all;
  for (const auto &[rank, runs] : k.arrivals)
    for (const Run &r : runs) all.push_back({r.addr, r.addr + r.len, rank});
  if (all.size() < 2) return;
  std::sort(all.begin(), all.end(), [](const Written &x, const Written &y) { return x.begin < y.begin; });
  Written reach = all[0];  // the run reaching furthest so far
  for (size_t i = 1; i < all.size(); ++i) {
    const Written &w = all[i];
    if (w.begin < reach.end && w.rank != reach.rank) {
      protocol::double_write({k.addr, k.open, w.begin, std::min(w.end, reach.end) - w.begin,
                              std::min(w.rank, reach.rank), std::max(w.rank, reach.rank)});
      return;
    }
    if (w.end > reach.end) reach = w;
  }
}

void complete(Barrier &k) {
  const uint64_t epoch = k.open;
  find_double_writes(k);
  if (!k.final) {
    ReleaseExtra ex{epoch};
    // One clock for the whole release: every rank leaves the crossing at the same clock,
    // which the checker's race test relies on (check/checker.hpp, "Data races"). After
    // the two-rank exchange, the one rank 1 computes too.
    const bool exchanged = k.published && k.peer_by_line;
    uint64_t clock = 0;
    if (exchanged) {
      clock = k.exchange_clock + 1;
      protocol::observe(clock);
    } else {
      clock = protocol::tick();
    }
    g_crossed_clock = clock;
    bool by_slot = false;
    for (int r = 0; r < protocol::nprocs(); ++r) {
      if (r == kManager) continue;
      std::vector<Run> runs = lacking(k, r);
      if (runs.empty() && k.by_slot[static_cast<size_t>(r)]) {
        // After the exchange rank 1 leaves on the manager's arrival: no release.
        if (!exchanged) {
          release_by_slot(r, clock);
          by_slot = true;
        }
      } else {
        k.by_slot[static_cast<size_t>(r)] = 0;
        updates::send(r, MsgType::kBarrierData, MsgType::kBarrierRelease, k.addr, runs, &ex,
                      sizeof ex, clock);
      }
    }
    // The rings after all the stores: ring_waiter's fence then waits for them together,
    // not for each in turn.
    if (by_slot)
      for (int r = 0; r < protocol::nprocs(); ++r)
        if (k.by_slot[static_cast<size_t>(r)]) transport::ring_waiter(r);
  }
  k.open++;
  k.arrived = 0;
  std::fill(k.seen.begin(), k.seen.end(), 0);
  std::fill(k.by_slot.begin(), k.by_slot.end(), 0);
  k.quiet = true;
  k.published = k.peer_by_line = false;
  k.exchange_clock = 0;
  k.arrivals.clear();
  k.released.store(epoch, std::memory_order_release);  // the manager's own crossing
}

void arrive(Barrier &k, int rank, uint64_t epoch, bool final, std::vector<Run> runs, bool by_slot) {
  const char *call = call_of(final);
  if (epoch != k.open)
    fatal(call, "barrier %s: rank %d arrived for its crossing %llu while crossing %llu is open",
          protocol::barrier_name(reinterpret_cast<void *>(k.addr)).c_str(), rank, static_cast<unsigned long long>(epoch),
          static_cast<unsigned long long>(k.open));
  if (k.arrived == 0) {
    k.final = final;
  } else if (k.final != final) {
    // Named by the call this rank (the manager) made, where it has arrived: the message
    // is printed with this rank's number.
    const char *mine = rank == kManager ? call_of(final) : k.seen[kManager] ? call_of(k.final) : call;
    fatal(mine,
          "barrier %s: rank %d crossed it with %s while rank(s) %s crossed it with %s (every "
          "rank must call the same one)",
          protocol::barrier_name(reinterpret_cast<void *>(k.addr)).c_str(), rank, call_of(final), ranks_that(k, true).c_str(),
          call_of(k.final));
  }
  k.seen[static_cast<size_t>(rank)] = 1;
  k.by_slot[static_cast<size_t>(rank)] = by_slot;
  if (!runs.empty() || (rank != kManager && !by_slot)) k.quiet = false;
  k.arrived++;
  k.arrivals.emplace_back(rank, std::move(runs));
  check_finalized(call, k);
  if (k.arrived == protocol::nprocs()) complete(k);
}

// At the manager: takes every slot arrival not taken yet into arrive(), as on_arrive
// takes a message. Wherever the manager may have to notice one: its own arrival, its
// wait for a release (the predicate), a rank's FINALIZING, its own mw_finalize.
// may_send: the caller runs as a handler (or holds the progress role), so that
// completing a crossing may send its releases; otherwise only arrivals at quiet
// crossings are taken, and the others wait for a caller that may.
void take_slot_arrivals(bool may_send) {
  if (g_taken == nullptr) return;
  for (int r = 0; r < protocol::nprocs(); ++r) {
    if (r == kManager) continue;
    transport::SharedLine *line = transport::shared_line(r);
    if (!line) return;
    const uint64_t last = line->word[kArrivalSeq].load(std::memory_order_acquire);
    for (uint64_t seq = g_taken[r].load(std::memory_order_relaxed) + 1; seq <= last; ++seq) {
      const uintptr_t addr = line->word[arrival_word(seq, kArrivalAddr)].load(std::memory_order_relaxed);
      const uint64_t epoch = line->word[arrival_word(seq, kArrivalEpoch)].load(std::memory_order_relaxed);
      Barrier &k = get(addr);
      // A later crossing than the one open: the rank's arrivals at the crossings before it
      // went as messages (mw_barrier_final, which does not wait) that have not all come.
      // It stays in the line, the rank waiting, until they have.
      if (epoch > k.open || (!may_send && !k.quiet)) break;
      g_taken[r].store(seq, std::memory_order_relaxed);
      const uint64_t clock = line->word[arrival_word(seq, kArrivalClock)].load(std::memory_order_relaxed);
      protocol::observe(clock);
      if (exchange()) {
        k.peer_by_line = true;
        k.exchange_clock = std::max(k.exchange_clock, clock);
        transport::shared_line(kManager)->word[kTaken].store(seq, std::memory_order_release);
      }
      if (k.seen[static_cast<size_t>(r)])
        fatal("mw_barrier", "barrier %s: rank %d arrived twice at crossing %llu", protocol::barrier_name(reinterpret_cast<void *>(addr)).c_str(),
              r, static_cast<unsigned long long>(epoch));
      arrive(k, r, epoch, false, {}, true);
    }
  }
}

// Is there a slot arrival the manager has not taken? Loads only: for its wait's predicate.
bool slot_arrivals_waiting() {
  if (g_taken == nullptr) return false;
  for (int r = 0; r < protocol::nprocs(); ++r) {
    if (r == kManager) continue;
    transport::SharedLine *line = transport::shared_line(r);
    if (!line) return false;
    if (line->word[kArrivalSeq].load(std::memory_order_acquire) != g_taken[r].load(std::memory_order_relaxed))
      return true;
  }
  return false;
}

void on_arrive(const Header &h, Bytes head) {
  updates::Parsed p = updates::parse(h, head, sizeof(ArriveExtra));
  ArriveExtra ex;
  std::memcpy(&ex, p.extra.data(), sizeof ex);
  std::lock_guard<std::mutex> g(protocol::mu());
  protocol::observe(h.clock);
  if (me() != kManager)
    protocol::malformed(h, "this rank manages no barrier", protocol::barrier_object(p.object));
  // Rank 1 of two may send this having left its last crossing before the manager took
  // its line's arrival (the exchange): that arrival comes first.
  take_slot_arrivals(true);
  Barrier &k = get(p.object);
  // The runs of the arrival's earlier messages first (on_data), then its last one's.
  std::vector<Run> runs = std::move(k.parts[static_cast<size_t>(h.sender)]);
  k.parts[static_cast<size_t>(h.sender)].clear();
  for (const updates::RunDesc &d : p.runs) runs.push_back({d.addr, d.len, 0});
  if (k.seen[static_cast<size_t>(h.sender)])
    protocol::malformed(h, "it arrived twice", protocol::barrier_object(p.object));
  arrive(k, h.sender, ex.epoch, ex.final != 0, std::move(runs),
         (ex.flags & kReleaseBySlot) != 0 && transport::shared_line(h.sender) != nullptr);
}

// Updates in place (the placer put them there): this rank's own marks on those bytes
// are superseded. At the manager these are the first messages of an arrival too big for
// one (updates::send splits it): their runs are kept for the arrival's last message,
// since the manager passes every arrival's runs on to the other ranks (a rank's
// messages arrive in order, so they all come before it). Elsewhere they are the first
// messages of the release this rank waits for; at any other time they would have
// overwritten data the rank may be using, unannounced.
void on_data(const Header &h, Bytes head) {
  updates::Parsed p = updates::parse(h, head, 0);
  for (const updates::RunDesc &d : p.runs) dirty::clear(reinterpret_cast<void *>(d.addr), d.len);
  std::lock_guard<std::mutex> g(protocol::mu());
  if (me() != kManager) {
    if (h.sender != kManager || !get(p.object).waiting)
      protocol::malformed(h, "data of a crossing this rank is not in", protocol::barrier_object(p.object));
    return;
  }
  std::vector<Run> &parts = get(p.object).parts[static_cast<size_t>(h.sender)];
  for (const updates::RunDesc &d : p.runs) parts.push_back({d.addr, d.len, 0});
}

void on_release(const Header &h, Bytes head) {
  updates::Parsed p = updates::parse(h, head, sizeof(ReleaseExtra));
  ReleaseExtra ex;
  std::memcpy(&ex, p.extra.data(), sizeof ex);
  for (const updates::RunDesc &d : p.runs) dirty::clear(reinterpret_cast<void *>(d.addr), d.len);
  std::lock_guard<std::mutex> g(protocol::mu());
  protocol::observe(h.clock);
  g_crossed_clock = h.clock;
  Barrier &k = get(p.object);
  if (ex.epoch != k.crossings || !k.waiting)
    protocol::malformed(h, "a crossing this rank is not in", protocol::barrier_object(p.object));
  k.released.store(ex.epoch, std::memory_order_release);
}

// At the manager, under the mutex: rank r's bindings at its first crossing against its
// own at its own first crossing (each rank's, taken when it crossed, whichever comes
// first); a difference stops the job.
void compare_bindings(const Barrier &k, int r) {
  const std::optional<Digest> &theirs = k.first_bindings[static_cast<size_t>(r)];
  if (!k.own_bindings || !theirs || *theirs == *k.own_bindings) return;
  const Digest &mine = *k.own_bindings;
  fatal("mw_barrier",
        "barrier %s: the ranks bound different data to it (mw_barrier_bind must be the same "
        "calls on every rank, before its first crossing): rank %d bound %llu range%s of %llu "
        "bytes, this rank %llu range%s of %llu bytes%s",
        protocol::barrier_name(reinterpret_cast<void *>(k.addr)).c_str(), r,
        static_cast<unsigned long long>(theirs->ranges), theirs->ranges == 1 ? "" : "s",
        static_cast<unsigned long long>(theirs->bytes), static_cast<unsigned long long>(mine.ranges),
        mine.ranges == 1 ? "" : "s", static_cast<unsigned long long>(mine.bytes),
        theirs->ranges == mine.ranges && theirs->bytes == mine.bytes ? ", at other addresses" : "");
}

void on_bindings_digest(const Header &h, Bytes payload) {
  const Digest d = protocol::read_body<Digest>(h, payload);
  if (!window::contains(reinterpret_cast<void *>(d.barrier), sizeof(mw_barrier_t)))
    protocol::malformed(h, "a barrier outside the shared window");
  if (me() != kManager)
    protocol::malformed(h, "bindings sent to a rank that is not the barriers' manager", protocol::barrier_object(d.barrier));
  std::lock_guard<std::mutex> g(protocol::mu());
  Barrier &k = get(d.barrier);
  std::optional<Digest> &slot = k.first_bindings[static_cast<size_t>(h.sender)];
  if (slot) protocol::malformed(h, "a first crossing's bindings sent twice", protocol::barrier_object(d.barrier));
  slot = d;
  compare_bindings(k, h.sender);
}

void on_finalizing(const Header &h, Bytes) {
  std::lock_guard<std::mutex> g(protocol::mu());
  if (me() == kManager) take_slot_arrivals(true);  // so that the checks see every arrival
  g_finalized.push_back(h.sender);
  for (auto &[addr, k] : g_barriers) check_finalized("mw_barrier", *k);
}

Barrier *record_of(mw_barrier_t *b) {
  std::lock_guard<std::mutex> g(protocol::mu());
  return &get(reinterpret_cast<uintptr_t>(b));
}

}  // namespace

void init() {
  const auto n = static_cast<size_t>(protocol::nprocs());
  g_taken = new std::atomic<uint64_t>[n]{};  // never freed, as the rest of the state
  g_released.assign(n, 0);
  transport::on(MsgType::kBarrierArrive, on_arrive, updates::place);
  transport::on(MsgType::kBarrierData, on_data, updates::place);
  transport::on(MsgType::kBarrierRelease, on_release, updates::place);
  transport::on(MsgType::kFinalizing, on_finalizing);
  transport::on(MsgType::kBarrierBindings, on_bindings_digest);
}

namespace {
void cross_here(mw_barrier_t *b, bool final) {
  const char *call = call_of(final);
  protocol::check_object(call, "barrier", b, sizeof *b);
  // The time blocked, from the first step that may block: a crossing that finds the
  // others there reads no clock (two reads were a sixth of a two-rank crossing).
  std::optional<stats::ScopedWait> blocked;
  auto block = [&blocked, b] {
    if (!blocked) blocked.emplace(stats::Wait::Barrier, kManager, reinterpret_cast<uintptr_t>(b));
  };
  std::optional<waits::Waiting> waiting;  // from the crossing's number on (below)
  transport::SharedLine *const line = transport::shared_line(me());
  const bool manager = me() == kManager;
  Barrier *k = nullptr;
  uint64_t epoch = 0;
  std::vector<Run> runs;
  bool slot = false, arrived = false, by_exchange = false;
  uint64_t arrival_clock = 0, arrival_seq = 0;
  std::optional<Digest> first_digest;
  {
    std::lock_guard<std::mutex> g(protocol::mu());
    k = &get(reinterpret_cast<uintptr_t>(b));
    epoch = ++k->crossings;
    // The first crossing compares the ranks' bindings of the barrier, at the manager.
    if (epoch == 1 && protocol::model() == protocol::Model::kEntry) {
      if (manager) {
        k->own_bindings = digest_of(k->addr, k->bindings);
        for (int r = 0; r < protocol::nprocs(); r++) compare_bindings(*k, r);
      } else {
        first_digest = digest_of(k->addr, k->bindings);
      }
    }
    waiting.emplace(waits::Kind::kBarrier, reinterpret_cast<uintptr_t>(b), kManager,
                    static_cast<uint32_t>(std::min<uint64_t>(epoch, UINT32_MAX)));
    k->waiting = !final || manager;
    if (line) note_cpu(line);
    check_finalized(call, *k);
    // This rank's updates: exactly the bytes it wrote since it last crossed.
    // Under --model=rc/pc bindings ship nothing (the marks are pending updates).
    if (protocol::model() == protocol::Model::kEntry)
      for (const Range &r : k->bindings.ranges())
        dirty::for_each_run(r.addr, r.len, [&](uintptr_t p, size_t n) { runs.push_back({p, n, 0}); });
    for (const Run &r : runs) dirty::clear(reinterpret_cast<void *>(r.addr), r.len);
    if (manager) {
      if (line && exchange() && !final && runs.empty()) {
        // The exchange: rank 1 may leave on this (seqlock: see the words' comment).
        const uint64_t clock = protocol::tick();
        line->word[kArrivalSeq].store(++g_published, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        for (const auto &[from, to] : {std::pair{kArrivalAddr, kPrevAddr}, std::pair{kArrivalEpoch, kPrevEpoch},
                                       std::pair{kArrivalClock, kPrevClock}})
          line->word[to].store(line->word[from].load(std::memory_order_relaxed), std::memory_order_relaxed);
        line->word[kArrivalAddr].store(k->addr, std::memory_order_relaxed);
        line->word[kArrivalEpoch].store(epoch, std::memory_order_relaxed);
        line->word[kArrivalClock].store(clock, std::memory_order_relaxed);
        line->word[kArrivalSeq].store(++g_published, std::memory_order_release);
        transport::ring_waiter(1);
        k->published = true;
        k->exchange_clock = std::max(k->exchange_clock, clock);
      }
      // An arrival that cannot make the crossing send anything needs no handler's
      // context (below): the usual one at a barrier with nothing bound.
      if (runs.empty() && k->quiet) {
        arrive(*k, me(), epoch, final, {}, false);
        take_slot_arrivals(false);  // ranks that arrived before the manager
        arrived = true;
      }
    } else {
      // Through the line if it may (see above): a release to wait for, and no other
      // crossing of this rank using the line. With no runs the arrival goes there too.
      // (An arrival not taken yet can be left only by a final crossing, which goes by
      // message: the manager takes the line's arrival before it, in on_arrive.)
      slot = line != nullptr && !final && !g_slot_busy;
      if (slot) {
        g_slot_busy = true;
        k->slot_release = g_releases_seen + 1;
      }
      if (slot && runs.empty()) {
        const uint64_t seq = g_arrivals + 1;
        line->word[arrival_word(seq, kArrivalAddr)].store(k->addr, std::memory_order_relaxed);
        line->word[arrival_word(seq, kArrivalEpoch)].store(epoch, std::memory_order_relaxed);
        arrival_clock = protocol::tick();
        line->word[arrival_word(seq, kArrivalClock)].store(arrival_clock, std::memory_order_relaxed);
        line->word[kArrivalSeq].store(g_arrivals = seq, std::memory_order_release);
        arrival_seq = seq;
        transport::ring_waiter(kManager);
        arrived = true;
        by_exchange = exchange();
      }
    }
  }
  if (first_digest)  // checked once it lands, whichever way the arrival goes
    transport::as_handler([&] { protocol::send_body(kManager, MsgType::kBarrierBindings, *first_digest); });
  // A step that may send runs as a handler, so that its messages keep their order with
  // the handlers' and a send never waits for a thread that waits for the mutex
  // (transport::as_handler).
  if (!arrived) {
    block();  // a send may wait for the role or for room
    transport::as_handler([&] {
      std::lock_guard<std::mutex> g(protocol::mu());
      if (manager) {
        arrive(*k, me(), epoch, final, std::move(runs), false);
        take_slot_arrivals(true);  // ranks that arrived before the manager
        return;
      }
      ArriveExtra ex{epoch, final ? 1u : 0u, slot ? kReleaseBySlot : 0u};
      updates::send(kManager, MsgType::kBarrierData, MsgType::kBarrierArrive, k->addr, runs, &ex,
                    sizeof ex, protocol::tick());
    });
  }
  stats::barrier_crossed();
  if (!k->waiting) return;
  // The wait. With a shared page the answer is most likely a store to a line (a slot
  // arrival at the manager, a slot release elsewhere): transport::wait_shared looks at
  // the words a few times first, then progresses polling the CQ only when a message has
  // come, and yields at once while a peer it waits for shares this CPU.
  if (manager) {
    // Slot arrivals are taken here, as the messages' handlers take theirs; only where a
    // handler could send (in the progress role) may taking them complete a crossing
    // that sends.
    auto taken = [k, epoch] {
      if (k->released.load(std::memory_order_acquire) >= epoch) return true;
      if (!slot_arrivals_waiting()) return false;
      std::lock_guard<std::mutex> g(protocol::mu());
      take_slot_arrivals(transport::in_runtime_context());
      return k->released.load(std::memory_order_acquire) >= epoch;
    };
    if (!taken()) {
      block();
      if (line) transport::wait_shared(taken, peer_on_my_cpu());
      else transport::progress_until([&taken] { return taken(); });
    }
  } else {
    const uint64_t want = k->slot_release;  // set and cleared by this thread only
    // The exchange: the manager's arrival at this crossing.
    uint64_t their_clock = 0;
    auto arrived_there = [k, epoch, arrival_seq, &their_clock] {
      // This rank's next arrival goes where its arrival before this one was: leaving, it
      // needs that one taken (it is, by the time the manager arrives here, in any program
      // whose ranks cross barriers in one order). kTaken is stored before the arrival.
      return manager_arrived(k->addr, epoch, &their_clock) &&
             transport::shared_line(kManager)->word[kTaken].load(std::memory_order_relaxed) + 1 >= arrival_seq;
    };
    auto done = [k, epoch, line, want, by_exchange, &arrived_there] {
      return k->released.load(std::memory_order_acquire) >= epoch ||
             (want != 0 && line->word[kReleaseSeq].load(std::memory_order_acquire) >= want) ||
             (by_exchange && arrived_there());
    };
    if (!done()) {
      block();
      if (want != 0) transport::wait_shared(done, peer_on_my_cpu());
      else transport::progress_until([&done] { return done(); });
    }
    if (their_clock != 0) {
      // Released by the exchange (no release comes), at the clock the manager leaves at.
      std::lock_guard<std::mutex> g(protocol::mu());
      g_crossed_clock = std::max(their_clock, arrival_clock) + 1;
      protocol::observe(g_crossed_clock);
      k->released.store(epoch, std::memory_order_release);
      k->slot_release = 0;
      g_slot_busy = false;
      k->waiting = false;
      return;
    }
  }
  std::lock_guard<std::mutex> g(protocol::mu());
  if (k->slot_release != 0) {
    if (line->word[kReleaseSeq].load(std::memory_order_acquire) >= k->slot_release) {
      g_crossed_clock = line->word[kReleaseClock].load(std::memory_order_relaxed);
      protocol::observe(g_crossed_clock);
      g_releases_seen = k->slot_release;
      k->released.store(epoch, std::memory_order_release);
    }
    k->slot_release = 0;
    g_slot_busy = false;
  }
  k->waiting = false;
}

}  // namespace

void cross(mw_barrier_t *b, bool final, uint64_t announce) {
  // Before the arrival, which every way it travels (a store to a line, a message) orders
  // this store before the other rank's look after its crossing. Unchanged, it was stored
  // before an arrival the other rank has seen already. (Barriers are crossed by the
  // application thread alone.)
  static uint64_t last_announced = 0;
  if (announce != last_announced && exchange()) {
    if (transport::SharedLine *theirs = transport::shared_line(1 - me())) {
      theirs->word[kAnnouncedHere].store(announce, std::memory_order_seq_cst);
      last_announced = announce;
    }
  }
  cross_here(b, final);
}

uint64_t announced() {
  transport::SharedLine *const mine = exchange() ? transport::shared_line(me()) : nullptr;
  return mine ? mine->word[kAnnouncedHere].load(std::memory_order_acquire) : 0;
}

namespace {
// The barrier other than `except` bound to bytes of [a, b), if any. Under the mutex.
Guard guard_in(uintptr_t a, uintptr_t b, uintptr_t except) {
  for (const auto &[addr, k] : g_barriers)
    if (addr != except)
      if (const Range *r = k->bindings.overlapping(a, b)) return {addr, *r};
  return {};
}
}  // namespace

uint64_t crossed_clock() {
  std::lock_guard<std::mutex> g(protocol::mu());
  return g_crossed_clock;
}

void bind(mw_barrier_t *b, const void *addr, size_t len) {
  protocol::check_object("mw_barrier_bind", "barrier", b, sizeof *b);
  protocol::check_range("mw_barrier_bind", "barrier", b, addr, len);
  Barrier *k = record_of(b);
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  if (const Guard other = locks::guard_of(a, a + len); other.object)
    overlap_error("mw_barrier_bind", "barrier", protocol::barrier_name(b), a, len, protocol::data_name(a, len),
                  "lock",
                  protocol::lock_name(reinterpret_cast<void *>(other.object)), other.range);
  std::lock_guard<std::mutex> g(protocol::mu());
  if (const Guard other = guard_in(a, a + len, k->addr); other.object)
    overlap_error("mw_barrier_bind", "barrier", protocol::barrier_name(b), a, len, protocol::data_name(a, len),
                  "barrier",
                  protocol::barrier_name(reinterpret_cast<void *>(other.object)), other.range);
  k->bindings.add(a, len);
  protocol::bindings_changed();
}

Guard guard_of(uintptr_t a, uintptr_t b) {
  std::lock_guard<std::mutex> g(protocol::mu());
  return guard_in(a, b, 0);
}

void for_each_binding(const std::function<void(uintptr_t, const Range &)> &f) {
  std::lock_guard<std::mutex> g(protocol::mu());
  for (const auto &[addr, k] : g_barriers)
    for (const Range &r : k->bindings.ranges()) f(addr, r);
}

Bindings bound_in(uintptr_t a, uintptr_t b) {
  std::lock_guard<std::mutex> g(protocol::mu());
  Bindings out;
  for (const auto &[addr, k] : g_barriers)
    for (const Range &r : k->bindings.ranges())
      if (r.addr < b && r.end() > a) out.add(std::max(r.addr, a), std::min(r.end(), b) - std::max(r.addr, a));
  return out;
}

std::vector<Run> marked_runs() {
  std::vector<Run> runs;
  if (protocol::model() != protocol::Model::kEntry) return runs;
  std::lock_guard<std::mutex> g(protocol::mu());
  for (const auto &[addr, k] : g_barriers)
    for (const Range &r : k->bindings.ranges())
      dirty::for_each_run(r.addr, r.len, [&](uintptr_t p, size_t n) { runs.push_back({p, n, 0}); });
  return runs;
}

void finalize() {
  if (protocol::nprocs() == 1) return;
  transport::as_handler([] {
    std::lock_guard<std::mutex> g(protocol::mu());
    if (me() == kManager) take_slot_arrivals(true);  // so that the check below sees them
    for (auto &[addr, k] : g_barriers)
      if (me() == kManager && k->arrived > 0 && !k->seen[kManager])
        fatal("mw_finalize",
              "barrier %s was reached by rank(s) %s, but this rank reached mw_finalize without "
              "crossing it (every rank must cross a barrier as often)",
              protocol::barrier_name(reinterpret_cast<void *>(addr)).c_str(), ranks_that(*k, true).c_str());
    for (int r = 0; r < protocol::nprocs(); ++r)
      if (r != me()) transport::send(r, MsgType::kFinalizing, nullptr, 0, protocol::tick());
  });
}

}  // namespace mw::barriers
