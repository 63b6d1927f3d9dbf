// Sending: eager (inject from the stack, split header and payload, a send buffer),
// rendezvous (the receiver reads the bulk by RMA) and chunked (where there is no RMA).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/blocks.hpp"
#include "transport/fabric.hpp"

namespace mw::transport {

// A large message this rank is sending, until the receiver says kDone. A deferred one
// (Bulk::kDeferred) owns its registrations and staging buffer, and is freed at kDone.
struct Outgoing {
  uint64_t id;
  int dest;
  std::atomic<bool> done{false};
  bool deferred = false;
  std::vector<fid_mr *> mrs;
  blocks::Block staging;
};


struct Sender {
  std::mutex out_mu;
  std::unordered_map<uint64_t, Outgoing *> outgoing;
  std::atomic<uint64_t> next_id{1};
  std::atomic<int> sends_in_flight{0};
  std::atomic<int> deferred_out{0};  // Bulk::kDeferred sends not yet read (not in bulk_in_flight)
};
extern Sender &snd;

// How long a send may wait for the provider to accept it before the rank gives up.
extern std::atomic<int> g_stall_timeout_ms;


// A send the provider cannot take yet (-FI_EAGAIN, or no free send buffer): progress
// first, which is what usually frees room; when that stops helping, sleep a little longer
// each time (up to 1 ms) rather than spin; and report a peer that has accepted nothing
// for the stall timeout (unreachable, or gone) instead of waiting for it forever.
class SendRetry {
 public:
  SendRetry(const char *what, int dest) : what_(what), dest_(dest), outer_(t_post_peer) { t_post_peer = dest; }
  ~SendRetry() { t_post_peer = outer_; }
  SendRetry(const SendRetry &) = delete;
  SendRetry &operator=(const SendRetry &) = delete;
  void again();

 private:
  static constexpr unsigned kQuickTries = 16, kSpinTries = 1000;
  const char *what_;
  int dest_;
  unsigned tries_ = 0;
  int sleep_us_ = 0;
  int outer_;
  std::chrono::steady_clock::time_point since_;
};

SendBuf *take_sendbuf(int dest);
void post_sendbuf(int dest, SendBuf *b, size_t len, const char *what);
void release_sendbuf(SendBuf *b);
void check_send(const char *call, int dest, MsgType type);
// transport::send(dest, type, head, bulk, clock, keep), checked and counted.
void send_message(int dest, MsgType type, std::span<const iovec> head, std::span<const iovec> bulk,
                  uint64_t clock, Bulk keep);

}  // namespace mw::transport
