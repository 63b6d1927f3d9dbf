// What the consistency protocols (locks.cpp, barriers.cpp) share: the one mutex over
// their state, this rank's Lamport clock, and how a synchronization object is checked
// and named in errors.
//
// Threads. Protocol state is changed by message handlers (on the service thread, or on
// an application thread inside transport::progress_until) and by the application's
// calls. Every change holds `mu()`. A step that must also send (a lock request, a
// barrier arrival) runs inside transport::as_handler, so that its messages stay in
// order with the handlers' and a send never waits for a thread that waits for `mu()`:
// the order is always progress role, then mu(). Fast paths that send nothing (a cached
// re-acquire) take mu() alone.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "transport/message.hpp"

namespace mw::protocol {

std::mutex &mu();

// Set by mw_init.
void start(int rank, int nprocs);
int rank();
int nprocs();

// The consistency dial (mwrun --model, MW_MODEL), read by start(). Under kEntry (the
// default) data bound to a lock or barrier is entry consistent and the rest release
// consistent, or processor consistent where mw_processor_consistent says so. Under
// kRelease and kProcessor every shared datum is managed under that model: bindings are
// kept but ship nothing, and locks and barriers only order.
enum class Model : uint8_t { kEntry, kRelease, kProcessor };
Model model();
const char *model_name(Model m);
// The flush interval of processor-consistent data under --model=pc: MW_PC_INTERVAL_US
// microseconds (default 1000).
unsigned pc_interval_us();

// Lamport's clock (Midway 4.3): ticked for each timestamp and message that carries
// one, and raised to the clock of each message received.
uint64_t tick();
void observe(uint64_t remote_clock);

// Stops with "call: <what> <addr> is not in shared memory ..." unless the object lies
// in the shared window. `what` is "lock" or "barrier".
void check_object(const char *call, const char *what, const void *object, size_t size);
// Readies [p, p+len) to be bound to a lock or barrier; false if it is not shared memory.
// Its dirty marks become accessible here (an owner stamps them at every grant, whether or
// not it ever touched the data). In a one-rank job its heap pages are committed too;
// otherwise the pages stay the copyset module's: bound pages are made accessible there,
// and the rest still fault to their home at first touch.
bool ready_bound(const void *p, size_t len);
// Stops unless [addr, addr+len) can be readied; names the object it was to be bound to.
void check_range(const char *call, const char *what, const void *object, const void *addr,
                 size_t len);

// A peer's message that breaks the protocol (a grant nobody asked for, data outside the
// window): stops this rank naming the message and its sender. It cannot be worked around.
[[noreturn]] void malformed(const transport::Header &h, const char *why);

}  // namespace mw::protocol
