// Re-executes a rank once with address-space randomization off (memory/same_layout.hpp).
#include "memory/same_layout.hpp"

#include <sys/personality.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "core/settings.hpp"

namespace mw::same_layout {

void ensure(int argc, char **argv, char **envp) {
  if (argc < 1 || !argv || !envp) return;
  if (!std::getenv("MW_RANK") && !std::getenv("PMIX_RANK")) return;  // not a rank of a job
  if (settings::number(settings::Id::MW_SAME_LAYOUT) == 0) return;
  const int current = personality(0xffffffff);
  if (current == -1 || (current & ADDR_NO_RANDOMIZE)) return;
  if (personality(static_cast<unsigned long>(current) | ADDR_NO_RANDOMIZE) == -1) {
    warn("mw_init", "cannot turn address-space randomization off (personality: %s): libc's "
         "data may lie at different addresses in different ranks, and a shared pointer to it "
         "(FILE *f = stdout) would then be wrong in other ranks",
         std::strerror(errno));
    return;
  }
  execve("/proc/self/exe", argv, envp);
  const int err = errno;  // still here: run on as we are, randomized
  personality(static_cast<unsigned long>(current));
  warn("mw_init", "cannot re-execute /proc/self/exe with address-space randomization off (%s): "
       "libc's data may lie at different addresses in different ranks", std::strerror(err));
}

}  // namespace mw::same_layout
