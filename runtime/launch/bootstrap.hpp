// Bootstrap: how the processes of a job find each other before the transport exists.
//
// mw_init joins the job here: it learns its rank, the job's size and secret, and trades
// small blobs with its peers (each rank's libfabric address, its view of the shared
// window). Three ways in, chosen at run time from the environment:
//
//   mwrun      MW_RANK, MW_NPROCS, MW_JOB_DIR, MW_JOB_ID, MW_SECRET are set; the blobs
//              travel as files in the job directory (bootstrap_files.cpp).
//   PMIx       PMIX_RANK / PMIX_NAMESPACE are set by mpirun or srun --mpi=pmix; the
//              blobs travel through the launcher's PMIx server (bootstrap_pmix.cpp).
//   nothing    a single process: rank 0 of 1, no exchange.
//
// Every rank publishes, at join, where it maps the shared window and which executable
// it runs; a rank that differs from rank 0 stops the job, because a pointer into shared
// data must mean the same thing in every process.
//
// Not thread-safe: called from mw_init (join and the transport's set-up) and
// mw_finalize (leave). Errors are reported through mw::fatal as mw_init's or
// mw_finalize's, naming the call that failed and the rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mw::bootstrap {

struct Job {
  int rank = 0, nprocs = 1;
  std::string job_id;     // unique per job: mwrun's job directory name, or the PMIx namespace
  uint64_t secret = 0;    // per-job secret from mwrun or rank 0: peers check it on every connection
  bool all_local = true;  // every rank runs on this host (-> the shm provider by default)
  // By rank: "<host name> <boot id> <network namespace inode>"; equal strings, one host.
  std::vector<std::string> hosts;
};

// A host identity's name for messages: its host name, and its network namespace when
// other ranks' hosts have the same name (namespaces of one machine).
std::string host_name(const Job &job, int rank);

// Collective start-up. Waits at most timeout_ms for every rank to arrive; past that,
// stops with an error naming the ranks that never did. Sets mw::g_rank as soon as the
// rank is known, so that every later error names it. Stops the job if the ranks do not
// all map the shared window alike and run the same executable.
Job join(int timeout_ms);

// The job join returned. all_local is what every rank's host identity says (the launcher's
// idea of it, PMIx's local size or mwrun's single host, is not trusted over it).
const Job &job();

// Publishes this rank's blob under key (letters, digits, '.', '_', '-'), for the peers
// to get after the next fence.
void put(const char *key, const void *data, size_t len);

// Collective: every put before it is visible to every get after it. Waits for as long
// as the slowest rank takes (the launcher stops the job if a rank dies).
void fence();

// The blob rank published under key before the last fence; an error if it published none.
std::vector<uint8_t> get(int rank, const char *key);

// Collective, at mw_finalize: waits for every rank (a fence), then disconnects from
// the launcher.
void leave();

// Files of the job directory that mwrun reads as well as the ranks.
namespace files {
// <prefix><rank> exists once the rank has reached mw_init, and once it has completed
// mw_finalize: a rank that exits between the two leaves its peers waiting for it.
constexpr const char *kJoinedPrefix = "joined.";
constexpr const char *kLeftPrefix = "left.";
}  // namespace files

}  // namespace mw::bootstrap
