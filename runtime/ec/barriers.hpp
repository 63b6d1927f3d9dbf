// Barriers (Midway, section 4.2). Every barrier's manager is rank 0, where a program's
// master runs, so that a terminating barrier gathers the results there.
//
// A rank crosses by sending the manager its updates to the barrier's bound data: the
// bytes it wrote since it last crossed, exactly (dirty bits, not lines, because several
// ranks may write different bytes of one line in a phase). The manager keeps every
// arrival's data in its own memory (the transport lands it there) and, once all ranks
// have arrived, releases each with the updates of the others, coalesced into as few
// runs as they make. At a terminating barrier (mw_barrier_final) the updates stay at
// the manager and the other ranks go on without waiting for a release.
//
// When every rank is on one host (the transport's shared page, transport::shared_line),
// what moves no data takes no message: an arrival with nothing to send, and a release
// with nothing in it, are a few words in the rank's shared line (barriers.cpp,
// "Crossing through shared words").
//
// A rank that reaches mw_finalize tells every other rank (FINALIZING), so that a barrier
// it will never cross stops the job with an error instead of hanging it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/bindings.hpp"
#include "ec/timestamps.hpp"
#include "midway.h"

namespace mw::barriers {

void init();  // registers the message handlers (before transport::connect)

// At two ranks on one host (the transport's shared page), `announce` goes to the other
// rank with this rank's arrival; announced(), once across, is the other rank's, from its
// arrival at this crossing or a later one (elsewhere 0). A barrier's flush numbers travel
// so (rc/pending_updates.hpp, flush_for_barrier). Announced numbers must not decrease.
void cross(mw_barrier_t *b, bool final, uint64_t announce);
uint64_t announced();
// The Lamport clock of the release of this rank's last crossing: the same on every rank,
// which the checker's race test orders writes by (check/checker.hpp, "Data races").
uint64_t crossed_clock();
void bind(mw_barrier_t *b, const void *addr, size_t len);

// The bytes of [a, b) bound to a barrier on this rank (mw_discard keeps them: a barrier
// sends each rank only what changed since its last crossing).
Bindings bound_in(uintptr_t a, uintptr_t b);

// The bytes this rank wrote to data bound to any barrier since it last crossed it, under
// entry consistency (none otherwise), in runs as a crossing sends them: what fork and
// join carry, being a crossing for the ranks they order (sync/fork.cpp).
std::vector<timestamps::Run> marked_runs();

// The barrier bound to bytes of [a, b), if any (mw_bind's overlap check), and every
// binding of every barrier, as (barrier, range) (the checker, check/).
Guard guard_of(uintptr_t a, uintptr_t b);
void for_each_binding(const std::function<void(uintptr_t, const Range &)> &f);

// At mw_finalize: checks that this rank leaves no barrier half crossed, then tells the
// others it will cross no more.
void finalize();

// The fields BARRIER_ARRIVE and BARRIER_RELEASE carry after their runs (ec/updates.hpp).
namespace wire {
struct ArriveExtra {
  uint64_t epoch;  // which crossing of the barrier, from 1
  uint32_t final;
  uint32_t flags;  // kReleaseBySlot
};
// The arrival's rank waits on its shared line: a release with nothing for it may come
// there instead of as a message (barriers.cpp, "Crossing through shared words").
inline constexpr uint32_t kReleaseBySlot = 1;
struct ReleaseExtra {
  uint64_t epoch;
};
}  // namespace wire

}  // namespace mw::barriers
