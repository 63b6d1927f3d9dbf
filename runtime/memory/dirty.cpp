#include "memory/dirty.hpp"

#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "core/error.hpp"
#include "memory/symbols.hpp"
#include "memory/window.hpp"

namespace mw::dirty {
namespace {

// The bits of the shadow byte holding `a` that belong to [a, b): from bit a&7 up to,
// but excluding, bit b - (a & ~7) when b lies in the same byte.
unsigned char bits_between(uintptr_t a, uintptr_t b) {
  unsigned lo = a & 7;
  unsigned hi = std::min<uintptr_t>(b - (a & ~uintptr_t{7}), 8);
  return static_cast<unsigned char>((0xFFu << lo) & (0xFFu >> (8 - hi)));
}

// Applies `edge(byte, bits)` to the partial shadow bytes at the ends of [a, b) and
// fills the whole bytes between with `fill`.
template <class Edge>
void for_range(uintptr_t a, uintptr_t b, Edge edge, unsigned char fill) {
  if (a >= b) return;
  if (a & 7) {
    edge(shadow_byte(a), bits_between(a, b));
    a = std::min(b, (a | 7) + 1);
  }
  uintptr_t whole_end = b & ~uintptr_t{7};
  if (a < whole_end) {
    std::memset(shadow_byte(a), fill, (whole_end - a) / 8);
    a = whole_end;
  }
  if (a < b) edge(shadow_byte(a), bits_between(a, b));
}

// Marks made again before anything has cleared marks: a sweep's loop nest marks the same
// rows after each sweep, and data this rank holds alone keeps its marks (no flush takes
// them), so each sweep rewrote, then reread, a dirty-map line per 512 bytes of rows
// already marked (Jacobi's sweeps in overhead_bench: mark_rows 10-15 % of the time). The
// application thread remembers its last few long marks with the count of clears it saw
// before making them, and makes one again only if marks have been cleared since.
//  - Every take and clear counts twice, before and after clearing: a mark remembered
//    with the count from before a clear that overlapped it does not match afterwards.
//  - A mark passed over because it is remembered is set, as the inline marks' check
//    finds a set mark set, and the race the check opens (its load may pass the data's
//    store while another thread takes the marks) is closed the same way: a taker on
//    another thread fences the application before it reads the data (fence_application).
std::atomic<uint64_t> g_clears{0};
struct Remembered {
  uintptr_t addr;
  size_t len;
  ptrdiff_t stride;
  size_t rows;
  uint64_t clears;
};
constexpr size_t kRemembered = 8;
constexpr size_t kWorthRemembering = 512;  // bytes: shorter marks cost less than a look
__attribute__((tls_model("initial-exec"))) thread_local Remembered t_marks[kRemembered];
__attribute__((tls_model("initial-exec"))) thread_local unsigned t_next_mark;

bool same(const Remembered &r, const Remembered &m) {
  return r.addr == m.addr && r.len == m.len && r.stride == m.stride && r.rows == m.rows && r.clears == m.clears;
}
bool remembered(const Remembered &m) {
  if (same(t_marks[(t_next_mark - 1) % kRemembered], m)) return true;  // a nest's levels repeat the last
  for (const Remembered &r : t_marks)
    if (same(r, m)) return true;
  return false;
}
void remember(const Remembered &m) { t_marks[t_next_mark++ % kRemembered] = m; }

// Around clearing marks, before and after (see g_clears).
void count_clear() { g_clears.fetch_add(1, std::memory_order_seq_cst); }

// The marks of [addr, addr+len) ∩ window, and of rows (mark_rows), made whether or not
// they are remembered: a plain read-modify-write of a partial shadow byte, as the inline
// marks do (see midway.h).
void mark_once(const void *addr, size_t len) {
  uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  uintptr_t b = a + len < a ? UINTPTR_MAX : a + len;  // a range may not wrap around
  a = std::max(a, window::kBase);
  b = std::min(b, window::kEnd);
  for_range(a, b, [](unsigned char *s, unsigned char bits) { *s |= bits; }, 0xFF);
}

void mark_rows_once(const void *addr, size_t len, ptrdiff_t stride, size_t rows) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  // (Rows that touch or overlap came as one range: mark_rows.)
  // Short rows of whole shadow bytes, all in the window, stored in place: a call of
  // mark() a row costs 5 ns, several times what the row's bytes do.
  const uintptr_t step = static_cast<uintptr_t>(stride);
  const uintptr_t last = a + (rows - 1) * step;
  if (stride > 0 && ((a | len | step) & 7) == 0 && len <= 64 && a >= window::kBase &&
      (last - a) / step == rows - 1 && last <= window::kEnd - len) {
    unsigned char *s = shadow_byte(a);
    const size_t n = len / 8, ds = step / 8;
    auto each = [&](auto ones) {
      for (size_t r = 0; r < rows; ++r, s += ds) std::memcpy(s, &ones, sizeof ones);
    };
    switch (n) {
      case 1: return each(uint8_t{0xFF});
      case 2: return each(uint16_t{0xFFFF});
      case 4: return each(uint32_t{0xFFFFFFFF});
      case 8: return each(~uint64_t{0});
      default:
        for (size_t r = 0; r < rows; ++r, s += ds) std::memset(s, 0xFF, n);
        return;
    }
  }
  for (size_t r = 0; r < rows; ++r, addr = reinterpret_cast<const void *>(
                                          reinterpret_cast<uintptr_t>(addr) + step))
    mark_once(addr, len);
}

void check_shared(const char *call, const void *addr, size_t len) {
  if (window::accessible(addr, len)) return;
  // In the heap: a block another rank allocated, which this rank has not touched (its
  // pages, and their marks, come at the first touch), or no block at all.
  if (window::is_shared(addr, len) && reinterpret_cast<uintptr_t>(addr) >= window::layout().heap_begin)
    fatal(call,
          "%s is shared heap this rank holds no copy of: another rank's mw_malloc block it "
          "has not touched yet (touch it first: its dirty marks come with its pages), or no "
          "block at all",
          symbols::described_range(reinterpret_cast<uintptr_t>(addr), len).c_str());
  fatal(call,
          "%s is not shared memory (static MW_SHARED data or a live mw_malloc block inside the "
          "window [0x%lx, 0x%lx))",
          symbols::described_range(reinterpret_cast<uintptr_t>(addr), len).c_str(),
          static_cast<unsigned long>(window::kBase), static_cast<unsigned long>(window::kEnd));
}

// Where membarrier(2) cannot be registered (a kernel before 4.14, a seccomp filter), a
// page whose write permission is taken away again each time: the kernel then shoots
// down its translation on every core running this process, with an interrupt that
// drains their store buffers (x86; folly's asymmetricHeavyBarrier does the same).
char *g_shootdown_page = nullptr;
size_t g_shootdown_len = 0;
std::mutex g_shootdown_mu;

}  // namespace

bool start_fences(bool membarrier) {
  if (membarrier && syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) {
    g_shootdown_page = nullptr;
    return true;
  }
  if (g_shootdown_page != nullptr) return false;
  g_shootdown_len = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void *p = mmap(nullptr, g_shootdown_len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fatal_errno("mw_init", "cannot map a page for the application's fences");
  g_shootdown_page = static_cast<char *>(p);
  return false;
}

void fence_application() {
  if (g_shootdown_page == nullptr) {
    if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
      fatal_errno("release consistency", "membarrier, after taking marks, failed");
    return;
  }
  std::lock_guard<std::mutex> g(g_shootdown_mu);
  bool ok = mprotect(g_shootdown_page, g_shootdown_len, PROT_READ | PROT_WRITE) == 0;
  if (ok) {
    *static_cast<volatile char *>(g_shootdown_page) = 0;  // a translation to shoot down
    ok = mprotect(g_shootdown_page, g_shootdown_len, PROT_READ) == 0;
  }
  if (!ok) fatal_errno("release consistency", "cannot protect the page of the application's fences");
}

// Called by compiled code, on the application thread.
void mark(const void *addr, size_t len) { mark_rows(addr, len, 0, 1); }

void mark_rows(const void *addr, size_t len, ptrdiff_t stride, size_t rows) {
  if (rows == 0 || len == 0) return;
  // Rows that touch or overlap are one range, marked and remembered as such: a stride the
  // pass could not show to be the length often is (LU's contiguous blocks), and FFT's
  // butterflies mark a whole row at each level as rows of a length that doubles.
  if (rows > 1 && stride > 0 && static_cast<size_t>(stride) <= len) {
    len += (rows - 1) * static_cast<size_t>(stride);
    stride = 0;
    rows = 1;
  }
  if (len * rows < kWorthRemembering) return mark_rows_once(addr, len, stride, rows);
  const Remembered m{reinterpret_cast<uintptr_t>(addr), len, stride, rows, g_clears.load(std::memory_order_seq_cst)};
  if (remembered(m)) return;
  mark_rows_once(addr, len, stride, rows);
  remember(m);
}

namespace {
__attribute__((target_clones("avx512bw", "avx2", "default")))
bool any_word(const uint64_t *words, size_t n) {
  uint64_t any = 0;
  for (size_t i = 0; i < n; i++) any |= words[i];
  return any != 0;
}
}  // namespace

bool any(uintptr_t addr, size_t len) {
  return any_word(reinterpret_cast<const uint64_t *>(shadow_byte(addr)), len / 64);
}

size_t count(const void *addr, size_t len) {
  check_shared("mw_dirty_count", addr, len);
  size_t n = 0;
  for_each_run(reinterpret_cast<uintptr_t>(addr), len, [&n](uintptr_t, size_t l) { n += l; });
  return n;
}

// May run on the service thread while the application stores to neighbouring bytes:
// partial bytes are cleared with an atomic AND, so no mark of the application's is lost.
void clear(const void *addr, size_t len) {
  check_shared("mw_dirty_clear", addr, len);
  uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  count_clear();
  for_range(a, a + len,
            [](unsigned char *s, unsigned char bits) {
              __atomic_fetch_and(s, static_cast<unsigned char>(~bits), __ATOMIC_RELAXED);
            },
            0);
  count_clear();
}

void take(uintptr_t addr, size_t len, const std::vector<Range> &keep, std::vector<Range> &out,
          bool exclusive) {
  auto k = std::lower_bound(keep.begin(), keep.end(), addr,
                            [](const Range &r, uintptr_t a) { return r.end() <= a; });
  bool open = false;
  bool cleared = false;  // counted in g_clears before the first clear, and again at the end
  constexpr uintptr_t kLine = 512;  // data bytes whose marks fill one 64-byte shadow line
  for (uintptr_t g = addr; g < addr + len; g += 64) {
    while (k != keep.end() && k->end() <= g) ++k;
    const bool whole_line = (g & (kLine - 1)) == 0 && addr + len - g >= kLine;
    if (exclusive && whole_line && (k == keep.end() || k->addr >= g + kLine)) {
      uint64_t s[kLine / 64];
      std::memcpy(s, shadow_byte(g), sizeof s);
      uint64_t all = ~uint64_t{0}, any = 0;
      for (uint64_t w : s) all &= w, any |= w;
      if (any == 0) {
        open = false;
        g += kLine - 64;
        continue;
      }
      if (all == ~uint64_t{0}) {
        if (!cleared) count_clear(), cleared = true;
        std::memset(shadow_byte(g), 0, sizeof s);
        if (open) out.back().len += kLine;
        else out.push_back({g, kLine});
        open = true;
        g += kLine - 64;
        continue;
      }
    }
    // The bits of this group that belong to kept ranges.
    uint64_t kept = 0;
    for (auto j = k; j != keep.end() && j->addr < g + 64; ++j) {
      uintptr_t lo = std::max(j->addr, g) - g, hi = std::min(j->end(), g + 64) - g;
      kept |= (hi - lo == 64 ? ~uint64_t{0} : ((uint64_t{1} << (hi - lo)) - 1) << lo);
    }
    auto *word = reinterpret_cast<uint64_t *>(shadow_byte(g));
    uint64_t w = __atomic_load_n(word, __ATOMIC_RELAXED) & ~kept;
    if (w != 0) {
      if (!cleared) count_clear(), cleared = true;
      w = __atomic_fetch_and(word, kept, __ATOMIC_ACQ_REL) & ~kept;
    }
    // Runs of set bits, continuing the run open at the end of the previous group.
    unsigned b = 0;
    while (b < 64) {
      uint64_t rest = w >> b;
      if (!open) {
        if (rest == 0) break;
        b += static_cast<unsigned>(__builtin_ctzll(rest));
        out.push_back({g + b, 0});
        open = true;
        continue;
      }
      uint64_t ones = ~rest;  // the run goes on while bits are set
      unsigned n = ones == 0 ? 64 - b : static_cast<unsigned>(__builtin_ctzll(ones));
      if (b + n > 64) n = 64 - b;
      out.back().len += n;
      b += n;
      if (b < 64) open = false;
    }
  }
  if (cleared) count_clear();
}

}  // namespace mw::dirty
