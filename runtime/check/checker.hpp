// The checker of a check build (mwcc -fmidway-check; docs/CHECKER.md). The pass puts a
// call to __mw_check_load/store before every access that may reach shared data; each
// tests the access against this rank's own state, with no message:
//   - a store to data bound to a lock this rank does not hold MW_EXCLUSIVE;
//   - a load of data bound to a lock this rank holds in neither mode.
//   - (at the barrier's manager) two ranks that wrote the same bytes of barrier-bound
//     data in one phase, found where the barrier merges their updates (ec/barriers.cpp);
//   - (at the page's home) two ranks that wrote the same bytes of release-consistent
//     data between synchronizations, a data race (races.cpp).
// (Under --model rc or pc a lock only orders, so these rules are entry consistency's
// alone and are checked under ec.) A violation is reported once per (kind, access site,
// lock), sanitizer style, with the access's variable and source line, the lock and where
// it was bound, and the locks held; a rank that reported anything exits with status 66
// (MW_CHECK=abort: at the first report).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

struct mw_location;

namespace mw::check {

// At mw_init, once the rank is known: reads MW_CHECK and starts checking.
void start();
// At mw_finalize: stops checking (the job is over; what a rank reads after it is its own).
void stop();

// mw_bind and mw_barrier_bind record where each binding was made, for reports.
void note_binding(const void *object, const void *addr, size_t len, const void *caller);

// ---- Data races on release-consistent data (races.cpp) ----
//
// A check build finds two ranks writing the same bytes of data bound to nothing with no
// lock or barrier between their writes, where their updates merge: at the home of the
// page (rc/pending_updates.cpp hands it each update's runs). Each update carries the
// writer's synchronization clock: its Lamport clock (ec/protocol.hpp) when it last
// returned from an acquire or a barrier. Lock and barrier messages carry that clock and
// raise the receiver's, so if rank A's write is ordered before rank B's by locks and
// barriers, B's clock passed A's before B wrote: B's synchronization clock is greater
// than A's. The home keeps, for each byte, its last writer and that writer's clock, and
// reports a second writer whose clock is not greater. Nothing is reported without
// proof: a synchronization Midway cannot see (a semaphore, a condition, mw_join) makes
// the rank's next writes unchecked, and clears what the home knew of those bytes.

// A synchronization returned, on the application thread: an acquire (the clock now); a
// barrier crossing (its release's clock: the same on every rank, so that two writes in
// one phase are never ordered by a clock that moved on after the crossing); or one
// Midway cannot order by clocks (a semaphore, a condition, a join, mw_barrier_final).
void acquired();
void crossed();
void synced_unseen();
// What this rank's updates carry: 0 when races are not checked (not a check build, or
// processor consistency); its synchronization clock; or kUnchecked, for writes not
// ordered by a synchronization Midway saw (`ordered` false: the processor-consistency
// flusher's; before the first, or after a semaphore), which the home forgets.
constexpr uint64_t kUnchecked = ~uint64_t{0};
uint64_t race_clock(bool ordered);
// At the home of [addr, addr + len) (the caller's test): `writer`'s update (clock: what it carried) lands
// (this rank's own flushed writes included). Under the progress role.
void merged(int writer, uint64_t clock, uintptr_t addr, size_t len);

// ---- Shared by the checker's files ----
// A checked rank that reported anything exits with this status (ThreadSanitizer's).
constexpr int kExitStatus = 66;
bool abort_on_report();          // MW_CHECK=abort
void start_races(bool check_build);
int races_reported();
// Heap memory as reports print it: by the mw_malloc call that made its block (when this
// rank made it), else by address.
std::string heap_datum(uintptr_t a);
// An access site as reports print it: file:line:col in function.
std::string location(const mw_location &l);

}  // namespace mw::check
