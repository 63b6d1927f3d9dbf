#include "check/checker.hpp"

#include "check/advisor.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.hpp"
#include "core/settings.hpp"
#include "ec/barriers.hpp"
#include "ec/locks.hpp"
#include "ec/protocol.hpp"
#include "memory/heap.hpp"
#include "memory/image.hpp"
#include "memory/symbols.hpp"
#include "midway.h"

namespace mw::check {
namespace {

std::atomic<bool> g_on{false};
bool g_abort = false;

// The guards of shared data on this rank: every binding, sorted and disjoint (mw_bind
// refuses overlaps), as an immutable snapshot rebuilt when a binding changes
// (protocol::bindings_generation). A thread keeps the snapshot it last used, so the
// fast path is an atomic load, a compare and a binary search, and no lock.
struct Guarded {
  uintptr_t begin, end, object;
  bool barrier;
};
struct Snapshot {
  uint64_t generation = 0;
  std::vector<Guarded> guards;  // sorted by begin
};

std::mutex g_mu;  // the snapshot's rebuild, the bind sites, the reports
std::shared_ptr<const Snapshot> g_snapshot = std::make_shared<Snapshot>();

struct Cached {
  uint64_t generation = ~0ull;
  std::shared_ptr<const Snapshot> snapshot;
};
thread_local Cached t_cached;

const Snapshot &snapshot() {
  const uint64_t gen = protocol::bindings_generation();
  if (t_cached.generation == gen) return *t_cached.snapshot;
  std::lock_guard<std::mutex> g(g_mu);
  if (g_snapshot->generation != gen) {
    auto s = std::make_shared<Snapshot>();
    s->generation = gen;
    locks::for_each_binding([&](uintptr_t l, const Range &r) { s->guards.push_back({r.addr, r.end(), l, false}); });
    barriers::for_each_binding([&](uintptr_t b, const Range &r) { s->guards.push_back({r.addr, r.end(), b, true}); });
    std::sort(s->guards.begin(), s->guards.end(),
              [](const Guarded &x, const Guarded &y) { return x.begin < y.begin; });
    g_snapshot = std::move(s);
  }
  t_cached = {gen, g_snapshot};
  return *t_cached.snapshot;
}

// Where each binding was made (mw_bind's caller), by the range's start.
struct BindSite {
  uintptr_t end, object, caller;
};
std::map<uintptr_t, BindSite> &g_bind_sites = *new std::map<uintptr_t, BindSite>;  // under g_mu

enum class Kind { kStoreUnheld, kStoreShared, kLoadUnheld };
const char *what(Kind k) {
  switch (k) {
    case Kind::kStoreUnheld: return "store to lock-bound data without holding its lock";
    case Kind::kStoreShared: return "store to lock-bound data holding its lock only MW_NONEXCLUSIVE";
    case Kind::kLoadUnheld: return "load of lock-bound data without holding its lock";
  }
  return "?";
}

std::set<std::tuple<int, const mw_site *, uintptr_t>> &g_seen =
    *new std::set<std::tuple<int, const mw_site *, uintptr_t>>;  // under g_mu
int g_reports = 0;  // under g_mu

// The accessed byte as the source would write it: A[3][17], total, a field's offset
// after a `+`, or heap memory by the mw_malloc call that made its block.
std::string datum(uintptr_t a, const mw_site *site) {
  const mw_object *o = site->object;
  const uintptr_t base = o ? reinterpret_cast<uintptr_t>(o->base) : 0;
  if (o && a >= base && a < base + o->size) return symbols::element(o->name, *o, a - base);
  if (symbols::known(a)) return symbols::variable(a);
  return heap_datum(a);
}

std::string held_locks() {
  std::string out;
  for (const auto &[l, mode] : locks::held_locks()) {
    if (!out.empty()) out += ", ";
    out += protocol::lock_name(reinterpret_cast<void *>(l));
    out += mode == MW_EXCLUSIVE ? " (MW_EXCLUSIVE)" : " (MW_NONEXCLUSIVE)";
  }
  return out.empty() ? "none" : out;
}

[[gnu::cold, gnu::noinline]] void report(Kind kind, uintptr_t a, size_t size, const mw_site *site,
                                         const Guarded &g) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (!g_seen.emplace(static_cast<int>(kind), site, g.object).second) return;
  ++g_reports;
  const bool store = kind != Kind::kLoadUnheld;
  std::string where = location(site->where);
  for (const mw_location *l = site->where.inlined_at; l; l = l->inlined_at)
    where += "\n      inlined into " + location(*l);
  std::string bound = "mw_bind";
  auto it = g_bind_sites.upper_bound(a);
  if (it != g_bind_sites.begin() && (--it, a < it->second.end && it->second.object == g.object))
    bound += " called from " + symbols::call_site(it->second.caller);
  else
    bound += " on another rank";  // bindings that came with the lock
  std::fprintf(stderr,
               "midway: check: %s (rank %d)\n"
               "    %s of %zu bytes %s %s at %s\n"
               "    bound to lock %s with %s +%zu bytes (%s)\n"
               "    locks rank %d holds: %s\n",
               what(kind), g_rank, store ? "store" : "load", size, store ? "to" : "from",
               datum(a, site).c_str(), where.c_str(),
               protocol::lock_name(reinterpret_cast<void *>(g.object)).c_str(),
               (symbols::known(g.begin) ? symbols::range(g.begin, g.end - g.begin) : datum(g.begin, site)).c_str(),
               static_cast<size_t>(g.end - g.begin), bound.c_str(),
               g_rank, held_locks().c_str());
  std::fflush(stderr);
  if (g_abort) {
    std::fprintf(stderr, "midway: check: stopping at the first report (MW_CHECK=abort) (rank %d)\n", g_rank);
    std::fflush(nullptr);
    _exit(kExitStatus);
  }
}

// Two ranks wrote the same bytes of barrier-bound data in one phase, found by the
// barrier's manager (ec/barriers.cpp). Called under the protocol mutex: takes no lock
// that is held while that mutex is taken (so not g_mu).
std::mutex g_double_mu;
std::set<std::tuple<uintptr_t, int, int>> &g_double_seen = *new std::set<std::tuple<uintptr_t, int, int>>;
std::atomic<int> g_double_reports{0};

void on_double_write(const protocol::DoubleWrite &w) {
  std::lock_guard<std::mutex> lk(g_double_mu);
  if (!g_double_seen.emplace(w.barrier, w.first, w.second).second) return;
  g_double_reports.fetch_add(1, std::memory_order_relaxed);
  std::fprintf(stderr,
               "midway: check: two ranks wrote the same bytes of barrier-bound data in one phase (rank %d)\n"
               "    ranks %d and %d both wrote %s [%zu bytes] before crossing %llu of barrier %s\n"
               "    the barrier keeps one rank's bytes; let one rank write each byte per phase\n",
               g_rank, w.first, w.second, protocol::data_name(w.addr, w.len).c_str(), w.len,
               static_cast<unsigned long long>(w.crossing),
               protocol::barrier_name(reinterpret_cast<void *>(w.barrier)).c_str());
  std::fflush(stderr);
  if (g_abort) {
    std::fprintf(stderr, "midway: check: stopping at the first report (MW_CHECK=abort) (rank %d)\n", g_rank);
    std::fflush(nullptr);
    _exit(kExitStatus);
  }
}

void at_exit() {
  int n;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    n = g_reports;
  }
  n += g_double_reports.load(std::memory_order_relaxed) + races_reported();
  if (n == 0) return;
  std::fflush(nullptr);
  std::fprintf(stderr, "midway: check: %d report%s: exiting with status %d (rank %d)\n", n,
               n == 1 ? "" : "s", kExitStatus, g_rank);
  std::fflush(stderr);
  _exit(kExitStatus);
}

inline void check(uintptr_t a, size_t size, const mw_site *site, bool store) {
  if (!g_on.load(std::memory_order_relaxed) || size == 0) return;
  const std::vector<Guarded> &v = snapshot().guards;
  if (v.empty()) return;
  // The guards are disjoint, so their ends are sorted too: the first that ends past a.
  auto it = std::upper_bound(v.begin(), v.end(), a, [](uintptr_t x, const Guarded &g) { return x < g.end; });
  for (; it != v.end() && it->begin < a + size; ++it) {
    if (it->barrier) continue;  // barrier-bound data: checked where updates merge
    const int held = locks::held_mode(reinterpret_cast<const void *>(it->object));
    const uintptr_t at = std::max(a, it->begin);
    if (store && held != MW_EXCLUSIVE)
      report(held == MW_NONEXCLUSIVE ? Kind::kStoreShared : Kind::kStoreUnheld, at, size, site, *it);
    else if (!store && held != MW_EXCLUSIVE && held != MW_NONEXCLUSIVE)
      report(Kind::kLoadUnheld, at, size, site, *it);
  }
}

}  // namespace

std::string heap_datum(uintptr_t a) {
  uintptr_t block, caller;
  size_t size;
  if (heap::block_of(a, &block, &size, &caller))
    return "offset " + std::to_string(a - block) + " of mw_malloc(" + std::to_string(size) +
           ") (called from " + symbols::call_site(caller) + ")";
  // Only the allocating rank knows its blocks; the address says which rank that is.
  char buf[96];
  std::snprintf(buf, sizeof buf, "%#" PRIxPTR " (in a block of mw_malloc memory rank %d allocated)", a,
                heap::owner_of(a));
  return buf;
}

std::string location(const mw_location &l) {
  std::string out = l.file ? l.file : "<unknown file>";
  if (l.line) out += ":" + std::to_string(l.line);
  if (l.column) out += ":" + std::to_string(l.column);
  if (l.function) out += std::string(" in ") + l.function;
  return out;
}

void start() {
  g_abort = settings::text(settings::Id::MW_CHECK) == "abort";
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(at_exit); });
  // A check build (its sites are linked in) reports double writes at barriers as
  // violations; other builds warn about them (ec/protocol.cpp).
  const bool check_build = image::read_section("/proc/self/exe", MW_SITES_SECTION, false).has_value();
  if (check_build) protocol::set_double_write_hook(on_double_write);
  start_races(check_build);
  protocol::set_race_hooks({race_clock, merged});
  // Lock rules are entry consistency's: under rc and pc a lock only orders.
  g_on.store(protocol::model() == protocol::Model::kEntry, std::memory_order_release);
}

bool abort_on_report() { return g_abort; }

void stop() { g_on.store(false, std::memory_order_release); }

void note_binding(const void *object, const void *addr, size_t len, const void *caller) {
  std::lock_guard<std::mutex> g(g_mu);
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  g_bind_sites[a] = {a + len, reinterpret_cast<uintptr_t>(object), reinterpret_cast<uintptr_t>(caller)};
}

}  // namespace mw::check

extern "C" __attribute__((visibility("default"))) void __mw_check_load(const void *addr, size_t size,
                                                                       const mw_site *site) {
  mw::advise::note(addr, size, site, false);
  mw::check::check(reinterpret_cast<uintptr_t>(addr), size, site, false);
}
extern "C" __attribute__((visibility("default"))) void __mw_check_store(const void *addr, size_t size,
                                                                        const mw_site *site) {
  mw::advise::note(addr, size, site, true);
  mw::check::check(reinterpret_cast<uintptr_t>(addr), size, site, true);
}
