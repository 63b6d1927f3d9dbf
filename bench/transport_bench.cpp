// Ping-pong through mw::transport between two processes, measured the way libfabric's
// fi_pingpong measures (bench/transport_vs_raw.sh runs both and prints the ratios):
//
//   usec/xfer = elapsed / (2 * iterations)            (one-way latency)
//   MB/sec    = 2 * iterations * size / elapsed_usec  (10^6 bytes per second)
//
// Rank 0 sends PING and waits for PONG in progress_until (the application thread drives
// progress, as a rank waiting for a lock grant does); rank 1's application thread sleeps
// and its service thread answers from the PING handler, as it would serve a lock
// request. Payloads above the eager limit land through a placer in a buffer allocated
// once, as a grant's data lands in shared memory. As in fi_pingpong, each rank sends
// from one buffer and receives into another (had the data landed in the buffer sent
// from, every read would fetch lines the other core has just modified).
//
//   transport_bench --provider shm --size 8 --iters 20000 [--eager-limit N] [--spin-us N]
//                   [--no-rma] [--wait auto|fd|doorbell|sleep] [--pin]
//
// --pin binds rank r to CPU r (as mpirun --bind-to core would). Unbound, the scheduler
// sometimes leaves both ranks' busy threads on one core for a whole run (a thread woken
// by a futex tends to be placed on its waker's core), and the result is bimodal: 32 KiB
// ping-pong on shm measured 4.5 us bound, 6 or 13 us unbound. transport_vs_raw.sh binds
// fi_pingpong's two processes the same way.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include <sched.h>

#include "fork_job.hpp"
#include "transport/transport.hpp"

namespace {

using mw::transport::Header;
using mw::transport::MsgType;

size_t g_size;
std::byte *g_tx;  // what is sent
std::byte *g_rx;  // where large payloads land
std::atomic<long> g_pongs{0};
std::atomic<bool> g_done{false};

void place(const Header &h, std::span<const std::byte>, std::vector<iovec> &where) {
  where.push_back({g_rx, h.bulk_len});
}

void on_ping(const Header &h, std::span<const std::byte> p) {
  if (p.empty() && h.bulk_len == 0) {  // the empty ping at the end says stop
    g_done = true;
    g_done.notify_all();
    return;
  }
  mw::transport::send(h.sender, MsgType::kPong, g_tx, g_size);
}

void on_pong(const Header &, std::span<const std::byte>) { g_pongs.fetch_add(1, std::memory_order_release); }

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: transport_bench --provider P --size BYTES --iters N [--eager-limit N] "
               "[--spin-us N] [--no-rma] [--wait auto|fd|doorbell|sleep] [--pin]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char **argv) {
  mw::test::JobOptions o;
  o.nprocs = 2;
  o.cfg.all_local = true;
  o.timeout_s = 600;
  long iters = 1000;
  bool pin = false;
  g_size = 8;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? argv[++i] : (usage(), nullptr); };
    if (a == "--provider") o.cfg.provider = next();
    else if (a == "--size") g_size = std::strtoull(next(), nullptr, 10);
    else if (a == "--iters") iters = std::strtol(next(), nullptr, 10);
    else if (a == "--eager-limit") o.cfg.eager_limit = std::strtoull(next(), nullptr, 10);
    else if (a == "--spin-us") o.cfg.spin_us = static_cast<unsigned>(std::atoi(next()));
    else if (a == "--no-rma") o.cfg.use_rma = false;
    else if (a == "--pin") pin = true;
    else if (a == "--wait") {
      std::string w = next();
      o.cfg.wait = w == "fd" ? mw::transport::WaitMode::kFd
                   : w == "doorbell" ? mw::transport::WaitMode::kDoorbell
                   : w == "sleep" ? mw::transport::WaitMode::kSleep
                                  : mw::transport::WaitMode::kAuto;
    } else usage();
  }
  if (g_size == 0 || iters < 1) usage();
  const size_t size = g_size;
  const long warmup = std::min(100L, iters / 10 + 1);

  mw::test::JobResult r = mw::test::run_job(o, [&](mw::test::Child &c) {
    if (pin) {
      cpu_set_t cpus;
      CPU_ZERO(&cpus);
      CPU_SET(c.rank() % std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)), &cpus);
      if (sched_setaffinity(0, sizeof cpus, &cpus) != 0) std::perror("transport_bench: sched_setaffinity");
    }
    size_t cap = (size + 4095) / 4096 * 4096;
    g_tx = static_cast<std::byte *>(std::aligned_alloc(4096, cap));
    g_rx = static_cast<std::byte *>(std::aligned_alloc(4096, cap));
    std::memset(g_tx, c.rank() + 1, size);
    std::memset(g_rx, 0, size);
    mw::transport::Placer placer = size > c.config().eager_limit ? place : nullptr;
    mw::transport::on(MsgType::kPing, on_ping, placer);
    mw::transport::on(MsgType::kPong, on_pong, placer);
    c.start();
    c.barrier();
    if (c.rank() == 0) {
      double t_send = 0, t_wait = 0;
      auto round = [&](long k) {
        auto a = std::chrono::steady_clock::now();
        mw::transport::send(1, MsgType::kPing, g_tx, size);
        auto b = std::chrono::steady_clock::now();
        mw::transport::progress_until([k] { return g_pongs.load(std::memory_order_acquire) >= k; });
        auto c = std::chrono::steady_clock::now();
        t_send += std::chrono::duration<double, std::micro>(b - a).count();
        t_wait += std::chrono::duration<double, std::micro>(c - b).count();
      };
      for (long k = 1; k <= warmup; ++k) round(k);
      t_send = t_wait = 0;
      auto t0 = std::chrono::steady_clock::now();
      for (long k = warmup + 1; k <= warmup + iters; ++k) round(k);
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      mw::transport::send(1, MsgType::kPing, nullptr, 0);
      if (std::getenv("MW_BENCH_SPLIT"))
        std::printf("send %.2f us, wait %.2f us per round\n", t_send / double(iters),
                    t_wait / double(iters));
      std::printf("%-10s %10zu %8ld %12.2f %12.2f  (%s, %s)\n", "midway", size, iters,
                  us / (2.0 * static_cast<double>(iters)),
                  2.0 * static_cast<double>(iters) * static_cast<double>(size) / us,
                  mw::transport::provider_name().c_str(),
                  size > c.config().eager_limit
                      ? (mw::transport::uses_rma() ? "rendezvous: RMA read" : "rendezvous: chunks")
                      : "eager");
      std::fflush(stdout);
    } else {
      g_done.wait(false);  // asleep until the last ping, no periodic wake-ups
    }
    c.barrier();
    mw::transport::close();
  });
  return r.all_exited_zero() ? 0 : 1;
}
