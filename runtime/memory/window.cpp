#include "memory/window.hpp"
#include "memory/same_layout.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "core/error.hpp"
#include "memory/image.hpp"

namespace mw::window {
namespace {

Layout g_layout;
size_t g_page;
std::mutex g_mutex;
// Never destroyed (as all module state the service thread touches): a rank that
// exits without mw_finalize runs static destructors while the service thread still
// serves peers.
std::map<uintptr_t, uintptr_t> &g_committed = *new std::map<uintptr_t, uintptr_t>;  // begin -> end, disjoint, never adjacent

uintptr_t round_up(uintptr_t x, uintptr_t to) { return (x + to - 1) / to * to; }

void reserve(uintptr_t begin, uintptr_t end, const char *what) {
  void *want = reinterpret_cast<void *>(begin);
  void *got = mmap(want, end - begin, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (got == MAP_FAILED)
    fatal_errno("mw_init", "cannot reserve the %s at [0x%lx, 0x%lx)", what,
                static_cast<unsigned long>(begin), static_cast<unsigned long>(end));
  if (got != want)  // kernels before 4.17 ignore MAP_FIXED_NOREPLACE and treat it as a hint
    fatal("mw_init", "the %s at 0x%lx is already in use (the kernel offered 0x%lx)", what,
          static_cast<unsigned long>(begin), reinterpret_cast<unsigned long>(got));
}

void make_rw(uintptr_t begin, uintptr_t end, const char *what) {
  if (begin < end && mprotect(reinterpret_cast<void *>(begin), end - begin,
                              PROT_READ | PROT_WRITE) != 0)
    fatal_errno("mw_malloc", "cannot commit the %s at [0x%lx, 0x%lx)", what,
                static_cast<unsigned long>(begin), static_cast<unsigned long>(end));
}

uintptr_t shadow_of(uintptr_t p) { return reinterpret_cast<uintptr_t>(mw_shadow(reinterpret_cast<void *>(p))); }

// Commits the dirty map of data [begin, end), with 8 bytes to spare past its end: a
// mark of up to 64 bits may be one word-wide read-modify-write (midway.h), and the
// last bytes of shared data must not put that word on an uncommitted page.
void commit_shadow(uintptr_t begin, uintptr_t end, const char *what) {
  if (begin >= end) return;
  uintptr_t from = shadow_of(begin) & ~(g_page - 1);
  uintptr_t to = std::min(round_up(shadow_of(end - 1) + 1 + 8, g_page),
                          round_up(shadow_of(kEnd), g_page));
  make_rw(from, to, what);
}

// Runs when the runtime library is loaded: before main, and before the program's own
// constructors, which may already store to shared data. First, a rank of a job makes
// its layout that of every other rank (which may re-execute the process).
__attribute__((constructor(101))) void setup(int argc, char **argv, char **envp) {
  same_layout::ensure(argc, argv, envp);
  g_page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Where the linker put the program's MW_SHARED data: read from the executable's
  // section headers, since program headers carry no names. The initialized part sits
  // at the window base, the zero-initialized part (NOBITS) right after it, aligned.
  std::optional<image::Section> data =
      image::read_section("/proc/self/exe", MW_SHARED_SECTION, false);
  std::optional<image::Section> bss =
      image::read_section("/proc/self/exe", MW_SHARED_BSS_SECTION, false);
  const uintptr_t data_end = kBase + (data ? data->size : 0);
  if (data && data->addr != kBase)
    fatal("mw_init",
          "the program's shared data (section %s) is at 0x%lx, not at the window base 0x%lx: "
          "compile and link it with mwcc (or with its flags: pkg-config --libs midway, "
          "CMake's Midway::Midway, mwcc --showme:link)",
          MW_SHARED_SECTION, static_cast<unsigned long>(data->addr),
          static_cast<unsigned long>(kBase));
  if (bss && bss->size && bss->addr != round_up(data_end, bss->align))
    fatal("mw_init",
          "the program's zero-initialized shared data (section %s) is at 0x%lx, not at 0x%lx "
          "(after the initialized shared data, from the window base): compile and link it "
          "with mwcc (or with its flags: pkg-config --libs midway, CMake's Midway::Midway, "
          "mwcc --showme:link)",
          MW_SHARED_BSS_SECTION, static_cast<unsigned long>(bss->addr),
          static_cast<unsigned long>(round_up(data_end, bss->align)));
  g_layout.static_begin = kBase;
  g_layout.static_end = bss && bss->size ? bss->addr + bss->size : data_end;
  // A zero-initialized part aligned past a page starts in a segment of its own, after
  // pages that exec left unmapped: map them, so that the static data is one range.
  if (bss && bss->size) {
    const uintptr_t gap_begin = round_up(data_end, g_page), gap_end = bss->addr & ~(g_page - 1);
    if (gap_begin < gap_end) {
      const char *what = "padding before the zero-initialized shared data";
      reserve(gap_begin, gap_end, what);
      if (mprotect(reinterpret_cast<void *>(gap_begin), gap_end - gap_begin,
                   PROT_READ | PROT_WRITE) != 0)
        fatal_errno("mw_init", "cannot map the %s at [0x%lx, 0x%lx)", what,
                    static_cast<unsigned long>(gap_begin), static_cast<unsigned long>(gap_end));
    }
  }
  g_layout.heap_begin = round_up(g_layout.static_end, 1 << 21);

  // A brk heap inside the window means the program was linked without mwcc's anchor at
  // the window's end (exe_anchor.c): say so, rather than fail to reserve below.
  uintptr_t brk = reinterpret_cast<uintptr_t>(sbrk(0));
  if (brk >= kBase && brk < kEnd)
    fatal("mw_init",
          "the program's brk heap (at 0x%lx) lies inside the shared window [0x%lx, 0x%lx): "
          "link it with mwcc, which places a marker at the window's end (or with its "
          "flags: pkg-config --libs midway, CMake's Midway::Midway, mwcc --showme:link)",
          static_cast<unsigned long>(brk), static_cast<unsigned long>(kBase),
          static_cast<unsigned long>(kEnd));

  // The poll word (midway.h, "Polls"): code built with polls reads it from the start,
  // before mw_init and after mw_finalize too, and finds zero here. mw_init maps this
  // rank's word from the job's doorbell page over it (transport::Config::poll_word_at).
  reserve(MW_POLL_WORD, MW_POLL_WORD + g_page, "poll word's page");
  if (mprotect(reinterpret_cast<void *>(MW_POLL_WORD), g_page, PROT_READ) != 0)
    fatal_errno("mw_init", "cannot map the poll word's page at 0x%lx",
                static_cast<unsigned long>(MW_POLL_WORD));

  // exec mapped the static part; the rest of the window waits for the heap.
  reserve(round_up(g_layout.static_end, g_page), kEnd, "shared window");
  reserve(shadow_of(kBase), round_up(shadow_of(kEnd), g_page), "dirty map");
  commit_shadow(kBase, g_layout.static_end, "dirty map of the static shared data");
}

}  // namespace

const Layout &layout() { return g_layout; }

size_t page_size() { return g_page; }

void commit_marks(uintptr_t begin, uintptr_t end) {
  commit_shadow(std::max(begin, g_layout.heap_begin), end, "dirty map of the shared heap");
}

void commit(uintptr_t begin, uintptr_t end) {
  make_rw(begin, end, "shared heap");
  commit_shadow(begin, end, "dirty map of the shared heap");
  std::lock_guard<std::mutex> lock(g_mutex);
  // Merge with the neighbours so that accessible() needs one lookup.
  auto next = g_committed.lower_bound(begin);
  if (next != g_committed.end() && next->first <= end) {
    end = std::max(end, next->second);
    next = g_committed.erase(next);
  }
  if (next != g_committed.begin()) {
    auto prev = std::prev(next);
    if (prev->second >= begin) {
      begin = prev->first;
      end = std::max(end, prev->second);
      g_committed.erase(prev);
    }
  }
  g_committed[begin] = end;
}

void populate(uintptr_t page) {
  // MADV_POPULATE_WRITE breaks copy-on-write (a page of the executable's data keeps its
  // bytes) and allocates a fresh page, as a write fault would, but without the fault on
  // the fetch's critical path (docs/PERFORMANCE.md, "Figures behind the code"). Older kernels refuse it, and
  // the first write then faults as before.
  madvise(reinterpret_cast<void *>(page), g_page, MADV_POPULATE_WRITE);
}

namespace {
// Maps [begin, end) (whole pages, writable) in memory and touches each page once with a
// write that changes nothing (another thread's store to the byte is kept, whichever
// comes first): on some virtual machines the first access to a page through a new
// mapping costs as much as the fault itself (docs/PERFORMANCE.md, "No stalls").
void populate_and_touch(uintptr_t begin, uintptr_t end) {
  if (madvise(reinterpret_cast<void *>(begin), end - begin, MADV_POPULATE_WRITE) != 0) return;
  for (uintptr_t p = begin; p < end; p += g_page)
    __atomic_fetch_or(reinterpret_cast<unsigned char *>(p), 0, __ATOMIC_RELAXED);
}
}  // namespace

void populate(uintptr_t begin, uintptr_t end) {
  if (begin >= end) return;
  populate_and_touch(begin, end);
  populate_and_touch(shadow_of(begin) & ~(g_page - 1), round_up(shadow_of(end - 1) + 1, g_page));
}

void commit_page(uintptr_t page) {
  commit(page, page + g_page);
  populate(page);
  populate(shadow_of(page) & ~(g_page - 1));
}

void uncommit_page(uintptr_t page) {
  if (mprotect(reinterpret_cast<void *>(page), g_page, PROT_NONE) != 0)
    fatal_errno("copyset fault", "cannot protect shared heap page 0x%lx", static_cast<unsigned long>(page));
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_committed.upper_bound(page);
  if (it == g_committed.begin()) return;
  --it;
  const uintptr_t begin = it->first, end = it->second;
  if (page < begin || page >= end) return;
  g_committed.erase(it);
  if (begin < page) g_committed[begin] = page;
  if (page + g_page < end) g_committed[page + g_page] = end;
}

bool accessible(const void *p, size_t len) {
  if (!contains(p, len)) return false;
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (a + len <= g_layout.static_end) return true;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_committed.upper_bound(a);
  if (it == g_committed.begin()) return false;
  --it;
  return a >= it->first && a + len <= it->second;
}

bool make_accessible(const void *p, size_t len) {
  if (accessible(p, len)) return true;
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (!contains(p, len) || a < g_layout.heap_begin) return false;
  uintptr_t begin = a & ~(g_page - 1);
  uintptr_t end = round_up(a + len, g_page);
  if (end > kEnd) return false;
  commit(begin, end);
  return true;
}

}  // namespace mw::window
