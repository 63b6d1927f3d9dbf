// Locks: entry consistency's synchronization objects (Midway, sections 2.2, 4.2, 4.3).
//
// Finding the lock. Each lock has a manager, chosen by its address. A request goes to the
// manager, which forwards it to the lock's probable owner: the rank whose exclusive
// request it forwarded last (at first the manager itself, where the lock starts). A rank
// that receives requests before it owns the lock keeps them for when it does, so the
// exclusive requesters form a distributed queue (Forin et al.), and ownership passes down
// it with each exclusive grant. The manager numbers the exclusive requests (each opens a
// tenure of the lock) and stamps every request with the tenure that serves it, so that a
// rank that owns the lock and has asked for it again never mixes the requests of the two
// tenures; no request travels with the lock (locks.cpp, "Tenures").
//
// Modes. The owner grants non-exclusive copies and keeps the lock; the holders of copies
// are its readers. A reader re-acquires its copy non-exclusively with no message until
// an exclusive request revokes it (LOCK_REVOKE; the reader answers at once, or at its
// release). An exclusive grant moves ownership. The owner re-acquires with no message.
//
// Data. Each rank remembers when it last saw the lock (the grant's Lamport time) and
// sends it with its request; the owner stamps the dirty lines of the bound data with
// its clock (timestamps.hpp) and ships the lines stamped later, in the grant itself.
// Bindings travel with the lock: the grant carries them when the acquirer's differ.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "core/bindings.hpp"
#include "midway.h"

namespace mw::locks {

void init();  // registers the message handlers (before transport::connect)

void acquire(mw_lock_t *l, mw_mode_t mode);
void release(mw_lock_t *l);
// Whether this rank holds l exclusively (`call` names the caller in errors about l).
bool held_exclusive(const char *call, mw_lock_t *l);
void bind(mw_lock_t *l, const void *addr, size_t len);
void unbind(mw_lock_t *l, const void *addr, size_t len);
// Another rank unbound [addr, addr+len) from `lock` while holding it (rc/unbound.cpp):
// this rank's view of the lock's bindings drops the range now, not at its next grant
// of the lock, so that binding the data to another lock here is not taken for an
// overlap. (The grant still brings the lock's bindings as they are.)
void forget(uintptr_t lock, uintptr_t addr, size_t len);
// The application acquires or crosses a barrier: its start-up bindings so far are the
// ones it meant to make (see "Start-up bindings compared" in locks.cpp).
void startup_calls_made();

// mw_discard (Midway 4.3: "a processor may discard a shared data item as long as that
// processor does not presently own the synchronization object guarding the item"):
// forgets when this rank last saw each lock it neither owns nor holds, so that its next
// acquire of one is served as if it had not held it for a very long time, and returns
// the bytes of [a, b) bound to such locks and to no lock it owns or holds (those it may
// drop). All such locks, not only those bound to [a, b) here: a binding changed by
// another rank's exclusive holder may have moved bytes of [a, b) to a lock whose
// bindings this rank has not seen yet. Stops if [a, b) holds data bound to a lock this
// rank holds.
Bindings discard(uintptr_t a, uintptr_t b);

// For the checker (check/), from this rank's own state with no message:
// this rank's hold of `lock` (-1: none, else MW_EXCLUSIVE or MW_NONEXCLUSIVE), without
// the mutex once the lock's record is cached;
int held_mode(const void *lock);
// the locks this rank holds, by address, with their modes;
std::vector<std::pair<uintptr_t, int>> held_locks();
// every binding of every lock this rank knows, as (lock, range).
void for_each_binding(const std::function<void(uintptr_t, const Range &)> &f);
// The lock bound to bytes of [a, b), if any (mw_barrier_bind's overlap check).
Guard guard_of(uintptr_t a, uintptr_t b);

// The rank that manages the lock at `addr`.
int manager_of(uintptr_t addr);

// The lock protocol's messages, one struct each (read with protocol::read_body; the
// tenure fields are explained in locks.cpp, "Tenures").
namespace wire {
struct Request {  // LOCK_REQUEST, LOCK_FORWARD
  uint64_t lock;
  int32_t rank;  // the acquirer
  uint32_t mode;
  uint64_t t_seen;     // when the acquirer last saw the lock (0: never)
  uint64_t bind_version;  // the acquirer's bindings, to tell whether the grant must carry them
  uint64_t tenure;  // set by the manager: the tenure that serves the request
  uint64_t opens;   // set by the manager: the tenure an exclusive request opens (else 0)
  uint64_t startup_digest;  // bind_version 0: a digest of the acquirer's bindings (else 0)
};
struct GrantExtra {  // LOCK_GRANT: after its runs (ec/updates.hpp)
  uint32_t mode;
  uint32_t back;    // 1: `again` is the granter's own exclusive request (locks.cpp, "Asking back")
  uint64_t tenure;  // exclusive: the tenure the acquirer now owns
  Request again;    // stamped if the granter manages the lock; else the acquirer, its manager, routes it
};
struct LockOnly {  // LOCK_REVOKE, LOCK_REVOKE_ACK
  uint64_t lock;
};
}  // namespace wire

}  // namespace mw::locks
