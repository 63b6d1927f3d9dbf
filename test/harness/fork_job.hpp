// TEST HARNESS ONLY: a stand-in for mwrun in the transport's tests and benchmark.
//
// run_job() forks N child processes, one per rank. Each child opens its endpoint
// (transport::open), sends its address up a pipe to the parent, receives every rank's
// address back and connects: the out-of-band exchange mwrun/bootstrap does for real jobs.
// The parent also offers a barrier and collects one number per rank (report()), and each
// child's exit status (non-zero if a googletest expectation failed in it).
//
// The parent never touches libfabric, so every child starts with a clean library.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace mw::test {

class Child;

struct JobOptions {
  int nprocs = 2;
  transport::Config cfg;  // rank, nprocs and job_secret are filled in per child
  int timeout_s = 60;
  bool capture_stderr = false;  // keep each child's stderr in the result instead of passing it on
};

struct JobResult {
  std::vector<int> status;  // waitpid status per rank
  std::vector<std::string> err;
  std::vector<double> reports;  // report() values, in arrival order
  bool timed_out = false;
  bool all_exited_zero() const {
    for (int s : status)
      if (!WIFEXITED(s) || WEXITSTATUS(s) != 0) return false;
    return !timed_out;
  }
};

// The child's side: what a rank's body uses.
class Child {
 public:
  Child(int rank, int up, int down, transport::Config cfg) : rank_(rank), up_(up), down_(down), cfg_(cfg) {}
  int rank() const { return rank_; }
  const transport::Config &config() const { return cfg_; }

  // open + address exchange + connect. Register handlers before.
  void start() {
    std::vector<uint8_t> me = transport::open(cfg_);
    put('A', me.data(), me.size());
    std::vector<std::vector<uint8_t>> all(static_cast<size_t>(cfg_.nprocs));
    for (auto &a : all) {
      uint32_t len = get_u32();
      a.resize(len);
      get(a.data(), len);
    }
    transport::connect(all);
  }

  // Every rank of the job waits for the others here (through the parent, not the fabric).
  void barrier() {
    put('B', nullptr, 0);
    char go;
    get(&go, 1);
  }

  void report(double v) { put('R', &v, sizeof v); }

 private:
  void put(char tag, const void *p, uint32_t len) {
    std::string m(1, tag);
    m.append(reinterpret_cast<const char *>(&len), sizeof len);
    m.append(static_cast<const char *>(p), len);
    write_all(up_, m.data(), m.size());
  }
  uint32_t get_u32() {
    uint32_t v;
    get(&v, sizeof v);
    return v;
  }
  void get(void *p, size_t len) {
    auto *c = static_cast<char *>(p);
    while (len > 0) {
      ssize_t n = read(down_, c, len);
      if (n <= 0) _exit(98);  // the parent is gone
      c += n;
      len -= static_cast<size_t>(n);
    }
  }
  static void write_all(int fd, const char *p, size_t len) {
    while (len > 0) {
      ssize_t n = write(fd, p, len);
      if (n <= 0) _exit(97);
      p += n;
      len -= static_cast<size_t>(n);
    }
  }
  int rank_, up_, down_;
  transport::Config cfg_;
};

// A fresh secret per job, so concurrent jobs (ctest -j) never share a doorbell page.
inline uint64_t fresh_secret() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
}

// Runs body(child) in opts.nprocs forked ranks; returns when all have exited.
inline JobResult run_job(const JobOptions &opts, const std::function<void(Child &)> &body,
                         bool (*child_failed)() = nullptr) {
  const int n = opts.nprocs;
  uint64_t secret = fresh_secret();
  struct Rank {
    pid_t pid;
    int up, down, err;
    std::string inbuf;
    bool eof = false, err_eof = false, reaped = false;
  };
  std::vector<Rank> ranks(static_cast<size_t>(n));
  std::fflush(stdout);
  std::fflush(stderr);
  for (int r = 0; r < n; ++r) {
    int up[2], down[2], err[2] = {-1, -1};
    if (pipe(up) || pipe(down) || (opts.capture_stderr && pipe(err))) {
      perror("pipe");
      std::abort();
    }
    pid_t pid = fork();
    if (pid == 0) {
      ::close(up[0]);
      ::close(down[1]);
      if (opts.capture_stderr) {
        dup2(err[1], 2);
        ::close(err[0]);
        ::close(err[1]);
      }
      for (int k = 0; k < r; ++k) {  // other ranks' pipes
        ::close(ranks[k].up);
        ::close(ranks[k].down);
        if (ranks[k].err >= 0) ::close(ranks[k].err);
      }
      transport::Config cfg = opts.cfg;
      cfg.rank = r;
      cfg.nprocs = n;
      cfg.job_secret = secret;
      Child c(r, up[1], down[0], cfg);
      body(c);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(child_failed && child_failed() ? 1 : 0);
    }
    ::close(up[1]);
    ::close(down[0]);
    if (opts.capture_stderr) ::close(err[1]);
    ranks[r] = Rank{pid, up[0], down[1], opts.capture_stderr ? err[0] : -1, {}, false, !opts.capture_stderr, false};
  }

  JobResult res;
  res.status.assign(static_cast<size_t>(n), -1);
  res.err.assign(static_cast<size_t>(n), {});
  std::vector<std::vector<uint8_t>> addrs(static_cast<size_t>(n));
  int have_addr = 0, at_barrier = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opts.timeout_s);
  auto send_down = [&](int r, const void *p, size_t len) {
    const char *c = static_cast<const char *>(p);
    while (len > 0) {
      ssize_t k = write(ranks[r].down, c, len);
      if (k <= 0) return;  // that child died; its status tells
      c += k;
      len -= static_cast<size_t>(k);
    }
  };
  signal(SIGPIPE, SIG_IGN);
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<int, bool>> who;  // rank, is_err
    for (int r = 0; r < n; ++r) {
      if (!ranks[r].eof) fds.push_back({ranks[r].up, POLLIN, 0}), who.push_back({r, false});
      if (!ranks[r].err_eof) fds.push_back({ranks[r].err, POLLIN, 0}), who.push_back({r, true});
    }
    if (fds.empty()) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      res.timed_out = true;
      for (auto &rk : ranks) kill(rk.pid, SIGKILL);
      break;
    }
    if (poll(fds.data(), fds.size(), static_cast<int>(left)) < 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto [r, is_err] = who[i];
      char buf[65536];
      ssize_t k = read(fds[i].fd, buf, sizeof buf);
      if (k <= 0) {
        (is_err ? ranks[r].err_eof : ranks[r].eof) = true;
        if (!is_err) {
          // The rank has exited (or is exiting): if it failed, the others would wait for
          // it forever at the next barrier.
          waitpid(ranks[r].pid, &res.status[r], 0);
          ranks[r].reaped = true;
          if (!WIFEXITED(res.status[r]) || WEXITSTATUS(res.status[r]) != 0)
            for (auto &rk : ranks)
              if (!rk.reaped) kill(rk.pid, SIGKILL);
        }
        continue;
      }
      if (is_err) {
        res.err[r].append(buf, static_cast<size_t>(k));
        continue;
      }
      std::string &in = ranks[r].inbuf;
      in.append(buf, static_cast<size_t>(k));
      for (;;) {
        if (in.size() < 5) break;
        uint32_t len;
        std::memcpy(&len, in.data() + 1, 4);
        if (in.size() < 5 + len) break;
        char tag = in[0];
        std::string body_bytes = in.substr(5, len);
        in.erase(0, 5 + len);
        if (tag == 'A') {
          addrs[r].assign(body_bytes.begin(), body_bytes.end());
          if (++have_addr == n) {
            for (int d = 0; d < n; ++d)
              for (int s = 0; s < n; ++s) {
                uint32_t l = static_cast<uint32_t>(addrs[s].size());
                send_down(d, &l, sizeof l);
                send_down(d, addrs[s].data(), l);
              }
          }
        } else if (tag == 'B') {
          if (++at_barrier == n) {
            at_barrier = 0;
            for (int d = 0; d < n; ++d) send_down(d, "G", 1);
          }
        } else if (tag == 'R') {
          double v;
          std::memcpy(&v, body_bytes.data(), sizeof v);
          res.reports.push_back(v);
        }
      }
    }
  }
  for (int r = 0; r < n; ++r) {
    if (!ranks[r].reaped) waitpid(ranks[r].pid, &res.status[r], 0);
    ::close(ranks[r].up);
    ::close(ranks[r].down);
    if (ranks[r].err >= 0) ::close(ranks[r].err);
  }
  return res;
}

}  // namespace mw::test
