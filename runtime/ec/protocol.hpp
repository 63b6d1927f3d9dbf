// What the consistency protocols share (ec/locks.cpp, ec/barriers.cpp, and rc/ above):
// the one mutex over their state, this rank's Lamport clock, the consistency model, how a
// synchronization object is checked and named in errors, and the one reader and writer
// of a message whose body is a single struct.
//
// Threads. Protocol state is changed by message handlers (on the service thread, or on
// an application thread inside transport::progress_until) and by the application's
// calls. Every change holds `mu()`. A step that must also send (a lock request, a
// barrier arrival) runs inside transport::as_handler, so that its messages stay in
// order with the handlers' and a send never waits for a thread that waits for `mu()`:
// the order is always progress role, then mu(). Fast paths that send nothing (a cached
// re-acquire) take mu() alone.
#pragma once
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>

#include "transport/message.hpp"
#include "transport/transport.hpp"

namespace mw::protocol {

std::mutex &mu();

// Set by mw_init.
void start(int rank, int nprocs);
int rank();
int nprocs();

// The consistency dial (mwrun --model, MW_MODEL: core/settings.def), read by start(). Under kEntry (the
// default) data bound to a lock or barrier is entry consistent and the rest release
// consistent, or processor consistent where mw_processor_consistent says so. Under
// kRelease and kProcessor every shared datum is managed under that model: bindings are
// kept but ship nothing, and locks and barriers only order.
enum class Model : uint8_t { kEntry, kRelease, kProcessor };
Model model();
const char *model_name(Model m);
// The flush interval of processor-consistent data under --model=pc: MW_PC_INTERVAL_US
// microseconds (core/settings.def).
unsigned pc_interval_us();

// Lamport's clock (Midway 4.3): ticked for each timestamp and message that carries
// one, and raised to the clock of each message received.
uint64_t tick();
void observe(uint64_t remote_clock);
uint64_t clock();  // its value now, under mu()

// Stops with "call: <what> <addr> is not in shared memory ..." unless the object lies
// in static shared data or in the heap. It only checks: the runtime never touches a
// lock's or a barrier's own bytes (their page may hold release-consistent data this rank
// has no copy of). `what` is "lock" or "barrier".
void check_object(const char *call, const char *what, const void *object, size_t size);

// How errors name a synchronization object and shared data: by its variable in the
// executable's symbol table (`lock_A[3]`, `done`), else by address (memory/symbols).
std::string lock_name(const void *lock);
std::string barrier_name(const void *barrier);
std::string data_name(uintptr_t addr, size_t len = 0);

// Counts changes of any binding on this rank (mw_bind, mw_unbind, mw_barrier_bind,
// bindings that came with a lock), so that a reader of the bindings (the checker,
// check/) knows when its copy is stale.
void bindings_changed();
uint64_t bindings_generation();

// Two ranks wrote the same bytes [addr, addr+len) of data bound to a barrier in one
// phase (found where the barrier's manager merges their updates): the barrier keeps one
// of them. Reported by the hook the checker sets in a check build (check/), else as a
// warning, once per barrier.
struct DoubleWrite {
  uintptr_t barrier;
  uint64_t crossing;
  uintptr_t addr;
  size_t len;
  int first, second;  // the two ranks
};
void set_double_write_hook(void (*hook)(const DoubleWrite &));
void double_write(const DoubleWrite &w);

// Data races on release-consistent data are found where the page's home merges updates
// (check/races.cpp, a check build). The page layer (rc/) asks what its updates carry and
// tells what lands at the home through these; the checker sets them. Unset: clock 0
// (nothing checked) and merges go unheard.
struct RaceHooks {
  uint64_t (*clock)(bool ordered);
  void (*merged)(int writer, uint64_t clock, uintptr_t addr, size_t len);
};
void set_race_hooks(const RaceHooks &hooks);
bool checking_races();  // a check build checks races (race_clock is not 0)
uint64_t race_clock(bool ordered);
void race_merged(int writer, uint64_t clock, uintptr_t addr, size_t len);

// The pages of data bound to nothing are the page layer's (rc/copysets), above this one;
// what it must hear of entry-consistent data it hears through these, which it sets when
// it takes the pages over (copysets::init, in a job of more than one rank). Unset (a
// one-rank job), the pages are nobody's and bound data is simply made accessible.
struct PageHooks {
  // [p, p+len) is bound to a lock or a barrier on this rank (mw_bind, LOCK_BINDINGS).
  void (*bound)(const void *p, size_t len) = nullptr;
  // An update's data is about to land on [p, p+len) (a placer): its pages must be there.
  void (*landing)(uintptr_t p, size_t len) = nullptr;
  // mw_unbind took [p, p+len) from `lock` on this rank: the data is bound to nothing
  // now, release consistent again. `holder`: this rank holds the lock exclusively and
  // so has the newest bytes, which every other rank must get (else the start-up pattern:
  // every rank unbinds alike, before any acquires). Application thread.
  void (*unbound)(uintptr_t lock, const void *p, size_t len, bool holder) = nullptr;
};
void set_page_hooks(const PageHooks &hooks);
// A lock is about to move to another rank: this rank sends a grant, or answers a revoke.
// Under the progress role, before the message goes. The page layer sets the hook: at two
// ranks a release leaves its updates pending until then (rc/pending_updates.hpp).
void set_lock_moving_hook(void (*hook)());
void lock_moving();
// Call the hooks if there are.
void landing(uintptr_t p, size_t len);
void unbound(uintptr_t lock, const void *p, size_t len, bool holder);

// Readies [p, p+len) to be bound to a lock or barrier on this rank; false if it is not
// shared memory. Its dirty marks become accessible here (an owner stamps them at every
// grant, whether or not it ever touched the data), and the page layer hears of it. In a
// one-rank job its heap pages are committed too; otherwise the pages stay the page
// layer's: wholly bound pages are made accessible there, and the rest still fault to
// their home at first touch.
bool bind_range(const void *p, size_t len);
// Stops unless [addr, addr+len) can be readied; names the object it was to be bound to.
// With `ready` (a binding), readies it (bind_range); else (mw_unbind) only checks it.
void check_range(const char *call, const char *what, const void *object, const void *addr,
                 size_t len, bool ready = true);

// A peer's message that breaks the protocol (a grant nobody asked for, data outside the
// window): stops this rank naming the message, its sender, the object it is about where
// it names one (`object`: lock_object(), barrier_object(), page_object()) and what is
// wrong. It cannot be worked around.
[[noreturn]] void malformed(const transport::Header &h, const char *why, const std::string &object = {});
// The objects a message may be about, as malformed() names them: "lock locks[3]",
// "barrier done", "page 0x7f0000012000 (A[96])".
std::string lock_object(uintptr_t lock);
std::string barrier_object(uintptr_t barrier);
std::string page_object(uintptr_t page);

// The one writer and the one reader of a message whose payload is a single struct (a
// lock request, a copyset join): sent as the head (bookkeeping, not data, in the
// statistics), read back only if it is exactly that long.
template <class T>
void send_body(int dest, transport::MsgType type, const T &body, uint64_t clock = 0) {
  static_assert(std::is_trivially_copyable_v<T>);
  iovec head{const_cast<T *>(&body), sizeof body};
  transport::send(dest, type, std::span<const iovec>(&head, 1), {}, clock);
}
template <class T>
T read_body(const transport::Header &h, std::span<const std::byte> payload) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (payload.size() != sizeof(T)) malformed(h, "wrong length");
  T t;
  std::memcpy(&t, payload.data(), sizeof t);
  return t;
}

}  // namespace mw::protocol
