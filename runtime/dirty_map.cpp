#include "dirty_map.hpp"

#include <algorithm>

#include "error.hpp"
#include "window.hpp"

namespace mw::dirty {

void mark(const void *addr, size_t len) {
  uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  uintptr_t b = a + len < a ? UINTPTR_MAX : a + len;  // a range may not wrap around
  a = std::max(a, window::kBase);
  b = std::min(b, window::kEnd);
  if (a < b) std::memset(shadow(a), MW_DIRTY, b - a);
}

static void check_in_window(const char *call, const void *addr, size_t len) {
  if (!window::accessible(addr, len))
    fatal(call,
          "range [%p, +%zu) is not shared memory (static MW_SHARED data or a live mw_malloc "
          "block inside the window [0x%lx, 0x%lx))",
          addr, len, static_cast<unsigned long>(window::kBase),
          static_cast<unsigned long>(window::kEnd));
}

size_t count(const void *addr, size_t len) {
  check_in_window("mw_dirty_count", addr, len);
  size_t n = 0;
  for_each_run(reinterpret_cast<uintptr_t>(addr), len, [&n](uintptr_t, size_t l) { n += l; });
  return n;
}

void clear(const void *addr, size_t len) {
  check_in_window("mw_dirty_clear", addr, len);
  std::memset(shadow(reinterpret_cast<uintptr_t>(addr)), 0, len);
}

}  // namespace mw::dirty
