#include "check/advisor.hpp"
#include "check/checker.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/settings.hpp"
#include "ec/protocol.hpp"
#include "memory/heap.hpp"
#include "memory/image.hpp"
#include "memory/symbols.hpp"
#include "midway.h"

namespace mw::advise {
namespace detail {
std::atomic<bool> g_recording{false};
}
namespace {

using Json = nlohmann::json;

// A run of consecutive barrier phases [first, last] (phase k: after k crossings).
struct Phases {
  uint32_t first, last;
  bool operator==(const Phases &) const = default;
};

// What this rank saw of one cache line.
constexpr uint32_t kUnset = ~0u;
struct Line {
  uint32_t locks = kUnset;  // the intersection of the locksets held at its accesses
  uint32_t first_locks = 0, emptied_locks = 0;
  const mw_site *first = nullptr;    // its first access
  const mw_site *emptied = nullptr;  // the access that left no lock common to all
  const mw_site *first_store = nullptr, *first_load = nullptr;
  std::vector<Phases> stores, loads;
};
constexpr uintptr_t kPage = 4096;
constexpr size_t kLinesPerPage = kPage / kLine;

// The program's threads are the rank's: one mutex keeps the record whole (uncontended,
// it is a pair of atomic operations per access).
std::mutex g_mu;
std::unordered_map<uintptr_t, std::unique_ptr<Line[]>> g_pages;  // by page number
// The pages used last, direct-mapped by page number: a stencil's loop moves between a
// few rows (pages) at every access, and should not pay a hash lookup for each.
struct Cached {
  uintptr_t page = ~uintptr_t{0};
  Line *lines = nullptr;
};
Cached g_cache[16];

// Locksets, interned (Eraser): an id per distinct sorted set of lock addresses, and the
// intersections met so far, so that an access compares ids.
std::vector<std::vector<uintptr_t>> g_sets{{}};  // id 0: no lock
std::map<std::vector<uintptr_t>, uint32_t> g_set_ids{{{}, 0}};
std::unordered_map<uint64_t, uint32_t> g_meets;
std::map<uintptr_t, int> g_held;  // lock -> mode
uint32_t g_held_exclusive = 0, g_held_any = 0;

uint32_t g_phase = 0;
std::vector<uintptr_t> g_crossings;  // the barrier of crossing k at [k - 1]

uint32_t intern(std::vector<uintptr_t> set) {
  auto [it, added] = g_set_ids.emplace(std::move(set), static_cast<uint32_t>(g_sets.size()));
  if (added) g_sets.push_back(it->first);
  return it->second;
}

uint32_t meet(uint32_t a, uint32_t b) {
  if (a == b) return a;
  const uint64_t key = static_cast<uint64_t>(std::min(a, b)) << 32 | std::max(a, b);
  if (auto it = g_meets.find(key); it != g_meets.end()) return it->second;
  std::vector<uintptr_t> both;
  std::set_intersection(g_sets[a].begin(), g_sets[a].end(), g_sets[b].begin(), g_sets[b].end(),
                        std::back_inserter(both));
  const uint32_t id = intern(std::move(both));
  g_meets.emplace(key, id);
  return id;
}

void held_changed() {
  std::vector<uintptr_t> exclusive, any;
  for (const auto &[l, mode] : g_held) {
    any.push_back(l);
    if (mode == MW_EXCLUSIVE) exclusive.push_back(l);
  }
  g_held_exclusive = intern(std::move(exclusive));
  g_held_any = intern(std::move(any));
}

Line &line_at(uintptr_t line) {
  const uintptr_t page = line / kLinesPerPage;
  Cached &c = g_cache[page % std::size(g_cache)];
  if (c.page != page) {
    std::unique_ptr<Line[]> &lines = g_pages[page];
    if (!lines) lines = std::make_unique<Line[]>(kLinesPerPage);
    c = {page, lines.get()};
  }
  return c.lines[line % kLinesPerPage];
}

void add_phase(std::vector<Phases> &v) {
  if (!v.empty() && v.back().last + 1 >= g_phase) {
    v.back().last = g_phase;
    return;
  }
  v.push_back({g_phase, g_phase});
}

std::string hex(uintptr_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#" PRIxPTR, a);
  return buf;
}

std::string location(const mw_site *s) {
  if (!s) return "";
  return check::location(s->where);
}

// Every variable some site of the program falls in, as the pass described it: its name,
// place and array shape (the advice writes A[3] from them). The sites are read from the
// executable as linked (mwcc links without PIE: the addresses are the running ones).
Json objects() {
  Json out = Json::array();
  auto sec = image::read_section("/proc/self/exe", MW_SITES_SECTION, false);
  if (!sec) return out;
  const auto *sites = reinterpret_cast<const mw_site *>(sec->addr);
  std::set<const mw_object *> seen;
  for (size_t i = 0; i < sec->size / sizeof(mw_site); i++) {
    const mw_object *o = sites[i].object;
    if (!o || !seen.insert(o).second) continue;
    Json dims = Json::array();
    for (uint32_t d = 0; d < o->rank && d < MW_OBJECT_MAX_DIMS; d++) dims.push_back(o->dims[d]);
    out.push_back({{"name", o->name},
                   {"base", reinterpret_cast<uintptr_t>(o->base)},
                   {"size", o->size},
                   {"element_size", o->element_size},
                   {"dims", dims}});
  }
  return out;
}

Json phases(const std::vector<Phases> &v) {
  Json out = Json::array();
  for (const Phases &p : v) out.push_back({p.first, p.last});
  return out;
}

bool same(const Line &a, const Line &b) {
  return a.locks == b.locks && a.stores == b.stores && a.loads == b.loads;
}

void write(const std::string &path) {
  std::vector<uintptr_t> pages;
  for (const auto &[p, lines] : g_pages) pages.push_back(p);
  std::sort(pages.begin(), pages.end());

  std::set<const mw_site *> sites;
  std::set<uint32_t> sets;
  Json blocks = Json::array();  // the mw_malloc blocks runs begin in, that this rank knows
  std::set<uintptr_t> known_blocks;
  Json runs = Json::array();
  const Line *open = nullptr;
  uintptr_t open_begin = 0, open_end = 0;
  auto close = [&] {
    if (!open) return;
    const Line &l = *open;
    for (const mw_site *s : {l.first, l.emptied, l.first_store, l.first_load}) sites.insert(s);
    sets.insert({l.locks, l.first_locks, l.emptied_locks});
    uintptr_t block, caller;
    size_t size;
    if (heap::block_of(open_begin, &block, &size, &caller) && known_blocks.insert(block).second)
      blocks.push_back({{"base", block}, {"size", size}, {"from", symbols::code(caller)}});
    runs.push_back({{"begin", open_begin},
                    {"end", open_end},
                    {"where", protocol::data_name(open_begin)},
                    {"locks", l.locks},
                    {"stores", phases(l.stores)},
                    {"loads", phases(l.loads)},
                    {"first", hex(reinterpret_cast<uintptr_t>(l.first))},
                    {"first_locks", l.first_locks},
                    {"emptied", hex(reinterpret_cast<uintptr_t>(l.emptied))},
                    {"emptied_locks", l.emptied_locks},
                    {"first_store", hex(reinterpret_cast<uintptr_t>(l.first_store))},
                    {"first_load", hex(reinterpret_cast<uintptr_t>(l.first_load))}});
    open = nullptr;
  };
  for (uintptr_t p : pages) {
    const Line *lines = g_pages[p].get();
    for (size_t i = 0; i < kLinesPerPage; i++) {
      const Line &l = lines[i];
      const uintptr_t begin = (p * kLinesPerPage + i) * kLine;
      if (l.locks == kUnset) {
        close();
        continue;
      }
      if (open && open_end == begin && same(*open, l)) {
        open_end += kLine;
        continue;
      }
      close();
      open = &l, open_begin = begin, open_end = begin + kLine;
    }
  }
  close();

  Json locksets = Json::object(), names = Json::object(), site_text = Json::object();
  for (uint32_t id : sets) {
    Json ls = Json::array();
    for (uintptr_t l : g_sets[id]) {
      ls.push_back(l);
      names[std::to_string(l)] = protocol::lock_name(reinterpret_cast<void *>(l));
    }
    locksets[std::to_string(id)] = ls;
  }
  Json crossings = Json::array();  // [barrier, how many crossings in a row]
  for (uintptr_t b : g_crossings) {
    if (!crossings.empty() && crossings.back()[0] == b) {
      crossings.back()[1] = crossings.back()[1].get<uint64_t>() + 1;
      continue;
    }
    crossings.push_back({b, 1});
    names[std::to_string(b)] = protocol::barrier_name(reinterpret_cast<void *>(b));
  }
  for (const mw_site *s : sites)
    if (s) site_text[hex(reinterpret_cast<uintptr_t>(s))] = location(s);

  const Json doc = {{"rank", g_rank},    {"line", kLine},       {"crossings", crossings}, 
                    {"names", names},    {"locksets", locksets}, {"sites", site_text},
                    {"objects", objects()}, {"blocks", blocks}, {"runs", runs}};
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << doc.dump() << '\n';
    if (!f.flush()) fatal_errno("mw_finalize", "cannot write the advisor's record to %s", tmp.c_str());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    fatal_errno("mw_finalize", "cannot rename %s to %s", tmp.c_str(), path.c_str());
}

}  // namespace

namespace detail {
void note(uintptr_t a, size_t size, const mw_site *site, bool store) {
  if (size == 0) return;
  std::lock_guard<std::mutex> g(g_mu);
  const uint32_t held = store ? g_held_exclusive : g_held_any;
  for (uintptr_t line = a / kLine, last = (a + size - 1) / kLine; line <= last; line++) {
    Line &l = line_at(line);
    if (l.locks == kUnset) {
      l.locks = l.first_locks = held;
      l.first = site;
    } else if (l.locks != held) {
      const uint32_t both = meet(l.locks, held);
      if (both == 0 && l.locks != 0) l.emptied = site, l.emptied_locks = held;
      l.locks = both;
    }
    if (store) {
      if (!l.first_store) l.first_store = site;
      if (l.stores.empty() || l.stores.back().last != g_phase) add_phase(l.stores);
    } else {
      if (!l.first_load) l.first_load = site;
      if (l.loads.empty() || l.loads.back().last != g_phase) add_phase(l.loads);
    }
  }
}
}  // namespace detail

void start() {
  if (settings::number(settings::Id::MW_ADVISE) == 0) return;
  if (!image::read_section("/proc/self/exe", MW_SITES_SECTION, false))
    fatal("mw_init",
          "mwrun --advise records the accesses of a check build, and this program is not one: "
          "compile it with mwcc -fmidway-check");
  if (settings::text(settings::Id::MW_JOB_DIR).empty())
    fatal("mw_init", "MW_ADVISE=1 works under mwrun only (mwrun --advise), which merges the ranks' records");
  detail::g_recording.store(true, std::memory_order_release);
}

void finish() {
  if (!detail::g_recording.exchange(false)) return;
  std::lock_guard<std::mutex> g(g_mu);
  write(settings::text(settings::Id::MW_JOB_DIR, "mw_finalize") + "/" + kFilePrefix +
        std::to_string(g_rank) + kFileSuffix);
}

void on_acquire(const void *lock, int mode) {
  if (!detail::g_recording.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> g(g_mu);
  g_held[reinterpret_cast<uintptr_t>(lock)] = mode;
  held_changed();
}

void on_release(const void *lock) {
  if (!detail::g_recording.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> g(g_mu);
  g_held.erase(reinterpret_cast<uintptr_t>(lock));
  held_changed();
}

void on_crossing(const void *barrier) {
  if (!detail::g_recording.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> g(g_mu);
  g_crossings.push_back(reinterpret_cast<uintptr_t>(barrier));
  g_phase++;
}

}  // namespace mw::advise
