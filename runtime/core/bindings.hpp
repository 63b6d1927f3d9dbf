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

  // The first range that shares a byte with [a, b), or nullptr.
  const Range *overlapping(uintptr_t a, uintptr_t b) const {
    auto it = std::lower_bound(ranges_.begin(), ranges_.end(), a,
                               [](const Range &r, uintptr_t x) { return r.end() <= x; });
    return it != ranges_.end() && it->addr < b ? &*it : nullptr;
  }

  // The ranges are sorted, apart and not touching, so their ends are sorted too: the
  // ranges a call changes are found by binary search and replaced in place. (Copying
  // and sorting the whole list on every call made 20 000 bindings take 13 s.)
  void add(uintptr_t addr, size_t len) {
    uintptr_t a = addr, b = addr + len;
    auto first = std::lower_bound(ranges_.begin(), ranges_.end(), a,
                                  [](const Range &r, uintptr_t x) { return r.end() < x; });
    auto last = first;
    for (; last != ranges_.end() && last->addr <= b; ++last) {  // overlapping or touching: absorbed
      a = std::min(a, last->addr);
      b = std::max(b, last->end());
    }
    ranges_.insert(ranges_.erase(first, last), Range{a, b - a});
  }

  void remove(uintptr_t addr, size_t len) {
    const uintptr_t a = addr, b = addr + len;
    auto first = std::lower_bound(ranges_.begin(), ranges_.end(), a,
                                  [](const Range &r, uintptr_t x) { return r.end() <= x; });
    Range kept[2];
    size_t n = 0;
    auto last = first;
    for (; last != ranges_.end() && last->addr < b; ++last) {
      if (last->addr < a) kept[n++] = {last->addr, a - last->addr};
      if (last->end() > b) kept[n++] = {b, last->end() - b};
    }
    ranges_.insert(ranges_.erase(first, last), kept, kept + n);
  }

  // Any ranges, in any order (a message's): kept as add() keeps them.
  void assign(const std::vector<Range> &ranges) {
    ranges_.clear();
    for (const Range &r : ranges) add(r.addr, r.len);
  }


 private:
  std::vector<Range> ranges_;
};

}  // namespace mw
