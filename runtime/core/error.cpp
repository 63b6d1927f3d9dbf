#include "core/error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mw {

int g_rank = -1;
bool g_failed = false;

namespace {

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
  if (why)
    std::fprintf(stderr, "midway: %s%s: %s: %s (%s)\n", prefix, call, msg, why, rank);
  else
    std::fprintf(stderr, "midway: %s%s: %s (%s)\n", prefix, call, msg, rank);
  std::fflush(stderr);
}

[[noreturn]] void report(const char *call, const char *fmt, va_list ap, const char *why) {
  print("", call, fmt, ap, why);
  g_failed = true;
  std::exit(EXIT_FAILURE);
}

}  // namespace

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
