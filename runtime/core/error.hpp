// Errors a user can cause. Every message names the call, the object and the rank, as
// "midway: mw_free: 0x7f00 was not returned by mw_malloc (rank 2)", and the job stops:
// a DSM that carries on after misuse would hand out wrong data silently.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <string>

namespace mw {

// The rank named in messages; -1 until mw_init has run.
extern int g_rank;

// Set by fatal() before it exits, for exit handlers that must not carry on the job.
extern bool g_failed;

// The call site of the midway.h call this thread is in (0 outside one): errors say where
// the program made the call ("mw_release was called from main+0x4c at prog.c:12"), and a
// wait's record names it (core/waits.hpp). Initial-exec: set by every API call,
// mw_acquire and mw_release included; in the general model each set was a call to
// __tls_get_addr (6 % of the samples of a cached lock's acquire and release, ec_bench).
extern constinit __attribute__((tls_model("initial-exec"))) thread_local uint64_t t_call_pc;

// Sets t_call_pc for one API call (api.cpp: MW_ENTER), and puts back the outer one when
// it returns: an error after the return names no call site.
class ApiCall {
 public:
  explicit ApiCall(void *return_address) : outer_(t_call_pc) {
    t_call_pc = reinterpret_cast<uint64_t>(return_address);
  }
  ~ApiCall() { t_call_pc = outer_; }
  ApiCall(const ApiCall &) = delete;
  ApiCall &operator=(const ApiCall &) = delete;

 private:
  uint64_t outer_;
};

// How errors name t_call_pc, from a layer that knows the executable (mw_init): "" for an
// address outside it (a call from a shared library).
void set_call_site_namer(std::string (*namer)(uintptr_t pc));

[[noreturn]] void fatal(const char *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// For a failed system call: appends strerror(errno).
[[noreturn]] void fatal_errno(const char *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// Something the job survives (a malformed message dropped on arrival), in the same
// format with "warning: " before the call; the job goes on.
void warn(const char *call, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace mw
