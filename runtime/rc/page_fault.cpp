// The copyset fault: a touch of a page this rank holds no copy of fetches it from its
// home (Midway 4.4), and any other fault is reported as the crash it is.
#include "core/waits.hpp"
#include "rc/copysets.hpp"
#include "rc/page_state.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <span>
#include <vector>

#include "memory/dirty.hpp"
#include "core/error.hpp"
#include "memory/heap.hpp"
#include "memory/symbols.hpp"
#include "ec/protocol.hpp"
#include "core/settings.hpp"
#include "core/stats.hpp"
#include "transport/transport.hpp"
#include "memory/window.hpp"


namespace mw::copysets {
namespace {

struct sigaction g_previous_segv;
// A fault on a present page that is not frozen: the freeze it met may have ended before
// the handler looked. It is retried once per address and thaw; a second fault with no
// thaw between is a real one and is reported.
std::atomic<uintptr_t> g_retried_at{0};
std::atomic<uint32_t> g_retried_thaws{0};
// After mw_finalize the handler stays, to say what a fault in the window is: the job's
// transport is closed, and a page this rank holds no copy of can no longer come.
std::atomic<bool> g_finalized{false};

}  // namespace

// ---- At the faulting rank ----

namespace {

// Whether fetch readies the pages it asks for ahead while the request travels. At two
// ranks the home holds each of them alone (this rank is the only other) and sends them
// all; with more ranks it leaves out those another rank holds, and readying them for
// nothing, then taking them back, cost more than it saved (RADIX at four ranks: 298 ->
// 397 ms; docs/PERFORMANCE.md, "Read-ahead faults at two ranks, continued").
bool ready_ahead_early() { return g_np == 2; }

// Readies the pages `page + i` pages for each bit i of `mask`, a run at a time (one at a
// time, their first use was most of a read-ahead's cost), leaving out those a grant's
// data made entry consistent. A run stops where static data ends (ready's two ways).
void ready_pages(uintptr_t page, uint64_t mask) {
  uintptr_t run = 0, run_end = 0;
  for (uint64_t left = mask; left != 0; left &= left - 1) {
    const uintptr_t q = page + static_cast<uintptr_t>(__builtin_ctzll(left)) * g_page;
    if (g_state[index_of(q)].load(std::memory_order_relaxed) & kEntry) continue;
    if (q != run_end || is_static(q) != is_static(run)) {
      if (run_end > run) ready(run, run_end);
      run = q;
    }
    run_end = q + g_page;
  }
  if (run_end > run) ready(run, run_end);
}

// The pages asked for ahead that came (serve_ahead, in copysets.cpp): each lands as a
// fetched page does, its copyset the home and this rank. Under g_mu.
void land_ahead(const Header &h, Bytes payload) {
  const AheadData a = protocol::read_body<AheadData>(h, payload.first(std::min(payload.size(), sizeof(AheadData))));
  const Bytes data = payload.subspan(sizeof a);
  const uintptr_t page = checked_page(h, a.d.page);
  const uint64_t came = a.d.members, with = a.with_data, homed = a.homed;
  if (page != g_fetch_page || (came & ~g_fetch_ahead) || (with & ~came) || (homed & ~came) || (homed & with))
    protocol::malformed(h, "pages this rank did not ask for", protocol::page_object(page));
  if (came & ~with & ~g_fetch_ahead_pristine) protocol::malformed(h, "no data for a page this rank held before",
      protocol::page_object(page));
  if (homed != 0 && (is_static(page) || h.sender != heap::owner_of(page)))
    protocol::malformed(h, "pages made this rank's by a rank that did not allocate them",
        protocol::page_object(page));
  if (data.size() != static_cast<size_t>(__builtin_popcountll(with)) * g_page)
    protocol::malformed(h, "not the pages' worth of data", protocol::page_object(page));
  // At two ranks fetch readied the pages while the request travelled.
  if (!ready_ahead_early()) ready_pages(page, came);
  const std::byte *bytes = data.data();
  for (uint64_t left = came; left != 0; left &= left - 1) {
    const int i = __builtin_ctzll(left);
    const uintptr_t q = page + static_cast<uintptr_t>(i) * g_page;
    const uint8_t s = g_state[index_of(q)].load(std::memory_order_relaxed);
    const bool has_data = with >> i & 1;
    if (s & kEntry) {  // a grant's data landed meanwhile: entry consistent here now
      set_state(q, s & ~kFetching);
    } else {
      clear_marks(q);
      if (has_data) std::memcpy(reinterpret_cast<void *>(q), bytes, g_page);
      set_state(q, kPresent | kMember | kHadCopy);
      const bool mine = homed >> i & 1;
      learn_home(q, mine ? g_me : h.sender);
      info(q).members = mine ? bit(g_me) : bit(h.sender) | bit(g_me);
      refresh(q);
    }
    if (has_data) bytes += g_page;
  }
  g_fetch_ahead &= ~came;
}

// The answer for the page faulted on ends the fetch: the pages asked for ahead that have
// not come were left out by the home (they came before it, if at all).
void end_ahead() {
  for (uint64_t left = g_fetch_ahead; left != 0; left &= left - 1) {
    const uintptr_t q = g_fetch_page + static_cast<uintptr_t>(__builtin_ctzll(left)) * g_page;
    const uint8_t s = g_state[index_of(q)].fetch_and(static_cast<uint8_t>(~kFetching), std::memory_order_release);
    // Readied for nothing (fetch): inaccessible again, unless a grant's data made it
    // entry consistent meanwhile.
    if (ready_ahead_early() && !(s & kEntry)) {
      if (is_static(q)) make_none(q);
      else window::uncommit_page(q);
    }
  }
  g_fetch_ahead = 0;
}

}  // namespace

void on_page_data(const Header &h, Bytes payload) {
  std::lock_guard<std::mutex> g(g_mu);
  PageData d;
  std::vector<Applied> applied;  // kApplied: the flushes the page holds
  if (h.bulk_len != 0 && payload.size() == h.bulk_len) {  // the page's bytes alone (serve())
    if (h.bulk_len != g_page) protocol::malformed(h, "not a page's worth of data",
                          g_fetch_page ? protocol::page_object(g_fetch_page) : std::string());
    d = PageData{g_fetch_page, h.clock, kOk, 0};
  } else {
    if (payload.size() < sizeof d) protocol::malformed(h, "wrong length");
    std::memcpy(&d, payload.data(), sizeof d);
    if (d.status == kAhead) return land_ahead(h, payload);
    if (d.status == kApplied) {
      if (d.reserved >= static_cast<uint32_t>(g_np) ||
          payload.size() != sizeof d + d.reserved * sizeof(Applied) + g_page)
        protocol::malformed(h, "wrong length");
      applied.resize(d.reserved);
      std::memcpy(applied.data(), payload.data() + sizeof d, d.reserved * sizeof(Applied));
      for (const Applied &a : applied)
        if (a.rank < 0 || a.rank >= g_np || a.rank == g_me || a.rank == h.sender || !(d.members & bit(a.rank)))
          protocol::malformed(h, "flushes of a rank that is not another member of the copyset");
      payload = payload.subspan(sizeof d + d.reserved * sizeof(Applied));
      d.status = kOk;
    } else {
      if (payload.size() != sizeof d) protocol::malformed(h, "wrong length");
      if (d.status == kOk) protocol::malformed(h, "a page without its data");
    }
  }
  uintptr_t page = checked_page(h, d.page);
  uint8_t s = g_state[index_of(page)].load(std::memory_order_relaxed);
  if (page != g_fetch_page || !(s & kFetching)) protocol::malformed(h, "a page this rank did not ask for",
      protocol::page_object(page));
  end_ahead();
  if (d.status == kNotShared) {
    set_state(page, s & ~kFetching);
    g_fetch_result.store(2, std::memory_order_release);
    return;
  }
  const bool homed = d.status == kHomed;
  const bool unwritten = d.status == kUnwritten || homed;
  if (!(d.members & bit(g_me))) protocol::malformed(h, "a copyset without this rank",
      protocol::page_object(page));
  if (unwritten && !g_fetch_pristine) protocol::malformed(h, "no data for a page this rank held before",
      protocol::page_object(page));
  if (homed && (is_static(page) || h.sender != heap::owner_of(page) || d.members != bit(g_me)))
    protocol::malformed(h, "a page made this rank's by a rank that did not allocate it",
        protocol::page_object(page));
  // The sender is the page's home (this rank, if it gave the page away): requests for the
  // page go there from now on.
  learn_home(page, homed ? g_me : h.sender);
  if (g_fetch_ready.load(std::memory_order_acquire) != page) {  // not if fetch() polls, as it does
    ready(page);
    if (!(s & kLanded)) clear_marks(page);
  }
  const std::byte *bytes = payload.data();
  if (unwritten) {
    // This rank's own initial image is the page.
  } else if (!(s & kPartlyBound)) {
    std::memcpy(reinterpret_cast<void *>(page), bytes, g_page);
  } else {
    // Only the unbound bytes: the bound ones are entry consistent, and what this rank
    // holds of them (a grant or a barrier's data that landed during the fetch, or their
    // initial values) is newer than the home's copy, which no lock keeps current.
    uintptr_t at = page;
    auto copy_to = [&](uintptr_t end) {
      if (end <= at) return;
      if (!(s & kLanded)) {
        std::memcpy(reinterpret_cast<void *>(at), bytes + (at - page), end - at);
        return;
      }
      // Bound data landed here while the page was absent (place_entry), and the
      // application may have written the unbound bytes since: those writes stay (their
      // marks are taken at the next flush), the rest comes from the home.
      for (uintptr_t x = dirty::next(at, end, false); x < end;) {
        const uintptr_t y = dirty::next(x, end, true);
        std::memcpy(reinterpret_cast<void *>(x), bytes + (x - page), y - x);
        x = dirty::next(y, end, false);
      }
    };
    for (const Range &r : g_bound.ranges()) {
      if (r.end() <= page) continue;
      if (r.addr >= page + g_page) break;
      copy_to(std::max(r.addr, page));
      at = std::max(at, std::min(r.end(), page + g_page));
    }
    copy_to(page + g_page);
  }
  // Updates that overtook the page, in arrival order, but those the page already holds:
  // the home's own (it sent them before the page, from the memory the page is a copy of)
  // and the flushes of other members it had applied (kApplied).
  for (const Kept &k : g_kept) {
    if (page_of(k.addr) != page || k.sender == h.sender) continue;
    auto held = std::find_if(applied.begin(), applied.end(), [&](const Applied &a) { return a.rank == k.sender; });
    if (k.flush != 0 && held != applied.end() && k.flush <= held->flush) continue;
    std::memcpy(reinterpret_cast<void *>(k.addr), k.bytes.data(), k.bytes.size());
  }
  g_kept.clear();
  set_state(page, static_cast<uint8_t>((s & kPartlyBound) | kPresent | kMember | kHadCopy));
  info(page).members = d.members;
  refresh(page);
  g_fetch_result.store(1, std::memory_order_release);
}

namespace {

// How many pages a fault asks for at most, itself included (a mask of them travels):
// MW_READ_AHEAD, read at mw_init (report_faults).
int g_read_ahead = 64;

// How many it asks for: the read-ahead window, kept per home. More pages a fault save
// round trips where a program works through another rank's array; but each copy read
// ahead draws its home's writes at every release, which a program that reads only a
// neighbour's edge (OCEAN) pays for nothing (docs/PERFORMANCE.md, "A read-ahead window").
//  - A fault that writes asks for g_read_ahead pages: a rank that writes into another
//    rank's pages is filling an array (RADIX's buckets, a band of a matrix) and writes
//    the pages after soon.
//  - A fault that reads asks for one page, or for twice as many as the last fault from
//    that home did when it lands at most that many pages past where they ended: the
//    program walked through them (Linux's read-ahead for files). FFT's transposes, which
//    read every other page of the other rank's rows, reach g_read_ahead pages a fault
//    after six faults; OCEAN brings its neighbour's edge alone.
// Application thread only (fetch).
struct Window {
  uintptr_t next = 0;  // the first page after the last fault's pages from this home
  int pages = 0;       // how many pages that fault asked for
};
std::vector<Window> &g_window = *new std::vector<Window>;

// Fetches `page` from its home and joins its copyset. Application thread (a fault, a
// bind, a lock object's first use): waits, progressing the transport.
bool fetch(uintptr_t page, int home, bool write) {
  stats::page_fault();
  stats::ScopedWait wait(stats::Wait::Fault, home, page);
  waits::Waiting waiting(waits::Kind::kPage, page, home);
  bool pristine;
  uint64_t ahead = 1, ahead_pristine = 0;
  {
    std::lock_guard<std::mutex> g(g_mu);
    const uint8_t s = g_state[index_of(page)].load(std::memory_order_relaxed);
    pristine = !(s & kHadCopy);
    // A page of a block this rank allocated and gave to its first user: the block is in
    // use here too, and its other pages stay here (may_give).
    uintptr_t base, caller;
    size_t size;
    if (!is_static(page) && heap::owner_of(page) == g_me && heap::block_of(page, &base, &size, &caller))
      g_blocks_used_here.insert(base);
    g_fetch_page = page;
    g_fetch_pristine = pristine;
    // Read-ahead: pages that follow with the same home, which this rank has no business
    // with (never here, or left), are asked for too, up to the window; the home
    // sends those it holds alone in one message (serve_ahead). A program that works
    // through an array it did not write itself (a worker's band of what rank 0 read in,
    // a transpose's columns) then waits for one round trip per g_read_ahead pages instead
    // of one a page, and the home, busy computing, is interrupted that much less. Not
    // with processor-consistent data, whose pages are not the copysets' alone.
    Window &w = g_window[static_cast<size_t>(home)];
    const bool walking = page >= w.next && page <= w.next + static_cast<uintptr_t>(w.pages) * g_page;
    const int window = write ? g_read_ahead : walking ? std::min(2 * w.pages, g_read_ahead) : 1;
    int asked = 1;
    int span = 1;
    if (shortest_flush_us() == 0)
      for (int i = 1; i < 64 && asked < window; ++i) {
        const uintptr_t q = page + static_cast<uintptr_t>(i) * g_page;
        if (q >= window::kEnd) break;
        // At two ranks, heap pages this rank holds (its own, or copies) are passed over:
        // homes by first use interleave there (RADIX's keys), and stopping at them cut
        // most windows short. Static data stops there (its homes are by object), and so
        // does a job of more ranks (RADIX at four ranks took three times as long).
        const uint8_t sq = g_state[index_of(q)].load(std::memory_order_relaxed);
        const bool pass = home_of(q) != home || (sq & ~kHadCopy);
        if (pass && (is_static(q) || g_np != 2)) break;
        span = i + 1;
        if (pass) continue;
        ahead |= bit(i);
        if (!(sq & kHadCopy)) ahead_pristine |= bit(i);
        set_state(q, sq | kFetching);
        ++asked;
      }
    w = Window{page + static_cast<uintptr_t>(span) * g_page, asked};
    wait.count = static_cast<uint64_t>(asked);
    g_fetch_ahead = ahead & ~uint64_t{1};
    g_fetch_ahead_pristine = ahead_pristine;
    g_fetch_result.store(0, std::memory_order_relaxed);
    g_fetch_ready.store(0, std::memory_order_relaxed);
    set_state(page, s | kFetching);
  }
  // While the request travels and the home serves it, this thread readies the page for
  // its data: writable, in memory (no page fault when the data lands) and without stale
  // marks: its CPU is idle then anyway, and done by the handler once the data had come this
  // was a fifth of the fault (docs/PERFORMANCE.md, "Figures behind the code"). The page is accessible before its data is here, but only to this
  // thread, which waits for the data (one thread per rank touches shared data), and to
  // handlers, which keep updates for it aside while kFetching. It does so holding the
  // progress role, so the reply waits in the queue meanwhile and rings nobody.
  transport::progress_after(
      [&] {
        PageRequest req{page, (pristine ? 1u : 0u) | ahead_pristine, ahead, -1, 0};
        protocol::send_body(home, MsgType::kPageRequest, req);
        ready(page);
        // And, at two ranks, the pages asked for ahead; those that do not come are taken
        // back (end_ahead). Nothing touches them meanwhile: this thread waits for the
        // answer, and handlers keep their updates aside while they are kFetching.
        if (ready_ahead_early()) ready_pages(page, ahead & ~uint64_t{1});
        std::lock_guard<std::mutex> g(g_mu);
        // Marks on a page that data landed on while it was absent are writes made since,
        // newer than the home's bytes (on_page_data keeps them).
        if (!(g_state[index_of(page)].load(std::memory_order_relaxed) & kLanded)) clear_marks(page);
        info(page);  // its entry is made here too, not in the handler
        g_fetch_ready.store(page, std::memory_order_release);
      },
      [] { return g_fetch_result.load(std::memory_order_acquire) != 0; });
  if (g_fetch_result.load(std::memory_order_acquire) == 2 && !is_static(page))
    window::uncommit_page(page);  // nobody allocated it: the access faults again, and is reported
  return g_fetch_result.load(std::memory_order_acquire) == 1;
}

// ---- The copyset fault ----

// The faulting instruction's address, or 0 where the context is not decoded.
uintptr_t pc_of(void *ctx) {
#if defined(__x86_64__)
  return static_cast<uintptr_t>(static_cast<ucontext_t *>(ctx)->uc_mcontext.gregs[REG_RIP]);
#else
  (void)ctx;
  return 0;
#endif
}

// ", by main+0x4c (pc 0x40128a)": the instruction that faulted, named if the
// executable's symbols are loaded already (loading them here would allocate).
void describe_pc(uintptr_t pc, char *out, size_t size) {
  out[0] = '\0';
  if (pc == 0) return;
  char name[256];
  if (symbols::code_if_loaded(pc, name, sizeof name))
    std::snprintf(out, size, ", by %s (pc %#lx)", name, static_cast<unsigned long>(pc));
  else
    std::snprintf(out, size, ", by the instruction at pc %#lx", static_cast<unsigned long>(pc));
}

// A crash's line on stderr, with no allocation (the fault may have come inside malloc):
// what was touched, then where the faulting instruction is. Its source line cannot be
// read here; mwrun names it from the rank's wait record when the rank has died.
void say(void *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void say(void *ctx, const char *fmt, ...) {
  char buf[640];
  int n = std::snprintf(buf, sizeof buf, "midway: rank %d: ", g_me);
  va_list ap;
  va_start(ap, fmt);
  n += std::vsnprintf(buf + n, sizeof buf - static_cast<size_t>(n), fmt, ap);
  va_end(ap);
  const uintptr_t pc = pc_of(ctx);
  waits::crashed(pc);
  if (n < static_cast<int>(sizeof buf)) describe_pc(pc, buf + n, sizeof buf - static_cast<size_t>(n));
  n = static_cast<int>(std::strlen(buf));
  if (n > static_cast<int>(sizeof buf) - 2) n = static_cast<int>(sizeof buf) - 2;
  buf[n++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, buf, static_cast<size_t>(n));
  (void)ignored;
}

// Whether a fault outside the window is this thread running out of stack: the address
// is next to the stack pointer (a call's push, or a frame's first touch).
bool stack_overflow(uintptr_t a, void *ctx) {
#if defined(__x86_64__)
  const auto sp = static_cast<uintptr_t>(static_cast<ucontext_t *>(ctx)->uc_mcontext.gregs[REG_RSP]);
  return a + 65536 >= sp && a <= sp + 65536;
#else
  (void)a;
  (void)ctx;
  return false;
#endif
}

// Whether the faulting access was a write: the page-fault error code's bit 1 on x86-64.
// Elsewhere (not decoded) every fault counts as a write, and asks for the whole window.
bool is_write(void *ctx) {
#if defined(__x86_64__)
  return (static_cast<ucontext_t *>(ctx)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
  (void)ctx;
  return true;
#endif
}

// A fault on a page of the window this rank is not a member of is a copyset fault: fetch
// the page and retry the access. Any other fault is the crash it is: say where, and let
// the previous disposition (by default, death by SIGSEGV) have it.
void on_segv(int sig, siginfo_t *si, void *ctx) {
  if (si->si_code <= 0) {  // sent by kill or raise, not a fault: nothing to serve or to say
    sigaction(sig, &g_previous_segv, nullptr);
    raise(sig);
    return;
  }
  const uintptr_t a = reinterpret_cast<uintptr_t>(si->si_addr);
  const bool in_window = a >= window::kBase && a < window::kEnd;
  if (in_window && g_finalized.load(std::memory_order_relaxed)) {
    say(ctx, "segmentation fault at %p: shared memory touched after mw_finalize, on a page this "
        "rank holds no copy of (read shared results before mw_finalize)", si->si_addr);
  } else if (in_window && g_enabled) {
    const uintptr_t page = page_of(a);
    if (wait_thawed(page)) return;  // frozen for a moment (processor consistency): retried
    const int home = home_of(page);
    if (transport::in_runtime_context()) {
      say(ctx, "segmentation fault at %p: the runtime's own code touched shared page %p, which is "
          "not present on this rank (a Midway bug: please report it)",
          si->si_addr, reinterpret_cast<void *>(page));
    } else if (home < 0 || (home == g_me && !(state(page) & kPresent))) {
      say(ctx, "segmentation fault at %p: inside the shared window but not shared memory (no "
          "MW_SHARED data and no mw_malloc block there)", si->si_addr);
    } else if (!(state(page) & kPresent)) {
      int saved = errno;
      bool ok = fetch(page, home, is_write(ctx));
      errno = saved;
      if (ok) return;  // the access is retried, on the page now here
      say(ctx, "segmentation fault at %p: in the shared heap of rank %d, but not in memory it "
          "allocated with mw_malloc", si->si_addr, home);
    } else {
      // Present and not frozen: the freeze this access met may have ended before the look
      // above. Retried once per address and thaw; faulting again with no thaw between, it
      // is a real fault.
      const uint32_t thaws = g_thaws.load(std::memory_order_seq_cst);
      if (g_retried_at.load(std::memory_order_relaxed) != a ||
          g_retried_thaws.load(std::memory_order_relaxed) != thaws) {
        g_retried_at.store(a, std::memory_order_relaxed);
        g_retried_thaws.store(thaws, std::memory_order_relaxed);
        return;
      }
      say(ctx, "segmentation fault at %p (shared page %p is present on this rank)", si->si_addr,
          reinterpret_cast<void *>(page));
    }
  } else if (in_window) {  // a one-rank job: its shared memory is all accessible
    say(ctx, "segmentation fault at %p: inside the shared window but not shared memory (no "
        "MW_SHARED data and no mw_malloc block there)", si->si_addr);
  } else if (stack_overflow(a, ctx)) {
    say(ctx, "segmentation fault at %p: stack overflow (deep recursion, or large local arrays): "
        "raise the limit (ulimit -s) or allocate the arrays with malloc", si->si_addr);
  } else {
    say(ctx, "segmentation fault at %p (outside the shared window)", si->si_addr);
  }
  sigaction(sig, &g_previous_segv, nullptr);
  // returning re-runs the access, which now meets the previous disposition
}


// A stack of its own for the fault handler on the application thread, unless the program
// set one: a thread that ran out of stack would otherwise fault again entering the
// handler, and die without a word. Fetches run on it too, so it is large (only its
// touched pages take memory).
void use_signal_stack() {
  stack_t old{};
  if (sigaltstack(nullptr, &old) != 0 || !(old.ss_flags & SS_DISABLE)) return;
  constexpr size_t kSize = 1 << 20;
  const size_t guard = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void *p = mmap(nullptr, kSize + guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return;
  mprotect(p, guard, PROT_NONE);  // a guard below it
  stack_t ss{};
  ss.ss_sp = static_cast<char *>(p) + guard;
  ss.ss_size = kSize;
  if (sigaltstack(&ss, nullptr) != 0) munmap(p, kSize + guard);
}

}  // namespace

void report_faults() {
  g_me = protocol::rank();
  g_read_ahead = static_cast<int>(settings::number(settings::Id::MW_READ_AHEAD));
  g_window.assign(static_cast<size_t>(protocol::nprocs()), Window{});
  struct sigaction sa {};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  use_signal_stack();
  symbols::load();  // a crash names its instruction without reading the file then
  if (sigaction(SIGSEGV, &sa, &g_previous_segv) != 0) fatal_errno("mw_init", "cannot install the fault handler");
  g_handler = true;
}


void bring_in(const void *p, size_t len, bool write) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (!g_enabled || a >= window::kEnd || len > window::kEnd - a || a + len <= window::kBase) return;
  for (uintptr_t page = page_of(std::max(a, window::kBase)); page < a + len; page += g_page) {
    wait_thawed(page);  // frozen for a moment (processor consistency)
    if (state(page) & kPresent) continue;
    const int home = home_of(page);
    if (home < 0 || home == g_me || !fetch(page, home, write)) return;
  }
}

void join_landed() {
  if (g_landed_count.load(std::memory_order_acquire) == 0 || !t_app) return;
  std::vector<uintptr_t> pages;
  {
    std::lock_guard<std::mutex> g(g_mu);
    pages.swap(g_landed);
    g_landed_count.store(0, std::memory_order_relaxed);
  }
  for (uintptr_t page : pages) {
    const uint8_t s = state(page);
    if ((s & (kLanded | kPresent | kMember | kFetching | kEntry)) != (kLanded | kPresent)) continue;
    fetch(page, home_of(page), true);  // keeps what this rank wrote (on_page_data)
  }
}

void stop() {
  join_delayed_joins();  // delay_joins' senders: done by now in the test that uses them
  if (!g_handler) return;
  g_finalized.store(true, std::memory_order_relaxed);
}


}  // namespace mw::copysets
