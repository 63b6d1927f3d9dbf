// The checker of a check build (mwcc -fmidway-check; docs/CHECKER.md). The pass puts a
// call to __mw_check_load/store before every access that may reach shared data; each
// tests the access against this rank's own state, with no message:
//   - a store to data bound to a lock this rank does not hold MW_EXCLUSIVE;
//   - a load of data bound to a lock this rank holds in neither mode.
//   - (at the barrier's manager) two ranks that wrote the same bytes of barrier-bound
//     data in one phase, found where the barrier merges their updates (ec/barriers.cpp).
// (Under --model rc or pc a lock only orders, so these rules are entry consistency's
// alone and are checked under ec.) A violation is reported once per (kind, access site,
// lock), sanitizer style, with the access's variable and source line, the lock and where
// it was bound, and the locks held; a rank that reported anything exits with status 66
// (MW_CHECK=abort: at the first report).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mw::check {

// At mw_init, once the rank is known: reads MW_CHECK and starts checking.
void start();
// At mw_finalize: stops checking (the job is over; what a rank reads after it is its own).
void stop();

// mw_bind and mw_barrier_bind record where each binding was made, for reports.
void note_binding(const void *object, const void *addr, size_t len, const void *caller);

}  // namespace mw::check
