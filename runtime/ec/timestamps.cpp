#include "ec/timestamps.hpp"

#include <algorithm>
#include <iterator>
#include <map>

#include "memory/dirty.hpp"

namespace mw::timestamps {
namespace {

struct Entry {
  uintptr_t end;
  uint64_t stamp;
};
// Never destroyed (as all module state the service thread touches): a rank that
// exits without mw_finalize runs static destructors while the service thread still
// serves peers.
std::map<uintptr_t, Entry> &g_map = *new std::map<uintptr_t, Entry>;  // disjoint; adjacent entries of equal stamp merged

// Merges entry `it` with its neighbours of the same stamp.
void merge(std::map<uintptr_t, Entry>::iterator it) {
  auto next = std::next(it);
  if (next != g_map.end() && next->first == it->second.end && next->second.stamp == it->second.stamp) {
    it->second.end = next->second.end;
    g_map.erase(next);
  }
  if (it != g_map.begin()) {
    auto p = std::prev(it);
    if (p->second.end == it->first && p->second.stamp == it->second.stamp) {
      p->second.end = it->second.end;
      g_map.erase(it);
    }
  }
}

// Sets [a, b) to stamp s, cutting the entries it overlaps.
void assign(uintptr_t a, uintptr_t b, uint64_t s) {
  if (a >= b) return;
  auto it = g_map.lower_bound(a);
  // The same run stamped again (lines written again, a grant of what was granted last
  // time): restamp it in place, no node freed or allocated.
  if (it != g_map.end() && it->first == a && it->second.end == b) {
    it->second.stamp = s;
    return merge(it);
  }
  if (it != g_map.begin()) {
    auto p = std::prev(it);
    if (p->second.end > a) {
      Entry old = p->second;
      p->second.end = a;
      if (old.end > b) g_map.emplace(b, old);
    }
  }
  it = g_map.lower_bound(a);
  while (it != g_map.end() && it->first < b) {
    if (it->second.end > b) {
      Entry old = it->second;
      g_map.erase(it);
      it = g_map.emplace(b, old).first;
      break;
    }
    it = g_map.erase(it);
  }
  merge(g_map.emplace_hint(it, a, Entry{b, s}));
}

}  // namespace

bool stamp_dirty(uintptr_t addr, size_t len, size_t line, uint64_t stamp) {
  const uintptr_t end = addr + len;
  uintptr_t cur_a = 0, cur_b = 0;  // the current rounded run, not yet assigned
  bool any = false;
  dirty::for_each_run(addr, len, [&](uintptr_t p, size_t n) {
    any = true;
    dirty::clear(reinterpret_cast<void *>(p), n);
    uintptr_t a = std::max(addr, p & ~(uintptr_t{line} - 1));
    uintptr_t b = std::min(end, (p + n + line - 1) & ~(uintptr_t{line} - 1));
    if (cur_b != 0 && a <= cur_b) {
      cur_b = std::max(cur_b, b);
      return;
    }
    if (cur_b != 0) assign(cur_a, cur_b, stamp);
    cur_a = a;
    cur_b = b;
  });
  if (cur_b != 0) assign(cur_a, cur_b, stamp);
  return any;
}

void collect(uintptr_t addr, size_t len, uint64_t since, std::vector<Run> &out) {
  const uintptr_t end = addr + len;
  auto it = g_map.upper_bound(addr);
  if (it != g_map.begin() && std::prev(it)->second.end > addr) --it;
  for (; it != g_map.end() && it->first < end; ++it) {
    if (it->second.stamp <= since) continue;
    uintptr_t a = std::max(addr, it->first), b = std::min(end, it->second.end);
    if (!out.empty() && out.back().addr + out.back().len == a) {
      out.back().len += b - a;
      out.back().stamp = std::max(out.back().stamp, it->second.stamp);
    } else {
      out.push_back({a, b - a, it->second.stamp});
    }
  }
}

void record(uintptr_t addr, size_t len, uint64_t stamp) { assign(addr, addr + len, stamp); }

}  // namespace mw::timestamps
