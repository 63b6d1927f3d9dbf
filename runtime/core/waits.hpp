// Waits: what each rank is waiting for, where the launcher and the rank's peers can read it.
//
// A rank that blocks (a lock grant, a barrier, a page from its home, the acknowledgements
// of its updates, the other ranks at mw_finalize) says so in its Record before it blocks
// and clears it after: a few stores to a line of its own, at block time only, never on
// a path that does not block. Under mwrun the record is a small file of the job
// directory, `wait.<rank>`, mapped by the rank; mwrun reads every rank's to print the
// table of waits (`--timeout` expiry, `kill -USR1 <mwrun>`) and to stop a job in which
// every rank waits for something no other rank will do (describe_deadlock). Under other
// launchers the record lives in the rank's memory only; its text goes to peers that ask
// (the liveness check, transport/liveness.cpp).
//
// The record also holds what the rank held when the wait began (its locks), which is
// what a lock cycle is made of, and a heartbeat: the time the rank's runtime last ran
// (its service thread wakes at least once a second), which tells a stopped rank from a
// waiting one. This module depends on nothing but libc: mwrun compiles it too.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace mw::waits {

enum class Kind : uint32_t {
  kNone = 0,    // running the program (or inside the runtime without blocking)
  kLock,        // a lock's grant: object = the lock, peer = its manager
  kBarrier,     // a barrier's release: object = the barrier, peer = its manager
  kPage,        // a page of shared data: object = the page, peer = its home
  kUpdateAcks,  // the acknowledgements of its updates (release and processor consistency)
  kFinalize,    // every other rank at mw_finalize
  kSemaphore,   // a semaphore's post (mw_sem_wait): object = the semaphore, peer = its manager
  kCondition,   // a condition variable's signal (mw_cond_wait): object, peer = its manager
  kFork,        // a worker's next start (mw_fork_serve): peer = the creator, rank 0
  kJoin,        // the workers' ends of the creator's fork (mw_join)
};

constexpr uint32_t kMagic = 0x5457574d;  // "MWWT"
constexpr uint32_t kVersion = 2;
constexpr int kMaxHeld = 8;
constexpr const char *kFilePrefix = "wait.";  // + rank, in the job directory

struct Record {
  uint32_t magic, version;
  int32_t rank, pid;
  char host[64];               // the rank's host name (its identity is in launch/)
  uint64_t seq;                // odd while the fields below change (a seqlock; std::atomic_ref)
  uint32_t kind;               // Kind
  uint32_t mode;               // a lock's mode (MW_EXCLUSIVE, MW_NONEXCLUSIVE); a barrier's
                               // crossing by this rank (1 for its first)
  uint64_t object;             // the lock, barrier or page, by address
  int32_t peer;                // the rank asked, or -1
  uint32_t nheld;              // locks held when the wait began (up to kMaxHeld listed)
  uint64_t pc;                 // where the program called the runtime, or 0
  uint64_t since_ns;           // CLOCK_REALTIME when the wait began
  uint64_t waits;              // waits begun so far: a record that moves is not stuck
  uint64_t barriers;           // barrier waits begun so far (this one included)
  uint64_t held[kMaxHeld];
  uint64_t alive_ns;           // CLOCK_REALTIME when the runtime last ran (std::atomic_ref)
  uint64_t crash_pc;           // the instruction a fault the rank dies of stopped, or 0
};

// A consistent copy of a record (false if it is not one, or never settled).
bool read(const Record &r, Record *out);

// Opens this rank's record: a file of `job_dir` if not empty, else memory. Once, at mw_init.
void open(const std::string &job_dir, int rank, const char *host);
// Closes it (mw_finalize); the file goes with the job directory.
void close();

// Called when the record's wait has lasted a while (transport's idle loop) to fill in
// what is costly to know: the locks this rank holds (ec/locks sets it).
using HeldFn = int (*)(uint64_t *out, int max);
void set_held_fn(HeldFn fn);

// While alive, this rank waits for `kind`.
class Waiting {
 public:
  Waiting(Kind kind, uint64_t object, int peer, uint32_t mode = 0);
  ~Waiting();
  Waiting(const Waiting &) = delete;
  Waiting &operator=(const Waiting &) = delete;
};

// The runtime ran (the transport's sleepers call it after each wake-up): at most a
// clock read and a store.
void beat();
// A fault this rank dies of stopped at `pc` (the fault handler, async-signal-safe: one
// store), for mwrun to name its source line, which the handler cannot run addr2line for.
void crashed(uint64_t pc);
// After a wait has lasted a while: fills in the held locks, once per wait.
void detail();

// Another rank's wait as text, from its record in the job directory (mwrun's ranks on
// hosts that share it), or "" where there is none to read.
std::string describe_rank(int rank);
// A record's wait as text; `symbol` names an address (lock, barrier, code) or returns "".
using Symbolizer = std::string (*)(uint64_t addr, bool code);
std::string describe(const Record &r, Symbolizer symbol = nullptr, uint64_t now_ns = 0);
// This rank's wait, as text: "lock locks[1] (0x4000) ..., its manager rank 1, for 3.2 s".
// With source_lines, call sites name their line: for errors (addr2line runs a process).
std::string describe_mine(bool source_lines = false);
// The names describe_mine gives, from a layer that knows the executable (mw_init):
// `quick` runs nothing (a handler's answer to a ping), `lines` adds source lines.
void set_symbolizers(Symbolizer quick, Symbolizer lines);

uint64_t realtime_ns();

// Given every rank's record (a rank without one: nullopt is `valid` false), says whether
// no rank can make progress: every rank waits, and each waits for something only another
// waiting rank can give (a lock that rank holds; a barrier a waiting rank has not reached;
// mw_finalize while another rank waits elsewhere; a semaphore's post or a condition's
// signal, which only a running rank can make; the creator's next fork; a join while a
// worker waits inside the forked function). Empty if progress is possible. A message
// on its way (a post, a grant, an arrival) changes some record when it lands: the
// caller asks again and believes an answer that has stayed the same (mwrun: 2 s).
// While some rank runs, only a cycle of ranks each waiting in mw_acquire for a lock the
// next one holds is a deadlock. `involved`, if given: the ranks the answer is about
// (every rank, or the cycle's), whose records must stay the same.
struct Snapshot {
  bool valid = false;
  Record rec{};
};
std::string describe_deadlock(const std::vector<Snapshot> &ranks, std::vector<int> *involved = nullptr);

}  // namespace mw::waits
