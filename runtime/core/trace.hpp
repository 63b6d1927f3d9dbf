// A timeline of where a rank's time goes (mwrun --trace, MW_TRACE): each copyset fault,
// each page request served, each flush of pending updates, each barrier's wait, each
// remote acquire, each lock granted and each update applied, with its start, its length,
// the peer and the page or lock. The statistics (core/stats.hpp) say how long a rank
// waited in all; the timeline says for which page, behind what the peer was doing at that
// moment, which is what a slow fault is explained by (docs/PERFORMANCE.md, "Seeing where
// the time goes").
//
//   { mw::trace::Span s(mw::trace::Kind::kServe, requester, page); ...; s.count = pages; }
//
// The three waits the statistics time (stats::ScopedWait: faults, barriers, acquires) are
// recorded by the same object that times them.
//
// Off unless asked for: a Span then costs a load and a predicted branch. On, it costs two
// clock reads and one slot of a buffer of 2^18 events shared by the rank's threads;
// events after the buffer is full are counted, not kept. At mw_finalize the rank writes its
// events as a Chrome trace (JSON, Perfetto and chrome://tracing read it; one process per
// rank, one track per thread), under mwrun to MW_JOB_DIR/trace.<rank>.json, which mwrun
// merges into one file, otherwise to MW_TRACE.<rank>.json. Times are the steady clock
// (CLOCK_MONOTONIC): the ranks of one host share it, ranks on different hosts do not, so
// each file also says its host and the system clock's offset from it, by which a merge of
// ranks of several hosts places them (mwrun --merge-trace).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace mw::trace {

enum class Kind : uint8_t {
  kFault,    // the application thread waits for pages from their home (peer: the home)
  kServe,    // a page request served here (peer: the requester)
  kFlush,    // pending updates taken and sent at a release or barrier (count: pages)
  kBarrier,  // a barrier's wait, once this rank's updates are sent
  kAcquire,  // a lock acquire waiting for its grant (peer: the lock's manager)
  kUpdate,   // an update message applied here (peer: its sender; count: bytes)
  kGrant,    // a lock granted to another rank, its data sent (peer: the acquirer; count: bytes)
  kCount
};
constexpr const char *name(Kind k) {
  switch (k) {
    case Kind::kFault: return "fault";
    case Kind::kServe: return "serve page";
    case Kind::kFlush: return "flush";
    case Kind::kBarrier: return "barrier";
    case Kind::kAcquire: return "acquire";
    case Kind::kUpdate: return "apply update";
    case Kind::kGrant: return "grant";
    case Kind::kCount: break;
  }
  return "unknown";
}

extern std::atomic<bool> g_on;
inline bool on() { return g_on.load(std::memory_order_relaxed); }
// Nanoseconds of the monotonic clock; the statistics time with it too (stats::now_ns).
inline uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}
void record(Kind kind, uint64_t begin_ns, uint64_t end_ns, int peer, uint64_t object, uint64_t count);

// One event, recorded when it goes out of scope.
class Span {
 public:
  explicit Span(Kind kind, int peer = -1, uint64_t object = 0)
      : kind_(kind), peer_(peer), object_(object), begin_(on() ? now_ns() : 0) {}
  ~Span() {
    if (begin_) record(kind_, begin_, now_ns(), peer_, object_, count);
  }
  Span(const Span &) = delete;
  Span &operator=(const Span &) = delete;
  uint64_t count = 0;  // pages, bytes: what the kind counts

 private:
  Kind kind_;
  int peer_;
  uint64_t object_;
  uint64_t begin_;
};

// This thread's name in the timeline (the application thread is the one that called
// mw_init; others are named by their module: "service").
void name_thread(const char *name);

// mw_init: on if MW_TRACE is set. mw_finalize: writes the events (see above).
void start(int rank, const char *call);
void finish(const char *call);

}  // namespace mw::trace
