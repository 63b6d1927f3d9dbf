// Liveness: a rank that waits asks its peers whether they are there.
//
// A DSM job with a rank gone can only hang: a lost host or link, or a stopped process,
// answers no request and leaves every rank that needs it waiting. So a rank whose
// application thread has waited (for a grant, a barrier, a page, acknowledgements) for
// longer than a ping interval (a fifth of Config::liveness_ms) sends every peer an ALIVE
// message each interval; each peer's runtime answers at once (its service thread, or
// its application thread if that waits itself) with ALIVE_ACK, carrying the text of what
// the peer waits for. A peer that has not answered the pings of liveness_ms stops this
// rank with an error naming it, its host and what it last said it waited for: the job
// ends, and mwrun names this rank's error. Detection therefore takes liveness_ms, plus
// at most one interval, after a waiting rank last heard from the peer (`MW_LIVENESS_TIMEOUT`,
// docs/TROUBLESHOOTING.md). A link that comes back within that time costs nothing:
// the answers come late, and the next ones on time.
//
// Nothing here runs unless a rank blocks: a job that computes sends no ping. The checks
// run where a waiting thread wakes from its sleep (drive in progress.cpp, at most every
// kIdleTimeoutMs), on the application thread only.
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/waits.hpp"
#include "transport/fabric.hpp"
#include "transport/progress.hpp"
#include "transport/receive.hpp"
#include "transport/transport.hpp"

namespace mw::transport {

namespace {

struct Peer {
  std::atomic<long> unanswered_since{0};  // steady ns of the first ping not answered since, or 0
  std::mutex mu;
  std::string said;  // the peer's last ALIVE_ACK: what it waited for then
};

struct Liveness {
  std::vector<Peer> peers;
  long last_round_ns = 0;  // the application thread's
};
Liveness &live = *new Liveness;

constexpr long kDetailAfterNs = 300'000'000L;  // a wait this long fills in its record's details

long now_ns() { return elapsed_ns(SteadyClock::time_point{}); }

void on_alive(const Header &h, std::span<const std::byte>) {
  const std::string mine = waits::describe_mine();  // no source lines in a handler
  send(static_cast<int>(h.sender), MsgType::kAliveAck, mine.data(), mine.size());
}

void on_alive_ack(const Header &h, std::span<const std::byte> payload) {
  Peer &p = live.peers[h.sender];
  p.unanswered_since.store(0, std::memory_order_relaxed);
  std::lock_guard<std::mutex> g(p.mu);
  p.said.assign(reinterpret_cast<const char *>(payload.data()), payload.size());
}

std::string host_of(int rank) {
  const auto &h = fab.cfg.host_names;
  return static_cast<size_t>(rank) < h.size() ? h[static_cast<size_t>(rank)] : "?";
}

}  // namespace

std::string last_said(int r) {
  // Its record in the job directory, where this host can read it: the same wait as its
  // last answer said, but with the objects' names (an answer names them by address).
  std::string said = waits::describe_rank(r);
  if (said.empty()) {
    std::lock_guard<std::mutex> g(live.peers[static_cast<size_t>(r)].mu);
    said = live.peers[static_cast<size_t>(r)].said;
  }
  if (said.empty()) said = "unknown (it has not answered this rank's pings)";
  return said;
}

void peer_unreachable(int rank, const char *how) {
  mw::fatal("liveness",
            "rank %d (host %s) cannot be reached: %s; its host or the link to it is lost; it "
            "last said it was waiting for: %s. This rank waits for: %s",
            rank, host_of(rank).c_str(), how, last_said(rank).c_str(), waits::describe_mine(true).c_str());
}

void liveness_init() {
  live.peers = std::vector<Peer>(static_cast<size_t>(fab.cfg.nprocs));
  on(MsgType::kAlive, on_alive);
  on(MsgType::kAliveAck, on_alive_ack);
}

void liveness_check(long &wait_began_ns) {
  waits::beat();
  const long limit = static_cast<long>(fab.cfg.liveness_ms) * 1'000'000L;
  if (fab.cfg.nprocs == 1) return;
  const long now = now_ns();
  if (wait_began_ns == 0) {
    wait_began_ns = now;
    return;
  }
  if (now - wait_began_ns < kDetailAfterNs) return;
  waits::detail();  // a wait that lasts: say what this rank holds (deadlocks are made of it)
  if (limit <= 0) return;
  const long interval = std::max(limit / 5, 100'000'000L);
  if (now - wait_began_ns < interval || now - live.last_round_ns < interval) return;
  live.last_round_ns = now;
  for (int r = 0; r < fab.cfg.nprocs; r++) {
    if (r == fab.cfg.rank) continue;
    Peer &p = live.peers[static_cast<size_t>(r)];
    long since = p.unanswered_since.load(std::memory_order_relaxed);
    if (since == 0) {
      p.unanswered_since.store(now, std::memory_order_relaxed);
    } else if (now - since > limit) {
      const std::string said = last_said(r);
      mw::fatal("liveness",
                "rank %d (host %s) has not answered for %.1f s (MW_LIVENESS_TIMEOUT is %d s): "
                "its host or the link to it is lost, or its process is stopped; it last "
                "said it was waiting for: %s. This rank waits for: %s",
                r, host_of(r).c_str(), static_cast<double>(now - since) / 1e9,
                fab.cfg.liveness_ms / 1000, said.c_str(), waits::describe_mine(true).c_str());
    }
    send(r, MsgType::kAlive, nullptr, 0);
  }
}

}  // namespace mw::transport
