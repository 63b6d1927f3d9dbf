// The bootstrap of a job started by mwrun: every rank is on this host, and the job
// directory mwrun made (MW_JOB_DIR) is the meeting place.
//
//   kv.<rank>.<key>      a published blob, written to a temporary name and renamed, so
//                        that a reader sees all of it or nothing
//   fence.<n>.<rank>     the rank has entered its n-th fence (every put before it is
//                        renamed into place by then)
//   joined.<rank>        the rank has reached mw_init       (read by mwrun, see
//   left.<rank>          the rank has completed mw_finalize  bootstrap.hpp)
//
// A fence waits for the markers of every rank by polling with growing sleeps: fences
// happen only at start-up and at the end, where a millisecond does not matter and a
// process spinning on a shared core would.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "launch/bootstrap_backend.hpp"
#include "core/error.hpp"
#include "core/settings.hpp"

namespace mw::bootstrap::detail {
namespace {

using Clock = std::chrono::steady_clock;

using settings::Id;

// An mwrun job's variable, which mwrun always sets (any other launcher sets none).
void require(Id id) {
  if (!settings::is_set(id) || settings::text(id).empty())
    fatal("mw_init",
          "%s is not set, but other MW_ variables of an mwrun job are (MW_RANK, MW_JOB_DIR): "
          "they are set by mwrun; start the program with mwrun -n N PROGRAM ARGS...",
          settings::info(id).name);
}

void sleep_for(Clock::duration d) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

class FilesBackend : public Backend {
 public:
  FilesBackend(std::string dir, int rank, int nprocs, uint64_t secret)
      : dir_(std::move(dir)), rank_(rank), nprocs_(nprocs), secret_(secret) {}

  void put(const std::string &key, const void *data, size_t len) override {
    std::string tmp = path(".tmp.", key), final_path = path("kv.", key);
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) fatal_errno("mw_init", "cannot create %s", tmp.c_str());
    const char *p = static_cast<const char *>(data);
    for (size_t done = 0; done < len;) {
      ssize_t n = write(fd, p + done, len - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fatal_errno("mw_init", "cannot write %s", tmp.c_str());
      done += static_cast<size_t>(n);
    }
    if (close(fd) != 0) fatal_errno("mw_init", "cannot write %s", tmp.c_str());
    if (rename(tmp.c_str(), final_path.c_str()) != 0)
      fatal_errno("mw_init", "cannot rename %s to %s", tmp.c_str(), final_path.c_str());
  }

  void fence(int timeout_ms, const char *call) override {
    std::string prefix = "fence." + std::to_string(fences_++) + ".";
    touch(marker(prefix, rank_), call);
    const Clock::time_point start = Clock::now();
    Clock::duration nap = std::chrono::microseconds(20);
    // Markers only ever appear, so the ranks seen so far need no second look.
    while (true) {
      while (next_ < nprocs_ && exists(marker(prefix, next_))) next_++;
      if (next_ == nprocs_) break;
      Clock::duration waited = Clock::now() - start;
      if (timeout_ms >= 0 && waited >= std::chrono::milliseconds(timeout_ms))
        timed_out(prefix, timeout_ms, call);
      // Short naps while the others are likely just behind; long ones for a rank that is
      // still computing (before mw_finalize) or still being started.
      Clock::duration cap = waited < std::chrono::seconds(1) ? std::chrono::milliseconds(5)
                                                             : std::chrono::milliseconds(50);
      nap = std::min(nap * 2, cap);
      sleep_for(nap);
    }
    next_ = 0;
  }

  std::optional<std::vector<uint8_t>> get(int rank, const std::string &key) override {
    std::string p = dir_ + "/kv." + std::to_string(rank) + "." + key;
    int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return std::nullopt;
    if (fd < 0) fatal_errno("mw_init", "cannot open %s", p.c_str());
    std::vector<uint8_t> blob;
    uint8_t buf[4096];
    while (true) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fatal_errno("mw_init", "cannot read %s", p.c_str());
      if (n == 0) break;
      blob.insert(blob.end(), buf, buf + n);
    }
    close(fd);
    return blob;
  }

  uint64_t secret() override { return secret_; }

  void leave() override { touch(marker(files::kLeftPrefix, rank_), "mw_finalize"); }

  void joined() { touch(marker(files::kJoinedPrefix, rank_), "mw_init"); }

 private:
  std::string path(const char *prefix, const std::string &key) const {
    return dir_ + "/" + prefix + std::to_string(rank_) + "." + key;
  }
  std::string marker(const std::string &prefix, int rank) const {
    return dir_ + "/" + prefix + std::to_string(rank);
  }
  static bool exists(const std::string &p) { return access(p.c_str(), F_OK) == 0; }
  static void touch(const std::string &p, const char *call) {
    int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) fatal_errno(call, "cannot create %s in the job directory", p.c_str());
    close(fd);
  }

  [[noreturn]] void timed_out(const std::string &prefix, int timeout_ms, const char *call) {
    std::vector<int> missing;
    for (int r = 0; r < nprocs_; r++)
      if (!exists(marker(prefix, r))) missing.push_back(r);
    fatal(call,
          "timed out after %.3g s waiting for %s of %d to reach mw_init (a rank that crashed, "
          "hangs, or starts slowly; raise MW_STARTUP_TIMEOUT, in seconds, for a slow start)",
          timeout_ms / 1000.0, describe_ranks(missing).c_str(), nprocs_);
  }

  const std::string dir_;
  const int rank_, nprocs_;
  const uint64_t secret_;
  int fences_ = 0;  // fences entered, numbering the markers of the next one
  int next_ = 0;    // lowest rank not yet seen in the current fence
};

}  // namespace

std::unique_ptr<Backend> start_files(Job &job) {
  for (Id id : {Id::MW_RANK, Id::MW_NPROCS, Id::MW_JOB_DIR, Id::MW_JOB_ID, Id::MW_SECRET}) require(id);
  const int nprocs = static_cast<int>(settings::number(Id::MW_NPROCS));
  const int rank = static_cast<int>(settings::number(Id::MW_RANK));
  if (rank >= nprocs)
    fatal("mw_init", "MW_RANK=%d is not a rank of a job of MW_NPROCS=%d ranks", rank, nprocs);
  g_rank = rank;
  std::string dir = settings::text(Id::MW_JOB_DIR);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    fatal_errno("mw_init", "cannot use the job directory MW_JOB_DIR=%s", dir.c_str());
  if (!S_ISDIR(st.st_mode))
    fatal("mw_init", "the job directory MW_JOB_DIR=%s is not a directory", dir.c_str());
  job.job_id = settings::text(Id::MW_JOB_ID);
  const uint64_t secret = settings::hex64(Id::MW_SECRET);
  job.rank = rank;
  job.nprocs = nprocs;
  job.all_local = true;
  auto backend = std::make_unique<FilesBackend>(std::move(dir), rank, nprocs, secret);
  backend->joined();
  return backend;
}

}  // namespace mw::bootstrap::detail
