#include "protocol.hpp"

#include "error.hpp"
#include "window.hpp"

namespace mw::protocol {
namespace {
std::mutex g_mu;
int g_rank = 0, g_nprocs = 1;
uint64_t g_clock = 0;  // under g_mu
}  // namespace

std::mutex &mu() { return g_mu; }

void start(int rank, int nprocs) {
  g_rank = rank;
  g_nprocs = nprocs;
}
int rank() { return g_rank; }
int nprocs() { return g_nprocs; }

uint64_t tick() { return ++g_clock; }
void observe(uint64_t remote_clock) {
  if (remote_clock > g_clock) g_clock = remote_clock;
}

void check_object(const char *call, const char *what, const void *object, size_t size) {
  if (!object) fatal(call, "the %s is NULL", what);
  if (!window::contains(object, size) || !window::make_accessible(object, size))
    fatal(call,
          "%s %p is not in shared memory: a %s must be MW_SHARED or allocated with mw_malloc, "
          "so that it is the same object on every rank",
          what, object, what);
}

void check_range(const char *call, const char *what, const void *object, const void *addr,
                 size_t len) {
  if (len == 0) fatal(call, "binding an empty range at %p to %s %p", addr, what, object);
  if (!addr) fatal(call, "binding a NULL range to %s %p", what, object);
  if (!window::contains(addr, len) || !window::make_accessible(addr, len))
    fatal(call,
          "[%p, %p) is not in shared memory, so it cannot be bound to %s %p: bind MW_SHARED "
          "data or memory from mw_malloc",
          addr, static_cast<const char *>(addr) + len, what, object);
}

void malformed(const transport::Header &h, const char *why) {
  fatal("transport", "malformed %s message from rank %d: %s", transport::type_name(h.type).c_str(),
        h.sender, why);
}

}  // namespace mw::protocol
