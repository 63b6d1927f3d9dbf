// The state of this rank's pages (page_state.hpp): the state bytes and copyset views,
// and freezing.
#include "rc/page_state.hpp"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "ec/protocol.hpp"
#include "memory/dirty.hpp"

namespace mw::copysets {

bool g_enabled = false;
bool g_handler = false;  // on_segv installed (every job, from mw_init to mw_finalize)
int g_me = 0, g_np = 1;
size_t g_page = 4096;
std::atomic<uint8_t> *g_state = nullptr;  // one per page of the window
std::atomic<uint8_t> *g_home = nullptr;   // one per page of the window (heap pages only)

// The containers are never destroyed: the flusher thread and the fault handler may
// still use them while a rank that leaves without mw_finalize runs static destructors.
std::mutex g_mu;                 // a leaf: never held while waiting
std::map<uintptr_t, Info> &g_info = *new std::map<uintptr_t, Info>;
// SharedPage pages (copysets.hpp) and their entries in g_info: a flush visits them all,
// without a lookup each.
std::map<uintptr_t, const Info *> &g_shared = *new std::map<uintptr_t, const Info *>;
std::vector<uintptr_t> &g_shared_list = *new std::vector<uintptr_t>;
bool g_shared_list_stale = false;
std::atomic<size_t> g_shared_count{0};
Bindings &g_bound = *new Bindings;  // bound ranges on partly bound pages
std::set<uintptr_t> &g_blocks_used_here = *new std::set<uintptr_t>;
unsigned g_min_flush_us = 0;

// The fetch the application thread waits for (it has one at a time).
uintptr_t g_fetch_page = 0;
bool g_fetch_pristine = false;  // the fetch asked with the page's initial image here
uint64_t g_fetch_ahead = 0, g_fetch_ahead_pristine = 0;
std::atomic<int> g_fetch_result{0};  // 0 under way, 1 arrived, 2 not shared memory
std::atomic<uintptr_t> g_fetch_ready{0};  // the page is writable, in memory, its marks clear
std::vector<Kept> &g_kept = *new std::vector<Kept>;
std::vector<uint64_t> &g_applied = *new std::vector<uint64_t>;

// The leaves under way (mw_discard waits for them).
std::map<uintptr_t, Leaving> &g_leaving = *new std::map<uintptr_t, Leaving>;
std::atomic<size_t> g_leaving_count{0};


// Freezing (copysets.hpp, "issue order"). A fault on a frozen page waits on g_thaws, a
// futex word every thaw moves on; g_waiters says whether a thaw must wake anyone.
std::atomic<uint32_t> g_thaws{0};
std::atomic<uint32_t> g_waiters{0};
int g_mem = -1;  // /proc/self/mem: writes there ignore page protection
thread_local bool t_app = false;  // the application thread (the one that called mw_init)
// Runs of processor-consistent pages from the messages of a flush before its last, by
// sender (under g_mu): they land with the last.
std::vector<std::vector<std::pair<uintptr_t, std::vector<std::byte>>>> &g_deferred =
    *new std::vector<std::vector<std::pair<uintptr_t, std::vector<std::byte>>>>;

uint8_t state(uintptr_t page) {
  uint8_t s = g_state[index_of(page)].load(std::memory_order_acquire);
  if (s == 0 && home_of(page) == g_me && (is_static(page) || window::accessible(reinterpret_cast<void *>(page), g_page)))
    return kPresent | kMember;
  return s;
}

Info &info(uintptr_t page) {
  auto [it, fresh] = g_info.try_emplace(page);
  if (fresh) it->second.members = bit(home_of(page));
  return it->second;
}

unsigned flush_us_of(const Info &in) {
  if (in.flush_us) return in.flush_us;
  return protocol::model() == protocol::Model::kProcessor ? protocol::pc_interval_us() : 0;
}

// Keeps g_shared in step with a page's state and copyset (under g_mu).
void refresh(uintptr_t page) {
  uint8_t s = state(page);
  const Info &in = info(page);
  bool shared = (s & kMember) && !(s & kEntry) && __builtin_popcountll(in.members) > 1;
  if (shared) g_shared_list_stale |= g_shared.insert_or_assign(page, &in).second;
  else g_shared_list_stale |= g_shared.erase(page) != 0;
  g_shared_count.store(g_shared.size(), std::memory_order_release);
}

void protect_pages(const char *call, uintptr_t begin, size_t len, int prot) {
  if (mprotect(reinterpret_cast<void *>(begin), len, prot) == 0) return;
  const char *how = prot == PROT_NONE ? "protect" : prot == PROT_READ ? "write-protect" : "unprotect";
  if (errno != ENOMEM) {
    fatal_errno(call, "cannot %s shared pages [0x%lx, +%zu)", how, static_cast<unsigned long>(begin), len);
  }
  // Every run of pages whose protection differs from its neighbours' is a mapping of its
  // own: ENOMEM here is the kernel's limit on a process's mappings, not a lack of memory.
  long limit = -1;
  if (FILE *f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
    if (std::fscanf(f, "%ld", &limit) != 1) limit = -1;
    std::fclose(f);
  }
  const auto &l = window::layout();
  fatal(call,
        "cannot %s shared pages [0x%lx, +%zu): the process has reached the kernel's limit on "
        "memory mappings (vm.max_map_count = %ld), one for each run of pages whose protection "
        "differs from its neighbours' (this rank's copies of other ranks' pages alternate with "
        "its own; static shared data is %zu MiB in %zu pages, %d ranks). Raise the limit "
        "(sysctl -w vm.max_map_count=...) or keep fewer scattered copies (mw_discard)",
        how, static_cast<unsigned long>(begin), len, limit, (l.static_end - l.static_begin) >> 20,
        (l.static_end - l.static_begin) / g_page, g_np);
}

void make_rw(uintptr_t page) {
  if (is_static(page)) protect_pages("copyset fault", page, g_page, PROT_READ | PROT_WRITE);
  else window::commit(page, page + g_page);
}

void make_none(uintptr_t page) { protect_pages("mw_discard", page, g_page, PROT_NONE); }

// ---- Freezing ----

// mprotect on `pages` (sorted, distinct), contiguous ones in one call.
void protect(const std::vector<uintptr_t> &pages, int prot) {
  for (size_t i = 0; i < pages.size();) {
    size_t j = i + 1;
    while (j < pages.size() && pages[j] == pages[j - 1] + g_page) ++j;
    protect_pages("processor consistency", pages[i], (j - i) * g_page, prot);
    i = j;
  }
}

// Freezes present pages (sorted, distinct; under g_mu, under the progress role): the state
// first, so that a fault the protection causes finds it. A home page that has no state
// entry yet gets its state spelled out, so that it still reads as present meanwhile.
void freeze(const std::vector<uintptr_t> &pages, int prot) {
  for (uintptr_t page : pages)
    g_state[index_of(page)].store(static_cast<uint8_t>(state(page) | kFrozen), std::memory_order_seq_cst);
  protect(pages, prot);
}

// The protection back first, then the state: a fault that finds the page no longer
// frozen may retry at once. Then wakes the faults that wait. g_thaws moves on both before
// the state is cleared and after: a fault that finds the page thawed has seen the first
// (page_fault.cpp's retry-once rule counts on it: a fault met between the clear and a
// single later count was reported as real), and a fault that read the count, then found
// the page frozen, sleeps on a value the second changes, so it is not left asleep.
void thaw(const std::vector<uintptr_t> &pages) {
  protect(pages, PROT_READ | PROT_WRITE);
  end_freeze(pages);
}

void end_freeze(const std::vector<uintptr_t> &pages) {
  g_thaws.fetch_add(1, std::memory_order_seq_cst);
  for (uintptr_t page : pages)
    g_state[index_of(page)].fetch_and(static_cast<uint8_t>(~kFrozen), std::memory_order_seq_cst);
  g_thaws.fetch_add(1, std::memory_order_seq_cst);
  if (g_waiters.load(std::memory_order_seq_cst) > 0)
    syscall(SYS_futex, &g_thaws, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

// In the fault handler: if `page` is frozen, waits until it is not and returns true (the
// access is then retried). Async-signal-safe: atomics and system calls only.
bool wait_thawed(uintptr_t page) {
  std::atomic<uint8_t> &st = g_state[index_of(page)];
  if (!(st.load(std::memory_order_seq_cst) & kFrozen)) return false;
  // A freeze lasts a few microseconds: look a little before sleeping.
  for (int i = 0; i < 200; ++i) {
    if (!(st.load(std::memory_order_acquire) & kFrozen)) return true;
    __builtin_ia32_pause();
  }
  for (;;) {
    const uint32_t seen = g_thaws.load(std::memory_order_seq_cst);
    g_waiters.fetch_add(1, std::memory_order_seq_cst);
    // Either the thaw clears the bit after this look, and then sees g_waiters and wakes
    // (or has moved g_thaws past `seen`, and the wait returns at once); or the look sees
    // the bit clear.
    const bool frozen = st.load(std::memory_order_seq_cst) & kFrozen;
    if (frozen) syscall(SYS_futex, &g_thaws, FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
    g_waiters.fetch_sub(1, std::memory_order_seq_cst);
    if (!frozen) return true;
  }
}

// Writes (or reads) len bytes at addr through /proc/self/mem: the page may be protected.
void mem_io(bool write, uintptr_t addr, std::byte *data, size_t len) {
  while (len > 0) {
    const ssize_t n = write ? pwrite(g_mem, data, len, static_cast<off_t>(addr))
                            : pread(g_mem, data, len, static_cast<off_t>(addr));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      fatal_errno("processor consistency", "cannot %s %zu bytes at 0x%lx through /proc/self/mem",
                  write ? "write" : "read", len, static_cast<unsigned long>(addr));
    addr += static_cast<size_t>(n);
    data += n;
    len -= static_cast<size_t>(n);
  }
}



// Would the home's own marks on the page travel twice? Not if they go with the page:
// a home alone in the copyset has flushed them to no one, and the page it sends holds
// them (under g_mu).
void clear_marks(uintptr_t page) {
  std::vector<Range> taken;
  dirty::take(page, g_page, g_bound.ranges(), taken);
}

// Before a fetched page's data lands: writable and in memory. (And clear_marks: stale
// marks from before a leave.)
void ready(uintptr_t page) {
  if (is_static(page)) {
    make_rw(page);
    window::populate(page);
  } else {
    window::commit_page(page);
  }
}

void ready(uintptr_t begin, uintptr_t end) {
  if (is_static(begin)) protect_pages("copyset fault", begin, end - begin, PROT_READ | PROT_WRITE);
  else window::commit(begin, end);
  window::populate(begin, end);
}

uintptr_t checked_page(const Header &h, uint64_t page) {
  if (page % g_page != 0 || !window::contains(reinterpret_cast<void *>(page), g_page))
    protocol::malformed(h, "not a page of the shared window", protocol::page_object(page));
  return static_cast<uintptr_t>(page);
}

}  // namespace mw::copysets
