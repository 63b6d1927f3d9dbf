// Errors a user can cause. Every message names the call, the object and the rank, as
// "midway: mw_free: 0x7f00 was not returned by mw_malloc (rank 2)", and the job stops:
// a DSM that carries on after misuse would hand out wrong data silently.
#pragma once

#include <cstdarg>

namespace mw {

// The rank named in messages; -1 until mw_init has run.
extern int g_rank;

// Set by fatal() before it exits, for exit handlers that must not carry on the job.
extern bool g_failed;

[[noreturn]] void fatal(const char *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// For a failed system call: appends strerror(errno).
[[noreturn]] void fatal_errno(const char *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// Something the job survives (a malformed message dropped on arrival), in the same
// format with "warning: " before the call; the job goes on.
void warn(const char *call, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace mw
