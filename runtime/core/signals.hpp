// Signal handlers: whether this thread is running one now.
//
// The pass's polls (midway.h, "Polls") run wherever a loop can, a signal handler's
// included. A handler may have interrupted anything, malloc or the runtime itself, so a
// poll inside one must not run the protocol. No system call says "in a handler", so the
// runtime wraps the handlers a program installs with sigaction() or signal(): the
// wrapper counts, per thread, the handlers under way. Handlers installed by other means
// (the raw system call, sigset, handlers installed before libmidway was loaded) are not
// seen; a handler that leaves by siglongjmp leaves this thread counting one, and its
// polls then do nothing (the service thread serves, as without polls).
#pragma once

namespace mw::signals {

// > 0 while this thread runs a handler installed through sigaction() or signal().
bool in_handler();

}  // namespace mw::signals
