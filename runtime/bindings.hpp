// Bindings: the shared data a synchronization object guards (mw_bind, mw_barrier_bind).
// A set of address ranges, kept sorted and merged, with a hash that tells two ranks'
// copies apart in one word: a lock's bindings travel with the lock (in a grant) only
// when the acquirer's hash differs from the owner's.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mw {

struct Range {
  uintptr_t addr;
  size_t len;
  uintptr_t end() const { return addr + len; }
};

class Bindings {
 public:
  const std::vector<Range> &ranges() const { return ranges_; }
  uint64_t hash() const { return hash_; }
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
    rehash();
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
    rehash();
  }

  void assign(std::vector<Range> ranges) {
    ranges_ = std::move(ranges);
    rehash();
  }

  // Does any range overlap [addr, addr+len)?
  bool overlaps(uintptr_t addr, size_t len) const {
    for (const Range &r : ranges_)
      if (r.addr < addr + len && addr < r.end()) return true;
    return false;
  }

 private:
  void rehash() {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the ranges
    auto mix = [&](uint64_t v) {
      for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
    };
    for (const Range &r : ranges_) {
      mix(r.addr);
      mix(r.len);
    }
    hash_ = ranges_.empty() ? 0 : h;
  }
  std::vector<Range> ranges_;
  uint64_t hash_ = 0;
};

}  // namespace mw
