// Progress (progress.hpp).
#include "core/waits.hpp"
#include "transport/progress.hpp"

#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/error.hpp"
#include "core/trace.hpp"
#include "transport/receive.hpp"
#include "transport/send.hpp"
#include "transport/wake.hpp"

namespace mw::transport {

constexpr long kHandbackGraceNs = 100'000;      // see park()
constexpr long kSleepMaxNs = 2'000'000;
constexpr uint64_t kMaxBulkSpinNs = 2'000'000;  // see spin_budget_ns()
constexpr int kPollTakeTries = 512;              // serve_polled(): a few microseconds

Progress &prog = *new Progress;
constinit thread_local int t_role_depth = 0;
constinit thread_local bool t_in_handler = false;
constinit thread_local bool t_is_service = false;
constinit thread_local bool t_defer_sends = false;

// ---------------------------------------------------------------------------------------
// Progress: who polls, and how idle threads sleep
//
// One thread at a time holds the progress role (role_mu) and reads the CQ. Normally the
// service thread. An application thread that must wait (progress_until, or a send() that
// waits for a free buffer or for its bulk to be read) takes the role itself: waiters > 0
// tells the service thread to park, so two threads never spin on one rank's CQ (on a
// 2-core machine that would halve the latency-critical thread's share of a core).
//
// When the last application waiter leaves (hand_back), the parked service thread takes
// the CQ back by itself: it looks every kHandbackGraceNs while application threads come
// and go, and sleeps untimed (woken by hand_back) once one stays. Meanwhile messages set
// the poll word, and the program's next poll or wait takes them. No system call on the
// way in or out, and none in the peer's ring, so a tight acquire/release loop pays none.
// kDoorbell: the parked service thread sleeps on the bell with kArmedService clear, so
// rings do not wake it. When this host's ranks outnumber its CPUs (lazy_handback off),
// timed looks would take cores from the waiting ranks instead: hand_back arms
// kArmedService and looks at the CQ once more, what came before the arming is taken by
// that look, what comes after rings, and the woken service thread takes the CQ.
// kFd: the service thread sleeps in epoll on {event_fd, cq_fd}; the cq_fd is disarmed
// while an application thread polls.
//
// Wake-ups that no peer sends. A ring (or the CQ's fd) says a message arrived. Work that
// one of our threads leaves for another is not a message, so whoever leaves it wakes the
// others (wake_local): messages a thread took off the CQ but could not hand to their
// handlers (a send's wait, nudge()), rendezvous reads and kDone messages the provider has
// not taken yet (left_work()). Each such case, missed, cost a wake-up by timeout: 100 ms
// (kIdleTimeoutMs) or 1 s (park()).
// ---------------------------------------------------------------------------------------

bool busy() {
  return snd.sends_in_flight.load(std::memory_order_relaxed) > 0 ||
         rcv.reads_in_flight.load(std::memory_order_relaxed) > 0 || !rcv.pending_reads.empty() ||
         !rcv.pending_done.empty() || prog.bulk_in_flight.load(std::memory_order_relaxed) > 0;
}

int block_timeout_ms() { return busy() ? kBusyTimeoutMs : kIdleTimeoutMs; }

// How long an idle progress thread polls before it blocks: spin_us, and longer while a
// bulk transfer of ours is under way, by the time it should take (0.5 ns a byte, capped):
// the thread waiting for a 1 MiB transfer's kDone would otherwise fall asleep just
// before it comes, and pay a wake-up on every large message.
long spin_budget_ns() {
  uint64_t bulk = prog.bulk_in_flight.load(std::memory_order_relaxed);
  return static_cast<long>(fab.cfg.spin_us) * 1000 + static_cast<long>(std::min<uint64_t>(bulk / 2, kMaxBulkSpinNs));
}

// CPU time of the calling thread.
long thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1'000'000'000L + ts.tv_nsec;
}

// How an idle progress thread waits, in three stages:
//  1. pause between polls, for the first 1024 empty polls: an answer from a peer running
//     on another core comes within that, a lock hand-over's two messages included (with
//     64, a waiter went on to yields and CPU-clock reads, each a system call, which on
//     these paravirtualized machines cost microseconds: hand-over 5.1 against 4.1 us).
//     Not when the ranks on this host outnumber its CPUs (Progress::pause_polls, set by
//     open()): then the peer is likely waiting for a core, maybe ours, and every pause
//     keeps it from running (docs/PERFORMANCE.md, "Figures behind the code");
//  2. sched_yield between polls: if the peer shares our core (more runnable threads than
//     cores, the common case of 8 ranks on 2 cores) it runs at once instead of after our
//     time slice. Except in wait_shared (keep_core) with stage 1 on: the awaited store
//     comes from a peer on a core of its own (were it on ours, stage 1 would be off), a
//     yield helps no one of this job, and on a busy machine it handed the core to another
//     process for its whole slice: a two-rank barrier's release was seen milliseconds
//     late, 15-21 times the median in 1 run of 5 (docs/PERFORMANCE.md, "No stalls");
//  3. block on the wait object, once spin_budget_ns() of this thread's CPU time is
//     spent. CPU time, not wall time: a thread preempted while it waits has not used its
//     budget. The clock is a system call, so it is read once per 32 empty polls, the
//     first time at the end of stage 1 or at the 32nd empty poll, whichever is later: a
//     wait with no stage 1 (ranks outnumbering cores, wait_shared) would pay it at its
//     first empty poll.
class IdleTimer {
 public:
  // pause_polls: the first stage's length (1: none; wait_shared spent it already).
  // keep_core: stage 2 pauses instead of yielding (see the stages above).
  explicit IdleTimer(unsigned pause_polls = prog.pause_polls, bool keep_core = false)
      : pause_(pause_polls), keep_core_(keep_core && pause_polls > 1) {}
  // The service thread's: the role is let go around each sched_yield, so that a poll in
  // the program's code (serve_polled) finds it free while this thread waits for a core.
  // On a core shared with the application thread a yield lasts the application's whole
  // time slice, milliseconds, and a role kept over it made every poll find it taken.
  explicit IdleTimer(std::unique_lock<std::mutex> *role) : role_(role) {}
  // The role was taken by another thread during a yield: stop polling, without blocking.
  bool lost() const { return role_ && !role_->owns_lock(); }
  void work() { empty_ = 0; }
  bool first_stage() const { return empty_ + 1 < pause_; }
  // Between two empty polls: false to keep polling (after relaxing), true to block.
  bool expired() {
    ++empty_;
    if (empty_ < pause_) {
      cpu_relax();
      return false;
    }
    const unsigned first = pause_ > 32 ? pause_ : 32;
    if (empty_ == first) since_ = thread_cpu_ns();
    else if (empty_ > first && (empty_ & 31) == 0 && thread_cpu_ns() - since_ > spin_budget_ns())
      return true;
    if (!role_) {
      if (keep_core_) cpu_relax();
      else sched_yield();
      return false;
    }
    t_role_depth = 0;
    role_->unlock();
    sched_yield();
    if (!role_->try_lock()) return true;  // lost()
    t_role_depth = 1;
    return false;
  }

 private:
  std::unique_lock<std::mutex> *role_ = nullptr;
  unsigned pause_ = prog.pause_polls;
  bool keep_core_ = false;
  unsigned empty_ = 0;
  long since_ = 0;
};

// Work the role holder is leaving that no peer will ring this rank for: messages taken
// off the CQ whose handlers have not run (taken where handlers could not run), and
// rendezvous reads or kDone messages still to be retried or completed (a read on shm
// without CMA completes by our own progress after the peer's, unrung). The role holder
// only; whoever leaves such work wakes this rank's sleepers (wake_local).
bool left_work() {
  return deliverable() || rcv.reads_in_flight.load(std::memory_order_relaxed) > 0 ||
         !rcv.pending_reads.empty() || !rcv.pending_done.empty();
}

// Progress without taking the role from anyone for long: for a thread that needs the CQ
// to move (a full send queue, no free send buffer). Never runs handlers.
void nudge() {
  if (t_role_depth > 0) {
    poll_cq(false);
    return;
  }
  if (prog.role_mu.try_lock()) {
    ++t_role_depth;
    poll_cq(false);
    --t_role_depth;
    // What this poll took, it could not deliver: the service thread (or an application
    // thread in progress_until) may be asleep, and no peer will ring for it again.
    bool left = left_work();
    prog.role_mu.unlock();
    if (left) wake_local();
  } else {
    sched_yield();
  }
}

// An application thread wants the progress role (drive()): the service thread stands
// aside while waiters > 0. Called before the role is taken.
void enter_progress() {
  if (prog.waiters.fetch_add(1) != 0 || wake.wait != WaitMode::kFd) return;
  // kFd: the service thread, if it is the one asleep on the CQ's fd, must not wake for
  // what we are about to take: one epoll_ctl, only the first time after it took over.
  if (!wake.cq_armed.load()) return;
  std::lock_guard<std::mutex> lk(wake.arm_mu);
  if (prog.waiters.load() > 0 && wake.cq_armed.load()) {
    set_cq_armed(false);
    // cq_armed means the service thread armed the fd in block() and may be in epoll_wait
    // right now. With the fd disarmed, nothing would wake it there: not a message, and
    // not our leaving either (hand_back wakes only a thread asleep in park()): it would
    // sleep on until its timeout with messages waiting for it. Wake it, so that it
    // parks, where our leaving is seen within kHandbackGraceNs.
    wake_local();
  }
}

// The application thread now holds the role (after enter_progress).
void took_role() {
  // kDoorbell: peers need not ring the service thread while we poll; asleep, it stays so.
  // Not before we hold the role: a service thread that holds it inside a handler (a send
  // waiting for its kDone) sleeps on the bell with kArmedService, and the ring for that
  // kDone must still reach it while we wait for the role.
  // With lazy hand-backs the bit stays: a service thread asleep in block() (idle, before
  // we came) would otherwise sleep through our leaving to its timeout, since nothing
  // wakes it then; the first ring wakes it instead, and it parks (park()).
  if (wake.wait == WaitMode::kDoorbell && !prog.lazy_handback) my_bell()->fetch_and(~kArmedService);
}

// An application thread that holds the role (t_role_depth == 1) stops progressing: the
// CQ goes back to the service thread if no other application thread wants it, and work
// left behind wakes whoever is asleep. Releases the role.
// polled_at: peers' posted count (Bell::posted) read before this thread's last poll of
// the CQ, or nullptr where there is none.
void hand_back(std::unique_lock<std::mutex> &role, bool ran_handlers, const uint32_t *polled_at) {
  // waiters drops to 0 first. A service thread woken after this finds nobody progressing
  // and takes the CQ; one woken before it (by a ring, a wake-up or a timeout) parks
  // again. Arming before leaving would not do: a ring between the arming and the leaving
  // would clear kArmedService and wake the service thread, which would see waiters > 0
  // and park again with nothing armed, and the next message to this rank would wait for
  // park's timeout.
  const bool last = prog.waiters.fetch_sub(1) == 1;
  if (last && (wake.wait == WaitMode::kFd || (wake.wait == WaitMode::kDoorbell && prog.lazy_handback))) {
    // No hand-back here: the parked service thread takes the CQ back by itself within
    // kHandbackGraceNs (park()); only if it sleeps untimed, after a long wait of ours,
    // does it need waking (below). Arming it here (kDoorbell) cost each leave a ring
    // later: in a lock hand-over the peer's very next message paid a futex wake-up, and
    // the woken service thread, on a core its rank was using, found the rank
    // progressing again and parked (docs/PERFORMANCE.md, "No stalls"); re-arming the
    // CQ's fd (kFd) costs fi_trywait and epoll_ctl. Messages that come meanwhile set
    // the poll word (ring()): a poll in the program's loops, or its next wait, takes them.
    wake.app_leaves.fetch_add(1, std::memory_order_relaxed);
  } else if (last && wake.wait == WaitMode::kDoorbell) {
    // Ranks outnumber cores: arm, then look once more (holding the role, which saves
    // taking it again): what was posted before the arming is taken by this look, what
    // comes after rings the service thread (ring()'s Dekker pair). Nothing posted since
    // the last poll (the count, read after the arming: the same pair), no look.
    my_bell()->fetch_or(kArmedService);
    if (!polled_at || wake.bells[fab.cfg.rank].posted.load(std::memory_order_seq_cst) != *polled_at)
      while (poll_cq(ran_handlers) > 0) {
      }
  }
  bool work_left = left_work();
  t_role_depth = 0;
  role.unlock();
  // service_untimed is read after waiters fell (seq_cst both): park() sets it before it
  // checks waiters, so one of us sees the other.
  if (last && wake.service_untimed.load()) work_left = true;
  if (work_left) wake_local();
}

// A poll in the program's code (transport.hpp).
int serve_polled() {
  if (!fab.connected || wake.wait != WaitMode::kDoorbell || t_role_depth > 0 || t_in_handler ||
      t_is_service)
    return 0;
  // Cleared before the CQ is looked at: a message posted after this look sets it again.
  if (poll_word(fab.cfg.rank)->exchange(0, std::memory_order_acquire) == 0) return 0;
  std::unique_lock<std::mutex> role(prog.role_mu, std::try_to_lock);
  const bool asked = !role.owns_lock();
  if (asked) {
    // Most often the service thread holds it, woken by the same ring, looking for more
    // work before it sleeps again: asked to stand aside (waiters, as a waiting call
    // asks), it lets go within one of its polls. Not for long: a holder inside a handler
    // (a send waiting for its kDone) keeps it, and serves the messages itself.
    enter_progress();
    for (int i = 0; i < kPollTakeTries && !role.try_lock(); ++i) cpu_relax();
    if (!role.owns_lock()) {
      // Nobody progresses for us now: a parked service thread must look again.
      if (prog.waiters.fetch_sub(1) == 1) wake_local();
      return 0;
    }
    took_role();
  }
  t_role_depth = 1;
  std::atomic<uint32_t> *const posted = &wake.bells[fab.cfg.rank].posted;
  uint32_t polled_at = 0;
  int served = 0;
  // A bounded number of rounds: a peer that keeps sending must not keep the program's
  // loop from going on (the service thread, or the next poll, takes the rest).
  for (int round = 0; round < 16; ++round) {
    polled_at = posted->load(std::memory_order_seq_cst);
    const int n = poll_cq(true);
    if (n <= 0) break;
    served += n;
  }
  if (asked) {
    hand_back(role, true, &polled_at);  // the CQ back to the service thread
    return served;
  }
  t_role_depth = 0;
  // As in nudge(): what this thread took but could not finish, the sleepers must take.
  const bool left = left_work();
  role.unlock();
  if (left) wake_local();
  return served;
}

// Blocks the calling thread, which is `who` (kArmedApp or kArmedService), until the wait
// object fires or timeout_ms pass. `recheck` polls once after arming the doorbell (see
// ring()) and returns non-zero if it found work, in which case there is no sleep.
// Returns false if it slept until timeout_ms with nothing to wake it.
template <class Recheck>
bool block(uint32_t who, int timeout_ms, long *sleep_ns, Recheck &&recheck) {
  bool woken = true;
  switch (wake.wait) {
    case WaitMode::kDoorbell: {
      uint32_t w = my_bell()->fetch_or(who) | who;
      if (recheck() > 0) break;
      // The service thread stands aside (parks) once an application thread progresses,
      // unless it holds the role (inside a handler, a send waiting for its kDone): then
      // the application thread waits for the role, and the service thread must sleep
      // here, armed, to be rung when the kDone comes (not spin, not park).
      if (who == kArmedService && prog.stopping.load()) break;
      if (who == kArmedService && t_role_depth == 0 && prog.waiters.load() > 0) break;
      woken = futex_wait(my_bell(), w, who, timeout_ms);
      break;
    }
    case WaitMode::kFd: {
      if (!cq_trywait()) return true;
      // The service thread sleeps in epoll (where local wake-ups reach it too), unless it
      // holds the role (nested, see above): then it polls the CQ's fd like an application
      // thread, which works while an application thread has the fd disarmed in epoll.
      if (who == kArmedService && t_role_depth == 0) {
        {
          std::lock_guard<std::mutex> lk(wake.arm_mu);
          if (prog.waiters.load() > 0) return true;
          set_cq_armed(true);
        }
        epoll_event ev[2];
        int n = epoll_wait(wake.epoll_fd, ev, 2, timeout_ms);
        woken = n != 0;
        for (int i = 0; i < n; ++i)
          if (ev[i].data.fd == wake.event_fd) {
            uint64_t v;
            if (read(wake.event_fd, &v, sizeof v) < 0 && errno != EAGAIN)
              mw::fatal_errno("transport", "reading the wake-up eventfd");
          }
      } else {
        pollfd p{wake.cq_fd, POLLIN, 0};
        woken = poll(&p, 1, timeout_ms) != 0;
      }
      return woken;
    }
    default: {
      *sleep_ns = std::min(std::max(*sleep_ns * 2, 1000L), kSleepMaxNs);
      timespec ts{0, *sleep_ns};
      nanosleep(&ts, nullptr);
      return true;
    }
  }
  // Awake and about to poll: no ring is needed until we arm again. (Only when no other
  // thread of ours may be asleep with the same bit: one application waiter at most.)
  if (who == kArmedService || prog.waiters.load() <= 1) my_bell()->fetch_and(~who);
  return woken;
}

// Progress on the calling thread until done(): the heart of progress_until() and of
// send()'s waits. run_handlers: at the outermost level only. pause_polls: IdleTimer's.
// mail_gated (wait_shared, where done() watches a shared word): during the first stage,
// poll the CQ only when peers have posted to this rank (the doorbell line's count) or
// every 16th look, and otherwise just ask done(): a look then costs a load, not a CQ
// poll, yet a message is taken here at once, with the service thread left parked.
void drive(bool (*done_fn)(void *), void *arg, bool run_handlers, unsigned pause_polls, bool mail_gated) {
  auto done = [done_fn, arg] { return done_fn(arg); };
  long sleep_ns = 0;
  if (t_role_depth > 0) {
    // Nested: inside a handler or inside a poll. Keep the role (the outer level is in
    // the middle of its work); never run handlers; block like the outer level would.
    uint32_t who = t_is_service ? kArmedService : kArmedApp;
    IdleTimer idle;
    while (!done()) {
      if (poll_cq(false) > 0) {
        idle.work();
        sleep_ns = 0;
      } else if (idle.expired()) {
        block(who, block_timeout_ms(), &sleep_ns, [&] { return poll_cq(false) > 0 || done() ? 1 : 0; });
        idle.work();
      }
    }
    return;
  }
  enter_progress();
  std::unique_lock<std::mutex> role(prog.role_mu);
  took_role();
  t_role_depth = 1;
  IdleTimer idle(pause_polls, mail_gated);
  // Peers' posted count, read before each poll (hand_back() and the mail gate use it).
  std::atomic<uint32_t> *const posted = wake.bells ? &wake.bells[fab.cfg.rank].posted : nullptr;
  uint32_t polled_at = 0;
  long wait_began_ns = 0;  // liveness_check's
  bool polled = false, slept_out = false;
  unsigned quiet = 0;
  while (!done()) {
    if (posted) {
      const uint32_t now = posted->load(std::memory_order_seq_cst);
      if (mail_gated && polled && now == polled_at && idle.first_stage() && (++quiet & 15) != 0) {
        idle.expired();  // a pause, as after an empty poll
        continue;
      }
      polled_at = now;
      polled = true;
    }
    if (poll_cq(run_handlers) > 0) {
      idle.work();
      sleep_ns = 0;
      slept_out = false;
      continue;
    }
    // As in service_main: after a block that timed out, one look, then block again.
    if (!slept_out && !idle.expired()) continue;
    t_role_depth = 0;
    role.unlock();
    slept_out = !block(kArmedApp, block_timeout_ms(), &sleep_ns, [&] {
      std::lock_guard<std::mutex> lk(prog.role_mu);
      t_role_depth = 1;
      polled = false;  // this poll leaves no count behind: hand_back looks again
      int n = poll_cq(run_handlers);
      t_role_depth = 0;
      return n > 0 || done() ? 1 : 0;
    });
    role.lock();
    t_role_depth = 1;
    idle.work();
    if (run_handlers) liveness_check(wait_began_ns);
  }
  hand_back(role, run_handlers, posted && polled ? &polled_at : nullptr);
}

// The service thread stands aside while an application thread progresses: asleep, and
// not woken by arriving messages (the application thread takes them).
void park() {
  // While application threads come and go (a rank sending requests and waiting for the
  // replies), look again every kHandbackGraceNs: when none is progressing any more,
  // service_main takes the CQ over. Once one has stayed for a whole period (a long
  // wait), sleep until it leaves (hand_back wakes us; 1 s at most: the heartbeat).
  // kDoorbell: asleep on the bell with kArmedService clear, so peers' rings do not
  // wake us; wake_local does.
  const uint64_t seen = wake.app_leaves.load(std::memory_order_relaxed);
  switch (wake.wait) {
    case WaitMode::kDoorbell: {
      uint32_t w = my_bell()->load();
      if (!prog.lazy_handback) {  // hand_back arms us, and the next ring wakes us
        if (prog.waiters.load() > 0 && !prog.stopping.load()) futex_wait(my_bell(), w, kArmedService, 1000);
        break;
      }
      if (prog.waiters.load() > 0 && !prog.stopping.load()) futex_wait_ns(my_bell(), w, kArmedService, kHandbackGraceNs);
      if (prog.waiters.load() > 0 && wake.app_leaves.load(std::memory_order_relaxed) == seen) {
        wake.service_untimed.store(true);
        w = my_bell()->load();
        if (prog.waiters.load() > 0 && !prog.stopping.load()) futex_wait(my_bell(), w, kArmedService, 1000);
        wake.service_untimed.store(false);
      }
      break;
    }
    case WaitMode::kFd: {
      pollfd p{wake.event_fd, POLLIN, 0};
      timespec grace{0, kHandbackGraceNs};
      ppoll(&p, 1, &grace, nullptr);
      if (prog.waiters.load() > 0 && wake.app_leaves.load(std::memory_order_relaxed) == seen) {
        wake.service_untimed.store(true);
        if (prog.waiters.load() > 0 && !prog.stopping.load()) {
          timespec limit{1, 0};
          ppoll(&p, 1, &limit, nullptr);
        }
        wake.service_untimed.store(false);
      }
      uint64_t v;
      if (read(wake.event_fd, &v, sizeof v) < 0 && errno != EAGAIN)
        mw::fatal_errno("transport", "reading the wake-up eventfd");
      break;
    }
    default: {
      timespec ts{0, 1'000'000};
      nanosleep(&ts, nullptr);
      break;
    }
  }
}

void service_main() {
  t_is_service = true;
  trace::name_thread("service");
  long sleep_ns = 0;
  bool slept_out = false;  // the last block() ended by its timeout
  while (!prog.stopping.load(std::memory_order_relaxed)) {
    if (prog.waiters.load(std::memory_order_relaxed) > 0) {
      park();
      waits::beat();
      continue;
    }
    std::unique_lock<std::mutex> role(prog.role_mu, std::try_to_lock);
    if (!role.owns_lock()) {
      sched_yield();
      continue;
    }
    // Poll while nobody else wants the role, keeping it between polls.
    t_role_depth = 1;
    IdleTimer idle(&role);
    bool expired = false;
    while (!prog.stopping.load(std::memory_order_relaxed) &&
           prog.waiters.load(std::memory_order_relaxed) == 0) {
      if (poll_cq(true) > 0) {
        idle.work();
        sleep_ns = 0;
        slept_out = false;
      } else if (slept_out || idle.expired()) {
        expired = !idle.lost();
        break;
      }
    }
    t_role_depth = 0;
    if (role.owns_lock()) role.unlock();
    // Woken by its timeout alone, it looks once and sleeps again: a spin after every
    // timeout made 8 idle ranks over tcp use 4% of a core (Transport/Idle).
    if (expired) {
      slept_out = !block(kArmedService, block_timeout_ms(), &sleep_ns, [&] {
        std::lock_guard<std::mutex> lk(prog.role_mu);
        t_role_depth = 1;
        int k = poll_cq(true);
        t_role_depth = 0;
        return k;
      });
      waits::beat();  // the runtime runs: this rank answers (waits.hpp)
    }
  }
}

}  // namespace mw::transport
