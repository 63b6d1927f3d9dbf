// Progress: who polls the completion queue (the service thread, or an application
// thread that waits), and how an idle poller spins, yields and sleeps.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

#include "transport/fabric.hpp"

namespace mw::transport {

constexpr int kIdleTimeoutMs = 100;  // a blocked thread re-polls this often regardless
constexpr int kBusyTimeoutMs = 1;    // ... and this often while its sends are in flight

struct Progress {
  // The progress role: whoever holds it reads the CQ and, at the outermost level, runs
  // handlers. `waiters` counts application threads that want it; the service thread
  // stands aside while it is non-zero.
  std::mutex role_mu;
  std::atomic<int> waiters{0};
  // IdleTimer's first stage, in empty polls: 1 when this host's ranks outnumber its CPUs.
  unsigned pause_polls = 1024;
  // Whether a leaving application thread lets the parked service thread take the CQ back
  // by itself (park()) instead of arming it for the next ring (hand_back): not when this
  // host's ranks outnumber its CPUs, where timed looks of every service thread would
  // take cores from the ranks that wait.
  bool lazy_handback = true;
  std::atomic<bool> stopping{false};
  std::thread *service = nullptr;  // never destroyed by exit(): mw::fatal may exit any thread
  std::atomic<uint64_t> bulk_in_flight{0};  // bytes of our rendezvous sends and receives under way
};
extern Progress &prog;

// > 0 while this thread holds the progress role.
extern constinit thread_local int t_role_depth;
extern constinit thread_local bool t_in_handler;
extern constinit thread_local bool t_is_service;
// Set while this thread holds the post lock between a split header and its payload:
// progress it makes then must post no message (kDone waits in pending_done).
extern constinit thread_local bool t_defer_sends;

// Progress on the calling thread until done(): the heart of progress_until() and of
// send()'s waits. run_handlers: at the outermost level only. pause_polls: the idle
// policy's first stage, in empty polls (prog.pause_polls by default). mail_gated
// (wait_shared, where done() watches a shared word): during the first stage, poll the CQ
// only when peers have posted to this rank, and otherwise just ask done().
void drive(bool (*done)(void *), void *arg, bool run_handlers, unsigned pause_polls, bool mail_gated);
template <class Done>
void drive(Done &&done, bool run_handlers, unsigned pause_polls = prog.pause_polls, bool mail_gated = false) {
  drive([](void *p) { return (*static_cast<std::remove_reference_t<Done> *>(p))(); }, &done,
        run_handlers, pause_polls, mail_gated);
}
// Waits, progressing, for what a send waits for (a buffer, a bulk read). Never runs handlers.
template <class Pred>
void wait_for(Pred &&pred) {
  drive(pred, false);
}

// Progress without taking the role from anyone for long: for a thread that needs the CQ
// to move (a full send queue, no free send buffer). Never runs handlers.
void nudge();
// Sends or reads of ours under way: blocked threads look again sooner.
bool busy();
// The service thread.
void service_main();
// Liveness (liveness.cpp): handlers registered at open; the check, from an application
// thread's wait each time it wakes (wait_began_ns: 0 at the wait's start, kept by the check).
void liveness_init();
void liveness_check(long &wait_began_ns);
// wait_shared() (transport.hpp): how many times it looks at done() alone first.
constexpr int kSharedQuickLooks = 16;

}  // namespace mw::transport
