// The bootstrap of a job started by a PMIx launcher (Open MPI's mpirun, srun --mpi=pmix):
// the launcher's PMIx server knows the job's size and placement, and carries the blobs.
//
// Rank 0 draws the job's secret and publishes it with its start-up blobs; the others
// read it after the first fence. Before that fence, every rank publishes mw.arrived, so
// that a fence that times out can name the ranks that never reached mw_init.
#include <pmix.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "launch/bootstrap_backend.hpp"
#include "core/error.hpp"

namespace mw::bootstrap::detail {
namespace {

constexpr const char *kArrivedKey = "mw.arrived";
constexpr const char *kSecretKey = "mw.secret";

// Stops the job if a PMIx call failed: "PMIx_Fence over namespace 123 failed: TIMEOUT".
__attribute__((format(printf, 4, 5))) void check(pmix_status_t rc, const char *call,
                                                 const char *pmix_call, const char *what, ...) {
  if (rc == PMIX_SUCCESS) return;
  char detail[512];
  va_list ap;
  va_start(ap, what);
  std::vsnprintf(detail, sizeof detail, what, ap);
  va_end(ap);
  fatal(call, "%s %s failed: %s", pmix_call, detail, PMIx_Error_string(rc));
}

// Job-level numbers the launcher knows (PMIX_JOB_SIZE, PMIX_LOCAL_SIZE).
uint32_t job_number(const pmix_proc_t &me, const char *key) {
  pmix_proc_t job;
  PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
  pmix_value_t *v = nullptr;
  check(PMIx_Get(&job, key, nullptr, 0, &v), "mw_init", "PMIx_Get", "of %s of namespace %s", key,
        me.nspace);
  uint32_t n = 0;
  pmix_status_t rc;
  PMIX_VALUE_GET_NUMBER(rc, v, n, uint32_t);
  check(rc, "mw_init", "PMIx_Get", "of %s of namespace %s (as a number)", key, me.nspace);
  PMIX_VALUE_RELEASE(v);
  return n;
}

class PmixBackend : public Backend {
 public:
  PmixBackend(const pmix_proc_t &me, uint32_t size) : me_(me), size_(size) {}

  void put(const std::string &key, const void *data, size_t len) override {
    pmix_value_t v;
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = static_cast<char *>(const_cast<void *>(data));  // PMIx_Put copies it
    v.data.bo.size = len;
    check(PMIx_Put(PMIX_GLOBAL, key.c_str(), &v), "mw_init", "PMIx_Put", "of key %s", key.c_str());
  }

  void fence(int timeout_ms, const char *call) override {
    check(PMIx_Commit(), call, "PMIx_Commit", "of this rank's keys");
    // Collect the data, so that the gets after the fence are answered locally.
    pmix_info_t info[2];
    size_t ninfo = 0;
    bool collect = true;
    check(PMIx_Info_load(&info[ninfo++], PMIX_COLLECT_DATA, &collect, PMIX_BOOL), call,
          "PMIx_Info_load", "of %s", PMIX_COLLECT_DATA);
    int seconds = (timeout_ms + 999) / 1000;  // PMIx counts whole seconds; 0 would mean forever
    if (timeout_ms >= 0) {
      if (seconds == 0) seconds = 1;
      check(PMIx_Info_load(&info[ninfo++], PMIX_TIMEOUT, &seconds, PMIX_INT), call,
            "PMIx_Info_load", "of %s", PMIX_TIMEOUT);
    }
    pmix_status_t rc = PMIx_Fence(nullptr, 0, info, ninfo);
    for (size_t i = 0; i < ninfo; i++) PMIX_INFO_DESTRUCT(&info[i]);
    if (rc == PMIX_ERR_TIMEOUT && timeout_ms >= 0) {
      std::vector<int> missing = ranks_without(kArrivedKey);
      fatal(call,
            "PMIx_Fence timed out after %d s waiting for %s of %u to reach mw_init (a rank "
            "that crashed, hangs, or starts slowly; raise MW_STARTUP_TIMEOUT, in seconds, for "
            "a slow start)",
            seconds, missing.empty() ? "some ranks" : describe_ranks(missing).c_str(), size_);
    }
    // Slurm's PMIx server fails a fence that a rank can no longer enter, having exited or
    // been killed, with PARTIAL SUCCESS: said as what it means.
    if (rc == PMIX_ERR_PARTIAL_SUCCESS)
      fatal(call,
            "PMIx_Fence over namespace %s failed (%s): a rank of the job has exited or was "
            "killed before reaching it (the launcher's messages say which)",
            me_.nspace, PMIx_Error_string(rc));
    check(rc, call, "PMIx_Fence", "over namespace %s", me_.nspace);
  }

  std::optional<std::vector<uint8_t>> get(int rank, const std::string &key) override {
    pmix_proc_t peer;
    PMIX_LOAD_PROCID(&peer, me_.nspace, static_cast<pmix_rank_t>(rank));
    // Every fence collects the data, so a key that is not here by now was never put:
    // PMIX_IMMEDIATE makes that an answer rather than a wait for the data to turn up.
    pmix_info_t immediate;
    bool yes = true;
    check(PMIx_Info_load(&immediate, PMIX_IMMEDIATE, &yes, PMIX_BOOL), "mw_init", "PMIx_Info_load",
          "of %s", PMIX_IMMEDIATE);
    pmix_value_t *v = nullptr;
    pmix_status_t rc = PMIx_Get(&peer, key.c_str(), &immediate, 1, &v);
    PMIX_INFO_DESTRUCT(&immediate);
    if (rc == PMIX_ERR_NOT_FOUND) return std::nullopt;
    check(rc, "mw_init", "PMIx_Get", "of key %s from rank %d", key.c_str(), rank);
    if (v->type != PMIX_BYTE_OBJECT)
      fatal("mw_init", "PMIx_Get of key %s from rank %d returned a value of type %s, not bytes",
            key.c_str(), rank, PMIx_Data_type_string(v->type));
    const uint8_t *p = reinterpret_cast<const uint8_t *>(v->data.bo.bytes);
    std::vector<uint8_t> blob(p, p + v->data.bo.size);
    PMIX_VALUE_RELEASE(v);
    return blob;
  }

  uint64_t secret() override {
    std::optional<std::vector<uint8_t>> b = get(0, kSecretKey);
    uint64_t s = 0;
    if (!b || b->size() != sizeof s)
      fatal("mw_init", "rank 0 published no job secret (key %s) through PMIx", kSecretKey);
    std::memcpy(&s, b->data(), sizeof s);
    return s;
  }

  void leave() override {
    // Slurm's PMIx server can complete the last fence without a rank that has just
    // exited (seen with srun --mpi=pmix: a rank's exit(3) after mw_init, and now and
    // then the others' mw_finalize went through). Every rank published kLeftKey before
    // that fence (bootstrap::leave): one that did not never reached mw_finalize.
    std::vector<int> missing = ranks_without(kLeftKey);
    if (!missing.empty())
      fatal("mw_finalize",
            "%s of %u never reached mw_finalize (exited or killed), yet the launcher's "
            "PMIx_Fence over namespace %s completed without it: the job has failed",
            describe_ranks(missing).c_str(), size_, me_.nspace);
    check(PMIx_Finalize(nullptr, 0), "mw_finalize", "PMIx_Finalize", "of namespace %s", me_.nspace);
  }

 private:
  // The ranks whose `key` the local PMIx server has not seen. Asked with
  // PMIX_IMMEDIATE, so that a rank that never came costs no further wait.
  std::vector<int> ranks_without(const char *key) {
    pmix_info_t immediate;
    bool yes = true;
    check(PMIx_Info_load(&immediate, PMIX_IMMEDIATE, &yes, PMIX_BOOL), "mw_init", "PMIx_Info_load",
          "of %s", PMIX_IMMEDIATE);
    std::vector<int> missing;
    for (uint32_t r = 0; r < size_; r++) {
      pmix_proc_t peer;
      PMIX_LOAD_PROCID(&peer, me_.nspace, r);
      pmix_value_t *v = nullptr;
      if (PMIx_Get(&peer, key, &immediate, 1, &v) == PMIX_SUCCESS)
        PMIX_VALUE_RELEASE(v);
      else
        missing.push_back(static_cast<int>(r));
    }
    PMIX_INFO_DESTRUCT(&immediate);
    return missing;
  }

  const pmix_proc_t me_;
  const uint32_t size_;
};

}  // namespace

std::unique_ptr<Backend> start_pmix(Job &job) {
  // Newer PMIx releases (not Debian 12's 4.2.2) can hand job data to clients in a segment
  // (gds/shmem, gds/shmem2) that each client maps at one fixed address, chosen in the
  // server's address space: it may fall inside Midway's window, which every rank has
  // reserved before main, and PMIx_Init then fails (ArgoDSM met this under srun: "PMIx
  // gds/shmem2 shared memory conflict"). The other components map anywhere; excluding
  // names a PMIx does not have is harmless. A PMIX_MCA_gds of the user's own stays.
  setenv("PMIX_MCA_gds", "^shmem,shmem2", 0);
  pmix_proc_t me;
  pmix_status_t rc = PMIx_Init(&me, nullptr, 0);
  if (rc != PMIX_SUCCESS) {
    const char *ns = std::getenv("PMIX_NAMESPACE"), *rank = std::getenv("PMIX_RANK");
    fatal("mw_init",
          "PMIx_Init failed: %s: the environment names a PMIx launcher (PMIX_NAMESPACE=%s, "
          "PMIX_RANK=%s), but its server cannot be reached",
          PMIx_Error_string(rc), ns ? ns : "(unset)", rank ? rank : "(unset)");
  }
  g_rank = static_cast<int>(me.rank);
  uint32_t size = job_number(me, PMIX_JOB_SIZE);
  auto backend = std::make_unique<PmixBackend>(me, size);
  job.rank = static_cast<int>(me.rank);
  job.nprocs = static_cast<int>(size);
  job.job_id = me.nspace;
  job.all_local = job_number(me, PMIX_LOCAL_SIZE) == size;
  uint8_t one = 1;
  backend->put(kArrivedKey, &one, sizeof one);
  if (job.rank == 0) {
    uint64_t secret = random_secret("mw_init");
    backend->put(kSecretKey, &secret, sizeof secret);
  }
  return backend;
}

}  // namespace mw::bootstrap::detail
