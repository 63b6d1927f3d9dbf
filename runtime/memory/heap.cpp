#include "memory/heap.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <mutex>
#include <string>

#include "core/error.hpp"
#include "memory/symbols.hpp"
#include "memory/window.hpp"

namespace mw::heap {
namespace {

constexpr uintptr_t kPartitionAlign = 1 << 21;
constexpr uintptr_t kCommitChunk = 64 << 20;  // commit pages (and their shadow) 64 MiB at a time
constexpr size_t kMinAlign = 16;              // what malloc promises

struct Block {
  size_t size;        // bytes asked for
  size_t line;        // timestamp granularity
  uintptr_t span;     // start of the span taken from the partition (<= the block)
  size_t span_len;    // bytes taken, alignment padding included
  uintptr_t caller;   // the code that called mw_malloc (for reports)
};

std::mutex g_mutex;
bool g_ready = false;
uintptr_t g_begin, g_end;     // this rank's partition
uintptr_t g_top;              // bump pointer: [g_top, g_end) has never been handed out
uintptr_t g_committed;        // [g_begin, g_committed) is readable and writable
// Never destroyed (as all module state the service thread touches): a rank that
// exits without mw_finalize runs static destructors while the service thread still
// serves peers.
std::map<uintptr_t, size_t> &g_free = *new std::map<uintptr_t, size_t>;   // returned spans, start -> length, coalesced
std::map<uintptr_t, Block> &g_blocks = *new std::map<uintptr_t, Block>;  // live blocks, by the address mw_malloc returned

uintptr_t align_up(uintptr_t x, uintptr_t a) { return (x + a - 1) & ~(a - 1); }

bool is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

// First fit among freed spans; splits off what is left on either side.
bool take_free(size_t size, size_t align, uintptr_t *span, size_t *span_len, uintptr_t *at) {
  for (auto it = g_free.begin(); it != g_free.end(); ++it) {
    uintptr_t begin = it->first, end = it->first + it->second;
    uintptr_t a = align_up(begin, align);
    if (a + size > end) continue;
    g_free.erase(it);
    uintptr_t used_end = align_up(a + size, kMinAlign);
    if (used_end < end) g_free[used_end] = end - used_end;
    *span = begin;
    *span_len = used_end - begin;
    *at = a;
    return true;
  }
  return false;
}

void give_back(uintptr_t begin, size_t len) {
  uintptr_t end = begin + len;
  auto next = g_free.lower_bound(begin);
  if (next != g_free.end() && next->first == end) {
    end += next->second;
    next = g_free.erase(next);
  }
  if (next != g_free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == begin) {
      begin = prev->first;
      g_free.erase(prev);
    }
  }
  g_free[begin] = end - begin;
}

uintptr_t g_heap_begin, g_part;  // every rank's partition is g_part bytes, in rank order
int g_nprocs;

}  // namespace

int owner_of(uintptr_t a) {
  if (a < g_heap_begin || g_part == 0) return -1;
  uintptr_t r = (a - g_heap_begin) / g_part;
  return r < static_cast<uintptr_t>(g_nprocs) ? static_cast<int>(r) : -1;
}

namespace {
// Why `a` is no block this rank may free, as precisely as this rank knows.
std::string why_not_a_block(uintptr_t a) {
  uintptr_t base = 0, caller = 0;
  size_t size = 0;
  const int owner = owner_of(a);
  char buf[160];
  if (block_of(a, &base, &size, &caller)) {
    std::snprintf(buf, sizeof buf, "it is %zu bytes into the block of %zu bytes at %#lx, not its start",
                  static_cast<size_t>(a - base), size, static_cast<unsigned long>(base));
    const std::string site = caller ? symbols::program_call_site(caller) : "";
    return buf + (site.empty() ? "" : " (allocated at " + site + ")");
  }
  if (owner >= 0 && owner != g_rank) {
    std::snprintf(buf, sizeof buf, "it is in rank %d's part of the shared heap, and only the rank "
                  "that allocated a block frees it", owner);
    return buf;
  }
  if (owner >= 0) return "no block of this rank starts there (already freed, or never allocated)";
  if (window::contains(reinterpret_cast<void *>(a), 1))
    return "it is MW_SHARED data (" + symbols::variable(a) + "), which lives as long as the program";
  return "it is not shared memory (" + symbols::variable(a) + "): memory from malloc is freed with free";
}
}  // namespace

void init(int rank, int nprocs) {
  std::lock_guard<std::mutex> lock(g_mutex);
  uintptr_t heap = window::layout().heap_begin;
  uintptr_t part = ((window::kEnd - heap) / static_cast<uintptr_t>(nprocs)) & ~(kPartitionAlign - 1);
  g_heap_begin = heap;
  g_part = part;
  g_nprocs = nprocs;
  g_begin = heap + part * static_cast<uintptr_t>(rank);
  g_end = g_begin + part;
  g_top = g_committed = g_begin;
  g_ready = true;
}

void *allocate(size_t size, size_t line, const char *call, const void *caller) {
  if (size == 0) fatal(call, "size 0 is not a valid shared allocation");
  size_t page = window::page_size();
  if (!is_pow2(line) || line > page)
    fatal(call, "line size %zu is not a power of two from 1 to the page size (%zu)", line, page);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_ready) fatal(call, "called before mw_init");
  size_t align = std::max(line, kMinAlign);
  uintptr_t span, at;
  size_t span_len;
  if (!take_free(size, align, &span, &span_len, &at)) {
    at = align_up(g_top, align);
    const size_t left = at < g_end ? static_cast<size_t>(g_end - at) : 0;  // alignment may pass the end
    if (size > left)
      fatal(call, "cannot allocate %zu bytes: this rank's part of the shared heap has %zu of %zu "
            "bytes left", size, left, static_cast<size_t>(g_end - g_begin));
    span = g_top;
    g_top = std::min(align_up(at + size, kMinAlign), g_end);
    span_len = g_top - span;
    if (g_top > g_committed) {
      uintptr_t to = std::min(align_up(g_top, kCommitChunk), g_end);
      window::commit(g_committed, to);
      g_committed = to;
    }
  }
  g_blocks[at] = Block{size, line, span, span_len, reinterpret_cast<uintptr_t>(caller)};
  return reinterpret_cast<void *>(at);
}

void release(void *p, bool reuse) {
  if (p == nullptr) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_blocks.find(a);
    if (it != g_blocks.end()) {
      if (reuse) give_back(it->second.span, it->second.span_len);
      g_blocks.erase(it);
      return;
    }
  }
  fatal("mw_free", "%p is not a live block from mw_malloc on this rank: %s", p, why_not_a_block(a).c_str());
}

size_t line_of(const void *p) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const window::Layout &w = window::layout();
  if (a >= w.static_begin && a < w.static_end) return kDefaultLine;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_blocks.upper_bound(a);
  if (it == g_blocks.begin()) return 0;
  --it;
  return a < it->first + it->second.size ? it->second.line : 0;
}

bool block_of(uintptr_t a, uintptr_t *base, size_t *size, uintptr_t *caller) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_blocks.upper_bound(a);
  if (it == g_blocks.begin()) return false;
  --it;
  if (a >= it->first + it->second.size) return false;
  *base = it->first;
  *size = it->second.size;
  *caller = it->second.caller;
  return true;
}

}  // namespace mw::heap
