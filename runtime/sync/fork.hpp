// Fork/join (mw_fork_serve, mw_fork, mw_join): the start of a program written for
// threads, where one thread sets everything up and then starts the others on a function.
//
// Rank 0 is the creator; every other rank is a worker that waits, asleep, for rank 0's
// kForkStart, runs the function it names (the same address in every rank: one
// position-dependent executable) and answers kForkJoined. Consistency is release
// consistency's: rank 0 flushes its pending updates before it starts the workers, and a
// worker flushes its own before it answers, so a fork is a release by the creator and a
// join a release by every worker. Data bound to barriers goes along too (kForkData):
// the creator's writes to it since its last crossing to every worker, a worker's to the
// creator, which passes them on at its next fork. Lock-bound data moves with its locks.
#pragma once

namespace mw::fork {

using Function = void (*)(void);

// Registers the handlers (every rank, before the transport connects).
void init();

// Rank 0: starts fn on every other rank, after flushing. Stops if a fork is outstanding.
void start(Function fn);
// Rank 0: waits until every worker has returned from the outstanding fork's function.
void join();
// Rank 0, at mw_finalize: tells the workers that no more forks come.
void end();
// A worker: waits, asleep, for the next fork; nullptr once rank 0 has ended the job.
Function next();
// A worker, when the function returns: its writes go out, rank 0 hears of it.
void done();
// Whether a fork is outstanding (rank 0).
bool outstanding();

}  // namespace mw::fork
