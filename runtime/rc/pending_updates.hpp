// Pending updates (Midway, section 4.4): what this rank wrote to release- and
// processor-consistent data since it last flushed, pushed to the copysets of the pages
// (copysets.hpp). Updates, not invalidations: a member never misses on a page it holds.
//
// Midway queues a line when a store finds the high bit of its timestamp set. Here the
// compiled code's dirty marks serve every model: the marks on a copyset page (one this
// rank holds, shares with another rank, and does not hold as entry consistent) are its
// pending updates, taken when they are flushed. There is no second queue and the store
// path is the same instruction sequence whatever the model, so entry-consistent data
// pays nothing for the other models; a flush with no copyset page shared costs one load.
//
// When. Release-consistent data at every lock release and before every barrier
// arrival: the flush waits until every member has the updates in place, so the next
// acquirer of the lock, or every rank past the barrier, finds them (fetching the page
// from its home if it holds no copy: the home is always a member). (At a barrier of two
// ranks on one host the other rank waits instead: flush_for_barrier.) This is eager
// release consistency: Midway flushes only when the release is performed at another
// rank, which a cached lock's re-acquire never is; eager costs a flush per release of a
// lock that changed no copyset data only when that release has marks to send. At two
// ranks a release is as Midway's: it flushes when a lock moves (flush_release).
// Processor-consistent data is flushed as well every flush interval, by a flusher
// thread, without waiting for acknowledgements; the next release or barrier waits for
// them as for its own (the marks the flusher took are no longer there for it to send).
//
// Order. A flush sends each member one message (split at 256 runs), its runs in address
// order; a rank's messages arrive in the order it sent them, so each member sees this
// rank's flushes in issue order. For processor-consistent data each flush is also a
// prefix of this rank's stores (the flusher takes it from frozen pages) and lands at
// once at the receiver (copysets.hpp, "issue order"), so stores to different locations
// are seen in issue order too.
#pragma once
#include <cstddef>

namespace mw::pending_updates {

// Registers the message handlers; before transport::connect.
void init();

// A release or a barrier on the application thread: pushes every pending update and
// returns when every member has applied them.
void flush();

// A barrier's flush (mw_barrier, mw_barrier_final). At two ranks on one host (the
// transport's shared page), with no processor-consistent data here and no race checks, it
// pushes every pending update without waiting for acknowledgements: the barrier carries
// the number it returns, this rank's last flush sent, to the other rank with its arrival
// (barriers::cross), and that rank, across, waits until it has applied it
// (await_barrier_updates) before it goes on. The acknowledgement's round trip is then off
// the crossing, where the last rank to arrive paid it (OCEAN: 900 barriers a run).
// Elsewhere it flushes as flush() does; the number it returns, then acknowledged
// already, costs the other rank no wait.
uint64_t flush_for_barrier(bool wait_for_acks);
// After mw_barrier's crossing: waits (progressing) until this rank has applied the other
// rank's flushes up to the number it announced there (barriers::announced).
void await_barrier_updates(const void *barrier);

// A lock's release on the application thread. At two ranks it sends nothing: the other
// rank can follow this release only once some lock moves to it from this rank (a grant,
// or the answer to a revoke of a copy), or at a barrier, fence or other flush(); so the
// marks stay pending until then, and the lock's move sends them first
// (protocol::lock_moving, on whichever thread serves the lock), unacknowledged: a rank's
// messages are handled in the order sent, so they are in place before the lock is. A run
// of releases of locks this rank keeps costs no message (WATER-NSQUARED: a third to half
// of its messages). Not with processor-consistent data, which the flusher pushes from
// frozen pages, nor in a check build (its race checks date updates by their release):
// there, as with three ranks or more, each release pushes its updates, and with three or
// more waits for their acknowledgements: the next holder may hear of the release from a
// third rank, whose message can overtake the updates, and a barrier's arrival may go
// through a shared line.
void flush_release();

// Starts the flusher of processor-consistent data if some data is, and is not yet.
void start_flusher();

// At mw_finalize: stops the flusher and flushes what is left.
void finish();

}  // namespace mw::pending_updates
