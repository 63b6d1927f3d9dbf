// The quirks of one libfabric build (Debian 12's libfabric 1.17), worked around here and
// nowhere else: the signal handlers its PSM dependency takes at load, and the verbs
// provider's scan of /proc/kallsyms at the first fi_getinfo. (What they cost:
// docs/PERFORMANCE.md, "Figures behind the code".)
#include <dlfcn.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "transport/fabric.hpp"

namespace mw::transport {
namespace {
// Debian 12's libfabric, at its first fi_getinfo, has the verbs provider read all of
// /proc/kallsyms twice, line by line, looking for ib_umem_dmabuf_get (whether the kernel
// can register device memory by dma-buf, which this transport never asks for). The
// kernel formats some ten megabytes of text for it, more than the rest of mw_init costs.
// While this thread is in fi_getinfo, fopen (below)
// gives libfabric an empty file instead: verbs then reports no dma-buf support, and
// nothing else changes. Everyone else's fopen goes straight through.
thread_local bool t_in_getinfo = false;
}  // namespace

// Debian 12's libfabric links libinfinipath (the psm provider), whose load-time
// constructor takes over SIGINT, SIGILL, SIGABRT, SIGBUS, SIGSEGV and SIGTERM to print
// a backtrace and exit(1): a crashed rank would no longer die by its signal (launchers
// report "killed by signal 11" from that), and SIGINT/SIGTERM would not stop it as
// expected. Handlers that live in a PSM library go back to the default, at load and
// again after fi_getinfo (which may initialize PSM). Handlers of anyone else stay.
void restore_signals_taken_by_psm() {
  for (int sig : {SIGINT, SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGTERM}) {
    struct sigaction sa;
    if (sigaction(sig, nullptr, &sa) != 0) continue;
    void *h = (sa.sa_flags & SA_SIGINFO) ? reinterpret_cast<void *>(sa.sa_sigaction)
                                         : reinterpret_cast<void *>(sa.sa_handler);
    if (h == reinterpret_cast<void *>(SIG_DFL) || h == reinterpret_cast<void *>(SIG_IGN)) continue;
    Dl_info di{};
    if (!dladdr(h, &di) || !di.dli_fname) continue;
    if (std::strstr(di.dli_fname, "libinfinipath") || std::strstr(di.dli_fname, "libpsm")) {
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      sigaction(sig, &dfl, nullptr);
    }
  }
}

__attribute__((constructor)) void restore_signals_at_load() { restore_signals_taken_by_psm(); }

int getinfo(fi_info *hints, fi_info **info) {
  t_in_getinfo = true;
  int ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), nullptr, nullptr, 0, hints, info);
  t_in_getinfo = false;
  return ret;
}

}  // namespace mw::transport

// See getinfo(): the one fopen the process has, passing every call to the C library's.
extern "C" __attribute__((visibility("default"))) FILE *fopen(const char *path, const char *mode) {
  using Fopen = FILE *(*)(const char *, const char *);
  static const Fopen libc_fopen = reinterpret_cast<Fopen>(dlsym(RTLD_NEXT, "fopen"));
  if (!libc_fopen) {  // no C library after us: cannot happen in a dynamically linked program
    errno = ENOSYS;
    return nullptr;
  }
  if (mw::transport::t_in_getinfo && path && std::strcmp(path, "/proc/kallsyms") == 0) path = "/dev/null";
  return libc_fopen(path, mode);
}

