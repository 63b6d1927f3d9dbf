// Reusable blocks (blocks.hpp).
#include "core/blocks.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"

namespace mw::blocks {
namespace {

struct Free {
  std::byte *p;
  size_t cap;
};

// Never destroyed: a rank may leave (exit, mw::fatal) while another thread gives a block.
std::mutex &g_mu = *new std::mutex;
std::vector<Free> &g_free = *new std::vector<Free>;  // least recently given first
size_t g_kept = 0;                                    // bytes in g_free
// The blocks handed out, by address: their sizes (a Vector's allocator knows only its
// length, and a block may be larger than that).
std::unordered_map<std::byte *, size_t> &g_used = *new std::unordered_map<std::byte *, size_t>;
std::atomic<uint64_t> g_mappings{0};

void unmap(const Free &f) { munmap(f.p, f.cap); }

}  // namespace

namespace detail {

std::byte *take_bytes(size_t len, const char *what, size_t *cap_out) {
  std::byte *p = nullptr;
  size_t cap = 0;
  {
    std::lock_guard<std::mutex> g(g_mu);
    size_t best = g_free.size();
    for (size_t i = 0; i < g_free.size(); ++i)
      if (g_free[i].cap >= len && (best == g_free.size() || g_free[i].cap < g_free[best].cap)) best = i;
    if (best != g_free.size()) {
      p = g_free[best].p;
      cap = g_free[best].cap;
      g_free.erase(g_free.begin() + static_cast<long>(best));
      g_kept -= cap;
      g_used[p] = cap;
    }
  }
  if (!p) {
    if (len > (size_t{1} << 62)) mw::fatal("mmap", "cannot allocate %zu bytes for %s", len, what);
    cap = std::bit_ceil(std::max(len, kMinBlock));
    void *m = mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) mw::fatal_errno("mmap", "cannot allocate %zu bytes for %s", len, what);
    g_mappings.fetch_add(1, std::memory_order_relaxed);
    p = static_cast<std::byte *>(m);
    std::lock_guard<std::mutex> g(g_mu);
    g_used[p] = cap;
  }
  if (cap_out) *cap_out = cap;
  return p;
}

void give_bytes(std::byte *p) {
  std::vector<Free> drop;
  {
    std::lock_guard<std::mutex> g(g_mu);
    auto it = g_used.find(p);
    const Free mine{p, it->second};
    g_used.erase(it);
    if (mine.cap > kKeepBytes) {
      drop.push_back(mine);
    } else {
      g_free.push_back(mine);
      g_kept += mine.cap;
    }
    while (g_kept > kKeepBytes || g_free.size() > kKeepBlocks) {
      drop.push_back(g_free.front());
      g_kept -= g_free.front().cap;
      g_free.erase(g_free.begin());
    }
  }
  for (const Free &f : drop) unmap(f);  // outside the lock: munmap is a system call
}

}  // namespace detail

size_t kept_bytes() {
  std::lock_guard<std::mutex> g(g_mu);
  return g_kept;
}

uint64_t mappings() { return g_mappings.load(std::memory_order_relaxed); }

}  // namespace mw::blocks
