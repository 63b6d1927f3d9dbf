// Statistics: what one rank sent, received, acquired and waited for, and how long the
// program's phases took — the figures of Midway's Table 1 (elapsed time, input transfer,
// compute, output transfer, megabytes moved, number of messages).
//
// Counting is cheap enough for hot paths: every counter is a relaxed atomic, bumped
// with one fetch_add and no lock, because the application thread (acquires, faults,
// barriers) and the service thread (messages) both count. A snapshot reads each counter
// on its own, so it is not a consistent cut while the service thread runs; at
// mw_finalize nothing is in flight.
//
//   mw::stats::sent(Kind::Page, 4096, 24);            // the transport, for every message
//   mw::stats::lock_acquire(/*remote=*/true);          // the lock module
//   { mw::stats::ScopedWait w(Wait::Acquire); ... }    // time blocked in an acquire
//
// At mw_finalize, if the job was started with statistics on (mwrun --stats, MW_STATS),
// the rank writes its figures as one flat JSON object (see `fields` below):
//   - under mwrun, to MW_JOB_DIR/stats.<rank>.json, which mwrun sums into its table or
//     its JSON file;
//   - otherwise (mpirun, srun, no launcher) with MW_STATS=json:PATH, to PATH.<rank>.json;
//     with MW_STATS=table there is no one to print the table, and rank 0 says so.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/trace.hpp"
#include "midway.h"

namespace mw::stats {

// What a message is for. Each protocol maps its message types to one of these.
enum class Kind : uint8_t {
  Lock,     // lock requests and forwards (finding the owner); semaphores, conditions
  Grant,    // a lock handed to its acquirer, with the bound data it lacks
  Barrier,  // barrier arrivals and releases, with the updates they carry
  Page,     // RC/PC: page fetches from the home and their replies
  Update,   // RC/PC: pending updates pushed to a page's copyset
  Control,  // everything else: start-up, shutdown, acknowledgements
  kCount
};
constexpr size_t kKinds = static_cast<size_t>(Kind::kCount);
// The kind's name in statistics.
constexpr const char *name(Kind k) {
  switch (k) {
    case Kind::Lock: return "lock";
    case Kind::Grant: return "grant";
    case Kind::Barrier: return "barrier";
    case Kind::Page: return "page";
    case Kind::Update: return "update";
    case Kind::Control: return "control";
    case Kind::kCount: break;
  }
  return "unknown";
}

// What a rank can be blocked in.
enum class Wait : uint8_t { Acquire, Barrier, Fault, kCount };
constexpr size_t kWaits = static_cast<size_t>(Wait::kCount);
// The wait's name in statistics (<name>_wait_seconds).
constexpr const char *name(Wait w) {
  switch (w) {
    case Wait::Acquire: return "acquire";
    case Wait::Barrier: return "barrier";
    case Wait::Fault: return "fault";
    case Wait::kCount: break;
  }
  return "unknown";
}

// ---- The counters (one set per process, that is per rank) ----

namespace detail {

using Counter = std::atomic<uint64_t>;

struct TrafficCounters {
  Counter msgs{0}, payload_bytes{0}, protocol_bytes{0};
};

// The application thread counts acquires, barriers and faults; the service thread
// counts most messages. Each group has a cache line of its own, so that the two do not
// take turns owning one line.
struct alignas(64) Messages {
  std::array<TrafficCounters, kKinds> sent, received;
  Counter rejected{0};
};
struct alignas(64) Events {
  Counter lock_acquires_local{0}, lock_acquires_remote{0};
  Counter barrier_crossings{0}, page_faults{0};
  Counter polls_served{0};  // messages served at the program's polls
  std::array<Counter, kWaits> wait_ns{};
};

extern Messages g_messages;
extern Events g_events;

inline void add(Counter &c, uint64_t n) { c.fetch_add(n, std::memory_order_relaxed); }
// For a counter only the application thread adds to: a load and a store, not a locked
// add (one of the three locked instructions of a cached lock's acquire and release).
inline void add_on_app(Counter &c, uint64_t n) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

inline void count(std::array<TrafficCounters, kKinds> &by_kind, Kind k, size_t payload,
                  size_t protocol) {
  TrafficCounters &t = by_kind[static_cast<size_t>(k)];
  add(t.msgs, 1);
  add(t.payload_bytes, payload);
  add(t.protocol_bytes, protocol);
}

}  // namespace detail

// A message of kind k (never kCount) left this rank: `payload` bytes of shared data,
// `protocol` bytes of headers and bookkeeping (timestamps, ranges, lock state).
inline void sent(Kind k, size_t payload, size_t protocol) {
  detail::count(detail::g_messages.sent, k, payload, protocol);
}
// A message of kind k arrived and passed validation (rejected ones are counted apart).
inline void received(Kind k, size_t payload, size_t protocol) {
  detail::count(detail::g_messages.received, k, payload, protocol);
}
// The transport's validation point dropped a malformed or unauthenticated message.
inline void count_rejected() { detail::add(detail::g_messages.rejected, 1); }

// A lock was acquired: remote if it took a message, local if the lock was cached here.
inline void lock_acquire(bool remote) {
  detail::add_on_app(remote ? detail::g_events.lock_acquires_remote : detail::g_events.lock_acquires_local,
                     1);
}
inline void barrier_crossed() { detail::add_on_app(detail::g_events.barrier_crossings, 1); }
inline void page_fault() { detail::add_on_app(detail::g_events.page_faults, 1); }
inline void polls_served(uint64_t n) { detail::add(detail::g_events.polls_served, n); }

// Time blocked in w, in nanoseconds.
inline void add_wait(Wait w, uint64_t ns) {
  detail::add(detail::g_events.wait_ns[static_cast<size_t>(w)], ns);
}

// Nanoseconds of the monotonic clock: the timeline's, so that a timed wait records there
// what it measured (ScopedWait).
using trace::now_ns;

// Adds the time from its construction to its destruction to the wait of kind w, and with
// a timeline on (core/trace.hpp) records it there, with the peer waited for and the page
// or lock:
//   { ScopedWait waiting(Wait::Barrier); ...block until released... }
class ScopedWait {
 public:
  explicit ScopedWait(Wait w, int peer = -1, uint64_t object = 0)
      : wait_(w), peer_(peer), object_(object), start_(now_ns()) {}
  ~ScopedWait() {
    const uint64_t end = now_ns();
    add_wait(wait_, end - start_);
    if (trace::on()) trace::record(kTraced[static_cast<size_t>(wait_)], start_, end, peer_, object_, count);
  }
  ScopedWait(const ScopedWait &) = delete;
  ScopedWait &operator=(const ScopedWait &) = delete;
  uint64_t count = 0;  // pages, for a fault

 private:
  static constexpr trace::Kind kTraced[kWaits] = {trace::Kind::kAcquire, trace::Kind::kBarrier, trace::Kind::kFault};
  Wait wait_;
  int peer_;
  uint64_t object_;
  uint64_t start_;
};

// ---- Phases: named intervals a program marks (mw_phase_begin / mw_phase_end) ----
//
// Phases with different names may overlap or nest; a phase may be run again after it
// has ended, and its times add up. Misuse stops the program through mw::fatal, as the
// error of `call`, naming the phase. Safe to call from any application thread.

// The longest phase name, and the most phases a program may name.
constexpr size_t kMaxPhaseName = 63;
constexpr size_t kMaxPhases = 32;

void phase_begin(const char *call, const char *name);
void phase_end(const char *call, const char *name);
// Seconds spent in the phase so far (counting a running phase up to now); an error if
// no phase of that name has begun.
double phase_seconds(const char *call, const char *name);

// ---- Reading, resetting and writing ----

struct Traffic {
  uint64_t msgs = 0, payload_bytes = 0, protocol_bytes = 0;
  Traffic &operator+=(const Traffic &o) {
    msgs += o.msgs;
    payload_bytes += o.payload_bytes;
    protocol_bytes += o.protocol_bytes;
    return *this;
  }
};

// The counters at one moment, as plain numbers.
struct Snapshot {
  std::array<Traffic, kKinds> sent{}, received{};
  uint64_t rejected_messages = 0;
  uint64_t lock_acquires_local = 0, lock_acquires_remote = 0;
  uint64_t barrier_crossings = 0, page_faults = 0, polls_served = 0;
  std::array<uint64_t, kWaits> wait_ns{};
  uint64_t elapsed_ns = 0;  // since start() or the last reset()
  // Every phase named so far, in the order first begun, with its time up to now.
  std::vector<std::pair<std::string, uint64_t>> phase_ns;

  Traffic total_sent() const;
  Traffic total_received() const;
};

// At mw_init, once every rank has joined: elapsed time counts from here.
void start();
Snapshot snapshot();
// Counters and phase times to zero; running phases go on from now; elapsed time
// counts from now.
void reset();

// The field names of the JSON object a rank writes, which mwrun reads back. All are
// numbers: counts as integers, times as seconds with a fraction (nanoseconds). mwrun's
// totals sum each field over the ranks, except elapsed time: the job's is the longest.
namespace fields {
constexpr const char *kElapsed = "elapsed_seconds";
constexpr const char *kMsgsSent = "msgs_sent";  // the totals over kinds
constexpr const char *kMsgsReceived = "msgs_received";
constexpr const char *kPayloadSent = "payload_bytes_sent";
constexpr const char *kPayloadReceived = "payload_bytes_received";
constexpr const char *kProtocolSent = "protocol_bytes_sent";
constexpr const char *kProtocolReceived = "protocol_bytes_received";
constexpr const char *kAcquiresLocal = "lock_acquires_local";
constexpr const char *kAcquiresRemote = "lock_acquires_remote";
constexpr const char *kBarriers = "barrier_crossings";
constexpr const char *kFaults = "page_faults";
constexpr const char *kRejected = "rejected_messages";
constexpr const char *kPollsServed = "polls_served";
// "<wait>_wait_seconds": acquire_wait_seconds, barrier_wait_seconds, fault_wait_seconds.
constexpr const char *kWaitSuffix = "_wait_seconds";
// By kind: "sent.<kind>.msgs", "sent.<kind>.payload_bytes", "sent.<kind>.protocol_bytes",
// and the same under "received.".
constexpr const char *kSentPrefix = "sent.";
constexpr const char *kReceivedPrefix = "received.";
constexpr const char *kMsgsSuffix = ".msgs";
constexpr const char *kPayloadSuffix = ".payload_bytes";
constexpr const char *kProtocolSuffix = ".protocol_bytes";
// Phases: "phase.<name>.seconds".
constexpr const char *kPhasePrefix = "phase.";
constexpr const char *kPhaseSuffix = ".seconds";
// The file a rank leaves in mwrun's job directory: stats.<rank>.json.
constexpr const char *kFilePrefix = "stats.";
constexpr const char *kFileSuffix = ".json";
}  // namespace fields

// The snapshot as midway.h's mw_stats_t (mw_stats_get).
mw_stats_t to_public(const Snapshot &s);

// The snapshot as one flat JSON object, in the order of `fields`, one field a line.
std::string to_json(const Snapshot &s);

// Writes the snapshot to path atomically (a temporary file, then rename), so that a
// reader sees the whole object or nothing. Errors stop the program as `call`'s.
void write_json(const char *call, const std::string &path, const Snapshot &s);

// Where a rank writes its statistics given MW_STATS (`spec`) and MW_JOB_DIR (`job_dir`):
// "" when it writes none.
std::string output_path(const std::string &spec, const std::string &job_dir, int rank);

// At mw_finalize: stops with an error naming a phase still running, then writes the
// rank's statistics if the job asked for them.
void finish(const char *call);

}  // namespace mw::stats
