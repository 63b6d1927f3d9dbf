// A rank that uses the bootstrap as the transport will: joins, publishes a blob, fences,
// reads every peer's, and prints what it learned about the job and the settings it was
// given (see launch_test.cpp).
//
//   bootstrap_probe exchange      one line per rank: "rank R of N job=... secret=... ..."
//   bootstrap_probe missing-key   asks rank 0 for a key nobody published
//   bootstrap_probe bad-key       publishes under a key that is not a valid name
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/settings.hpp"
#include "launch/bootstrap.hpp"

namespace bs = mw::bootstrap;

int main(int argc, char **argv) {
  const std::string action = argc > 1 ? argv[1] : "exchange";
  const bs::Job job = bs::join(10000);
  if (action == "missing-key") bs::get(0, "test.nobody");
  if (action == "bad-key") bs::put("test/slash", "x", 1);

  std::string mine = "blob of rank " + std::to_string(job.rank);
  bs::put("test.blob", mine.data(), mine.size());
  bs::fence();
  int good = 0;
  for (int r = 0; r < job.nprocs; r++) {
    std::vector<uint8_t> b = bs::get(r, "test.blob");
    good += std::string(b.begin(), b.end()) == "blob of rank " + std::to_string(r);
  }
  std::printf("rank %d of %d job=%s secret=%016" PRIx64
              " all_local=%d model=%s provider=%s stats=%s blobs=%d/%d\n",
              job.rank, job.nprocs, job.job_id.c_str(), job.secret, job.all_local,
              mw::settings::text(mw::settings::Id::MW_MODEL).c_str(),
              mw::settings::text(mw::settings::Id::MW_PROVIDER).c_str(),
              mw::settings::text(mw::settings::Id::MW_STATS).c_str(), good, job.nprocs);
  std::fflush(stdout);
  bs::leave();
  return 0;
}
