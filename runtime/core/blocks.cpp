// Reusable blocks (blocks.hpp).
#include "core/blocks.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <mutex>
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
std::atomic<uint64_t> g_mappings{0};

void unmap(const Free &f) { munmap(f.p, f.cap); }

}  // namespace

Block take(size_t len, const char *what) {
  {
    std::lock_guard<std::mutex> g(g_mu);
    size_t best = g_free.size();
    for (size_t i = 0; i < g_free.size(); ++i)
      if (g_free[i].cap >= len && (best == g_free.size() || g_free[i].cap < g_free[best].cap)) best = i;
    if (best != g_free.size()) {
      const Free f = g_free[best];
      g_free.erase(g_free.begin() + static_cast<long>(best));
      g_kept -= f.cap;
      return Block(f.p, f.cap);
    }
  }
  if (len > (size_t{1} << 62)) mw::fatal("mmap", "cannot allocate %zu bytes for %s", len, what);
  const size_t cap = std::bit_ceil(std::max(len, kMinBlock));
  void *p = mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) mw::fatal_errno("mmap", "cannot allocate %zu bytes for %s", len, what);
  g_mappings.fetch_add(1, std::memory_order_relaxed);
  return Block(static_cast<std::byte *>(p), cap);
}

void Block::reset() {
  if (!p_) return;
  const Free mine{std::exchange(p_, nullptr), std::exchange(cap_, 0)};
  if (mine.cap > kKeepBytes) return unmap(mine);
  std::vector<Free> drop;
  {
    std::lock_guard<std::mutex> g(g_mu);
    g_free.push_back(mine);
    g_kept += mine.cap;
    while (g_kept > kKeepBytes || g_free.size() > kKeepBlocks) {
      drop.push_back(g_free.front());
      g_kept -= g_free.front().cap;
      g_free.erase(g_free.begin());
    }
  }
  for (const Free &f : drop) unmap(f);  // outside the lock: munmap is a system call
}

size_t kept_bytes() {
  std::lock_guard<std::mutex> g(g_mu);
  return g_kept;
}

uint64_t mappings() { return g_mappings.load(std::memory_order_relaxed); }

}  // namespace mw::blocks
