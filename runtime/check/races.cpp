// Data races on release-consistent data: see checker.hpp, "Data races".
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "check/checker.hpp"
#include "core/error.hpp"
#include "ec/barriers.hpp"
#include "ec/protocol.hpp"
#include "memory/symbols.hpp"

namespace mw::check {
namespace {

std::atomic<bool> g_races_on{false};
// The clock of this rank's last synchronization (0: none yet); kUnchecked after one
// Midway cannot see.
std::atomic<uint64_t> g_sync{0};

// At the home: for each byte of its pages that an update wrote, the last writer and its
// synchronization clock, as disjoint runs by start. Under g_mu.
struct Written {
  uintptr_t end;
  int writer;
  uint64_t clock;
};
std::mutex g_mu;
std::map<uintptr_t, Written> &g_written = *new std::map<uintptr_t, Written>;
std::set<std::tuple<uintptr_t, int, int>> &g_seen = *new std::set<std::tuple<uintptr_t, int, int>>;
std::atomic<int> g_reports{0};

// The datum at a, as the source writes it: a variable's element, or heap memory by the
// mw_malloc call that made its block (when this rank made it).
std::string datum(uintptr_t a, size_t len) {
  if (symbols::known(a)) return protocol::data_name(a, len);
  return heap_datum(a);
}

[[gnu::cold]] void report(uintptr_t a, size_t len, int first, int second) {
  // Once per variable (or page of heap memory) and pair of writers.
  const uintptr_t object = symbols::known(a) ? symbols::base_of(a) : a & ~uintptr_t{4095};
  // Which update reached the home first is itself the race: name the writers in rank
  // order so that the report reads the same in every run.
  if (first > second) std::swap(first, second);
  if (!g_seen.emplace(object, first, second).second) return;
  g_reports.fetch_add(1, std::memory_order_relaxed);
  std::fprintf(stderr,
               "midway: check: data race: two ranks wrote the same bytes of release-consistent data "
               "between synchronizations (rank %d, the data's home)\n"
               "    ranks %d and %d both wrote %s [%zu bytes], and no lock or barrier orders one "
               "write before the other\n"
               "    the home keeps the update that came last; order the writes with a lock or a "
               "barrier, or bind the data to a lock (mw_bind)\n",
               protocol::rank(), first, second, datum(a, len).c_str(), len);
  std::fflush(stderr);
  if (abort_on_report()) {
    std::fprintf(stderr, "midway: check: stopping at the first report (MW_CHECK=abort) (rank %d)\n",
                 protocol::rank());
    std::fflush(nullptr);
    _exit(kExitStatus);
  }
}

}  // namespace

void start_races(bool check_build) {
  // Processor consistency orders a rank's own writes only: two ranks' writes to one
  // byte between flushes are its business, not a rule broken.
  g_races_on.store(check_build && protocol::nprocs() > 1 && protocol::model() != protocol::Model::kProcessor,
                   std::memory_order_release);
}

int races_reported() { return g_reports.load(std::memory_order_relaxed); }

void acquired() {
  if (!g_races_on.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> g(protocol::mu());
  g_sync.store(protocol::clock(), std::memory_order_relaxed);
}

void crossed() {
  if (g_races_on.load(std::memory_order_relaxed)) g_sync.store(barriers::crossed_clock(), std::memory_order_relaxed);
}

void synced_unseen() {
  if (g_races_on.load(std::memory_order_relaxed)) g_sync.store(kUnchecked, std::memory_order_relaxed);
}

uint64_t race_clock(bool ordered) {
  if (!g_races_on.load(std::memory_order_relaxed)) return 0;
  const uint64_t c = g_sync.load(std::memory_order_relaxed);
  return ordered && c != 0 ? c : kUnchecked;
}

void merged(int writer, uint64_t clock, uintptr_t addr, size_t len) {
  if (!g_races_on.load(std::memory_order_relaxed) || len == 0) return;
  const uintptr_t end = addr + len;
  std::lock_guard<std::mutex> g(g_mu);
  auto it = g_written.upper_bound(addr);
  if (it != g_written.begin() && std::prev(it)->second.end > addr) --it;
  std::vector<std::pair<uintptr_t, Written>> keep;  // the parts of cut runs outside [addr, end)
  while (it != g_written.end() && it->first < end) {
    const uintptr_t from = it->first;
    const Written w = it->second;
    // Bytes another rank wrote last, and no synchronization of this writer's came after
    // that rank's.
    if (clock != kUnchecked && w.writer != writer && clock <= w.clock)
      report(std::max(addr, from), std::min(end, w.end) - std::max(addr, from), w.writer, writer);
    if (from < addr) keep.push_back({from, {addr, w.writer, w.clock}});
    if (w.end > end) keep.push_back({end, w});
    it = g_written.erase(it);
  }
  for (const auto &k : keep) g_written.emplace(k);
  if (clock == kUnchecked) return;  // what the home knew of these bytes is forgotten
  // This writer is their last; joined to a neighbour of the same writer and clock, so that
  // an array written in many runs stays a few entries.
  auto next = g_written.find(end);
  uintptr_t to = end;
  if (next != g_written.end() && next->second.writer == writer && next->second.clock == clock) {
    to = next->second.end;
    g_written.erase(next);
  }
  auto prev = g_written.lower_bound(addr);
  if (prev != g_written.begin() && (--prev)->second.end == addr && prev->second.writer == writer &&
      prev->second.clock == clock) {
    prev->second.end = to;
    return;
  }
  g_written[addr] = {to, writer, clock};
}

}  // namespace mw::check
