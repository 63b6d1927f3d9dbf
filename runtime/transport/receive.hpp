// Receiving: the completion loop. Every message arriving is validated (message.hpp),
// delivered to its handler in the order its sender sent it, and a large one's bulk read
// by RMA (or gathered from chunks) to where its placer says. The role holder's
// (progress.hpp) alone, but for the counters.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "core/blocks.hpp"
#include "transport/fabric.hpp"

namespace mw::transport {

struct Incoming;

struct ReadOp : Op {
  Incoming *in;
  std::byte *dest;
  size_t len;
  uint64_t addr, key;
  fid_mr *local_mr;  // only where the provider wants local buffers registered
};

// A large message this rank is receiving: its header, its head, where its bulk lands.
struct Incoming {
  Header h;  // as the handler sees it
  uint64_t id;
  std::vector<std::byte> head;  // with a placer
  blocks::Block whole;          // without: head ‖ bulk, contiguous
  std::vector<iovec> dest;      // where the bulk lands, in bulk order
  uint64_t bulk_len = 0, landed = 0;
  size_t reads_left = 0;
  bool chunked = false, ready = false;
  std::vector<std::unique_ptr<ReadOp>> reads;
};

// A message waiting for its turn: queued behind an earlier message of the same sender
// (whose bulk is still moving), or received while handlers could not run.
struct Delivery {
  Header h;
  std::vector<std::byte> bytes;  // eager payload, copied out of the receive buffer
  std::unique_ptr<Incoming> in;  // large message
  bool ready() const { return !in || in->ready; }
};

struct Completion {
  fi_cq_data_entry e;
  fi_addr_t src;
  bool truncated = false;  // a receive's error entry: the message was longer than the buffer
};

struct Receiver {
  // Owned by the role holder.
  std::deque<Completion> backlog;  // read from the CQ, not yet handled (kept in CQ order)
  std::vector<std::deque<Delivery>> inbox;  // per sender
  std::vector<Header> split_from;           // per sender: the kSplit header whose payload is next
  std::vector<uint8_t> split_pending;
  size_t queued = 0;                        // deliveries in all inboxes
  std::map<std::pair<int, uint64_t>, Incoming *> chunked_in;
  std::deque<ReadOp *> pending_reads;                 // fi_read said EAGAIN
  std::deque<std::pair<int, uint64_t>> pending_done;  // kDone not yet posted
  std::atomic<int> reads_in_flight{0};

  Handler handlers[static_cast<size_t>(MsgType::kEnd)] = {};
  Placer placers[static_cast<size_t>(MsgType::kEnd)] = {};

  std::atomic<uint64_t> rejected_by[static_cast<size_t>(Result::kCount)] = {};
  std::atomic<uint64_t> rejected_total{0};
  std::atomic<unsigned> warnings{0};
};
extern Receiver &rcv;

void post_recv(RxBuf *rx);
// One turn of progress, for the role holder: reads completions and handles them, running
// handlers only if run_handlers. Returns how much it did.
int poll_cq(bool run_handlers);
// Messages taken off the CQ whose turn has come but whose handlers have not run.
bool deliverable();
// Rendezvous reads and kDone messages still to be posted or completed.
inline bool reads_or_dones_left() {
  return rcv.reads_in_flight.load(std::memory_order_relaxed) > 0 || !rcv.pending_reads.empty() ||
         !rcv.pending_done.empty();
}
void close_receiver();

}  // namespace mw::transport
