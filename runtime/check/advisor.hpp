// The binding advisor's recorder (mwrun --advise; docs/CHECKER.md). In a check build run
// with MW_ADVISE=1, every checked access of shared data is recorded per cache line, on
// this rank alone and with no message, Eraser style:
//   - the locks held at every access (their intersection: a store counts the locks held
//     MW_EXCLUSIVE, a load those held in either mode);
//   - the barrier phases (crossings of any barrier so far) in which the line was written
//     and in which it was read, as runs of phases;
//   - the first access, the access that emptied the intersection, the first store and
//     the first load: the sites a report names.
// At mw_finalize the rank writes what it saw, lines of equal state merged into runs, to
// MW_JOB_DIR/advise.<rank>.json; mwrun merges the ranks' files and prints the advice
// (tools/advise.cpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

struct mw_site;

namespace mw::advise {

// The ranks' files in the job directory: kFilePrefix <rank> kFileSuffix.
constexpr const char *kFilePrefix = "advise.";
constexpr const char *kFileSuffix = ".json";
// The granularity of the record (and so of the advice): a cache line.
constexpr uintptr_t kLine = 64;

// At mw_init: reads MW_ADVISE; a program that is not a check build stops here.
void start();
// At mw_finalize, after the last barrier: stops recording, writes this rank's file.
void finish();

// The synchronization the record is relative to (api.cpp, after the call returns).
void on_acquire(const void *lock, int mode);
void on_release(const void *lock);
void on_crossing(const void *barrier);

namespace detail {
extern std::atomic<bool> g_recording;
void note(uintptr_t a, size_t size, const mw_site *site, bool store);
}  // namespace detail

// A checked access (check/checker.cpp, __mw_check_load and __mw_check_store).
inline void note(const void *a, size_t size, const mw_site *site, bool store) {
  if (detail::g_recording.load(std::memory_order_relaxed))
    detail::note(reinterpret_cast<uintptr_t>(a), size, site, store);
}

}  // namespace mw::advise
