// Signal handlers (signals.hpp): sigaction() and signal() interposed, every handler
// wrapped in one that counts.
#include "core/signals.hpp"

#include <dlfcn.h>
#include <signal.h>

#include <atomic>
#include <cerrno>

namespace mw::signals {
namespace {

// initial-exec: read in a handler, where a first access to dynamic TLS may allocate.
__attribute__((tls_model("initial-exec"))) constinit thread_local int t_depth = 0;

// The program's handler and flags for each signal, as it asked for them.
struct Installed {
  std::atomic<void *> handler{nullptr};
  std::atomic<int> flags{0};
};
Installed g_installed[NSIG];

using SigactionFn = int (*)(int, const struct sigaction *, struct sigaction *);

SigactionFn real_sigaction() {
  static SigactionFn fn = reinterpret_cast<SigactionFn>(dlsym(RTLD_NEXT, "sigaction"));
  return fn;
}

void counting_handler(int sig, siginfo_t *info, void *context) {
  ++t_depth;
  const int saved_errno = errno;
  void *h = g_installed[sig].handler.load(std::memory_order_acquire);
  errno = saved_errno;
  if (g_installed[sig].flags.load(std::memory_order_relaxed) & SA_SIGINFO)
    reinterpret_cast<void (*)(int, siginfo_t *, void *)>(h)(sig, info, context);
  else
    reinterpret_cast<void (*)(int)>(h)(sig);
  --t_depth;
}

bool is_function(void *h) {
  return h != reinterpret_cast<void *>(SIG_DFL) && h != reinterpret_cast<void *>(SIG_IGN) &&
         h != reinterpret_cast<void *>(SIG_ERR) && h != nullptr;
}

}  // namespace

bool in_handler() { return t_depth > 0; }

}  // namespace mw::signals

using mw::signals::g_installed;

extern "C" __attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction *act,
                                                                struct sigaction *old) {
  using namespace mw::signals;
  SigactionFn real = real_sigaction();
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  if (sig <= 0 || sig >= NSIG) return real(sig, act, old);
  struct sigaction wrapped;
  const struct sigaction *give = act;
  if (act) {
    void *h = (act->sa_flags & SA_SIGINFO) ? reinterpret_cast<void *>(act->sa_sigaction)
                                           : reinterpret_cast<void *>(act->sa_handler);
    if (is_function(h) && h != reinterpret_cast<void *>(counting_handler)) {
      wrapped = *act;
      wrapped.sa_flags |= SA_SIGINFO;
      wrapped.sa_sigaction = counting_handler;
      give = &wrapped;
    }
  }
  // The previous handler and flags before the new ones land: a signal in between finds
  // the table no older than the kernel's action (both name a handler to run).
  void *prev_handler = g_installed[sig].handler.load();
  const int prev_flags = g_installed[sig].flags.load();
  if (give == &wrapped) {
    g_installed[sig].flags.store(act->sa_flags, std::memory_order_relaxed);
    g_installed[sig].handler.store((act->sa_flags & SA_SIGINFO)
                                       ? reinterpret_cast<void *>(act->sa_sigaction)
                                       : reinterpret_cast<void *>(act->sa_handler),
                                   std::memory_order_release);
  }
  const int ret = real(sig, give, old);
  if (ret != 0) {
    g_installed[sig].handler.store(prev_handler);
    g_installed[sig].flags.store(prev_flags);
    return ret;
  }
  // What the program installed, not the wrapper.
  if (old && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction == counting_handler) {
    old->sa_flags = prev_flags;
    if (prev_flags & SA_SIGINFO)
      old->sa_sigaction = reinterpret_cast<void (*)(int, siginfo_t *, void *)>(prev_handler);
    else
      old->sa_handler = reinterpret_cast<void (*)(int)>(prev_handler);
  }
  return 0;
}

// glibc's signal() calls its internal sigaction, not this one: BSD semantics, as glibc's.
extern "C" __attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t handler) {
  struct sigaction act {}, old{};
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  act.sa_flags = SA_RESTART;
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  // A handler installed with SA_SIGINFO comes back as the same pointer, as glibc returns it.
  return (old.sa_flags & SA_SIGINFO) ? reinterpret_cast<sighandler_t>(reinterpret_cast<void *>(old.sa_sigaction))
                                      : old.sa_handler;
}
