// The bootstrap's front: which launcher started us, the job's settings from the
// environment, and the check that every rank sees shared data at the same addresses.
#include "launch/bootstrap.hpp"

#include <link.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>

#include "launch/bootstrap_backend.hpp"
#include "core/error.hpp"
#include "core/settings.hpp"
#include "midway.h"
#include "memory/window.hpp"

namespace mw::bootstrap {
namespace detail {

uint64_t random_secret(const char *call) {
  uint64_t s = 0;
  while (s == 0) {
    if (getrandom(&s, sizeof s, 0) != static_cast<ssize_t>(sizeof s))
      fatal_errno(call, "getrandom of the job's secret failed");
  }
  return s;
}

std::string describe_ranks(const std::vector<int> &ranks) {
  constexpr size_t kListed = 8;
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size() && i < kListed; i++) {
    if (i > 0) s += (i + 1 == ranks.size()) ? " and " : ", ";
    s += std::to_string(ranks[i]);
  }
  if (ranks.size() > kListed) s += " and " + std::to_string(ranks.size() - kListed) + " more";
  return s;
}

}  // namespace detail

namespace {

using detail::Backend;

// A process started without a launcher: rank 0 of 1, whose gets see its own puts.
class SingleBackend : public Backend {
 public:
  void put(const std::string &key, const void *data, size_t len) override {
    const uint8_t *p = static_cast<const uint8_t *>(data);
    blobs_[key].assign(p, p + len);
  }
  void fence(int, const char *) override {}
  std::optional<std::vector<uint8_t>> get(int, const std::string &key) override {
    auto it = blobs_.find(key);
    if (it == blobs_.end()) return std::nullopt;
    return it->second;
  }
  uint64_t secret() override { return detail::random_secret("mw_init"); }
  void leave() override {}

 private:
  std::map<std::string, std::vector<uint8_t>> blobs_;
};

std::unique_ptr<Backend> g_backend;
Job g_job;
// The user's call that bootstrap errors are reported as.
const char *g_call = "mw_init";

// A launcher that asked for several processes but did not tell this one its rank would
// otherwise get N independent jobs of one, each computing alone.
void refuse_unlaunched_job() {
  if (settings::is_set(settings::Id::MW_NPROCS)) {
    const long n = settings::number(settings::Id::MW_NPROCS);
    if (n > 1)
      fatal("mw_init",
            "MW_NPROCS=%ld asks for a job of %ld processes, but MW_RANK and MW_JOB_DIR are not "
            "set: start the program with mwrun (mwrun -n %ld PROGRAM ARGS...)",
            n, n, n);
  }
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"}) {
    if (const char *v = std::getenv(var); v && std::atoi(v) > 1)
      fatal("mw_init",
            "%s=%s says this process is one of %d, but no PMIx server is named in the "
            "environment (PMIX_RANK, PMIX_NAMESPACE): launch with an mpirun built with "
            "PMIx, with srun --mpi=pmix, or with mwrun",
            var, v, std::atoi(v));
  }
}

std::unique_ptr<Backend> start(Job &job) {
  if (settings::is_set(settings::Id::MW_RANK) || settings::is_set(settings::Id::MW_JOB_DIR))
    return detail::start_files(job);
  if (std::getenv("PMIX_RANK") || std::getenv("PMIX_NAMESPACE")) return detail::start_pmix(job);
  refuse_unlaunched_job();
  g_rank = 0;
  job.rank = 0;
  job.nprocs = 1;
  job.job_id = "single." + std::to_string(getpid());
  job.all_local = true;
  return std::make_unique<SingleBackend>();
}

// ---- The same-address check ----

// What a rank must agree on with rank 0 for a shared pointer to mean the same thing in
// both: the window, where the executable's MW_SHARED data sits in it, and the
// executable itself (its build-id, or its size and time when it was linked without one).
struct ImageHeader {
  uint64_t window_base, window_size, shadow_offset;
  uint64_t static_begin, static_end;
};
constexpr const char *kImageKey = "mw.image";

struct Image {
  ImageHeader header;
  std::string exe_id;  // "build-id 3f2a..." or "size 81234 bytes, modified 1700000000"
  std::string exe_path;
};

int find_build_id(dl_phdr_info *info, size_t, void *out) {
  // The first object reported is the executable itself; stop there either way.
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char *p = reinterpret_cast<const char *>(info->dlpi_addr + ph.p_vaddr);
    const char *end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *n = reinterpret_cast<const ElfW(Nhdr) *>(p);
      const char *name = p + sizeof *n;
      const unsigned char *desc =
          reinterpret_cast<const unsigned char *>(name + ((n->n_namesz + 3) & ~3u));
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        std::string hex;
        for (uint32_t j = 0; j < n->n_descsz; j++) {
          char b[3];
          std::snprintf(b, sizeof b, "%02x", desc[j]);
          hex += b;
        }
        *static_cast<std::string *>(out) = "build-id " + hex;
        return 1;
      }
      p = reinterpret_cast<const char *>(desc) + ((n->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

Image this_image() {
  const window::Layout &w = window::layout();
  Image im{
      {MW_WINDOW_BASE, MW_WINDOW_SIZE, MW_SHADOW_OFFSET, w.static_begin, w.static_end}, "", ""};
  dl_iterate_phdr(find_build_id, &im.exe_id);
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  im.exe_path = n > 0 ? std::string(path, static_cast<size_t>(n)) : "?";
  if (im.exe_id.empty()) {
    struct stat st;
    if (stat("/proc/self/exe", &st) != 0)
      fatal_errno("mw_init", "cannot stat /proc/self/exe to identify this rank's executable");
    im.exe_id = "size " + std::to_string(st.st_size) + " bytes, modified " +
                std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  }
  return im;
}

std::vector<uint8_t> encode(const Image &im) {
  std::vector<uint8_t> b(sizeof im.header);
  std::memcpy(b.data(), &im.header, sizeof im.header);
  b.insert(b.end(), im.exe_id.begin(), im.exe_id.end());
  b.push_back(0);
  b.insert(b.end(), im.exe_path.begin(), im.exe_path.end());
  return b;
}

Image decode(const std::vector<uint8_t> &b, int rank) {
  Image im{};
  const uint8_t *nul = b.size() > sizeof im.header
                           ? static_cast<const uint8_t *>(std::memchr(
                                 b.data() + sizeof im.header, 0, b.size() - sizeof im.header))
                           : nullptr;
  if (!nul)
    fatal("mw_init",
          "rank %d published a malformed %s (%zu bytes): is it running another "
          "version of Midway?",
          rank, kImageKey, b.size());
  std::memcpy(&im.header, b.data(), sizeof im.header);
  im.exe_id.assign(reinterpret_cast<const char *>(b.data() + sizeof im.header),
                   reinterpret_cast<const char *>(nul));
  im.exe_path.assign(reinterpret_cast<const char *>(nul + 1),
                     reinterpret_cast<const char *>(b.data() + b.size()));
  return im;
}

// Every rank compares every rank with rank 0, so that a mismatch stops all of them.
void check_images(const Job &job) {
  auto image_of = [](int r) {
    std::optional<std::vector<uint8_t>> b = g_backend->get(r, kImageKey);
    if (!b) fatal("mw_init", "rank %d published no %s at start-up", r, kImageKey);
    return decode(*b, r);
  };
  const Image root = image_of(0);
  for (int r = 1; r < job.nprocs; r++) {
    const Image im = image_of(r);
    const ImageHeader &a = im.header, &z = root.header;
    if (a.window_base != z.window_base || a.window_size != z.window_size ||
        a.shadow_offset != z.shadow_offset)
      fatal("mw_init",
            "rank %d has its shared window at [0x%llx, +0x%llx) with its dirty map at +0x%llx, "
            "but rank 0 at [0x%llx, +0x%llx) with +0x%llx: every rank must run a program "
            "built with the same version of Midway",
            r, static_cast<unsigned long long>(a.window_base),
            static_cast<unsigned long long>(a.window_size),
            static_cast<unsigned long long>(a.shadow_offset),
            static_cast<unsigned long long>(z.window_base),
            static_cast<unsigned long long>(z.window_size),
            static_cast<unsigned long long>(z.shadow_offset));
    if (a.static_begin != z.static_begin || a.static_end != z.static_end)
      fatal("mw_init",
            "rank %d maps shared data at [0x%llx, 0x%llx) but rank 0 at [0x%llx, 0x%llx): "
            "every rank must run the same mwcc-built binary (rank %d runs %s, rank 0 %s)",
            r, static_cast<unsigned long long>(a.static_begin),
            static_cast<unsigned long long>(a.static_end),
            static_cast<unsigned long long>(z.static_begin),
            static_cast<unsigned long long>(z.static_end), r, im.exe_path.c_str(),
            root.exe_path.c_str());
    if (im.exe_id != root.exe_id)
      fatal("mw_init",
            "rank %d runs %s (%s) but rank 0 runs %s (%s): every rank must run the same "
            "mwcc-built binary",
            r, im.exe_path.c_str(), im.exe_id.c_str(), root.exe_path.c_str(), root.exe_id.c_str());
  }
}

// ---- Hosts told apart ----

// Where a rank runs, as "<host name> <boot id> <network namespace>": two ranks share
// memory (and shm reaches both) only if the kernel is the same (its boot id), and their
// loopback and names are the same only in one network namespace (network namespaces on
// one kernel, as in test/multihost, are hosts to the fabric). The host name is for errors.
constexpr const char *kHostKey = "mw.host";

std::string this_host() {
  char name[256] = "?";
  gethostname(name, sizeof name - 1);
  std::string boot = "?";
  if (FILE *f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char b[64] = "";
    if (std::fgets(b, sizeof b, f)) boot.assign(b, strcspn(b, "\n"));
    std::fclose(f);
  }
  struct stat st{};
  const unsigned long long netns = stat("/proc/self/ns/net", &st) == 0 ? st.st_ino : 0;
  return std::string(name) + " " + boot + " " + std::to_string(netns);
}

void learn_hosts(Job &job, const std::string &mine) {
  job.hosts.resize(static_cast<size_t>(job.nprocs));
  job.all_local = true;
  for (int r = 0; r < job.nprocs; r++) {
    std::optional<std::vector<uint8_t>> b = g_backend->get(r, kHostKey);
    if (!b) fatal("mw_init", "rank %d published no %s at start-up", r, kHostKey);
    std::string id(b->begin(), b->end());
    job.hosts[static_cast<size_t>(r)] = id;
    if (id != mine) job.all_local = false;
  }
}

void check_key(const char *key) {
  size_t n = std::strlen(key);
  bool ok = n > 0 && n <= 64;
  for (size_t i = 0; ok && i < n; i++) {
    char c = key[i];
    ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
  }
  if (!ok)
    fatal(g_call, "bootstrap key \"%s\" is not 1 to 64 letters, digits, '.', '_' or '-'", key);
}

void require_joined(const char *what) {
  if (!g_backend)
    fatal(g_call, "bootstrap %s outside the job (before mw_init or after mw_finalize)", what);
}

}  // namespace

Job join(int timeout_ms) {
  g_call = "mw_init";
  Job job;
  g_backend = start(job);
  std::vector<uint8_t> image = encode(this_image());
  g_backend->put(kImageKey, image.data(), image.size());
  const std::string host = this_host();
  g_backend->put(kHostKey, host.data(), host.size());
  g_backend->fence(timeout_ms, "mw_init");
  job.secret = g_backend->secret();
  check_images(job);
  learn_hosts(job, host);
  g_job = job;
  return job;
}

const Job &job() { return g_job; }

std::string host_name(const Job &job, int rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= job.hosts.size()) return "?";
  const std::string &id = job.hosts[static_cast<size_t>(rank)];
  const std::string name = id.substr(0, id.find(' '));
  bool shared_name = false;
  for (const std::string &o : job.hosts)
    if (o != id && o.substr(0, o.find(' ')) == name) shared_name = true;
  if (!shared_name) return name;
  return name + " (network namespace " + id.substr(id.rfind(' ') + 1) + ")";
}

void put(const char *key, const void *data, size_t len) {
  require_joined("put");
  check_key(key);
  g_backend->put(key, data, len);
}

void fence() {
  require_joined("fence");
  g_backend->fence(-1, g_call);
}

std::vector<uint8_t> get(int rank, const char *key) {
  require_joined("get");
  check_key(key);
  if (rank < 0 || rank >= g_job.nprocs)
    fatal(g_call, "bootstrap get of \"%s\" from rank %d, outside the job of %d ranks", key, rank,
          g_job.nprocs);
  std::optional<std::vector<uint8_t>> b = g_backend->get(rank, key);
  if (!b) fatal(g_call, "rank %d published nothing under \"%s\" before the last fence", rank, key);
  return *b;
}

void leave() {
  require_joined("leave");
  g_call = "mw_finalize";
  const uint8_t one = 1;
  g_backend->put(detail::kLeftKey, &one, sizeof one);
  g_backend->fence(-1, g_call);
  g_backend->leave();
  g_backend.reset();
}

}  // namespace mw::bootstrap
