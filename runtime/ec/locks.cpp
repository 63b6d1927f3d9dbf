#include "core/waits.hpp"
#include "ec/locks.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/bindings.hpp"
#include "memory/dirty.hpp"
#include "core/error.hpp"
#include "memory/heap.hpp"
#include "ec/barriers.hpp"
#include "ec/protocol.hpp"
#include "core/stats.hpp"
#include "core/trace.hpp"
#include "ec/timestamps.hpp"
#include "transport/transport.hpp"
#include "ec/updates.hpp"
#include "memory/window.hpp"

namespace mw::locks {
namespace {

using transport::Header;
using transport::MsgType;
using Bytes = std::span<const std::byte>;

constexpr int kNone = -1;  // Lock::held when this rank does not hold the lock
constexpr uint32_t kFirstLook = 32, kMaxLook = 1u << 16;  // see time_to_look

// Tenures. The manager numbers the exclusive requests as it routes them: the n-th opens
// tenure n, its requester's turn to own the lock (tenure 0 is the manager's, where the
// lock starts). It stamps every request with the tenure that serves it, the latest one
// opened, and sends it to that tenure's rank, the probable owner. A rank serves a request
// in the tenure it is stamped with and in no other: in `queue` if it owns that tenure
// now, else in `next`, for the tenure it waits for (a rank has at most one request out
// per lock, so at most one tenure to come). The manager's messages to a rank arrive in
// order, so all of tenure n's requests reach its rank before the exclusive request that
// closes it (the one opening n+1, last in the queue): when the lock moves on, the owner's
// queue is empty and no request travels with the lock. The owner's own requests keep to
// this (acquire): it serves itself within its tenure only while its queue is empty, and
// otherwise asks the manager like any rank.
//
// Why the stamps. An owner that has asked for the lock again (through the manager,
// behind others) receives requests for its next tenure while it still owns this one.
// Unstamped, they were served in the current tenure or passed on with the lock, outside
// the manager's order, and two waiting ranks could each end up holding the other's
// request: a hang (the case that showed it is in the commit that brought the stamps).
using wire::GrantExtra;
using wire::LockOnly;
using wire::Request;

// The cached path. A rank re-acquiring a lock it may take with no message (the owner,
// nobody waiting; or a reader whose copy is valid) should pay no more than an atomic
// operation: the protocol mutex alone, taken at acquire and at release, doubled the cost
// of a pair. So the hold lives in one atomic word with two "cached" bits, set while the
// record's state lets this rank take the lock in that mode locally. The application
// thread takes and drops a hold with a compare-and-swap on the word, if the bit is there.
// Everything else about the lock changes under the protocol mutex, and first freezes the
// word (Frozen, below): one atomic AND clears both bits, so from then on the hold
// changes only under the mutex, and what the code reads of it stays true. A hold taken
// by the cached path just before the freeze is seen by it, as a hold taken the slow way
// would be. Leaving, it sets the bits again from the record's state.
constexpr uint32_t kHoldMask = 3, kCachedX = 4, kCachedS = 8;
uint32_t hold_bits(int mode) { return mode == kNone ? 0 : static_cast<uint32_t>(mode) + 1; }
int hold_of(uint32_t w) { return (w & kHoldMask) ? static_cast<int>(w & kHoldMask) - 1 : kNone; }
uint32_t cached_bit(int mode) { return mode == MW_EXCLUSIVE ? kCachedX : kCachedS; }

struct Lock {
  uintptr_t addr = 0;
  int manager = 0;
  int probable_owner = 0;      // at the manager: the rank of the latest tenure
  uint64_t tenures = 0;        // at the manager: the latest tenure opened
  bool owner = false;          // this rank owns the lock (holds it or may grant it)
  uint64_t tenure = 0;         // ... in this tenure
  // This rank's hold and the cached path (see "The cached path"): the hold in the low
  // bits (none, or 1 + mode), and kCachedX/kCachedS while the lock may be taken in that
  // mode with no message and no mutex.
  std::atomic<uint32_t> word{0};
  std::atomic<bool> ever_held{false};  // past the start-up pattern (mw_bind without holding)
  std::vector<int> readers;    // at the owner: ranks holding a non-exclusive copy
  // Vectors, not deques: a rank has at most one request out per lock, so these hold
  // fewer than nprocs, and an empty deque takes 576 bytes of heap. Every lock a program
  // uses has a record at each rank that meets it (WATER-NSQUARED: 512), and fresh heap
  // pages cost tens of microseconds each at first use here (docs/PERFORMANCE.md).
  std::vector<Request> queue;  // at the owner: the requests its tenure serves, in order
  std::vector<Request> next;   // the requests of the tenure this rank waits for
  int acks_pending = 0;        // at the owner: revokes sent and not yet answered
  bool read_valid = false;     // a non-exclusive copy to re-acquire with no message
  int revoker = kNone;         // the owner to answer at release, if a revoke came
  bool waiting = false;        // this rank's request is out
  int wanted = kNone;          // ... in this mode
  uint32_t cached_run = 0;     // cached acquires since the last look (see time_to_look)
  uint32_t look_after = kFirstLook;  // ... and how many to make before the next
  std::atomic<bool> granted{false};
  bool ahead = false;          // the request out was asked ahead (see "Asking ahead")
  bool asked_back = false;     // ... or asked back (see "Asking back")
  std::atomic<bool> unused_ahead{false};  // owned from asking ahead or back, not held since
  // Asking back: this rank has granted the lock exclusively and not acquired it since;
  // how many of its requests in a row came after such a grant (at most 2).
  bool gave_away = false;
  uint8_t bounces = 0;
  uint64_t t_seen = 0;         // Lamport time this rank last saw the lock
  Bindings bindings;
  // Bindings changed by an exclusive holder count up from 1 and travel with the lock;
  // start-up bindings (made by every rank alike, before acquiring) are version 0 and
  // stay where they were made, so a request served before the owner has made its own
  // start-up calls does not hand the acquirer an empty set.
  uint64_t bind_version = 0;
  // Start-up bindings differ between ranks: the owner's, sent with its grant for this
  // rank to name the first difference (see "Start-up bindings compared").
  std::vector<Range> theirs;
  int theirs_from = kNone;

  // This rank's hold: kNone, MW_EXCLUSIVE or MW_NONEXCLUSIVE. Under the mutex, frozen.
  int held() const { return hold_of(word.load(std::memory_order_acquire)); }
  void set_held(int mode) {
    word.store((word.load(std::memory_order_relaxed) & ~kHoldMask) | hold_bits(mode), std::memory_order_release);
  }
  // Can this rank take the lock in `mode` with no message?
  bool local(int mode) const {
    if (revoker != kNone) return false;  // a reader answering a revoke at its release
    if (mode == MW_EXCLUSIVE) return owner && readers.empty() && queue.empty() && acks_pending == 0;
    return (owner && queue.empty() && acks_pending == 0) || (!owner && read_valid);
  }
};

// Under the mutex, for as long as the code reads or changes a lock's record (see "The
// cached path").
class Frozen {
 public:
  explicit Frozen(Lock &k) : k_(k) { k_.word.fetch_and(kHoldMask, std::memory_order_acq_rel); }
  ~Frozen() {
    const uint32_t bits = (k_.local(MW_EXCLUSIVE) ? kCachedX : 0) | (k_.local(MW_NONEXCLUSIVE) ? kCachedS : 0);
    k_.word.store(k_.word.load(std::memory_order_relaxed) | bits, std::memory_order_release);
  }
  Frozen(const Frozen &) = delete;
  Frozen &operator=(const Frozen &) = delete;

 private:
  Lock &k_;
};

// Never destroyed (as all module state the service thread touches): a rank that
// exits without mw_finalize runs static destructors while the service thread still
// serves peers.
std::unordered_map<uintptr_t, std::unique_ptr<Lock>> &g_locks =
    *new std::unordered_map<uintptr_t, std::unique_ptr<Lock>>;  // under protocol::mu()

int me() { return protocol::rank(); }

Lock &get(uintptr_t addr) {
  auto &slot = g_locks[addr];
  if (!slot) {
    slot = std::make_unique<Lock>();
    slot->addr = addr;
    slot->manager = manager_of(addr);
    slot->probable_owner = slot->manager;
    slot->owner = slot->manager == me();  // a lock starts at its manager, free
  }
  return *slot;
}

// The lock's record, found for a cached re-acquire without a table lookup: a small
// direct-mapped cache of records by address, read without locks (a slot holds a record
// pointer, and the record says which lock it is). The lock object's own bytes are never
// touched: its page may hold release-consistent data this rank has no copy of. The
// object is checked (in shared memory) when its record enters the cache: an address
// once found good stays so (shared memory is never unmapped; a lock in a block freed
// since is the program's error, as for any freed object).
constexpr size_t kRecordCache = 1024;
std::atomic<Lock *> g_record_cache[kRecordCache];

Lock *record_of(const char *call, mw_lock_t *l) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(l);
  std::atomic<Lock *> &slot = g_record_cache[(addr >> 4) % kRecordCache];
  Lock *k = slot.load(std::memory_order_acquire);
  if (k && k->addr == addr) return k;
  protocol::check_object(call, "lock", l, sizeof *l);
  std::lock_guard<std::mutex> g(protocol::mu());
  k = &get(addr);
  slot.store(k, std::memory_order_release);
  return k;
}

const char *mode_name(int mode) {
  return mode == MW_EXCLUSIVE ? "exclusive" : "non-exclusive";
}

size_t line_for(uintptr_t addr) {
  size_t line = heap::line_of(reinterpret_cast<const void *>(addr));
  return line ? line : heap::kDefaultLine;
}

// A broken invariant of this file's own state: a bug here, not a peer's fault.
[[noreturn]] void broken(const Lock &k, const char *what) {
  fatal("mw_acquire", "lock %s: internal error in the lock protocol: %s", protocol::lock_name(reinterpret_cast<void *>(k.addr)).c_str(),
        what);
}

// This rank now owns tenure t (granted, or served its own request that opened it): the
// requests it kept for t are its queue.
void open_tenure(Lock &k, uint64_t t) {
  if (!k.queue.empty()) broken(k, "requests left over from the previous tenure");
  k.owner = true;
  k.tenure = t;
  k.queue.swap(k.next);
}

// Asking ahead (counts under the mutex): locks granted here ahead of an acquire, and those
// of them a peer took back before this rank used them. Asking back: the requests asked
// back, and those wasted so.
uint64_t g_ahead_granted = 0, g_ahead_wasted = 0;
uint64_t g_back_asked = 0, g_back_wasted = 0;

void wake(Lock &k, int mode) {
  k.set_held(mode);
  k.ever_held.store(true, std::memory_order_relaxed);
  k.waiting = false;
  k.granted.store(true, std::memory_order_release);
}


// Start-up bindings compared. Start-up bindings (version 0) stay where they were made,
// so each rank must make the same ones: a rank that bound other ranges to a lock would
// be sent the wrong data, silently. Every request of a rank whose bindings of the lock
// are still version 0 carries a digest of them; the granting owner, if its own are
// version 0 too, compares, and when they differ sends its ranges (LOCK_BINDINGS marked
// kCompareOnly) ahead of the grant, so that the acquirer stops, before its acquire
// returns, naming the first difference. An owner that has bound nothing to the lock
// compares only once it has held the lock itself: before, it may not have reached its
// start-up calls (a barrier before them is no proof: mm_ec crosses one first); after,
// it has made them all, none for this lock (a program that binds on some ranks only,
// `if (rank == 1) mw_bind(...)`). Nor does an owner compare while it is still making
// its calls (binding row by row while a rank that has finished asks for the lock): it
// compares only after its application has acquired or crossed a barrier since its
// last start-up bind, and the acquirer's own later requests are compared then.
constexpr uint64_t kCompareOnly = ~0ull;
std::atomic<bool> g_start_up_binding{false};

uint64_t digest(const Bindings &b) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const Range &r : b.ranges())
    for (uint64_t w : {static_cast<uint64_t>(r.addr), static_cast<uint64_t>(r.len)})
      for (int i = 0; i < 8; i++) h = (h ^ ((w >> (8 * i)) & 0xff)) * 1099511628211ull;
  return h | 1;  // never 0, which means "not compared"
}

std::string describe(const Range &r) {
  return protocol::data_name(r.addr, r.len) + " [" + std::to_string(r.len) + " bytes]";
}

// Called with the owner's ranges in k.theirs: stops naming the first difference.
[[noreturn]] void startup_mismatch(const Lock &k) {
  const std::vector<Range> &mine = k.bindings.ranges(), &theirs = k.theirs;
  size_t i = 0;
  while (i < mine.size() && i < theirs.size() && mine[i].addr == theirs[i].addr && mine[i].len == theirs[i].len) ++i;
  std::string diff;
  if (i < mine.size() && i < theirs.size())
    diff = "this rank bound " + describe(mine[i]) + " where rank " + std::to_string(k.theirs_from) +
           " bound " + describe(theirs[i]);
  else if (i < mine.size())
    diff = "this rank bound " + describe(mine[i]) + ", which rank " + std::to_string(k.theirs_from) + " did not";
  else
    diff = "rank " + std::to_string(k.theirs_from) + " bound " + describe(theirs[i]) + ", which this rank did not";
  fatal("mw_acquire",
        "lock %s: the ranks made different start-up bindings (mw_bind before any rank holds the "
        "lock must be the same call on every rank): %s",
        protocol::lock_name(reinterpret_cast<void *>(k.addr)).c_str(), diff.c_str());
}

// At the manager: stamps r with the tenure that serves it (and, exclusive, the tenure it
// opens, its requester's from now on); returns the rank it goes to, that tenure's.
int stamp(Lock &k, Request &r) {
  const int target = k.probable_owner;
  r.tenure = k.tenures;
  r.opens = 0;
  if (r.mode == MW_EXCLUSIVE) {
    r.opens = ++k.tenures;
    k.probable_owner = r.rank;
  }
  return target;
}
void route(Lock &k, Request r);

// Asking back. Two ranks that take one lock by turns (a counter they increment in strict
// alternation, a flag one sets and the other clears) each ask for it again as soon as
// they have handed it over: the request follows the grant by one release and one
// acquire, and the receiver finds it only at a look at the transport after its own
// release, one completion-queue read more on every hand-over (docs/PERFORMANCE.md, "The
// lock hand-over, step by step"). A rank whose last two requests for a lock each came
// after it had granted that lock away exclusively asks for it back in the next such
// grant: the request travels in the grant itself when either end manages the lock (the
// acquirer, as its manager, routes it; else the granter has stamped it), else behind it,
// and the acquirer serves it at its release with no look. The lock then comes back as a
// lock asked ahead does: owned and free, taken by the next acquire on the cached path, or
// by a peer's request at once if one comes first. Such a waste sets the lock's count back
// to zero, and a rank that wastes more than a quarter of what it asks back stops asking.
// Unlike asking ahead, locks with bindings are asked back: the data comes while nobody
// here holds the lock, as it may when a lock comes ahead, but this rank held it last and
// the program touches bound data only while holding its lock (mw_discard keeps the data
// of a lock with a request out: discard()).
bool asks_back(const Lock &k, const Request &r) {
  return r.mode == MW_EXCLUSIVE && k.bounces >= 2 && !k.waiting && g_back_wasted * 4 <= g_back_asked + 8;
}

// Hands the lock (exclusive: with ownership) to r.rank, with the bound data it lacks.
void grant(Lock &k, const Request &r) {
  trace::Span granting(trace::Kind::kGrant, r.rank, k.addr);
  protocol::lock_moving();
  const uint64_t now = protocol::tick();
  std::vector<timestamps::Run> runs;
  // Under --model=rc/pc the bindings ship nothing: the lock only orders, and the marks
  // are pending updates (rc/pending_updates.hpp).
  if (protocol::model() == protocol::Model::kEntry)
    for (const Range &b : k.bindings.ranges()) {
      timestamps::stamp_dirty(b.addr, b.len, line_for(b.addr), now);
      timestamps::collect(b.addr, b.len, r.t_seen, runs);
    }
  // This rank's start-up digest, made once: for the comparison and a request asked back.
  uint64_t my_digest = 0;
  auto digest_here = [&] { return my_digest ? my_digest : my_digest = digest(k.bindings); };
  if (r.startup_digest != 0 && k.bind_version == 0 &&
      (!k.bindings.empty() || k.ever_held.load(std::memory_order_relaxed)) &&
      !g_start_up_binding.load(std::memory_order_relaxed) &&
      r.startup_digest != digest_here()) {
    std::vector<uint64_t> body{k.addr, kCompareOnly};
    for (const Range &b : k.bindings.ranges()) {
      body.push_back(b.addr);
      body.push_back(b.len);
    }
    transport::send(r.rank, MsgType::kLockBindings, body.data(), body.size() * sizeof(uint64_t), now);
  }
  if (r.bind_version < k.bind_version) {
    std::vector<uint64_t> body{k.addr, k.bind_version};
    for (const Range &b : k.bindings.ranges()) {
      body.push_back(b.addr);
      body.push_back(b.len);
    }
    transport::send(r.rank, MsgType::kLockBindings, body.data(), body.size() * sizeof(uint64_t), now);
  }
  // Deferred: the owner's service thread posts the grant and goes on to the next
  // acquirer while this one reads the data (an owner of a lock bound to 1 MiB granting
  // it to three readers served them one read after another). Nothing writes the data
  // meanwhile: the acquirer handles the grant only once it has read it, and until then
  // no rank can take the lock exclusively (an exclusive grant has moved ownership there;
  // a non-exclusive one leaves a reader to revoke, which answers only after its grant).
  if (k.unused_ahead.exchange(false, std::memory_order_relaxed)) {
    if (k.asked_back) {
      g_back_wasted++;
      k.bounces = 0;
    } else {
      g_ahead_wasted++;
    }
  }
  k.asked_back = false;
  const bool back = asks_back(k, r);
  Request again{};
  bool along = false;  // the request travels in the grant
  if (back) {
    again = Request{k.addr, me(), MW_EXCLUSIVE, now, k.bind_version, 0, 0, k.bind_version == 0 ? digest_here() : 0};
    if (k.manager == me() && k.probable_owner == r.rank) {
      stamp(k, again);
      along = true;
    } else {
      along = k.manager == r.rank;
    }
  }
  GrantExtra ex{r.mode, along ? 1u : 0u, r.opens, along ? again : Request{}};
  if (trace::on())
    for (const timestamps::Run &run : runs) granting.count += run.len;
  updates::send(r.rank, MsgType::kGrantData, MsgType::kLockGrant, k.addr, runs, &ex, sizeof ex, now,
                transport::Bulk::kDeferred);
  if (r.mode == MW_EXCLUSIVE) {
    k.owner = false;
    k.read_valid = false;
    k.t_seen = now;
    k.readers.clear();
    k.gave_away = true;
  } else if (std::find(k.readers.begin(), k.readers.end(), r.rank) == k.readers.end()) {
    k.readers.push_back(r.rank);
  }
  if (back) {
    k.waiting = true;
    k.wanted = MW_EXCLUSIVE;
    k.ahead = true;
    k.asked_back = true;
    g_back_asked++;
    if (!along) route(k, again);  // behind the grant
  }
}

// Serves the owner's queue, in order, as far as the lock's state allows.
void serve(Lock &k) {
  while (k.owner && !k.queue.empty()) {
    if (k.held() == MW_EXCLUSIVE) return;  // at release
    const Request r = k.queue.front();
    if (r.mode == MW_NONEXCLUSIVE) {
      k.queue.erase(k.queue.begin());
      if (r.rank == me())
        wake(k, MW_NONEXCLUSIVE);
      else
        grant(k, r);
      continue;
    }
    if (k.held() == MW_NONEXCLUSIVE || k.acks_pending > 0) return;  // at release / last ack
    for (int reader : k.readers) {
      if (reader == r.rank) continue;
      LockOnly body{k.addr};
      protocol::send_body(reader, MsgType::kLockRevoke, body, protocol::tick());
      k.acks_pending++;
    }
    if (k.acks_pending > 0) return;
    k.queue.erase(k.queue.begin());
    k.readers.clear();
    if (r.rank == me()) {
      wake(k, MW_EXCLUSIVE);
      if (r.opens) open_tenure(k, r.opens);  // routed by the manager: a tenure of its own
      return;
    }
    // An exclusive request closes the tenure (see Request): nothing can be queued behind it.
    if (!k.queue.empty()) broken(k, "requests queued behind the end of a tenure");
    grant(k, r);
    return;
  }
}

// A request stamped with this rank's tenure: the current one, or the one it waits for.
bool ours(const Lock &k, const Request &r) {
  return (k.owner && r.tenure == k.tenure) || (k.waiting && k.wanted == MW_EXCLUSIVE);
}

// A request routed to this rank (or the owner's own): served in the tenure it is stamped
// with, the one this rank owns or the one it waits for.
void arrive(Lock &k, const Request &r) {
  if (k.owner && r.tenure == k.tenure) {
    k.queue.push_back(r);
    serve(k);
  } else {
    k.next.push_back(r);  // for the tenure this rank waits for
  }
}

// At the manager: stamp the request with its tenure (see Request) and send it to that
// tenure's rank; an exclusive request opens the next tenure, its requester's.
void route(Lock &k, Request r) {
  if (k.manager != me()) {
    protocol::send_body(k.manager, MsgType::kLockRequest, r, protocol::tick());
    return;
  }
  const int target = stamp(k, r);
  if (target == me())
    arrive(k, r);
  else
    protocol::send_body(target, MsgType::kLockForward, r, protocol::tick());
}

using protocol::malformed;


Request request_of(const Header &h, Bytes payload) {
  Request r = protocol::read_body<Request>(h, payload);
  if (r.rank < 0 || r.rank >= protocol::nprocs()) malformed(h, "no such rank", protocol::lock_object(r.lock));
  if (r.mode != MW_EXCLUSIVE && r.mode != MW_NONEXCLUSIVE) malformed(h, "no such mode",
      protocol::lock_object(r.lock));
  return r;
}

void on_request(const Header &h, Bytes payload) {
  Request r = request_of(h, payload);
  std::lock_guard<std::mutex> g(protocol::mu());
  protocol::observe(h.clock);
  Lock &k = get(r.lock);
  Frozen f(k);
  if (k.manager != me()) malformed(h, "a request for a lock this rank does not manage",
      protocol::lock_object(r.lock));
  route(k, r);
}

void on_forward(const Header &h, Bytes payload) {
  Request r = request_of(h, payload);
  if (r.mode == MW_EXCLUSIVE && r.opens <= r.tenure) malformed(h, "an exclusive request that opens no tenure",
      protocol::lock_object(r.lock));
  std::lock_guard<std::mutex> g(protocol::mu());
  protocol::observe(h.clock);
  Lock &k = get(r.lock);
  Frozen f(k);
  if (h.sender != k.manager) malformed(h, "a routed request not from the lock's manager",
      protocol::lock_object(r.lock));
  if (!ours(k, r)) malformed(h, "a request for a tenure this rank neither owns nor waits for",
      protocol::lock_object(r.lock));
  arrive(k, r);
}

// The runs of a grant are in place (the placer put them there): take their stamps, and
// drop this rank's own marks on them, which the grant's newer values replace.
void take_runs(const std::vector<updates::RunDesc> &runs) {
  for (const updates::RunDesc &d : runs) {
    timestamps::record(d.addr, d.len, d.stamp);
    dirty::clear(reinterpret_cast<void *>(d.addr), d.len);
  }
}

void on_grant_data(const Header &h, Bytes head) {
  updates::Parsed p = updates::parse(h, head, 0);
  std::lock_guard<std::mutex> g(protocol::mu());
  protocol::observe(h.clock);
  if (!get(p.object).waiting) malformed(h, "data of a grant this rank did not ask for",
      protocol::lock_object(p.object));
  take_runs(p.runs);
}

// The granter's own request, asked back in its grant (see "Asking back"): served as if
// it had come right behind the grant. Under the mutex, the grant's tenure open.
void take_back(Lock &k, const Header &h, const Request &again) {
  if (again.lock != k.addr || again.rank != h.sender || again.mode != MW_EXCLUSIVE)
    malformed(h, "a request asked back that is not the granter's own", protocol::lock_object(k.addr));
  if (k.manager == me()) {
    if (again.opens != 0) malformed(h, "a request asked back stamped by a rank that does not manage the lock",
        protocol::lock_object(k.addr));
    route(k, again);
    return;
  }
  if (h.sender != k.manager || again.tenure != k.tenure || again.opens <= again.tenure)
    malformed(h, "a request asked back for another tenure than the one granted", protocol::lock_object(k.addr));
  arrive(k, again);
}

void on_grant(const Header &h, Bytes head) {
  updates::Parsed p = updates::parse(h, head, sizeof(GrantExtra));
  GrantExtra ex;
  std::memcpy(&ex, p.extra.data(), sizeof ex);
  if (ex.mode != MW_EXCLUSIVE && ex.mode != MW_NONEXCLUSIVE) malformed(h, "no such mode",
      protocol::lock_object(p.object));
  if (ex.back > 1 || (ex.back && ex.mode != MW_EXCLUSIVE)) malformed(h, "a request asked back with a grant that is not exclusive",
      protocol::lock_object(p.object));
  std::lock_guard<std::mutex> g(protocol::mu());
  protocol::observe(h.clock);
  take_runs(p.runs);
  Lock &k = get(p.object);
  Frozen f(k);
  if (!k.waiting) malformed(h, "a grant this rank did not ask for", protocol::lock_object(k.addr));
  if (k.theirs_from != kNone) startup_mismatch(k);
  k.t_seen = h.clock;
  if (ex.mode == MW_EXCLUSIVE) {
    if (ex.tenure == 0) malformed(h, "an exclusive grant of no tenure", protocol::lock_object(k.addr));
    open_tenure(k, ex.tenure);
    k.readers.clear();
    k.read_valid = false;
  } else {
    k.read_valid = true;
  }
  if (k.ahead) {  // nobody waits: the lock stays here, owned and free, for the acquire to come
    k.ahead = false;
    k.waiting = false;
    k.unused_ahead.store(true, std::memory_order_relaxed);
    if (!k.asked_back) g_ahead_granted++;
    if (ex.back) take_back(k, h, ex.again);
    serve(k);  // a request already queued for this tenure takes it on
    return;
  }
  wake(k, static_cast<int>(ex.mode));
  if (ex.back) take_back(k, h, ex.again);  // served at this rank's release
}

Guard guard_in(uintptr_t a, uintptr_t b, uintptr_t except);  // below

void on_bindings(const Header &h, Bytes payload) {
  if (payload.size() < 16 || (payload.size() - 16) % 16 != 0) malformed(h, "wrong length");
  std::vector<uint64_t> w(payload.size() / 8);
  std::memcpy(w.data(), payload.data(), payload.size());
  {  // bindings go only ahead of a grant (grant())
    std::lock_guard<std::mutex> g(protocol::mu());
    if (!get(w[0]).waiting) malformed(h, "bindings of a grant this rank did not ask for",
        protocol::lock_object(w[0]));
  }
  std::vector<Range> ranges;
  if (w[1] == kCompareOnly) {  // the owner's start-up bindings, which differ from ours
    for (size_t i = 2; i < w.size(); i += 2) ranges.push_back({w[i], w[i + 1]});
    std::lock_guard<std::mutex> g(protocol::mu());
    Lock &k = get(w[0]);
    k.theirs = std::move(ranges);
    k.theirs_from = h.sender;
    return;
  }
  // Each byte has one guard. Two ranks that bind the same bytes to two locks, each
  // holding its own, pass every check of mw_bind; the conflict shows here, where one
  // lock's bindings reach a rank that bound those bytes to the other. Applied, the later
  // grant of either lock would overwrite the other's newer data, silently.
  // Under the dial's rc and pc bindings move no data, so two guards lose none: only entry
  // consistency checks.
  for (size_t i = 2; i < w.size() && protocol::model() == protocol::Model::kEntry; i += 2) {
    Guard other = barriers::guard_of(w[i], w[i] + w[i + 1]);
    const char *what = "barrier";
    if (!other.object) {
      std::lock_guard<std::mutex> g(protocol::mu());
      other = guard_in(w[i], w[i] + w[i + 1], w[0]);
      what = "lock";
    }
    if (other.object)
      fatal("mw_acquire",
            "lock %s's grant from rank %d binds %s to it, but this rank has bound those bytes "
            "to %s %s ([%#lx, +%zu)): a byte of shared data has at most one guard (two ranks "
            "bound it to two objects, each holding its own lock)",
            protocol::lock_name(reinterpret_cast<void *>(w[0])).c_str(), h.sender,
            protocol::data_name(w[i], w[i + 1]).c_str(), what,
            (*what == 'l' ? protocol::lock_name(reinterpret_cast<void *>(other.object))
                          : protocol::barrier_name(reinterpret_cast<void *>(other.object))).c_str(),
            static_cast<unsigned long>(other.range.addr), other.range.len);
  }
  for (size_t i = 2; i < w.size(); i += 2) {
    // Bound here as where the binding was made: a page now wholly bound is entry
    // consistent on this rank too.
    if (!protocol::bind_range(reinterpret_cast<void *>(w[i]), w[i + 1]))
      malformed(h, "a bound range outside the shared window", protocol::lock_object(w[0]));
    ranges.push_back({w[i], w[i + 1]});
  }
  Bindings gone;  // bound to the lock here, and no longer
  {
    std::lock_guard<std::mutex> g(protocol::mu());
    Lock &k = get(w[0]);
    for (const Range &r : k.bindings.ranges()) gone.add(r.addr, r.len);
    for (const Range &r : ranges) gone.remove(r.addr, r.len);
    k.bindings.assign(std::move(ranges));
    k.bind_version = w[1];
    protocol::bindings_changed();
  }
  // Unbound by a holder while this rank still had its start-up binding to make (a
  // binding after another rank's first acquire): the holder's UNBOUND came first, and
  // left nothing for this rank to undo then.
  for (const Range &r : gone.ranges()) protocol::unbound(w[0], reinterpret_cast<void *>(r.addr), r.len, false);
}

// Gives this rank's copy of the lock back to the owner that revoked it. The lock moves
// with the answer, so what this rank wrote since its last flush goes first, as before a
// grant (protocol::lock_moving).
void answer_revoke(Lock &k, int owner) {
  k.read_valid = false;
  protocol::lock_moving();
  protocol::send_body(owner, MsgType::kLockRevokeAck, LockOnly{k.addr}, protocol::tick());
}

void on_revoke(const Header &h, Bytes payload) {
  LockOnly b = protocol::read_body<LockOnly>(h, payload);
  std::lock_guard<std::mutex> g(protocol::mu());
  protocol::observe(h.clock);
  Lock &k = get(b.lock);
  Frozen f(k);
  if (k.held() == MW_NONEXCLUSIVE && !k.owner) {
    k.revoker = h.sender;  // answered at release
    return;
  }
  answer_revoke(k, h.sender);
}

void on_revoke_ack(const Header &h, Bytes payload) {
  LockOnly b = protocol::read_body<LockOnly>(h, payload);
  std::lock_guard<std::mutex> g(protocol::mu());
  protocol::observe(h.clock);
  Lock &k = get(b.lock);
  Frozen f(k);
  auto it = std::find(k.readers.begin(), k.readers.end(), h.sender);
  if (it == k.readers.end() || k.acks_pending == 0) malformed(h, "an answer to no revoke",
      protocol::lock_object(b.lock));
  k.readers.erase(it);
  if (--k.acks_pending == 0) serve(k);
}

// Deferring to remote requesters. A rank that re-acquires its cached lock in a loop (a
// spin on a condition the lock guards) sends nothing and waits for nothing, so it never
// reads the completion queue: a request for the lock waits there until this rank's
// service thread gets a core, which the spinner and the requester (polling for its
// grant) are using: a hand-over then took many round trips (docs/PERFORMANCE.md, "Figures behind the code").
// So a cached acquire first looks at the transport itself when a message may have come,
// running the handlers of what has: a request is served (or queued) before this rank
// takes the lock again, which is then no longer local. A look costs a poll of the
// completion queue, a cached acquire a few nanoseconds. Where peers count what they post
// to this rank (transport::mail: shm's doorbell page), a cached acquire looks exactly
// when that count has moved, which costs one load otherwise. Elsewhere (tcp) it looks
// now and then, backing off while it finds nothing: after kFirstLook cached acquires,
// then twice as many, up to kMaxLook, starting over at each acquire that sends a request.
bool time_to_look(Lock &k) {
  if (protocol::nprocs() == 1) return false;
  if (transport::has_mail_count()) return transport::mail();
  if (++k.cached_run < k.look_after) return false;
  k.cached_run = 0;
  k.look_after = std::min(2 * k.look_after, kMaxLook);
  return true;
}

// One poll of the transport on this (application) thread, handlers included.
void look() {
  bool polled = false;
  transport::progress_until([&polled] { return std::exchange(polled, true); });
}

// Asking ahead. A rank that takes the locks of an array one after another (WATER-NSQUARED
// adds each molecule's forces under that molecule's lock) waits a hand-over at each:
// a round trip through a peer that is computing. When its exclusive acquires have
// walked the same stride twice, the next kAhead locks on that stride are asked for as
// this one is taken: their grants travel while it works, and their acquires find them
// here, owned and free (the cached path). Such a lock is an idle owned lock like any: a
// peer's request takes it away at once, and a prediction that misses costs messages,
// not waits; when peers take back more than a quarter of what came ahead, this rank
// stops asking. Not for a lock this rank knows bindings of (under entry consistency its
// data would land while nobody holds it). One whose owner bound data since still comes
// with it, the latest: nobody else can write it while this rank owns the lock.
constexpr int kAhead = 2;

struct Stride {
  uintptr_t last = 0;
  uintptr_t step = 0;
  int seen = 0;  // times in a row the step repeated
};
// initial-exec: a cached acquire reads it, and the general model costs a call to __tls_get_addr.
__attribute__((tls_model("initial-exec"))) thread_local Stride t_stride;

// Is addr a lock object a peer could also name? (check_object's test, without stopping)
bool could_be_lock(uintptr_t addr) {
  const void *p = reinterpret_cast<const void *>(addr);
  return window::is_shared(p, sizeof(mw_lock_t)) && (addr < window::layout().heap_begin || heap::owner_of(addr) >= 0);
}

void ask_for(uintptr_t addr) {
  const Lock *cached = g_record_cache[(addr >> 4) % kRecordCache].load(std::memory_order_acquire);
  if (cached && cached->addr == addr && (cached->word.load(std::memory_order_relaxed) & (kCachedX | kHoldMask))) return;
  if (!could_be_lock(addr)) return;
  transport::as_handler([&] {
    std::lock_guard<std::mutex> g(protocol::mu());
    if (g_ahead_wasted * 4 > g_ahead_granted + 8) return;
    Lock &k = get(addr);
    Frozen f(k);
    if (k.waiting || k.owner || k.held() != kNone || !k.bindings.empty() || k.bind_version != 0) return;
    k.waiting = true;
    k.wanted = MW_EXCLUSIVE;
    k.ahead = true;
    route(k, Request{k.addr, me(), MW_EXCLUSIVE, k.t_seen, 0, 0, 0, 0});
  });
}

// An acquire takes the lock from this rank's own state (not by grant): under the mutex.
void hold_here(Lock &k, int mode) {
  k.set_held(mode);
  k.ever_held.store(true, std::memory_order_relaxed);
  k.unused_ahead.store(false, std::memory_order_relaxed);
}

[[gnu::always_inline]] inline void ask_ahead(uintptr_t addr, int mode) {
  Stride &s = t_stride;
  const uintptr_t step = addr - s.last;
  s.last = addr;
  if (step != s.step || step == 0) {  // the common case (the same lock again) ends here
    s.step = step;
    s.seen = 0;
    return;
  }
  if (s.seen < 2 && ++s.seen < 2) return;
  if (mode != MW_EXCLUSIVE || protocol::nprocs() == 1) return;
  for (int i = 1; i <= kAhead; i++) ask_for(addr + i * step);
}

}  // namespace

int manager_of(uintptr_t addr) {
  // Locks are 16 bytes: neighbours in an array of locks go to different managers.
  return static_cast<int>((addr >> 4) % static_cast<uintptr_t>(protocol::nprocs()));
}

// The locks this rank holds, for its wait record (waits::detail, after a wait has lasted a
// while): what a lock cycle is made of. -1 if the protocol's mutex is busy (asked again).
int held_locks(uint64_t *out, int max) {
  std::unique_lock<std::mutex> g(protocol::mu(), std::try_to_lock);
  if (!g.owns_lock()) return -1;
  int n = 0;
  for (const auto &[addr, k] : g_locks)
    if (k->held() != kNone && n < max) out[n++] = addr;
  return n;
}

void init() {
  waits::set_held_fn(held_locks);
  transport::on(MsgType::kLockRequest, on_request);
  transport::on(MsgType::kLockForward, on_forward);
  transport::on(MsgType::kLockGrant, on_grant, updates::place);
  transport::on(MsgType::kGrantData, on_grant_data, updates::place);
  transport::on(MsgType::kLockBindings, on_bindings);
  transport::on(MsgType::kLockRevoke, on_revoke);
  transport::on(MsgType::kLockRevokeAck, on_revoke_ack);
}

void acquire(mw_lock_t *l, mw_mode_t mode) {
  if (mode != MW_EXCLUSIVE && mode != MW_NONEXCLUSIVE)
    fatal("mw_acquire", "lock %s: mode %d is neither MW_EXCLUSIVE nor MW_NONEXCLUSIVE", protocol::lock_name(l).c_str(),
          static_cast<int>(mode));
  startup_calls_made();
  Lock *k = record_of("mw_acquire", l);
  // The cached path: not held, and takeable here in this mode (see "The cached path").
  uint32_t w = k->word.load(std::memory_order_relaxed);
  bool look_first = false;
  if ((w & (kHoldMask | cached_bit(mode))) == cached_bit(mode)) {
    if (time_to_look(*k))
      look_first = true;
    else if (k->word.compare_exchange_strong(w, w | hold_bits(mode), std::memory_order_acquire)) {
      k->ever_held.store(true, std::memory_order_relaxed);
      if (k->unused_ahead.load(std::memory_order_relaxed)) k->unused_ahead.store(false, std::memory_order_relaxed);
      stats::lock_acquire(false);
      ask_ahead(k->addr, mode);
      return;
    }
  }
  if (look_first) look();  // a remote requester may be waiting (see time_to_look)
  bool taken;
  {
    std::lock_guard<std::mutex> g(protocol::mu());
    Frozen f(*k);
    if (k->held() != kNone)
      fatal("mw_acquire",
            "lock %s is already held by this rank (%s): release it before acquiring it again",
            protocol::lock_name(l).c_str(), mode_name(k->held()));
    taken = k->local(mode);
    if (taken) {
      hold_here(*k, mode);
      stats::lock_acquire(false);
    }
  }
  ask_ahead(k->addr, mode);  // the next locks' requests travel with this one's
  if (taken) return;
  stats::ScopedWait wait(stats::Wait::Acquire, manager_of(k->addr), k->addr);
  waits::Waiting waiting(waits::Kind::kLock, k->addr, manager_of(k->addr), static_cast<uint32_t>(mode));
  k->granted.store(false, std::memory_order_relaxed);
  transport::as_handler([&] {
    std::lock_guard<std::mutex> g(protocol::mu());
    Frozen f(*k);
    k->cached_run = 0;
    k->look_after = kFirstLook;
    const bool after_grant = std::exchange(k->gave_away, false);
    if (k->waiting) {  // asked ahead or back and not granted yet: that grant now wakes this acquire
      k->ahead = false;
      return;
    }
    if (k->local(mode)) {  // asked ahead or back, and granted since the look above
      hold_here(*k, mode);
      k->granted.store(true, std::memory_order_release);
      return;
    }
    k->bounces = after_grant && mode == MW_EXCLUSIVE ? static_cast<uint8_t>(std::min(k->bounces + 1, 2)) : 0;
    k->waiting = true;
    k->wanted = mode;
    Request r{k->addr, me(), static_cast<uint32_t>(mode), k->t_seen, k->bind_version, 0, 0,
              k->bind_version == 0 ? digest(k->bindings) : 0};
    // The owner serves itself within its tenure when nobody waits: an exclusive request
    // then only waits for the readers' revokes (and opens no tenure). Otherwise it asks
    // the manager like any rank, for a later tenure; the one it owns ends with the
    // exclusive request at its queue's head, and nothing is served after that.
    if (k->owner && k->queue.empty()) {
      r.tenure = k->tenure;
      arrive(*k, r);
    } else {
      route(*k, r);
    }
  });
  if (!k->granted.load(std::memory_order_acquire))
    transport::progress_until([k] { return k->granted.load(std::memory_order_acquire); });
  stats::lock_acquire(true);
}

bool held_exclusive(const char *call, mw_lock_t *l) {
  return record_of(call, l)->held() == MW_EXCLUSIVE;
}

void release(mw_lock_t *l) {
  Lock *k = record_of("mw_release", l);
  // The cached path: a hold whose mode is still takeable here leaves nothing to do.
  uint32_t w = k->word.load(std::memory_order_relaxed);
  const int hold = hold_of(w);
  if (hold != kNone && (w & cached_bit(hold)) &&
      k->word.compare_exchange_strong(w, w & ~kHoldMask, std::memory_order_release))
    return;
  {
    std::lock_guard<std::mutex> g(protocol::mu());
    Frozen f(*k);
    if (k->held() == kNone) fatal("mw_release", "lock %s is not held by this rank", protocol::lock_name(l).c_str());
    if (k->queue.empty() && k->revoker == kNone) {
      k->set_held(kNone);
      return;
    }
  }
  transport::as_handler([&] {
    std::lock_guard<std::mutex> g(protocol::mu());
    Frozen f(*k);
    k->set_held(kNone);
    if (k->revoker != kNone) {
      answer_revoke(*k, k->revoker);
      k->revoker = kNone;
    }
    serve(*k);
  });
}

namespace {
// The lock other than `except` bound to bytes of [a, b), if any. Under the mutex.
Guard guard_in(uintptr_t a, uintptr_t b, uintptr_t except) {
  for (const auto &[addr, k] : g_locks)
    if (addr != except)
      if (const Range *r = k->bindings.overlapping(a, b)) return {addr, *r};
  return {};
}

// `binding`: mw_bind, which readies the range; an unbinding must not, since that would
// make its pages entry consistent here again (bind_range).
Lock *check_binder(const char *call, bool binding, mw_lock_t *l, const void *addr, size_t len) {
  protocol::check_object(call, "lock", l, sizeof *l);
  protocol::check_range(call, "lock", l, addr, len, binding);
  Lock *k = record_of(call, l);
  if (k->held() != MW_EXCLUSIVE && k->ever_held.load(std::memory_order_relaxed))
    fatal(call,
          "lock %s is not held exclusively by this rank: change a lock's bindings while "
          "holding it in MW_EXCLUSIVE mode (or, the start-up pattern, on every rank before "
          "any acquires it)",
          protocol::lock_name(l).c_str());
  return k;
}
}  // namespace

void bind(mw_lock_t *l, const void *addr, size_t len) {
  Lock *k = check_binder("mw_bind", true, l, addr, len);
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  // Each byte has at most one guard (midway.h, "Bindings"): a lock and a barrier, or two
  // locks, would each ship it at their own time, and the later would overwrite the
  // earlier's newer data.
  if (const Guard other = barriers::guard_of(a, a + len); other.object)
    overlap_error("mw_bind", "lock", protocol::lock_name(l), a, len, protocol::data_name(a, len),
                  "barrier",
                  protocol::barrier_name(reinterpret_cast<void *>(other.object)), other.range);
  std::lock_guard<std::mutex> g(protocol::mu());
  if (const Guard other = guard_in(a, a + len, k->addr); other.object)
    overlap_error("mw_bind", "lock", protocol::lock_name(l), a, len, protocol::data_name(a, len),
                  "lock",
                  protocol::lock_name(reinterpret_cast<void *>(other.object)), other.range);
  k->bindings.add(a, len);
  if (k->held() == MW_EXCLUSIVE) k->bind_version++;
  else g_start_up_binding.store(true, std::memory_order_relaxed);
  protocol::bindings_changed();
}

void startup_calls_made() {
  if (g_start_up_binding.load(std::memory_order_relaxed))
    g_start_up_binding.store(false, std::memory_order_relaxed);
}

void unbind(mw_lock_t *l, const void *addr, size_t len) {
  Lock *k = check_binder("mw_unbind", false, l, addr, len);
  const bool holder = k->held() == MW_EXCLUSIVE;
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  std::vector<Range> taken;  // the bytes of the range that were bound to the lock
  {
    std::lock_guard<std::mutex> g(protocol::mu());
    for (const Range &r : k->bindings.ranges())
      if (r.addr < a + len && r.end() > a)
        taken.push_back({std::max(r.addr, a), std::min(r.end(), a + len) - std::max(r.addr, a)});
    k->bindings.remove(a, len);
    if (holder) k->bind_version++;
    protocol::bindings_changed();
  }
  // Outside the mutex: the holder waits there until every rank has the data.
  for (const Range &r : taken) protocol::unbound(k->addr, reinterpret_cast<void *>(r.addr), r.len, holder);
}

void forget(uintptr_t lock, uintptr_t addr, size_t len) {
  std::lock_guard<std::mutex> g(protocol::mu());
  auto it = g_locks.find(lock);
  if (it == g_locks.end()) return;
  it->second->bindings.remove(addr, len);
  protocol::bindings_changed();
}

int held_mode(const void *lock) {
  return record_of("mw_check", static_cast<mw_lock_t *>(const_cast<void *>(lock)))->held();
}

std::vector<std::pair<uintptr_t, int>> held_locks() {
  std::lock_guard<std::mutex> g(protocol::mu());
  std::vector<std::pair<uintptr_t, int>> out;
  for (const auto &[addr, k] : g_locks)
    if (k->held() != kNone) out.emplace_back(addr, k->held());
  std::sort(out.begin(), out.end());
  return out;
}

void for_each_binding(const std::function<void(uintptr_t, const Range &)> &f) {
  std::lock_guard<std::mutex> g(protocol::mu());
  for (const auto &[addr, k] : g_locks)
    for (const Range &r : k->bindings.ranges()) f(addr, r);
}

Guard guard_of(uintptr_t a, uintptr_t b) {
  std::lock_guard<std::mutex> g(protocol::mu());
  return guard_in(a, b, 0);
}

Bindings discard(uintptr_t a, uintptr_t b) {
  std::lock_guard<std::mutex> g(protocol::mu());
  Bindings kept, dropped;
  for (auto &[addr, k] : g_locks) {
    Frozen f(*k);
    // A request out (asked ahead or back) is served from when this rank last saw the lock.
    const bool ours = k->owner || k->held() != kNone || k->waiting;
    for (const Range &r : k->bindings.ranges()) {
      if (r.end() <= a || r.addr >= b) continue;
      if (k->held() != kNone)
        fatal("mw_discard",
              "[0x%lx, 0x%lx) holds data bound to lock %s, which this rank holds: release "
              "the lock before discarding its data",
              static_cast<unsigned long>(a), static_cast<unsigned long>(b),
              protocol::lock_name(reinterpret_cast<void *>(addr)).c_str());
      (ours ? kept : dropped).add(std::max(r.addr, a), std::min(r.end(), b) - std::max(r.addr, a));
    }
    if (!ours) {
      k->t_seen = 0;
      k->read_valid = false;
    }
  }
  for (const Range &r : kept.ranges()) dropped.remove(r.addr, r.len);
  return dropped;
}

}  // namespace mw::locks
