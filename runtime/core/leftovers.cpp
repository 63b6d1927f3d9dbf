// Leftovers: see leftovers.hpp for what is named how, and when it counts as stale.
#include "core/leftovers.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

namespace mw::leftovers {
namespace {

constexpr const char *kShmDir = "/dev/shm";
constexpr std::string_view kPrefix = "midway-";
constexpr std::string_view kBellsSuffix = "-bells";

bool all_of(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s)
    if (!pred(c)) return false;
  return true;
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }

// "midway-<pid>-r<rank>" -> pid and rank.
bool parse_endpoint(std::string_view name, long *pid, long *rank) {
  if (name.substr(0, kPrefix.size()) != kPrefix) return false;
  name.remove_prefix(kPrefix.size());
  size_t dash = name.find("-r");
  if (dash == std::string_view::npos) return false;
  std::string_view p = name.substr(0, dash), r = name.substr(dash + 2);
  if (!all_of(p, is_digit) || !all_of(r, is_digit) || p.size() > 9 || r.size() > 9) return false;
  *pid = std::stol(std::string(p));
  *rank = std::stol(std::string(r));
  return *pid > 0;
}

// "midway-<16 hex digits>-bells".
bool is_bells(std::string_view name) {
  if (name.substr(0, kPrefix.size()) != kPrefix) return false;
  name.remove_prefix(kPrefix.size());
  return name.size() == 16 + kBellsSuffix.size() && name.substr(16) == kBellsSuffix &&
         all_of(name.substr(0, 16), is_hex);
}

bool exists(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

// This user's regular files in /dev/shm whose names `want` accepts.
std::vector<std::string> own_shm_files(bool (*want)(std::string_view)) {
  std::vector<std::string> names;
  DIR *d = opendir(kShmDir);
  if (!d) return names;
  const uid_t me = geteuid();
  while (dirent *e = readdir(d)) {
    if (!want(e->d_name)) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        st.st_uid == me)
      names.emplace_back(e->d_name);
  }
  closedir(d);
  return names;
}

bool unlink_shm(const std::string &name) {
  return unlinkat(AT_FDCWD, (std::string(kShmDir) + "/" + name).c_str(), 0) == 0;
}

// Field `n` of /proc/<pid>/stat (3 or more: counted after the command name, which is in
// parentheses and may hold spaces), or "".
std::string stat_field(pid_t pid, int n) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(f, stat)) return "";
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= n && rest >> field; i++)
    if (i == n) return field;
  return "";
}

// The process's start time (field 22), or "" if there is no such process.
std::string start_time(pid_t pid) { return stat_field(pid, 22); }

// Every /dev/shm path that a process we can inspect has open or mapped.
std::set<std::string> shm_files_in_use() {
  std::set<std::string> used;
  const std::string shm = std::string(kShmDir) + "/";
  DIR *proc = opendir("/proc");
  if (!proc) return used;
  while (dirent *p = readdir(proc)) {
    if (!all_of(p->d_name, is_digit)) continue;
    const std::string dir = std::string("/proc/") + p->d_name;
    if (DIR *fds = opendir((dir + "/fd").c_str())) {
      while (dirent *f = readdir(fds)) {
        char target[4096];
        ssize_t n = readlinkat(dirfd(fds), f->d_name, target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = '\0';
        if (std::strncmp(target, shm.c_str(), shm.size()) == 0) used.insert(target + shm.size());
      }
      closedir(fds);
    }
    std::ifstream maps(dir + "/maps");
    for (std::string line; std::getline(maps, line);) {
      size_t at = line.find(shm);
      if (at != std::string::npos) used.insert(line.substr(at + shm.size()));
    }
  }
  closedir(proc);
  return used;
}

}  // namespace

std::string endpoint_name(int rank, pid_t pid) {
  return std::string(kPrefix) + std::to_string(pid) + "-r" + std::to_string(rank);
}

std::string bells_name(const std::string &job_id) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: a short fixed-width name for any job id
  for (unsigned char c : job_id) h = (h ^ c) * 0x100000001b3ull;
  char name[64];
  std::snprintf(name, sizeof name, "/%.*s%016" PRIx64 "%.*s", static_cast<int>(kPrefix.size()),
                kPrefix.data(), h, static_cast<int>(kBellsSuffix.size()), kBellsSuffix.data());
  return name;
}

std::vector<Removed> remove_dead_endpoints() {
  std::vector<Removed> removed;
  const pid_t self = getpid();
  for (const std::string &name : own_shm_files([](std::string_view n) {
         long pid, rank;
         return parse_endpoint(n, &pid, &rank);
       })) {
    long pid = 0, rank = 0;
    parse_endpoint(name, &pid, &rank);
    if (pid != self && exists(static_cast<pid_t>(pid))) continue;
    if (unlink_shm(name))
      removed.push_back({std::string(kShmDir) + "/" + name,
                         "rank " + std::to_string(rank) + "'s endpoint; process " +
                             std::to_string(pid) + " has exited"});
  }
  return removed;
}

std::vector<Removed> remove_unused_bells() {
  std::vector<Removed> removed;
  std::vector<std::string> bells = own_shm_files(is_bells);
  if (bells.empty()) return removed;
  // Listed before the scan: a page that existed then was held by its maker from its
  // shm_open on, so a page some live process made is seen in use.
  const std::set<std::string> used = shm_files_in_use();
  for (const std::string &name : bells)
    if (!used.count(name) && unlink_shm(name))
      removed.push_back({std::string(kShmDir) + "/" + name,
                         "a job's doorbell page; no process has it open"});
  return removed;
}

namespace {

// Kills this user's processes in process group `pgid` whose environment holds
// MW_JOB_DIR=`dir`; says which.
void kill_group_left(const std::string &dir, long pgid, std::vector<Removed> *removed) {
  const std::string wanted = "MW_JOB_DIR=" + dir;
  const std::string group = std::to_string(pgid);
  const uid_t me = geteuid();
  DIR *proc = opendir("/proc");
  if (!proc) return;
  while (dirent *p = readdir(proc)) {
    if (!all_of(p->d_name, is_digit)) continue;
    const std::string at = std::string("/proc/") + p->d_name;
    struct stat st;
    if (stat(at.c_str(), &st) != 0 || st.st_uid != me) continue;
    const auto pid = static_cast<pid_t>(std::strtol(p->d_name, nullptr, 10));
    if (stat_field(pid, 5) != group) continue;
    std::ifstream env(at + "/environ", std::ios::binary);
    std::string entry;
    bool ours = false;
    while (!ours && std::getline(env, entry, '\0')) ours = entry == wanted;
    if (!ours) continue;
    std::string comm;
    std::getline(std::ifstream(at + "/comm") >> std::ws, comm);
    if (kill(pid, SIGKILL) == 0)
      removed->push_back({"process " + std::to_string(pid) + " (" + comm + ")",
                          "left in the process group of that job's ranks"});
  }
  closedir(proc);
}

}  // namespace

std::vector<Removed> remove_dead_job_dirs(const std::string &tmpdir) {
  std::vector<Removed> removed;
  DIR *d = opendir(tmpdir.c_str());
  if (!d) return removed;
  const uid_t me = geteuid();
  std::vector<std::string> dirs;
  while (dirent *e = readdir(d)) {
    if (std::strncmp(e->d_name, "mwrun.", 6) != 0) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
        st.st_uid == me)
      dirs.push_back(tmpdir + "/" + e->d_name);
  }
  closedir(d);
  for (const std::string &dir : dirs) {
    std::ifstream f(dir + "/" + kLauncherFile);
    long pid = 0;
    std::string started;
    // No launcher file yet (an mwrun between mkdtemp and writing it) or an unreadable
    // one: not known to be dead.
    if (!(f >> pid >> started) || pid <= 0) continue;
    if (start_time(static_cast<pid_t>(pid)) == started) continue;
    long pgid = 0;
    if (std::ifstream g(dir + "/" + kGroupFile); g >> pgid && pgid > 0) kill_group_left(dir, pgid, &removed);
    nftw(
        dir.c_str(), [](const char *p, const struct stat *, int, FTW *) { return remove(p); }, 16,
        FTW_DEPTH | FTW_PHYS);
    if (access(dir.c_str(), F_OK) != 0)
      removed.push_back({dir, "job directory; its mwrun, process " + std::to_string(pid) +
                                  ", has exited"});
  }
  return removed;
}

bool write_group(const std::string &job_dir, pid_t pgid) {
  const std::string path = job_dir + "/" + kGroupFile, tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "w");
  if (!f) return false;
  bool ok = std::fprintf(f, "%d\n", static_cast<int>(pgid)) > 0;
  ok = std::fclose(f) == 0 && ok;
  return ok && std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool write_launcher(const std::string &job_dir) {
  const std::string started = start_time(getpid());
  const std::string path = job_dir + "/" + kLauncherFile, tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "w");
  if (!f) return false;
  bool ok = std::fprintf(f, "%d %s\n", static_cast<int>(getpid()), started.c_str()) > 0;
  ok = std::fclose(f) == 0 && ok;
  // Renamed into place, so that a reader sees all of it or nothing.
  return ok && std::rename(tmp.c_str(), path.c_str()) == 0;
}

std::string describe(const std::vector<Removed> &removed) {
  std::string s = "removed what dead Midway jobs left: ";
  for (size_t i = 0; i < removed.size(); i++)
    s += (i ? "; " : "") + removed[i].path + " (" + removed[i].why + ")";
  return s;
}

}  // namespace mw::leftovers
