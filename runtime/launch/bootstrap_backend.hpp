// The ways a job's ranks find each other (mwrun's job directory, PMIx, a lone process),
// behind the one interface bootstrap.cpp drives. Private to the bootstrap module.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launch/bootstrap.hpp"

namespace mw::bootstrap::detail {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual void put(const std::string &key, const void *data, size_t len) = 0;
  // Waits until every rank has entered this fence. With timeout_ms >= 0, stops the job
  // after that long with an error that names the ranks which never arrived.
  virtual void fence(int timeout_ms, const char *call) = 0;
  // std::nullopt if the rank published nothing under key.
  virtual std::optional<std::vector<uint8_t>> get(int rank, const std::string &key) = 0;
  // The job's secret; valid after the first fence.
  virtual uint64_t secret() = 0;
  // After the last fence.
  virtual void leave() = 0;
};

// Every rank puts this key (one byte) just before the fence of bootstrap::leave, so
// that a backend whose launcher may complete that fence without a dead rank can tell.
constexpr const char *kLeftKey = "mw.left";

// Each fills in job.rank, nprocs, job_id and all_local, and sets mw::g_rank.
std::unique_ptr<Backend> start_files(Job &job);
std::unique_ptr<Backend> start_pmix(Job &job);

// 64 random bits, never 0, from getrandom(2).
uint64_t random_secret(const char *call);

// "rank 3", "ranks 1, 2 and 5", "ranks 0, 1, 2, ... (12 ranks)": for errors that name
// the ranks a job is waiting for.
std::string describe_ranks(const std::vector<int> &ranks);

}  // namespace mw::bootstrap::detail
