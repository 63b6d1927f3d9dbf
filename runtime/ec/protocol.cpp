#include "ec/protocol.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "rc/copysets.hpp"
#include "core/error.hpp"
#include "memory/window.hpp"

namespace mw::protocol {
namespace {
std::mutex g_mu;
int g_rank = 0, g_nprocs = 1;
uint64_t g_clock = 0;  // under g_mu
Model g_model = Model::kEntry;
unsigned g_pc_interval_us = 1000;

Model read_model() {
  const char *v = std::getenv("MW_MODEL");
  if (!v || !*v || std::strcmp(v, "ec") == 0) return Model::kEntry;
  if (std::strcmp(v, "rc") == 0) return Model::kRelease;
  if (std::strcmp(v, "pc") == 0) return Model::kProcessor;
  fatal("mw_init", "MW_MODEL=%s: the consistency model is ec, rc or pc", v);
}

unsigned read_pc_interval() {
  const char *v = std::getenv("MW_PC_INTERVAL_US");
  if (!v || !*v) return 1000;
  char *end;
  errno = 0;
  unsigned long us = std::strtoul(v, &end, 10);
  if (errno != 0 || *end != '\0' || us < 1 || us > 60'000'000)
    fatal("mw_init", "MW_PC_INTERVAL_US=%s is not a number of microseconds from 1 to 60000000", v);
  return static_cast<unsigned>(us);
}
}  // namespace

std::mutex &mu() { return g_mu; }

void start(int rank, int nprocs) {
  g_rank = rank;
  g_nprocs = nprocs;
  g_model = read_model();
  g_pc_interval_us = read_pc_interval();
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
void observe(uint64_t remote_clock) {
  if (remote_clock > g_clock) g_clock = remote_clock;
}

void check_object(const char *call, const char *what, const void *object, size_t size) {
  if (!object) fatal(call, "the %s is NULL", what);
  // The runtime never touches the object's bytes (its page may hold release-consistent
  // data this rank has no copy of): the object need only lie in shared memory.
  if (!window::contains(object, size) ||
      (copysets::enabled() ? copysets::home_of(reinterpret_cast<uintptr_t>(object)) < 0
                           : !window::make_accessible(object, size)))
    fatal(call,
          "%s %p is not in shared memory: a %s must be MW_SHARED or allocated with mw_malloc, "
          "so that it is the same object on every rank",
          what, object, what);
}

bool ready_bound(const void *p, size_t len) {
  if (!copysets::enabled()) return window::make_accessible(p, len);
  if (!window::is_shared(p, len)) return false;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  window::commit_marks(a, a + len);
  return true;
}

void check_range(const char *call, const char *what, const void *object, const void *addr,
                 size_t len) {
  if (len == 0) fatal(call, "binding an empty range at %p to %s %p", addr, what, object);
  if (!addr) fatal(call, "binding a NULL range to %s %p", what, object);
  if (!ready_bound(addr, len))
    fatal(call,
          "[%p, %p) is not in shared memory, so it cannot be bound to %s %p: bind MW_SHARED "
          "data or memory from mw_malloc",
          addr, static_cast<const char *>(addr) + len, what, object);
  copysets::bound(addr, len, call);  // bound data is entry consistent, not a copyset's
}

void malformed(const transport::Header &h, const char *why) {
  fatal("transport", "malformed %s message from rank %d: %s", transport::type_name(h.type).c_str(),
        h.sender, why);
}

}  // namespace mw::protocol
