// The public API of midway.h. Each function checks its arguments and the state of the
// job, then hands over to the module that owns the mechanism.
//
// The ranks of a job find each other (bootstrap) and connect over the transport; locks
// and bindings (ec/locks.cpp) and barriers (ec/barriers.cpp) keep entry-consistent data;
// copysets (rc/copysets.cpp) and pending updates (rc/pending_updates.cpp) keep the rest
// release or processor consistent.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <span>
#include <string_view>
#include <vector>

#include "check/advisor.hpp"
#include "check/checker.hpp"
#include "ec/barriers.hpp"
#include "launch/bootstrap.hpp"
#include "rc/copysets.hpp"
#include "memory/dirty.hpp"
#include "core/error.hpp"
#include "core/settings.hpp"
#include "core/signals.hpp"
#include "core/trace.hpp"
#include "memory/heap.hpp"
#include "memory/symbols.hpp"
#include "ec/locks.hpp"
#include "ec/protocol.hpp"
#include "midway.h"
#include "rc/pending_updates.hpp"
#include "core/stats.hpp"
#include "core/waits.hpp"
#include "transport/transport.hpp"
#include "memory/unmarked_calls.hpp"
#include "memory/window.hpp"
#include "sync/fork.hpp"
#include "sync/semaphores.hpp"

#define MW_EXPORT extern "C" __attribute__((visibility("default")))

// At the entry of an API call: where the program made it, for its errors and waits
// (core/error.hpp, ApiCall), then whether the job is running.
#define MW_ENTER(call)                                 \
  mw::ApiCall api_call_(__builtin_return_address(0)); \
  require_running(call)

namespace {

enum class JobState { kNotStarted, kRunning, kFinished };
JobState g_state = JobState::kNotStarted;
int g_nprocs = 0;
bool g_fork_serving = false;  // mw_fork_serve was called

void require_running(const char *call) {
  if (g_state == JobState::kNotStarted) mw::fatal(call, "called before mw_init");
  if (g_state == JobState::kFinished) mw::fatal(call, "called after mw_finalize");
}

// How long mw_init waits for every rank to arrive.
int startup_timeout_ms() {
  return static_cast<int>(mw::settings::number(mw::settings::Id::MW_STARTUP_TIMEOUT) * 1000);
}

// Start-up greetings received (one is expected, from the previous rank in the ring).
std::atomic<int> g_hellos{0};

void on_hello(const mw::transport::Header &, std::span<const std::byte>) {
  g_hellos.fetch_add(1, std::memory_order_release);
}

// shm reaches only the ranks of one host (one kernel, one network namespace): asked for
// in a job that spans hosts, the first message to another host would never arrive.
void refuse_unreachable(const mw::bootstrap::Job &job, const std::string &provider) {
  if (job.all_local || provider.empty()) return;
  if (provider != "shm" && provider.rfind("shm;", 0) != 0) return;
  const auto me = static_cast<size_t>(job.rank);
  int other = 0;
  while (job.hosts[static_cast<size_t>(other)] == job.hosts[me]) other++;
  mw::fatal("mw_init",
            "the provider %s reaches only ranks on this host, but rank %d runs on %s and this "
            "rank on %s (host identities \"%s\" and \"%s\": host name, boot id, network "
            "namespace); use --provider tcp, or leave --provider unset for tcp",
            provider.c_str(), other, mw::bootstrap::host_name(job, other).c_str(),
            mw::bootstrap::host_name(job, job.rank).c_str(), job.hosts[static_cast<size_t>(other)].c_str(),
            job.hosts[me].c_str());
}

// Opens this rank's endpoint, exchanges addresses through the launcher (mwrun's job
// directory or PMIx) and connects. Then each rank greets the next one around a ring
// and waits for the previous one's greeting: tcp connects lazily, so without this a
// job could start whose ranks cannot reach each other (a wrong interface, a firewall,
// a peer of another job), and the first lock request would hang instead of failing
// here. Every message carries the job's secret, checked on arrival.
void connect_ranks(const mw::bootstrap::Job &job, int timeout_ms) {
  mw::transport::Config cfg;
  cfg.rank = job.rank;
  cfg.nprocs = job.nprocs;
  cfg.provider = mw::settings::text(mw::settings::Id::MW_PROVIDER);
  cfg.all_local = job.all_local;
  cfg.job_secret = job.secret;
  cfg.poll_word_at = reinterpret_cast<void *>(MW_POLL_WORD);
  cfg.job_id = job.job_id;
  refuse_unreachable(job, cfg.provider);
  cfg.liveness_ms = static_cast<int>(mw::settings::number(mw::settings::Id::MW_LIVENESS_TIMEOUT) * 1000);
  for (int r = 0; r < job.nprocs; r++) cfg.host_names.push_back(mw::bootstrap::host_name(job, r));
  const std::vector<uint8_t> me = mw::transport::open(cfg);
  mw::bootstrap::put("fabric.address", me.data(), me.size());
  mw::bootstrap::fence();
  std::vector<std::vector<uint8_t>> all(static_cast<size_t>(job.nprocs));
  for (int r = 0; r < job.nprocs; r++) all[static_cast<size_t>(r)] = mw::bootstrap::get(r, "fabric.address");
  mw::transport::on(mw::transport::MsgType::kHello, on_hello);
  mw::locks::init();
  mw::barriers::init();
  mw::copysets::report_faults();
  mw::copysets::init();
  mw::pending_updates::init();
  mw::fork::init();
  mw::semaphores::init();
  mw::transport::connect(all);
  // A peer that cannot be reached stops the greeting within the start-up timeout.
  mw::transport::set_stall_timeout(timeout_ms);
  mw::transport::send((job.rank + 1) % job.nprocs, mw::transport::MsgType::kHello, nullptr, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  mw::transport::progress_until([deadline] {
    return g_hellos.load(std::memory_order_acquire) > 0 ||
           std::chrono::steady_clock::now() >= deadline;
  });
  if (g_hellos.load(std::memory_order_acquire) == 0) {
    const int prev = (job.rank + job.nprocs - 1) % job.nprocs;
    mw::fatal("mw_init",
              "no message from rank %d within %d s over %s: the ranks joined the job but the "
              "fabric does not connect them (check the network between their hosts, or "
              "choose the interface with FI_TCP_IFACE; MW_STARTUP_TIMEOUT sets the wait)",
              prev, timeout_ms / 1000, mw::transport::provider_name().c_str());
  }
  mw::transport::set_stall_timeout(mw::transport::kDefaultStallTimeoutMs);
}

// A rank that exits without mw_finalize stops the job (mwrun says so); one that holds
// locks then also leaves their waiters without them, which only this rank can name.
void note_locks_at_exit() {
  if (g_state != JobState::kRunning || mw::g_failed) return;
  std::string held;
  for (const auto &[lock, mode] : mw::locks::held_locks())
    held += (held.empty() ? "" : ", ") + mw::protocol::lock_name(reinterpret_cast<void *>(lock)) +
            (mode == MW_EXCLUSIVE ? " (exclusive)" : " (non-exclusive)");
  if (!held.empty())
    mw::warn("exit", "this rank exits without mw_finalize, holding lock%s %s: no other rank can have %s",
             held.find(", ") != std::string::npos ? "s" : "", held.c_str(),
             held.find(", ") != std::string::npos ? "them" : "it");
}

}  // namespace

MW_EXPORT int mw_init(int *argc, char ***argv) {
  mw::ApiCall api_call_(__builtin_return_address(0));
  (void)argc;
  (void)argv;
  if (g_state != JobState::kNotStarted)
    mw::fatal("mw_init", "called twice (each process joins the job once)");
  // join sets mw::g_rank as soon as it knows it, so that its own errors name the rank.
  const mw::bootstrap::Job job = mw::bootstrap::join(startup_timeout_ms());
  g_nprocs = job.nprocs;
  mw::waits::open(mw::settings::text(mw::settings::Id::MW_JOB_DIR), job.rank,
                  mw::bootstrap::host_name(job, job.rank).c_str());
  mw::waits::set_symbolizers(mw::symbols::wait_name_quick, mw::symbols::wait_name);
  // Not from a signal handler's call: the namer runs addr2line.
  mw::set_call_site_namer([](uintptr_t pc) {
    return mw::signals::in_handler() ? std::string() : mw::symbols::program_call_site(pc);
  });
  mw::unmarked_calls::require_pass();
  mw::heap::init(job.rank, job.nprocs);
  mw::protocol::start(job.rank, job.nprocs);
  // With more than one rank, connect_ranks installs it after the transport's endpoint
  // exists (see copysets::report_faults).
  if (job.nprocs == 1) mw::copysets::report_faults();
  if (job.nprocs > 1) {
    mw::dirty::start_fences();  // before any thread but this one takes marks
    connect_ranks(job, startup_timeout_ms());
    mw::pending_updates::start_flusher();
  }
  // Once per job: calls the pass could not verify, to functions not compiled by mwcc.
  if (job.rank == 0 && mw::settings::number(mw::settings::Id::MW_WARN_UNMARKED) != 0)
    mw::unmarked_calls::check();
  mw::check::start();  // a check build's checks (check/checker.hpp)
  mw::advise::start();  // mwrun --advise: its record (check/advisor.hpp)
  mw::trace::start(job.rank, "mw_init");  // mwrun --trace, MW_TRACE (core/trace.hpp)
  // Read at mw_finalize; a value that is no statistics format stops the job now, not
  // after the whole run.
  (void)mw::settings::text(mw::settings::Id::MW_STATS);
  mw::stats::start();  // elapsed time begins once every rank has joined
  g_state = JobState::kRunning;
  std::atexit(note_locks_at_exit);  // before mw_fork_serve's, so after it at exit
  return 0;
}

MW_EXPORT void mw_finalize(void) {
  MW_ENTER("mw_finalize");
  // A lock still held here is never granted again: a rank that asks for it would wait
  // forever, and the data written under it since its last release goes nowhere.
  for (const auto &[lock, mode] : mw::locks::held_locks())
    mw::fatal("mw_finalize", "lock %s is still held by this rank (%s): release every lock before mw_finalize",
              mw::protocol::lock_name(reinterpret_cast<void *>(lock)).c_str(),
              mode == MW_EXCLUSIVE ? "exclusive" : "non-exclusive");
  if (g_fork_serving && mw::g_rank == 0) mw::fork::end();  // the workers finalize too
  mw::check::stop();
  mw::pending_updates::finish();  // the last updates reach their copysets
  mw::barriers::finalize();  // a barrier some rank still waits at stops the job here
  mw::advise::finish();
  {
    mw::waits::Waiting w(mw::waits::Kind::kFinalize, 0, -1);
    mw::bootstrap::leave();  // every rank has stopped sending: a job-wide barrier
  }
  // Only now are the figures final: until every rank had arrived, this rank still
  // served page fetches (a master reading results after the terminating barrier).
  mw::stats::finish("mw_finalize");
  mw::trace::finish("mw_finalize");
  if (g_nprocs > 1) mw::transport::close();
  mw::copysets::stop();
  mw::waits::close();
  g_state = JobState::kFinished;
}

MW_EXPORT int mw_rank(void) {
  MW_ENTER("mw_rank");
  return mw::g_rank;
}

MW_EXPORT int mw_nprocs(void) {
  MW_ENTER("mw_nprocs");
  return g_nprocs;
}

// ---- Fork/join ----

namespace {
void require_creator(const char *call) {
  require_running(call);
  if (!g_fork_serving)
    mw::fatal(call, "called without mw_fork_serve: every rank calls it right after mw_init");
  if (mw::g_rank != 0)
    mw::fatal(call, "called on a worker: only rank 0 (the creator) forks and joins");
}

// Rank 0 of a fork/join program may end with exit() (as threaded programs do): the
// workers wait for its word, so the job is finalized here rather than failed. Not after
// an error of the runtime's, nor with a fork outstanding (the workers may be waiting
// for rank 0 at a barrier): the job then stops as when any rank exits without
// mw_finalize, naming rank 0.
void finalize_at_exit() {
  if (g_state != JobState::kRunning || mw::g_failed) return;
  if (mw::fork::outstanding()) {
    mw::warn("exit", "rank 0 exits with a fork outstanding (no mw_join): the job stops");
    return;
  }
  mw_finalize();
}
}  // namespace

MW_EXPORT void mw_fork_serve(void) {
  MW_ENTER("mw_fork_serve");
  if (g_fork_serving) mw::fatal("mw_fork_serve", "called twice");
  g_fork_serving = true;
  if (mw::g_rank == 0) {
    std::atexit(finalize_at_exit);
    return;
  }
  // The worker waits between starts at this call (MW_ENTER); the functions it runs make
  // their own calls.
  for (;;) {
    mw::fork::Function fn = mw::fork::next();
    if (!fn) break;
    mw::copysets::join_landed();  // pages bound in part that the fork's data landed on
    mw::check::synced_unseen();
    fn();
    mw::fork::done();
  }
  mw_finalize();
  std::exit(0);
}

MW_EXPORT void mw_fork(void (*fn)(void)) {
  mw::ApiCall api_call_(__builtin_return_address(0));
  require_creator("mw_fork");
  if (!fn) mw::fatal("mw_fork", "fn is NULL: pass the function the other ranks run");
  // The forked function takes no argument: what it needs reaches the workers through
  // shared globals. A program with none was almost surely compiled without
  // -fmidway-shared-globals (its G_MALLOC pointers are then NULL on the workers).
  static bool told = false;
  const mw::window::Layout &w = mw::window::layout();
  if (!told && g_nprocs > 1 && w.static_begin == w.static_end) {
    told = true;
    mw::warn("mw_fork", "this program has no shared global (no MW_SHARED data): the workers see "
             "none of what rank 0 set up but mw_malloc memory they cannot find. A program "
             "written for threads is compiled with mwcc -fmidway-shared-globals");
  }
  mw::fork::start(fn);
}

MW_EXPORT void mw_join(void) {
  mw::ApiCall api_call_(__builtin_return_address(0));
  require_creator("mw_join");
  mw::fork::join();
  mw::copysets::join_landed();  // pages bound in part that the workers' data landed on
  mw::check::synced_unseen();
}

// ---- Semaphores and condition variables ----

MW_EXPORT void mw_sem_post(mw_sem_t *s) {
  MW_ENTER("mw_sem_post");
  mw::protocol::check_object("mw_sem_post", "semaphore", s, sizeof *s);
  mw::semaphores::post(s);
}

MW_EXPORT void mw_sem_wait(mw_sem_t *s) {
  MW_ENTER("mw_sem_wait");
  mw::protocol::check_object("mw_sem_wait", "semaphore", s, sizeof *s);
  mw::semaphores::wait(s);
  mw::check::synced_unseen();  // semaphores carry no clock: the checker cannot order across them
}

MW_EXPORT void mw_cond_wait(mw_cond_t *c, mw_lock_t *l) {
  MW_ENTER("mw_cond_wait");
  mw::protocol::check_object("mw_cond_wait", "condition", c, sizeof *c);
  mw::semaphores::cond_wait(c, l);
  mw::check::synced_unseen();
}

MW_EXPORT void mw_cond_signal(mw_cond_t *c) {
  MW_ENTER("mw_cond_signal");
  mw::protocol::check_object("mw_cond_signal", "condition", c, sizeof *c);
  mw::semaphores::cond_signal(c, false);
}

MW_EXPORT void mw_cond_broadcast(mw_cond_t *c) {
  MW_ENTER("mw_cond_broadcast");
  mw::protocol::check_object("mw_cond_broadcast", "condition", c, sizeof *c);
  mw::semaphores::cond_signal(c, true);
}

MW_EXPORT void *mw_malloc(size_t size) {
  MW_ENTER("mw_malloc");
  return mw::heap::allocate(size, mw::heap::kDefaultLine, "mw_malloc", __builtin_return_address(0));
}

MW_EXPORT void *mw_malloc_lines(size_t size, size_t line) {
  MW_ENTER("mw_malloc_lines");
  return mw::heap::allocate(size, line, "mw_malloc_lines", __builtin_return_address(0));
}

MW_EXPORT void mw_free(void *p) {
  MW_ENTER("mw_free");
  // A block with bytes bound to a lock or a barrier keeps its addresses: every rank
  // that made or saw the binding keeps it, so a new block there would be bound too, and
  // its data would move only with that object (a barrier-bound block freed after its
  // last crossing, as TUTORIAL.md's, is the usual case).
  uintptr_t base = 0, caller = 0;
  size_t size = 0;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const bool bound = mw::heap::block_of(a, &base, &size, &caller) && base == a &&
                     (mw::locks::guard_of(a, a + size).object != 0 || mw::barriers::guard_of(a, a + size).object != 0);
  mw::heap::release(p, !bound);
}

// A poll at a loop's back-edge (midway.h, "Polls"; pass/Polls.cpp) found this rank's poll
// word set: serve what peers posted, here, instead of waiting for the service thread to
// get a core. Nothing in a signal handler (it may have interrupted malloc or the runtime
// itself: core/signals.hpp) or outside a running job; serve_polled() declines inside
// the runtime on this thread and while another thread holds the progress role.
MW_EXPORT void __mw_poll(void) {
  if (mw::signals::in_handler() || g_state != JobState::kRunning) return;
  if (const int n = mw::transport::serve_polled(); n > 0) mw::stats::polls_served(n);
}

MW_EXPORT void __mw_mark_range(const void *addr, size_t len) { mw::dirty::mark(addr, len); }

MW_EXPORT void __mw_mark_rows(const void *addr, size_t len, ptrdiff_t stride, size_t rows) {
  mw::dirty::mark_rows(addr, len, stride, rows);
}

// Compiled code calls this before a C library call that hands [addr, addr+len) to the
// kernel (read, write, fread, fwrite, ...: pass/MidwayInstrument.cpp, getSyscallBuffer):
// a page of it this rank holds no copy of would fail the system call with EFAULT.
// Nothing in a signal handler (the fetch could meet the runtime mid-call).
MW_EXPORT void __mw_before_syscall(const void *addr, size_t len, int kernel_writes) {
  if (len == 0 || g_state != JobState::kRunning || mw::signals::in_handler()) return;
  mw::copysets::bring_in(addr, len, kernel_writes != 0);
}

MW_EXPORT void mw_written(const void *addr, size_t len) {
  if (len == 0) return;
  mw::ApiCall api_call_(__builtin_return_address(0));
  if (!addr || !mw::window::is_shared(addr, len))
    mw::fatal("mw_written", "%s is not in shared memory: give MW_SHARED data or memory from mw_malloc",
              mw::symbols::described_range(reinterpret_cast<uintptr_t>(addr), len).c_str());
  mw::dirty::mark(addr, len);
}

MW_EXPORT size_t mw_dirty_count(const void *addr, size_t len) {
  mw::ApiCall api_call_(__builtin_return_address(0));
  return mw::dirty::count(addr, len);
}

MW_EXPORT void mw_dirty_clear(const void *addr, size_t len) {
  mw::ApiCall api_call_(__builtin_return_address(0));
  mw::dirty::clear(addr, len);
}

MW_EXPORT void mw_stats_get(mw_stats_t *out) {
  MW_ENTER("mw_stats_get");
  if (!out) mw::fatal("mw_stats_get", "out is NULL: pass the address of an mw_stats_t");
  *out = mw::stats::to_public(mw::stats::snapshot());
}

MW_EXPORT void mw_stats_reset(void) {
  MW_ENTER("mw_stats_reset");
  mw::stats::reset();
}

MW_EXPORT void mw_phase_begin(const char *name) {
  MW_ENTER("mw_phase_begin");
  mw::stats::phase_begin("mw_phase_begin", name);
}

MW_EXPORT void mw_phase_end(const char *name) {
  MW_ENTER("mw_phase_end");
  mw::stats::phase_end("mw_phase_end", name);
}

MW_EXPORT double mw_phase_seconds(const char *name) {
  MW_ENTER("mw_phase_seconds");
  return mw::stats::phase_seconds("mw_phase_seconds", name);
}

// ---- Entry consistency ----

MW_EXPORT void mw_acquire(mw_lock_t *l, mw_mode_t mode) {
  MW_ENTER("mw_acquire");
  mw::locks::acquire(l, mode);
  mw::copysets::join_landed();
  mw::check::acquired();
  mw::advise::on_acquire(l, mode);
}
MW_EXPORT void mw_release(mw_lock_t *l) {
  MW_ENTER("mw_release");
  mw::pending_updates::flush_release();  // release consistency: before the lock can move on
  mw::advise::on_release(l);
  mw::locks::release(l);
}
// A start-up binding must come before any rank writes the data: the writes made before
// it travel as release consistency sends them, to the pages' copysets, not with the lock,
// and a rank that never held a page takes its initial image at the binding. Refused,
// rather than leaving the other ranks with stale data (test/e2e/bind_after_writes.c). Not
// for a binding changed under the lock held exclusively, which travels with the lock.
static void check_start_up_binding(const char *call, bool lock, const void *object, const void *addr,
                                   size_t len) {
  if (!addr || len == 0 || !mw::window::is_shared(addr, len)) return;  // the binding says why
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  // Bound to the same object already (a binding made again): its writes are that object's.
  const mw::Guard now = lock ? mw::locks::guard_of(a, a + len) : mw::barriers::guard_of(a, a + len);
  if (now.object == reinterpret_cast<uintptr_t>(object) && now.range.addr <= a && now.range.end() >= a + len) return;
  bool late = false;
  const std::string lost = mw::copysets::written_before_binding(addr, len, &late);
  if (lost.empty()) return;
  const char *what = lock ? "lock" : "barrier";
  const std::string why =
      late ? lost + ". Make start-up bindings on every rank before any rank first acquires the "
                    "lock (a barrier after them)"
           : lost + ", and those writes would not reach the ranks that take the data from the " +
                 what + ". Bind shared data before any rank writes it, then write it " +
                 (lock ? "holding the lock MW_EXCLUSIVE" : "between crossings");
  mw::fatal(call, "%s ([%#lx, +%zu)) cannot be bound to %s %s at start-up: %s",
            mw::protocol::data_name(a, len).c_str(), static_cast<unsigned long>(a), len, what,
            (lock ? mw::protocol::lock_name(object) : mw::protocol::barrier_name(object)).c_str(),
            why.c_str());
}

MW_EXPORT void mw_bind(mw_lock_t *l, const void *addr, size_t len) {
  MW_ENTER("mw_bind");
  mw::protocol::check_object("mw_bind", "lock", l, sizeof *l);
  // A binding made holding the lock carries the data with it (API.md). Until now the data
  // was release consistent: this rank may hold no copy of its pages, or a stale one (its
  // copy dropped when the data was unbound), and the next holders likewise. So the pages
  // come in first, as a touch would fetch them, and the whole range is marked: the lock's
  // next grant stamps and ships it. (Without the fetch a binder that had never touched
  // the data read zeros, and so did every rank after it.)
  const bool holding = mw::locks::held_mode(l) == MW_EXCLUSIVE;
  const bool carries = holding && mw::protocol::model() == mw::protocol::Model::kEntry &&
                       g_nprocs > 1 && addr && len > 0 && mw::window::is_shared(addr, len);
  if (!holding) check_start_up_binding("mw_bind", true, l, addr, len);
  if (carries) mw::copysets::bring_in(addr, len, false);
  mw::locks::bind(l, addr, len);
  if (carries) mw::dirty::mark(addr, len);
  mw::check::note_binding(l, addr, len, __builtin_return_address(0));
}
MW_EXPORT void mw_unbind(mw_lock_t *l, const void *addr, size_t len) {
  MW_ENTER("mw_unbind");
  mw::locks::unbind(l, addr, len);
}
MW_EXPORT void mw_barrier(mw_barrier_t *b) {
  MW_ENTER("mw_barrier");
  const uint64_t flushed = mw::pending_updates::flush_for_barrier(false);
  mw::locks::startup_calls_made();
  mw::barriers::cross(b, false, flushed);
  mw::copysets::join_landed();
  mw::pending_updates::await_barrier_updates(b);  // the other rank's, pushed without waiting
  mw::check::crossed();
  mw::advise::on_crossing(b);
}
MW_EXPORT void mw_barrier_bind(mw_barrier_t *b, const void *addr, size_t len) {
  MW_ENTER("mw_barrier_bind");
  mw::protocol::check_object("mw_barrier_bind", "barrier", b, sizeof *b);
  check_start_up_binding("mw_barrier_bind", false, b, addr, len);
  mw::barriers::bind(b, addr, len);
  mw::check::note_binding(b, addr, len, __builtin_return_address(0));
}
MW_EXPORT void mw_barrier_final(mw_barrier_t *b) {
  MW_ENTER("mw_barrier_final");
  // A final crossing's flush waits for its acknowledgements: the ranks other than the
  // manager do not wait there, so nobody would wait for their updates after it.
  mw::barriers::cross(b, true, mw::pending_updates::flush_for_barrier(true));
  mw::check::synced_unseen();  // a final crossing waits for nobody
  mw::advise::on_crossing(b);
}

// ---- Release and processor consistency ----

MW_EXPORT void mw_fence(void) {
  MW_ENTER("mw_fence");
  mw::pending_updates::flush();
}

MW_EXPORT void mw_processor_consistent(const void *addr, size_t len, unsigned flush_interval_us) {
  MW_ENTER("mw_processor_consistent");
  if (flush_interval_us == 0)
    mw::fatal("mw_processor_consistent", "flush interval 0 for [%p, +%zu): give a number of "
              "microseconds greater than 0", addr, len);
  if (len == 0 || !addr || !mw::window::contains(addr, len))
    mw::fatal("mw_processor_consistent", "%s is not in shared memory: give MW_SHARED data or memory "
              "from mw_malloc", mw::symbols::described_range(reinterpret_cast<uintptr_t>(addr), len).c_str());
  mw::pending_updates::flush();  // releases before may have left updates pending (flush_release)
  mw::copysets::processor_consistent(addr, len, flush_interval_us);
  mw::pending_updates::start_flusher();
}

MW_EXPORT void mw_discard(const void *addr, size_t len) {
  MW_ENTER("mw_discard");
  if (len == 0 || !addr || !mw::window::is_shared(addr, len))
    mw::fatal("mw_discard", "%s is not in shared memory: give MW_SHARED data or memory from mw_malloc",
              mw::symbols::described_range(reinterpret_cast<uintptr_t>(addr), len).c_str());
  if (g_nprocs == 1) return;  // every copy is the only one
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  mw::Bindings drop = mw::locks::discard(a, a + len);
  for (const mw::Range &r : mw::barriers::bound_in(a, a + len).ranges()) drop.remove(r.addr, r.len);
  mw::pending_updates::flush();  // what this rank wrote to copyset pages reaches the others first
  mw::copysets::leave(addr, len);
  mw::transport::wait_sends();  // a grant read from these pages still being read
  mw::copysets::drop_entry(drop);
}

// Not part of the API (midway.h does not declare it): the rank that homes the shared
// page holding p (-1 outside the window), so that the copyset tests can pick pages by
// home (test/rc/rc_test.h) without repeating the placement rule.
MW_EXPORT int __mw_home_of(const void *p) {
  MW_ENTER("__mw_home_of");
  return mw::copysets::enabled() ? mw::copysets::home_of(reinterpret_cast<uintptr_t>(p)) : 0;
}

// Not part of the API either: fault injection for test/rc/kept_updates.c
// (copysets::delay_joins).
MW_EXPORT void __mw_test_delay_joins(int to, unsigned ms) {
  MW_ENTER("__mw_test_delay_joins");
  mw::copysets::delay_joins(to, ms);
}
