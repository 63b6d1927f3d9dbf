// Bindings: the shared data a synchronization object guards (mw_bind, mw_barrier_bind).
// A set of address ranges, kept sorted and merged.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mw {

struct Range {
  uintptr_t addr;
  size_t len;
  uintptr_t end() const { return addr + len; }
};

// The synchronization object (a lock or a barrier, by address) that guards a range, and
// the range it was bound as; object 0: none.
struct Guard {
  uintptr_t object = 0;
  Range range{};
};

// "mw_bind: A[4] ([a, +len)) cannot be bound to lock L: its bytes [x, y) are bound to barrier B
// already ..." and stop: each byte of shared data has at most one guard.
[[noreturn]] void overlap_error(const char *call, const char *what, const std::string &name,
                                uintptr_t addr, size_t len, const std::string &data,
                                const char *other_what,
                                const std::string &other_name, const Range &other);

class Bindings {
 public:
  const std::vector<Range> &ranges() const { return ranges_; }
  bool empty() const { return ranges_.empty(); }

  void add(uintptr_t addr, size_t len) {
    uintptr_t a = addr, b = addr + len;
    std::vector<Range> out;
    for (const Range &r : ranges_) {
      if (r.end() < a || r.addr > b) {
        out.push_back(r);
      } else {  // overlapping or touching: absorb
        a = std::min(a, r.addr);
        b = std::max(b, r.end());
      }
    }
    out.push_back({a, b - a});
    std::sort(out.begin(), out.end(), [](const Range &x, const Range &y) { return x.addr < y.addr; });
    ranges_ = std::move(out);
  }

  void remove(uintptr_t addr, size_t len) {
    uintptr_t a = addr, b = addr + len;
    std::vector<Range> out;
    for (const Range &r : ranges_) {
      if (r.end() <= a || r.addr >= b) {
        out.push_back(r);
        continue;
      }
      if (r.addr < a) out.push_back({r.addr, a - r.addr});
      if (r.end() > b) out.push_back({b, r.end() - b});
    }
    ranges_ = std::move(out);
  }

  void assign(std::vector<Range> ranges) { ranges_ = std::move(ranges); }


 private:
  std::vector<Range> ranges_;
};

}  // namespace mw
