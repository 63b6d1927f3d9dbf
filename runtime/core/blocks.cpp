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

size_t size_of(size_t len) {
  if (len > (size_t{1} << 62)) mw::fatal("mmap", "cannot allocate %zu bytes", len);
  return std::bit_ceil(std::max(len, kMinBlock));
}

namespace detail {

std::byte *take_bytes(size_t cap, const char *what) {
  {
    std::lock_guard<std::mutex> g(g_mu);
    for (size_t i = g_free.size(); i-- > 0;)  // the most recently given: its pages are warm
      if (g_free[i].cap == cap) {
        std::byte *p = g_free[i].p;
        g_free.erase(g_free.begin() + static_cast<long>(i));
        g_kept -= cap;
        return p;
      }
  }
  void *p = mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) mw::fatal_errno("mmap", "cannot allocate %zu bytes for %s", cap, what);
  g_mappings.fetch_add(1, std::memory_order_relaxed);
  return static_cast<std::byte *>(p);
}

void give_bytes(std::byte *p, size_t cap) {
  if (cap > kKeepBytes) return unmap({p, cap});
  std::vector<Free> drop;
  {
    std::lock_guard<std::mutex> g(g_mu);
    g_free.push_back({p, cap});
    g_kept += cap;
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
