#include "ec/protocol.hpp"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <atomic>
#include <vector>
#include <cstring>

#include "core/error.hpp"
#include "core/settings.hpp"
#include "memory/heap.hpp"
#include "memory/symbols.hpp"
#include "midway.h"
#include "memory/window.hpp"

namespace mw::protocol {
namespace {
std::mutex g_mu;
int g_rank = 0, g_nprocs = 1;
uint64_t g_clock = 0;  // under g_mu
Model g_model = Model::kEntry;
unsigned g_pc_interval_us = 1000;
PageHooks g_hooks;
std::atomic<uint64_t> g_bind_generation{0};

Model read_model() {
  const std::string v = settings::text(settings::Id::MW_MODEL);
  return v == "rc" ? Model::kRelease : v == "pc" ? Model::kProcessor : Model::kEntry;
}
}  // namespace

std::mutex &mu() { return g_mu; }

void start(int rank, int nprocs) {
  g_rank = rank;
  g_nprocs = nprocs;
  g_model = read_model();
  g_pc_interval_us = static_cast<unsigned>(settings::number(settings::Id::MW_PC_INTERVAL_US));
}
Model model() { return g_model; }
const char *model_name(Model m) {
  switch (m) {
    case Model::kEntry: return "ec";
    case Model::kRelease: return "rc";
    case Model::kProcessor: return "pc";
  }
  return "?";
}
unsigned pc_interval_us() { return g_pc_interval_us; }
int rank() { return g_rank; }
int nprocs() { return g_nprocs; }

uint64_t tick() { return ++g_clock; }
uint64_t clock() { return g_clock; }
void observe(uint64_t remote_clock) {
  if (remote_clock > g_clock) g_clock = remote_clock;
}

std::string lock_name(const void *lock) { return symbols::variable(lock, sizeof(mw_lock_t)); }
std::string barrier_name(const void *barrier) { return symbols::variable(barrier, sizeof(mw_barrier_t)); }
std::string data_name(uintptr_t addr, size_t len) { return symbols::range(addr, len); }

void bindings_changed() { g_bind_generation.fetch_add(1, std::memory_order_release); }
uint64_t bindings_generation() { return g_bind_generation.load(std::memory_order_acquire); }

namespace {
void (*g_double_write_hook)(const DoubleWrite &) = nullptr;
}  // namespace
void set_double_write_hook(void (*hook)(const DoubleWrite &)) { g_double_write_hook = hook; }

namespace {
RaceHooks g_race_hooks{};
}  // namespace
void set_race_hooks(const RaceHooks &hooks) { g_race_hooks = hooks; }
bool checking_races() { return race_clock(false) != 0; }
uint64_t race_clock(bool ordered) { return g_race_hooks.clock ? g_race_hooks.clock(ordered) : 0; }
void race_merged(int writer, uint64_t clock, uintptr_t addr, size_t len) {
  if (g_race_hooks.merged) g_race_hooks.merged(writer, clock, addr, len);
}
void double_write(const DoubleWrite &w) {
  if (g_double_write_hook) return g_double_write_hook(w);
  static std::vector<uintptr_t> &warned = *new std::vector<uintptr_t>;  // under mu()
  if (std::find(warned.begin(), warned.end(), w.barrier) != warned.end()) return;
  warned.push_back(w.barrier);
  warn("mw_barrier",
       "ranks %d and %d both wrote %s [%zu bytes], bound to barrier %s, in one phase (crossing "
       "%llu): the barrier keeps one rank's bytes; let one rank write each byte per phase "
       "(reported once per barrier; mwcc -fmidway-check reports each)",
       w.first, w.second, data_name(w.addr, w.len).c_str(), w.len,
       barrier_name(reinterpret_cast<void *>(w.barrier)).c_str(),
       static_cast<unsigned long long>(w.crossing));
}

void check_object(const char *call, const char *what, const void *object, size_t size) {
  if (!object) fatal(call, "the %s is NULL", what);
  const uintptr_t a = reinterpret_cast<uintptr_t>(object);
  if (!window::is_shared(object, size) || (a >= window::layout().heap_begin && heap::owner_of(a) < 0))
    fatal(call,
          "%s %s is not in shared memory: a %s must be MW_SHARED or allocated with mw_malloc, "
          "so that it is the same object on every rank",
          what, symbols::variable(object).c_str(), what);
  // Every object type of midway.h is two 8-byte words: an address between two is a cast
  // or pointer arithmetic gone wrong, and would be taken for a new object.
  if (a % alignof(uint64_t) != 0)
    fatal(call, "%s %s (%#lx) is not aligned to 8 bytes, as every %s is: a cast or pointer "
          "arithmetic slip?", what, symbols::variable(object, size).c_str(), static_cast<unsigned long>(a), what);
}

void set_page_hooks(const PageHooks &hooks) { g_hooks = hooks; }

namespace {
void (*g_lock_moving)() = nullptr;
}  // namespace
void set_lock_moving_hook(void (*hook)()) { g_lock_moving = hook; }
void lock_moving() {
  if (g_lock_moving) g_lock_moving();
}

void landing(uintptr_t p, size_t len) {
  if (g_hooks.landing) g_hooks.landing(p, len);
}

void unbound(uintptr_t lock, const void *p, size_t len, bool holder) {
  if (g_hooks.unbound) g_hooks.unbound(lock, p, len, holder);
}

namespace {
// Bound data will be written here, by this rank or by the grants and releases that bring
// it: its whole pages (the page layer's partly bound pages excepted) and their dirty marks
// are put in memory now, so that the data lands, or the owner writes it, without a page
// fault (docs/PERFORMANCE.md, "No stalls").
void populate_bound(uintptr_t a, size_t len) {
  if (g_model != Model::kEntry) return;
  const uintptr_t page = window::page_size();
  window::populate((a + page - 1) / page * page, (a + len) / page * page);
}
}  // namespace

bool bind_range(const void *p, size_t len) {
  if (!g_hooks.bound) {
    if (!window::make_accessible(p, len)) return false;
    populate_bound(reinterpret_cast<uintptr_t>(p), len);
    return true;
  }
  if (!window::is_shared(p, len)) return false;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  window::commit_marks(a, a + len);
  g_hooks.bound(p, len);  // bound data is entry consistent, not a copyset's
  populate_bound(a, len);
  return true;
}

void check_range(const char *call, const char *what, const void *object, const void *addr,
                 size_t len, bool ready) {
  const std::string name = std::string(what) == "lock" ? lock_name(object) : barrier_name(object);
  if (len == 0) fatal(call, "binding an empty range at %p to %s %s", addr, what, name.c_str());
  if (!addr) fatal(call, "binding a NULL range to %s %s", what, name.c_str());
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  if (len > UINTPTR_MAX - a)
    fatal(call, "binding %zu bytes at %s (%p) to %s %s: the range wraps around the address space "
          "(a negative length?)", len, data_name(a, len).c_str(), addr, what, name.c_str());
  // A range that starts in shared data and runs past where that data ends: too long.
  if (window::is_shared(addr, 1) && !window::is_shared(addr, len)) {
    const uintptr_t end = a < window::layout().static_end ? window::layout().static_end : window::kEnd;
    fatal(call, "%s [%p, %p) runs %zu bytes past the end of the %s, so it cannot be bound to %s %s: "
          "is the length right?", data_name(a, len).c_str(), addr, static_cast<const char *>(addr) + len,
          a + len - end, a < window::layout().static_end ? "static shared data" : "shared window",
          what, name.c_str());
  }
  if (!(ready ? bind_range(addr, len) : window::is_shared(addr, len)))
    fatal(call,
          "%s [%p, %p) is not in shared memory, so it cannot be bound to %s %s: bind MW_SHARED "
          "data or memory from mw_malloc",
          data_name(reinterpret_cast<uintptr_t>(addr), len).c_str(), addr,
          static_cast<const char *>(addr) + len, what, name.c_str());
}

void malformed(const transport::Header &h, const char *why, const std::string &object) {
  fatal("transport", "malformed %s message from rank %d%s%s: %s", transport::type_name(h.type).c_str(),
        h.sender, object.empty() ? "" : " about ", object.c_str(), why);
}

std::string lock_object(uintptr_t lock) { return "lock " + lock_name(reinterpret_cast<void *>(lock)); }
std::string barrier_object(uintptr_t barrier) { return "barrier " + barrier_name(reinterpret_cast<void *>(barrier)); }
std::string page_object(uintptr_t page) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%" PRIxPTR, page);
  // variable() gives the address itself (digits) when no variable holds it.
  const std::string name = symbols::variable(page);
  return std::isdigit(static_cast<unsigned char>(name[0])) ? std::string("page ") + hex
                                                          : std::string("page ") + hex + " (" + name + ")";
}

}  // namespace mw::protocol
