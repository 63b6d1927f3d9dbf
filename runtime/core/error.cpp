#include "core/error.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mw {

int g_rank = -1;
bool g_failed = false;
constinit __attribute__((tls_model("initial-exec"))) thread_local uint64_t t_call_pc = 0;

namespace {

std::atomic<std::string (*)(uintptr_t)> g_namer{nullptr};

// The line that says where the failed call was made, after its message; "" if unknown.
std::string call_site_line(const char *call, const char *rank) {
  const uint64_t pc = t_call_pc;
  auto namer = g_namer.load(std::memory_order_acquire);
  if (pc == 0 || !namer) return "";
  const std::string site = namer(static_cast<uintptr_t>(pc));
  if (site.empty()) return "";
  return std::string("midway: ") + call + " was called from " + site + " (" + rank + ")\n";
}

void print(const char *prefix, const char *call, const char *fmt, va_list ap, const char *why) {
  char msg[1024];
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  char rank[48];
  // Before mw_init has learned it, the rank mwrun gave (a launcher's PMIx rank is known
  // only once mw_init has asked).
  const char *given = std::getenv("MW_RANK");
  if (g_rank >= 0)
    std::snprintf(rank, sizeof rank, "rank %d", g_rank);
  else if (given && *given && std::strspn(given, "0123456789") == std::strlen(given) && std::strlen(given) < 8)
    std::snprintf(rank, sizeof rank, "rank %s", given);
  else
    std::snprintf(rank, sizeof rank, "rank not yet known");
  // One write, so that another rank's lines do not come between these.
  std::string out = std::string("midway: ") + prefix + call + ": " + msg;
  if (why) out += std::string(": ") + why;
  out += std::string(" (") + rank + ")\n";
  if (!*prefix) out += call_site_line(call, rank);
  std::fwrite(out.data(), 1, out.size(), stderr);
  std::fflush(stderr);
}

[[noreturn]] void report(const char *call, const char *fmt, va_list ap, const char *why) {
  print("", call, fmt, ap, why);
  g_failed = true;
  std::exit(EXIT_FAILURE);
}

}  // namespace

void set_call_site_namer(std::string (*namer)(uintptr_t pc)) { g_namer.store(namer, std::memory_order_release); }

void fatal(const char *call, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(call, fmt, ap, nullptr);
}

void warn(const char *call, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  print("warning: ", call, fmt, ap, nullptr);
  va_end(ap);
}

void fatal_errno(const char *call, const char *fmt, ...) {
  const char *why = std::strerror(errno);
  va_list ap;
  va_start(ap, fmt);
  report(call, fmt, ap, why);
}

}  // namespace mw
