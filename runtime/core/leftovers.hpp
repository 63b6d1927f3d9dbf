// Leftovers: the files a Midway job keeps outside its processes, how they are named, and
// how a later job recognizes, and removes, those whose owners are gone.
//
// A job keeps three kinds of file, each named so that its owner can be told:
//
//   /dev/shm/midway-<pid>-r<rank>   the libfabric shm region of a rank's endpoint (16 MiB),
//                                   named by the rank's process (transport/transport.cpp). Unlinked
//                                   once every peer has mapped it, so only a rank that dies
//                                   during start-up leaves one: stale once <pid> is gone.
//   /dev/shm/midway-<hash>-bells    the doorbell page of a job's ranks on one host, named
//                                   by a hash of the job's id (16 hex digits; not by its
//                                   secret, which every local user could read in the name).
//                                   Another user could make a file of that name first: the
//                                   ranks refuse a page that is not theirs alone. Unlinked
//                                   once every rank has opened it: stale once no process
//                                   has it open or mapped.
//   $TMPDIR/mwrun.XXXXXX/           mwrun's job directory, with kLauncherFile naming the
//                                   mwrun that made it: stale once that mwrun is gone.
//                                   kGroupFile names the ranks' process group: processes
//                                   the ranks started there outlive a killed mwrun (the
//                                   ranks die with it, their children do not), and go
//                                   with the directory.
//
// Only this user's files are touched (others' are not ours to judge, and /dev/shm's
// sticky bit would refuse anyway), and only files named as above. A process is "gone"
// when no process of that pid exists; a pid reused by an unrelated process keeps the
// file until that one exits too, never the reverse. Processes of another pid namespace
// sharing this /dev/shm are not seen: a job's ranks and the jobs that clean up after it
// must share one (they do under mwrun, mpirun and srun without containers).
//
// Used by mwrun (all three, before it starts a job) and by mw_init (the shm regions,
// for jobs that no mwrun starts: mpirun, srun). No Midway library is linked into mwrun:
// this module depends on nothing but libc.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mw::leftovers {

// In a job directory: "<pid> <start time>" of the mwrun that made it (the start time in
// clock ticks since boot, field 22 of /proc/<pid>/stat, so that a reused pid is not taken
// for it).
constexpr const char *kLauncherFile = "launcher";
// In a job directory: the process group of the job's ranks, once they are started.
constexpr const char *kGroupFile = "group";

// The shm region name (without "/dev/shm/") of process pid's endpoint as `rank`.
std::string endpoint_name(int rank, pid_t pid);
// The doorbell page's shm_open name ("/midway-<16 hex digits>-bells") of the job `job_id`
// (mwrun's job directory name, the PMIx namespace).
std::string bells_name(const std::string &job_id);

struct Removed {
  std::string path;
  std::string why;  // "rank 2's endpoint; process 1234 has exited"
};

// Endpoint regions of processes that no longer exist; this process's own pid counts as
// gone (call before this process makes its endpoint: a region with its name is a dead
// process's).
std::vector<Removed> remove_dead_endpoints();
// Doorbell pages no process has open or mapped.
std::vector<Removed> remove_unused_bells();
// Job directories under `tmpdir` whose mwrun has exited, and the processes still in such
// a job's process group (those whose environment names the directory, as the ranks'
// children inherit it: a reused group id is not taken for the job's).
std::vector<Removed> remove_dead_job_dirs(const std::string &tmpdir);

// Writes kLauncherFile into `job_dir` for this process; false (errno set) on failure.
bool write_launcher(const std::string &job_dir);
// Writes kGroupFile into `job_dir`; false (errno set) on failure.
bool write_group(const std::string &job_dir, pid_t pgid);

// "removed A (why), B (why)", for one line of output.
std::string describe(const std::vector<Removed> &removed);

}  // namespace mw::leftovers
