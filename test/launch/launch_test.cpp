// Launching jobs: mwrun and mpirun start real processes of a Midway program (probe.c),
// and the tests check what a user would: what the ranks print, the exit status, the
// messages when a rank fails, and that nothing of a failed job keeps running.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/leftovers.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string kMwrun = MIDWAY_BIN_DIR "/mwrun";
const std::string kProbe = LAUNCH_BIN_DIR "/probe";
const std::string kProbeBig = LAUNCH_BIN_DIR "/probe_big";          // more shared data
const std::string kProbeVariant = LAUNCH_BIN_DIR "/probe_variant";  // other code, same data
const std::string kBootstrapProbe = LAUNCH_BIN_DIR "/bootstrap_probe";

// Every rank of a failed job must be gone this long after the job started.
constexpr auto kStopBound = std::chrono::seconds(5);

struct Result {
  int exit_code = -1;  // 128+N if killed by signal N
  std::string out, err;
  Clock::duration elapsed{};
};

// Runs argv with extra environment variables, collecting its output. `started` is
// called with its pid once it runs (to signal it from outside).
Result run(const std::vector<std::string> &argv, const std::vector<std::string> &env = {},
           const std::function<void(pid_t)> &started = nullptr) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) std::abort();
  Clock::time_point t0 = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    for (const std::string &e : env) putenv(const_cast<char *>(e.c_str()));
    std::vector<char *> args;
    for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  if (started) started(pid);
  Result r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string *sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  // A safety net against a hung job: far above any bound a test asserts.
  const Clock::time_point give_up = t0 + std::chrono::seconds(60);
  while (open_fds > 0) {
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now()).count());
    if (left <= 0 || poll(fds, 2, left) == 0) {
      kill(pid, SIGKILL);
      r.err += "\n[test: killed after 60 s]";
      break;
    }
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        open_fds--;
      }
    }
  }
  int status;
  waitpid(pid, &status, 0);
  r.elapsed = Clock::now() - t0;
  for (pollfd &f : fds)
    if (f.fd >= 0) close(f.fd);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::vector<std::string> mwrun(int n, std::vector<std::string> rest) {
  std::vector<std::string> argv{kMwrun, "-n", std::to_string(n)};
  argv.insert(argv.end(), rest.begin(), rest.end());
  return argv;
}

std::vector<std::string> sorted_lines(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::vector<std::string> rank_lines(int n) {
  std::vector<std::string> lines;
  for (int r = 0; r < n; r++)
    lines.push_back("rank " + std::to_string(r) + " of " + std::to_string(n));
  std::sort(lines.begin(), lines.end());
  return lines;
}

// What a job printed on stderr, less mwrun's note that it removed what dead jobs left
// (runtime/leftovers.hpp): tests run side by side, and another test's killed job is
// rightly cleaned by whichever mwrun starts next.
std::string own_errors(const std::string &err) {
  static const std::regex notice("^mwrun: removed what dead Midway jobs left: [^\n]*\n");
  return std::regex_replace(err, notice, "");
}

// A scratch directory for one test, removed after it.
class LaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "mw-launch-test.XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string pids_dir() {
    fs::path p = dir_ / "pids";
    fs::create_directories(p);
    return p.string();
  }

  // The pids the probe's ranks (and their children) wrote with --pids.
  std::vector<pid_t> recorded_pids() {
    std::vector<pid_t> pids;
    for (const auto &e : fs::directory_iterator(dir_ / "pids")) {
      std::ifstream in(e.path());
      int pid = 0;
      in >> pid;
      if (pid > 0) pids.push_back(pid);
    }
    return pids;
  }

  // Processes that still run (a zombie has stopped running, whoever reaps it).
  static std::vector<pid_t> running(const std::vector<pid_t> &pids) {
    std::vector<pid_t> alive;
    for (pid_t pid : pids) {
      std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
      std::string line;
      if (!std::getline(stat, line)) continue;
      size_t paren = line.rfind(')');
      if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z')
        alive.push_back(pid);
    }
    return alive;
  }

  // Every recorded process is gone within kStopBound of the job's start (SIGKILL to a
  // process group takes effect shortly after kill() returns, so look until the bound).
  void expect_all_stopped(const Result &r, size_t expected_pids) {
    std::vector<pid_t> pids = recorded_pids();
    EXPECT_EQ(pids.size(), expected_pids) << "the ranks did not all record their pids";
    std::vector<pid_t> alive = running(pids);
    for (auto t = r.elapsed; !alive.empty() && t < kStopBound; t += std::chrono::milliseconds(20)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      alive = running(alive);
    }
    for (pid_t pid : alive) {
      ADD_FAILURE() << "process " << pid << " of the job is still running";
      kill(pid, SIGKILL);
    }
  }

  // A killed rank must not leave its libfabric shm region behind: 16 MiB each, in a
  // tmpfs that outlives the job. Midway names it /dev/shm/midway-<pid>-r<rank>; libfabric's
  // own name would be /dev/shm/<pid>:<ep>:<domain>.
  void expect_no_shm_left() {
    for (pid_t pid : recorded_pids()) {
      const std::string ours = "midway-" + std::to_string(pid) + "-r",
                        libfabrics = std::to_string(pid) + ":";
      for (const auto &e : fs::directory_iterator("/dev/shm")) {
        const std::string name = e.path().filename().string();
        EXPECT_TRUE(name.rfind(ours, 0) != 0 && name.rfind(libfabrics, 0) != 0)
            << e.path() << " of process " << pid << " was left behind";
      }
    }
  }

  fs::path dir_;
};

// ---- Ranks learn who they are ----

TEST_F(LaunchTest, EveryRankLearnsItsRankAndTheJobSize) {
  for (int n : {1, 2, 4, 8}) {
    Result r = run(mwrun(n, {kProbe, "hello"}));
    EXPECT_EQ(r.exit_code, 0) << "n=" << n << "\n" << r.err;
    EXPECT_EQ(sorted_lines(r.out), rank_lines(n)) << "n=" << n;
    EXPECT_EQ(own_errors(r.err), "") << "n=" << n;
  }
}

// A program that is not a Midway one runs N unconnected copies: a wrong binary would pass
// for a good run if mwrun said nothing.
TEST_F(LaunchTest, AJobWhoseRanksNeverJoinedIsNoted) {
  Result r = run(mwrun(2, {"/bin/true"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("mwrun: note: no rank called mw_init, so the 2 processes of /bin/true "
                       "ran unconnected (not a Midway program, or each left before mw_init)"),
            std::string::npos)
      << r.err;
}

TEST_F(LaunchTest, WithoutALauncherTheProgramIsRankZeroOfOne) {
  Result r = run({kProbe, "hello"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "rank 0 of 1\n");
}

TEST_F(LaunchTest, AJobSizeWithoutMwrunIsRefused) {
  Result r = run({kProbe, "hello"}, {"MW_NPROCS=4"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("midway: mw_init: MW_NPROCS=4 asks for a job of 4 processes, but MW_RANK "
                       "and MW_JOB_DIR are not set: start the program with mwrun"),
            std::string::npos)
      << r.err;
}

TEST_F(LaunchTest, OptionsReachTheRanksAndTheJobDirectoryIsRemoved) {
  Result r = run(mwrun(2, {"--model", "rc", "--provider=tcp", "--stats", kProbe, "env"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int rank = 0; rank < 2; rank++) {
    std::string p = "rank " + std::to_string(rank) + " ";
    EXPECT_NE(r.out.find(p + "MW_MODEL=rc\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(p + "MW_PROVIDER=tcp\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(p + "MW_STATS=table\n"), std::string::npos) << r.out;
  }
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("MW_JOB_DIR=(\\S+)"))) << r.out;
  EXPECT_FALSE(fs::exists(m[1].str())) << "job directory " << m[1] << " left behind";
  EXPECT_TRUE(std::regex_search(r.out, std::regex("MW_JOB_ID=\\S+"))) << r.out;
}

// A bad setting stops the program at mw_init, before it runs. MW_STATS is read only at
// mw_finalize, but a long run must not end without the statistics it was started for.
TEST_F(LaunchTest, AnUnknownSettingInTheEnvironmentIsRefusedAtStart) {
  for (const auto &[setting, message] :
       {std::pair{"MW_MODEL=sc", "MW_MODEL=sc is not a consistency model: use ec"},
        std::pair{"MW_STATS=bogus", "MW_STATS=bogus is not a statistics format: use table or json:FILE"}}) {
    Result r = run({kProbe, "hello"}, {setting});
    EXPECT_NE(r.exit_code, 0) << setting;
    EXPECT_NE(r.err.find(std::string("midway: mw_init: ") + message), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << setting << ": the program ran past mw_init";
  }
}

// ---- Exit status and failing ranks ----

TEST_F(LaunchTest, TheExitCodeOfAFailingRankIsTheJobs) {
  Result r = run(mwrun(3, {kProbe, "exit", "1", "3"}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("mwrun: rank 1 \\(pid [0-9]+\\) exited with status 3; stopping the job")))
      << r.err;
  EXPECT_LT(r.elapsed, kStopBound);
}

struct Crash {
  const char *signal_number;
  const char *message;
  int exit_code;
};

// How ctest and gtest name a parameter in their output.
void PrintTo(const Crash &c, std::ostream *os) { *os << "signal " << c.signal_number; }

class CrashTest : public LaunchTest, public ::testing::WithParamInterface<Crash> {};

TEST_P(CrashTest, ACrashedRankStopsTheWholeJob) {
  const Crash &c = GetParam();
  // Ranks 0, 2, 3 wait for rank 1 in mw_finalize; each also has a child process.
  Result r =
      run(mwrun(4, {kProbe, "--pids", pids_dir(), "--grandchild", "signal", "1", c.signal_number}));
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex(std::string("mwrun: rank 1 \\(pid [0-9]+\\) was killed by ") + c.message +
                        "( \\(core dumped\\))?; stopping the job")))
      << r.err;
  EXPECT_LT(r.elapsed, kStopBound);
  expect_all_stopped(r, 8);
  expect_no_shm_left();
}

INSTANTIATE_TEST_SUITE_P(Signals, CrashTest,
                         ::testing::Values(Crash{"9", "signal 9 \\(SIGKILL\\)", 137},
                                           Crash{"11", "signal 11 \\(SIGSEGV\\)", 139}),
                         [](const auto &info) {
                           return std::string("signal") + info.param.signal_number;
                         });

TEST_F(LaunchTest, AFailingRankStopsRanksThatAreNotWaitingForIt) {
  Result r = run(mwrun(3, {kProbe, "--pids", pids_dir(), "signal-sleep", "2", "6"}));
  EXPECT_EQ(r.exit_code, 128 + SIGABRT) << r.err;
  EXPECT_NE(r.err.find("was killed by signal 6 (SIGABRT)"), std::string::npos) << r.err;
  EXPECT_LT(r.elapsed, kStopBound);
  expect_all_stopped(r, 3);
}

TEST_F(LaunchTest, RanksThatIgnoreSigtermAreKilled) {
  Result r = run(mwrun(3, {kProbe, "--pids", pids_dir(), "--ignore-term", "exit", "0", "1"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("mwrun: rank 0 \\(pid [0-9]+\\) exited with status 1; stopping the job")))
      << r.err;
  // The 2 s the job took to stop are explained.
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("mwrun: ranks 1 \\(pid [0-9]+\\), 2 \\(pid [0-9]+\\) did not stop within 2 s of "
                        "signal 15 \\(SIGTERM\\); killing them")))
      << r.err;
  EXPECT_LT(r.elapsed, kStopBound);
  expect_all_stopped(r, 3);
}

TEST_F(LaunchTest, ARankThatSkipsFinalizeIsReported) {
  Result r = run(mwrun(3, {kProbe, "--pids", pids_dir(), "no-finalize", "2"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("mwrun: rank 2 \\(pid [0-9]+\\) exited with status 0 without "
                        "calling mw_finalize, which the other ranks wait for; stopping the job")))
      << r.err;
  EXPECT_LT(r.elapsed, kStopBound);
  expect_all_stopped(r, 3);
}

// Alone, it keeps nobody waiting, and is not said to.
TEST_F(LaunchTest, AOneRankJobThatSkipsFinalizeIsReported) {
  Result r = run(mwrun(1, {kProbe, "no-finalize", "0"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("mwrun: rank 0 \\(pid [0-9]+\\) exited with status 0 without calling mw_finalize\n")))
      << r.err;
}

TEST_F(LaunchTest, ARankThatNeverArrivesIsNamedWhenStartUpTimesOut) {
  Result r = run(mwrun(3, {kProbe, "late", "1", "30"}), {"MW_STARTUP_TIMEOUT=2"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("midway: mw_init: timed out after 2 s waiting for rank 1 of 3 "
                        "to reach mw_init .*\\(rank [02]\\)")))
      << r.err;
  EXPECT_LT(r.elapsed, std::chrono::seconds(2) + kStopBound);
}

// A job whose ranks stop in mw_init after opening their endpoints (rank 1 asks for tcp,
// the others use shm: their addresses mean nothing to each other) leaves nothing in
// /dev/shm: neither the endpoints' shm regions nor the job's doorbell page, which the
// ranks unlink only once connected.
TEST_F(LaunchTest, AJobThatStopsInMwInitLeavesNothingBehind) {
  const std::string id_file = (dir_ / "job_id").string();
  Result r = run(mwrun(3, {kProbe, "--pids", pids_dir(), "--job-id", id_file, "provider", "1",
                           "tcp;ofi_rxm"}),
                 {"FI_TCP_IFACE=lo"});
  EXPECT_NE(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("midway: fi_av_insert"), std::string::npos) << r.err;
  expect_all_stopped(r, 3);
  expect_no_shm_left();
  std::ifstream in(id_file);
  std::string job_id;
  ASSERT_TRUE(in >> job_id) << "rank 0 did not record the job's id";
  const std::string bells = "/dev/shm" + mw::leftovers::bells_name(job_id);
  EXPECT_FALSE(fs::exists(bells)) << "the job's doorbell page " << bells << " was left behind";
}

TEST_F(LaunchTest, SigintToMwrunIsForwardedAndStopsTheJob) {
  std::string pids = pids_dir();
  Result r = run(mwrun(2, {kProbe, "--pids", pids, "sleep"}), {}, [&](pid_t mwrun_pid) {
    // Once both ranks have recorded their pids, interrupt mwrun. Read, not counted: a
    // rank's file exists before its pid is in it, and a rank interrupted in between
    // left the file empty (once in a loaded run of the suite).
    auto deadline = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < deadline && recorded_pids().size() < 2)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    kill(mwrun_pid, SIGINT);
  });
  EXPECT_EQ(r.exit_code, 128 + SIGINT) << r.err;
  EXPECT_NE(
      r.err.find(
          "mwrun: received signal 2 (SIGINT); forwarding it to the ranks and stopping the job"),
      std::string::npos)
      << r.err;
  EXPECT_LT(r.elapsed, std::chrono::seconds(10) + kStopBound);
  expect_all_stopped(r, 2);
}

TEST_F(LaunchTest, ATimeLimitStopsTheJob) {
  Result r = run(mwrun(2, {"--timeout", "1", kProbe, "--pids", pids_dir(), "sleep"}));
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_NE(r.err.find("mwrun: the job ran longer than --timeout 1 s; stopping it"),
            std::string::npos)
      << r.err;
  expect_all_stopped(r, 2);
}

// ---- What killed jobs leave behind ----

// The lines of /proc/<pid>/maps that map a /dev/shm file.
std::vector<std::string> shm_mappings(pid_t pid) {
  std::vector<std::string> lines;
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string l; std::getline(maps, l);)
    if (l.find("/dev/shm/") != std::string::npos) lines.push_back(l);
  return lines;
}

TEST_F(LaunchTest, AKilledMwrunsJobLeavesNoShmAndTheNextMwrunRemovesItsJobDirectory) {
  // A TMPDIR of this test's own: no other test's mwrun sees the job directory.
  const fs::path tmp = dir_ / "tmp";
  fs::create_directories(tmp);
  const std::string tmpdir = "TMPDIR=" + tmp.string(), pids = pids_dir();
  std::string job_dir;
  Result r = run(mwrun(3, {kProbe, "--pids", pids, "sleep"}), {tmpdir}, [&](pid_t mwrun_pid) {
    // Once connected, each rank still maps its endpoint's region, which has no name any
    // more: every peer has it mapped, and a rank killed now leaves nothing in /dev/shm.
    auto deadline = Clock::now() + std::chrono::seconds(20);
    size_t unnamed = 0;
    while (Clock::now() < deadline && unnamed < 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      unnamed = 0;
      for (pid_t pid : recorded_pids())
        for (const std::string &l : shm_mappings(pid))
          if (std::regex_search(l, std::regex("/dev/shm/midway-" + std::to_string(pid) +
                                              "-r[0-2] \\(deleted\\)$")))
            unnamed++;
    }
    EXPECT_EQ(unnamed, 3u) << "the ranks' regions are not all mapped and unlinked";
    for (const auto &e : fs::directory_iterator(tmp)) job_dir = e.path().string();
    kill(mwrun_pid, SIGKILL);
  });
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
  expect_all_stopped(r, 3);  // each rank dies with its mwrun
  expect_no_shm_left();
  ASSERT_FALSE(job_dir.empty());
  ASSERT_TRUE(fs::exists(job_dir)) << "the killed mwrun's job directory is gone already";

  Result next = run(mwrun(2, {kProbe, "hello"}), {tmpdir});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(sorted_lines(next.out), rank_lines(2));
  EXPECT_TRUE(std::regex_search(
      next.err, std::regex("^mwrun: removed what dead Midway jobs left: .*" + job_dir +
                           " \\(job directory; its mwrun, process [0-9]+, has exited\\)")))
      << next.err;
  EXPECT_FALSE(fs::exists(job_dir));
  EXPECT_TRUE(fs::is_empty(tmp)) << "the second job left its own job directory";
}

// The ranks die with a killed mwrun, but what they started in the job's process group
// does not (no death signal reaches it): the next mwrun kills it with the job directory.
TEST_F(LaunchTest, WhatTheRanksOfAKilledMwrunStartedGoesWithItsJobDirectory) {
  const fs::path tmp = dir_ / "tmp";
  fs::create_directories(tmp);
  const std::string tmpdir = "TMPDIR=" + tmp.string(), pids = pids_dir();
  Result r = run(mwrun(2, {kProbe, "--pids", pids, "--grandchild", "sleep"}), {tmpdir}, [&](pid_t mwrun_pid) {
    auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline && recorded_pids().size() < 4)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the ranks reach mw_init
    kill(mwrun_pid, SIGKILL);
  });
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
  ASSERT_EQ(recorded_pids().size(), 4u) << "the ranks and their children did not all start";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the ranks' death signal
  ASSERT_EQ(running(recorded_pids()).size(), 2u) << "expected the two children, and only them, to outlive mwrun";

  Result next = run(mwrun(2, {kProbe, "hello"}), {tmpdir});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_TRUE(std::regex_search(
      next.err, std::regex("^mwrun: removed what dead Midway jobs left: process [0-9]+ \\([^)]*\\) "
                           "\\(left in the process group of that job's ranks\\); process [0-9]+ ")))
      << next.err;
  std::vector<pid_t> alive = running(recorded_pids());
  for (auto t = std::chrono::milliseconds(0); !alive.empty() && t < kStopBound; t += std::chrono::milliseconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    alive = running(alive);
  }
  for (pid_t pid : alive) {
    ADD_FAILURE() << "process " << pid << " of the killed job is still running";
    kill(pid, SIGKILL);
  }
  EXPECT_TRUE(fs::is_empty(tmp)) << "a job directory was left";
}

TEST_F(LaunchTest, MwrunRemovesOnlyMidwaysShmFilesWhoseProcessesAreGone) {
  // A pid that no process has: a child's, once it has exited and been reaped.
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  waitpid(dead, nullptr, 0);
  char secret[17];
  std::snprintf(secret, sizeof secret, "%08x%08x", static_cast<unsigned>(getpid()),
                static_cast<unsigned>(dead));
  auto shm = [](const std::string &name) { return fs::path("/dev/shm") / name; };
  const fs::path dead_region = shm("midway-" + std::to_string(dead) + "-r1"),
                 live_region = shm("midway-" + std::to_string(getpid()) + "-r0"),
                 foreign = shm(std::to_string(dead) + ":0:0"),  // libfabric's name: not ours
                 unused_bells = shm(std::string("midway-") + secret + "-bells"),
                 held_bells = shm(std::string("midway-") + std::string(secret).replace(0, 1, "f") + "-bells");
  for (const fs::path &p : {dead_region, live_region, foreign, unused_bells, held_bells})
    std::ofstream(p) << "x";
  int held = open(held_bells.c_str(), O_RDONLY);  // a job still starting holds its bells
  ASSERT_GE(held, 0);

  Result r = run(mwrun(2, {kProbe, "hello"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Removed (by this mwrun, or by another job's that came first).
  EXPECT_FALSE(fs::exists(dead_region)) << r.err;
  EXPECT_FALSE(fs::exists(unused_bells)) << r.err;
  // Kept: a live process's, another program's, and a page a process has open.
  EXPECT_TRUE(fs::exists(live_region)) << r.err;
  EXPECT_TRUE(fs::exists(foreign)) << r.err;
  EXPECT_TRUE(fs::exists(held_bells)) << r.err;
  if (r.err.find(dead_region.string()) != std::string::npos)
    EXPECT_NE(r.err.find(dead_region.string() + " (rank 1's endpoint; process " +
                         std::to_string(dead) + " has exited)"),
              std::string::npos)
        << r.err;
  close(held);
  for (const fs::path &p : {dead_region, live_region, foreign, unused_bells, held_bells})
    fs::remove(p);
}

// ---- The bootstrap as the transport uses it: put, fence, get ----

// The ranks' lines of bootstrap_probe: each rank got every blob, and all agree on the
// job's name and secret.
void expect_one_job(const Result &r, int n, const std::string &settings) {
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = sorted_lines(r.out);
  ASSERT_EQ(lines.size(), static_cast<size_t>(n)) << r.out;
  std::smatch first;
  std::regex line("rank ([0-9]+) of ([0-9]+) job=(\\S+) secret=([0-9a-f]{16}) (.*)");
  ASSERT_TRUE(std::regex_match(lines[0], first, line)) << lines[0];
  EXPECT_NE(first[4].str(), "0000000000000000");
  for (int rank = 0; rank < n; rank++) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[rank], m, line)) << lines[rank];
    EXPECT_EQ(m[1].str(), std::to_string(rank));
    EXPECT_EQ(m[2].str(), std::to_string(n));
    EXPECT_EQ(m[3].str(), first[3].str()) << "ranks disagree on the job's name";
    EXPECT_EQ(m[4].str(), first[4].str()) << "ranks disagree on the job's secret";
    EXPECT_EQ(m[5].str(), settings + " blobs=" + std::to_string(n) + "/" + std::to_string(n));
  }
}

TEST_F(LaunchTest, UnderMwrunRanksExchangeBlobsAndShareTheJobsSettings) {
  Result r = run(mwrun(3, {"--model", "pc", "--provider", "shm", kBootstrapProbe}));
  expect_one_job(r, 3, "all_local=1 model=pc provider=shm stats=");
}

TEST_F(LaunchTest, GettingAKeyNobodyPublishedIsAnError) {
  Result r = run(mwrun(2, {kBootstrapProbe, "missing-key"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(
      r.err.find(
          "midway: mw_init: rank 0 published nothing under \"test.nobody\" before the last fence"),
      std::string::npos)
      << r.err;
}

// ---- Every rank must run the same binary ----

// Rank 1 runs `other`, the rest the probe.
Result run_mixed(const std::string &other) {
  return run(mwrun(
      2, {"sh", "-c", "if [ \"$MW_RANK\" = 1 ]; then exec \"$1\" hello; else exec \"$0\" hello; fi",
          kProbe, other}));
}

TEST_F(LaunchTest, RanksWithSharedDataElsewhereStopTheJob) {
  Result r = run_mixed(kProbeBig);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err,
      std::regex(
          "midway: mw_init: rank 1 maps shared data at \\[0x40000000, 0x40002000\\) but rank 0 at "
          "\\[0x40000000, 0x40001000\\): every rank must run the same mwcc-built binary "
          "\\(rank 1 runs \\S*probe_big, rank 0 \\S*probe\\)")))
      << r.err;
}

TEST_F(LaunchTest, RanksRunningAnotherBuildStopTheJob) {
  Result r = run_mixed(kProbeVariant);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("midway: mw_init: rank 1 runs \\S*probe_variant \\(build-id "
                        "[0-9a-f]+\\) but rank 0 runs \\S*probe \\(build-id [0-9a-f]+\\): "
                        "every rank must run the same mwcc-built binary")))
      << r.err;
}

// ---- The command line ----

// --exec-prefix runs each rank under a command of its own, {rank} replaced: how the
// netns test places ranks on different hosts, and how one runs ranks under valgrind.
TEST_F(LaunchTest, AnExecPrefixRunsEachRankUnderItsOwnCommand) {
  Result r = run(mwrun(3, {"--exec-prefix", "env PREFIX_OF_RANK=r{rank}", "sh", "-c",
                           "echo $MW_RANK:$PREFIX_OF_RANK"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(sorted_lines(r.out), (std::vector<std::string>{"0:r0", "1:r1", "2:r2"})) << r.out;
  Result empty = run(mwrun(2, {"--exec-prefix", " ", "sh", "-c", "true"}));
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("--exec-prefix needs a command"), std::string::npos) << empty.err;
}

TEST_F(LaunchTest, HelpDocumentsEveryFlagAndVariable) {
  Result r = run({kMwrun, "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char *s : {"-n N", "--provider", "--model", "--stats", "--stats=json:FILE",
                        "--timeout", "--exec-prefix", "MW_RANK", "MW_NPROCS", "MW_JOB_DIR", "MW_JOB_ID", "MW_SECRET",
                        "MW_PROVIDER", "MW_MODEL", "MW_STATS", "MW_STARTUP_TIMEOUT", "mpirun",
                        "MW_STATS=json:PATH", "PATH.<rank>.json", "--trace=FILE", "--merge-trace=PATH"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

TEST_F(LaunchTest, UsageErrorsNameTheProblem) {
  struct Case {
    std::vector<std::string> args;
    const char *message;
  };
  const Case cases[] = {
      {{"-n", "2", "--bogus", kProbe}, "unknown option '--bogus'"},
      {{kProbe}, "-n N is required"},
      {{"-n", "0", kProbe}, "-n takes a whole number from 1 to 4096, not '0'"},
      {{"-n", "two", kProbe}, "-n takes a whole number from 1 to 4096, not 'two'"},
      {{"-n", "2"}, "no program to run"},
      {{"-n", "2", "--model", "sc", kProbe}, "--model takes ec, rc or pc, not 'sc'"},
      {{"-n", "2", "--stats=xml", kProbe}, "--stats takes table or json:FILE, not 'xml'"},
      {{"-n", "2", "--liveness", "-1", kProbe},
       "--liveness takes a whole number of seconds from 0 to 2147483, not '-1'"},
      {{"-n", "2", "./no-such-program"},
       "cannot run './no-such-program': No such file or directory"},
      {{"-n", "2", "no-such-program-in-path"},
       "cannot run 'no-such-program-in-path': no such program in PATH"},
      {{"-n", "2", "--timeout"}, "--timeout needs a value"},
      {{"--merge-trace="}, "--merge-trace needs the path the ranks' MW_TRACE named"},
  };
  for (const Case &c : cases) {
    std::vector<std::string> argv{kMwrun};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    Result r = run(argv);
    EXPECT_EQ(r.exit_code, 2) << c.message;
    EXPECT_NE(r.err.find(std::string("mwrun: ") + c.message), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("mwrun --help"), std::string::npos) << r.err;
  }
}

// ---- Statistics combined by mwrun (hand-written stats files stand in for the ranks') ----

// Each rank copies DIR/in.<rank>.json, if there is one, to MW_JOB_DIR/stats.<rank>.json.
std::vector<std::string> stats_job(const fs::path &dir, const std::string &stats_flag) {
  return mwrun(2, {stats_flag, "sh", "-c",
                   "f=\"$0/in.$MW_RANK.json\"; [ ! -f \"$f\" ] || cp \"$f\" "
                   "\"$MW_JOB_DIR/stats.$MW_RANK.json\"",
                   dir.string()});
}

void write(const fs::path &p, const std::string &text) { std::ofstream(p) << text; }

TEST_F(LaunchTest, StatsTableSumsEveryNumericFieldOverTheRanks) {
  write(
      dir_ / "in.0.json",
      R"({"messages": 24, "bytes": 1048576, "lock": {"acquires": 10, "wait_ms": 1.5}, "name": "x"})");
  write(dir_ / "in.1.json",
        R"({"messages": 30, "bytes": 100, "lock": {"acquires": 5, "wait_ms": 0.25}})");
  Result r = run(stats_job(dir_, "--stats"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("mwrun: statistics of 2 ranks"), std::string::npos) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("statistic +rank 0 +rank 1 +total\n"))) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("\nmessages +24 +30 +54\n"))) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("\nbytes +1048576 +100 +1048676\n"))) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("\nlock.acquires +10 +5 +15\n"))) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("\nlock.wait_ms +1.5 +0.25 +1.75\n"))) << r.err;
}

TEST_F(LaunchTest, StatsJsonFileCombinesTheRanks) {
  write(dir_ / "in.0.json", R"({"messages": 24, "lock": {"acquires": 10}})");
  write(dir_ / "in.1.json", R"({"messages": 30, "lock": {"acquires": 5}})");
  fs::path out = dir_ / "all.json";
  Result r = run(stats_job(dir_, "--stats=json:" + out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The ranks' objects as they wrote them, and the totals flattened to dotted names,
  // in the order the fields first appeared.
  const auto got = nlohmann::ordered_json::parse(std::ifstream(out));
  const auto want = nlohmann::ordered_json::parse(R"({"nprocs": 2,
      "ranks": [{"messages": 24, "lock": {"acquires": 10}}, {"messages": 30, "lock": {"acquires": 5}}],
      "total": {"messages": 54, "lock.acquires": 15}})");
  EXPECT_EQ(got, want) << got.dump(1);
}

TEST_F(LaunchTest, MwStatsInMwrunsEnvironmentIsReportedAsStatsWouldBe) {
  write(dir_ / "in.0.json", R"({"messages": 24})");
  write(dir_ / "in.1.json", R"({"messages": 30})");
  std::vector<std::string> argv = stats_job(dir_, "--stats");
  argv.erase(std::find(argv.begin(), argv.end(), "--stats"));
  Result r = run(argv, {"MW_STATS=table"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("\nmessages +24 +30 +54\n"))) << r.err;
  Result bad = run(argv, {"MW_STATS=xml"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("mwrun: MW_STATS takes"), std::string::npos) << bad.err;
}

TEST_F(LaunchTest, StatsNameTheRanksThatWroteNone) {
  write(dir_ / "in.0.json", R"({"messages": 24})");
  Result r = run(stats_job(dir_, "--stats"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.err.find("mwrun: --stats: rank 1 wrote no statistics (stats.1.json in the job directory)"),
      std::string::npos)
      << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("\nmessages +24 +- +24\n"))) << r.err;
}

// ---- Statistics written by the runtime ----

// The cells of the table line that starts with `label` (a rank or "total").
std::vector<std::string> table_row(const std::string &text, const std::string &label) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream cells(line);
    std::vector<std::string> row;
    for (std::string c; cells >> c;) row.push_back(c);
    if (!row.empty() && row[0] == label) return row;
  }
  return {};
}

TEST_F(LaunchTest, StatsTableHasARowPerRankAndATotal) {
  // probe phases sleeps 10, 30 and 10 ms in its phases input, compute and output.
  Result r = run(mwrun(2, {"--stats", kProbe, "phases"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("mwrun: statistics of 2 ranks (MB = 10^6 bytes; total: the sum over the "
                       "ranks, the longest elapsed time)\n"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("\n +elapsed +messages +MB payload +MB protocol +lock acquires +waiting "
                        "\\(ms\\) +phases \\(s\\)\n")))
      << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("\nrank +s +sent +received +sent +received +sent +received +local +remote "
                        "+barriers +faults +rejected +polls +acquire +barrier +fault +input +compute "
                        "+output\n")))
      << r.err;
  const size_t kColumns = 20;  // rank, elapsed, 6 traffic, 2 acquires, 4 events, 3 waits, 3 phases
  double compute_sum = 0;
  for (const std::string label : {"0", "1", "total"}) {
    std::vector<std::string> row = table_row(r.err, label);
    ASSERT_EQ(row.size(), kColumns) << "row " << label << " in\n" << r.err;
    // The only messages are the start-up greetings: one sent and one received per
    // rank, carrying no shared data.
    const double greetings = label == std::string("total") ? 2 : 1;
    EXPECT_DOUBLE_EQ(std::stod(row[2]), greetings) << r.err;
    EXPECT_DOUBLE_EQ(std::stod(row[3]), greetings) << r.err;
    for (size_t c = 4; c <= 5; c++) EXPECT_DOUBLE_EQ(std::stod(row[c]), 0) << r.err;
    const double elapsed = std::stod(row[1]), compute = std::stod(row[18]);
    if (label == "total") {
      EXPECT_NEAR(compute, compute_sum, 0.0015) << r.err;  // each cell is rounded to 1 ms
    } else {
      EXPECT_GE(compute, 0.030) << r.err;
      EXPECT_GE(std::stod(row[17]), 0.010) << r.err;
      EXPECT_GE(std::stod(row[19]), 0.010) << r.err;
      EXPECT_GE(elapsed, compute) << r.err;
      compute_sum += compute;
    }
  }
}

// Runs python3 on a script that reads the JSON file given as its argument.
Result python_check(const std::string &script, const fs::path &file) {
  return run({"python3", "-c", script, file.string()});
}

TEST_F(LaunchTest, StatsJsonHoldsEveryRankAndTheTotals) {
  fs::path out = dir_ / "job.json";
  Result r = run(mwrun(2, {"--stats=json:" + out.string(), kProbe, "phases"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(own_errors(r.err), "");
  Result check = python_check(R"(
import json, sys
d = json.load(open(sys.argv[1]))
assert d["nprocs"] == 2, d["nprocs"]
ranks, total = d["ranks"], d["total"]
assert len(ranks) == 2
for r in ranks:
    # The start-up greeting: one control message each way, no shared data.
    for f in ["msgs_sent", "msgs_received", "sent.control.msgs", "received.control.msgs"]:
        assert r[f] == 1, (f, r[f])
    assert r["protocol_bytes_sent"] > 0, r
    for f in ["payload_bytes_sent", "payload_bytes_received", "lock_acquires_local",
              "lock_acquires_remote", "barrier_crossings", "page_faults", "rejected_messages",
              "sent.grant.msgs", "received.page.payload_bytes", "acquire_wait_seconds"]:
        assert r[f] == 0, (f, r[f])
    assert r["phase.compute.seconds"] >= 0.030, r
    assert r["elapsed_seconds"] >= r["phase.compute.seconds"], r
assert abs(total["phase.compute.seconds"] - sum(r["phase.compute.seconds"] for r in ranks)) < 1e-6
assert total["elapsed_seconds"] == max(r["elapsed_seconds"] for r in ranks), total
assert set(total) == set(ranks[0]), set(total) ^ set(ranks[0])
print("ok")
)",
                              out);
  EXPECT_EQ(check.out, "ok\n") << check.err;
}

TEST_F(LaunchTest, StatsTableBreaksMessagesDownByKind) {
  // Files in the runtime's format, with the messages the transport will count.
  write(dir_ / "in.0.json",
        R"({"elapsed_seconds": 2.5, "msgs_sent": 24, "msgs_received": 24,
            "payload_bytes_sent": 2140000, "protocol_bytes_sent": 1200,
            "lock_acquires_remote": 12, "acquire_wait_seconds": 0.0125,
            "sent.grant.msgs": 12, "sent.grant.payload_bytes": 2140000,
            "sent.lock.msgs": 12, "sent.lock.protocol_bytes": 1200, "sent.page.msgs": 0,
            "received.lock.msgs": 24, "phase.compute.seconds": 1.25})");
  write(dir_ / "in.1.json",
        R"({"elapsed_seconds": 2.0, "msgs_sent": 24, "msgs_received": 24,
            "payload_bytes_received": 2140000, "lock_acquires_local": 3,
            "sent.lock.msgs": 24, "received.grant.msgs": 12,
            "received.grant.payload_bytes": 2140000, "received.lock.msgs": 12,
            "phase.compute.seconds": 1.5, "phase.output.seconds": 0.5})");
  Result r = run(stats_job(dir_, "--stats"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // rank elapsed | msgs sent recv | MB payload sent recv | MB protocol sent recv | acquires
  // local remote | barriers faults rejected polls | waiting acquire barrier fault | compute output
  EXPECT_EQ(table_row(r.err, "0"),
            (std::vector<std::string>{"0", "2.500", "24", "24", "2.140", "-", "0.001", "-", "-",
                                      "12", "-", "-", "-", "-", "12.500", "-", "-", "1.250", "-"}))
      << r.err;
  EXPECT_EQ(table_row(r.err, "1"),
            (std::vector<std::string>{"1", "2.000", "24", "24", "-", "2.140", "-", "-", "3", "-",
                                      "-", "-", "-", "-", "-", "-", "-", "1.500", "0.500"}))
      << r.err;
  EXPECT_EQ(table_row(r.err, "total"),
            (std::vector<std::string>{"total", "2.500", "48", "48", "2.140", "2.140", "0.001", "-",
                                      "3", "12", "-", "-", "-", "-", "12.500", "-", "-", "2.750",
                                      "0.500"}))
      << r.err;
  EXPECT_NE(r.err.find("\nmwrun: messages by kind, all ranks\n"), std::string::npos) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("\n +sent +received\n"))) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("\nkind +messages +MB payload +MB protocol +messages +MB payload +MB "
                        "protocol\n")))
      << r.err;
  // Only the kinds that carried messages, in the runtime's order.
  EXPECT_EQ(table_row(r.err, "lock"),
            (std::vector<std::string>{"lock", "36", "0.000", "0.001", "36", "0.000", "0.000"}))
      << r.err;
  EXPECT_EQ(table_row(r.err, "grant"),
            (std::vector<std::string>{"grant", "12", "2.140", "0.000", "12", "2.140", "0.000"}))
      << r.err;
  EXPECT_LT(r.err.find("\nlock "), r.err.find("\ngrant ")) << r.err;
  EXPECT_TRUE(table_row(r.err, "page").empty()) << r.err;
  EXPECT_EQ(r.err.find("other statistics"), std::string::npos) << r.err;
}

TEST_F(LaunchTest, StatsTableListsFieldsItDoesNotKnowApart) {
  write(dir_ / "in.0.json", R"({"msgs_sent": 5, "transport": {"retries": 2}})");
  write(dir_ / "in.1.json", R"({"msgs_sent": 7, "transport": {"retries": 1}})");
  Result r = run(stats_job(dir_, "--stats"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(table_row(r.err, "total").at(2), "12") << r.err;
  EXPECT_NE(r.err.find("\nmwrun: other statistics\n"), std::string::npos) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("\ntransport.retries +2 +1 +3\n"))) << r.err;
}

TEST_F(LaunchTest, WithoutMwrunMwStatsJsonMakesTheRankWriteItsOwnFile) {
  fs::path prefix = dir_ / "solo";
  Result r = run({kProbe, "phases"}, {"MW_STATS=json:" + prefix.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Result check = python_check(R"(
import json, sys
r = json.load(open(sys.argv[1]))
assert r["phase.compute.seconds"] >= 0.030 and r["msgs_sent"] == 0, r
print("ok")
)",
                              dir_ / "solo.0.json");
  EXPECT_EQ(check.out, "ok\n") << check.err;
}

TEST_F(LaunchTest, WithoutMwrunAStatsTableIsExplained) {
  Result r = run({kProbe, "hello"}, {"MW_STATS=table"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("midway: warning: mw_finalize: MW_STATS=table prints a table only under "
                       "mwrun (mwrun --stats); under another launcher set MW_STATS=json:PATH and "
                       "each rank writes PATH.<rank>.json (rank 0)"),
            std::string::npos)
      << r.err;
}

// ---- Timelines merged after a job launched otherwise (hand-written files stand in) ----

TEST_F(LaunchTest, MergeTraceNamesWhatItCannotMerge) {
  fs::path prefix = dir_ / "t";
  Result none = run({kMwrun, "--merge-trace=" + prefix.string()});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("mwrun: --merge-trace: no " + prefix.string() + ".<rank>.json (run the job with MW_TRACE=" +
                          prefix.string()),
            std::string::npos)
      << none.err;
  // Rank 0 wrote nothing, rank 1 a trace, rank 2 another rank's, rank 3 not JSON: rank 1's
  // is merged and each other one is named.
  const std::string events = R"("traceEvents": [{"ph": "X", "name": "fault", "pid": 1, "tid": 0, "ts": 5, "dur": 2,
                                  "args": {"page": "0x40000000", "peer": 0}}])";
  write(fs::path(prefix.string() + ".1.json"), "{" + events + R"(, "otherData": {"rank": 1, "dropped": 0}})");
  write(fs::path(prefix.string() + ".2.json"), "{" + events + R"(, "otherData": {"rank": 1, "dropped": 0}})");
  write(fs::path(prefix.string() + ".3.json"), "not a trace");
  Result r = run({kMwrun, "--merge-trace=" + prefix.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("mwrun: --merge-trace: rank 0 wrote no trace (" + prefix.string() + ".0.json;"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rank 2's " + prefix.string() + ".2.json is not its trace (it is rank 1's)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rank 3's " + prefix.string() + ".3.json is not its trace ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the timeline of 1 rank is in " + prefix.string()), std::string::npos) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("\n1 +1 +0\\.002 ")))  // rank 1: one fault of 2 us
      << r.err;
  // It runs no job.
  Result both = run({kMwrun, "--merge-trace=" + prefix.string(), "-n", "2", kProbe});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("mwrun: --merge-trace runs no job"), std::string::npos) << both.err;
}

TEST_F(LaunchTest, MergeTracePlacesRanksOfSeveralHostsByTheirSystemClocks) {
  // Each host's steady clock starts at its own boot; its system clock stood 1 ms past it
  // on host a and 3 ms past it on host b: b's events move 2000 us later than a's.
  fs::path prefix = dir_ / "t";
  auto rank = [&](int r, const char *host, long offset_ns) {
    write(fs::path(prefix.string() + "." + std::to_string(r) + ".json"),
          "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"barrier\", \"pid\": " + std::to_string(r) +
              ", \"tid\": 0, \"ts\": 5, \"dur\": 1}], \"otherData\": {\"rank\": " + std::to_string(r) +
              ", \"dropped\": 0, \"host\": \"" + host + "\", \"realtime_offset_ns\": " + std::to_string(offset_ns) +
              "}}");
  };
  rank(0, "a", 1000000);
  rank(1, "b", 3000000);
  rank(2, "a", 1000000);
  Result r = run({kMwrun, "--merge-trace=" + prefix.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("mwrun: --merge-trace: the ranks ran on 2 hosts: their events are placed by each host's "
                       "system clock"),
            std::string::npos)
      << r.err;
  Result check = python_check(R"(
import json, sys
t = json.load(open(sys.argv[1]))
ts = {e["pid"]: e["ts"] for e in t["traceEvents"] if e["ph"] == "X"}
assert ts == {0: 5, 1: 2005, 2: 5}, ts
print("ok")
)",
                              prefix);
  EXPECT_EQ(check.out, "ok\n") << check.err;
}

// ---- PMIx: the same program under Open MPI's mpirun ----

std::vector<std::string> mpirun(int n, std::vector<std::string> rest) {
  // As root, Open MPI needs --allow-run-as-root; on a 2-core machine, --oversubscribe.
  std::vector<std::string> argv{"mpirun", "--allow-run-as-root", "--oversubscribe", "-n",
                                std::to_string(n)};
  argv.insert(argv.end(), rest.begin(), rest.end());
  return argv;
}

bool have_mpirun() { return std::system("command -v mpirun > /dev/null 2>&1") == 0; }

TEST_F(LaunchTest, UnderMpirunRanksLearnRankAndSizeThroughPmix) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun (openmpi-bin) is not installed";
  for (int n : {2, 4}) {
    Result r = run(mpirun(n, {kProbe, "hello"}));
    EXPECT_EQ(r.exit_code, 0) << "n=" << n << "\n" << r.err;
    EXPECT_EQ(sorted_lines(r.out), rank_lines(n)) << "n=" << n << "\n" << r.err;
  }
}

TEST_F(LaunchTest, UnderMpirunRanksExchangeBlobsThroughPmix) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun (openmpi-bin) is not installed";
  Result r = run(mpirun(3, {"-x", "MW_MODEL=rc", kBootstrapProbe}));
  expect_one_job(r, 3, "all_local=1 model=rc provider= stats=");
}

TEST_F(LaunchTest, UnderMpirunEachRankWritesItsOwnStatistics) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun (openmpi-bin) is not installed";
  fs::path prefix = dir_ / "stats";
  Result r = run(mpirun(2, {"-x", "MW_STATS=json:" + prefix.string(), kProbe, "phases"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int rank = 0; rank < 2; rank++) {
    Result check = python_check(R"(
import json, sys
r = json.load(open(sys.argv[1]))
assert r["phase.compute.seconds"] >= 0.030, r
print("ok")
)",
                                dir_ / ("stats." + std::to_string(rank) + ".json"));
    EXPECT_EQ(check.out, "ok\n") << "rank " << rank << ": " << check.err;
  }
}

TEST_F(LaunchTest, UnderMpirunMwrunMergesTheRanksTimelinesAfterwards) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun (openmpi-bin) is not installed";
  fs::path prefix = dir_ / "timeline";
  Result job = run(mpirun(2, {"-x", "MW_TRACE=" + prefix.string(), kProbe, "phases"}));
  ASSERT_EQ(job.exit_code, 0) << job.err;
  Result r = run({kMwrun, "--merge-trace=" + prefix.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("where each rank's time went"), std::string::npos) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("\n0 +[0-9]")) && std::regex_search(r.err, std::regex("\n1 +[0-9]")))
      << r.err;
  EXPECT_NE(r.err.find("mwrun: --merge-trace: the timeline of 2 ranks is in " + prefix.string()), std::string::npos)
      << r.err;
  // One timeline: both ranks' processes, named as mwrun --trace names them.
  Result check = python_check(R"(
import json, sys
t = json.load(open(sys.argv[1]))
names = {(e["pid"], e["args"]["name"]) for e in t["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
assert names == {(0, "rank 0"), (1, "rank 1")}, names
assert t["otherData"]["nprocs"] == 2, t["otherData"]
for r in (0, 1):  # what a merge of ranks of several hosts places them by
    other = json.load(open(sys.argv[1] + ".%d.json" % r))["otherData"]
    assert other["host"] and isinstance(other["realtime_offset_ns"], int), other
print("ok")
)",
                              prefix);
  EXPECT_EQ(check.out, "ok\n") << check.err;
}

TEST_F(LaunchTest, UnderMpirunARankThatNeverArrivesIsNamed) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun (openmpi-bin) is not installed";
  Result r = run(mpirun(3, {"-x", "MW_STARTUP_TIMEOUT=2", kProbe, "late", "2", "30"}));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("midway: mw_init: PMIx_Fence timed out after 2 s waiting for "
                        "rank 2 of 3 to reach mw_init")))
      << r.err;
}

TEST_F(LaunchTest, UnderMpirunRanksRunningAnotherBuildStopTheJob) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun (openmpi-bin) is not installed";
  // mpirun's MPMD syntax: rank 0 runs the probe, rank 1 the variant.
  Result r = run({"mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "1", kProbe, "hello",
                  ":", "-n", "1", kProbeVariant, "hello"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("every rank must run the same mwcc-built binary"), std::string::npos)
      << r.err;
}

}  // namespace
