// Receiving (receive.hpp).
#include "transport/receive.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "transport/accounting.hpp"
#include "transport/progress.hpp"
#include "transport/send.hpp"
#include "transport/wake.hpp"

namespace mw::transport {

// Rendezvous reads are posted in pieces of at most this, all at once: on tcp;ofi_rxm the
// target answers each read from its own progress, and several reads in flight keep its
// socket busy (docs/PERFORMANCE.md, "Figures behind the code").
constexpr size_t kReadPiece = 512 << 10;
constexpr unsigned kMaxWarnings = 20;

Receiver &rcv = *new Receiver;

bool refill();

void post_recv(RxBuf *rx) {
  post(
      "fi_recv",
      [&] {
        FabLock lk;
        return fi_recv(fab.ep, rx->buf, bufs.buf_len, desc_of(bufs.rx_mr), FI_ADDR_UNSPEC, &rx->ctx);
      },
      // We never post more buffers than the receive queue holds, but a provider may need
      // to progress to free room: read completions into the backlog (keeping their
      // order; the caller holds the role, as every caller of post_recv does).
      [] {
        if (!refill()) sched_yield();
      },
      "posting a receive buffer");
  rx->posted = bufs.rx_posted++;
  rx->arrived = false;
  bufs.rx_ring[rx->posted % bufs.rx_ring.size()] = rx;
}

const char *rank_phrase(char *buf, size_t len, const void *msg, size_t received, int source) {
  int claimed = -1;
  if (received >= sizeof(Header)) {
    Header h;
    std::memcpy(&h, msg, sizeof h);
    claimed = h.sender;
  }
  if (source != kUnknownSource && claimed != source && claimed >= 0 && claimed < fab.cfg.nprocs)
    std::snprintf(buf, len, "rank %d (which claims to be rank %d)", source, claimed);
  else if (source != kUnknownSource)
    std::snprintf(buf, len, "rank %d", source);
  else if (claimed >= 0 && claimed < fab.cfg.nprocs)
    std::snprintf(buf, len, "rank %d", claimed);
  else
    std::snprintf(buf, len, "an unknown rank");
  return buf;
}

// Counts a dropped message and says why, once per message up to kMaxWarnings.
// `truncated`: the provider cut it to `received` bytes (it did not fit a receive buffer).
void reject(Result why, const void *msg, size_t received, int source, bool truncated = false) {
  rcv.rejected_by[static_cast<size_t>(why)].fetch_add(1, std::memory_order_relaxed);
  rcv.rejected_total.fetch_add(1, std::memory_order_relaxed);
  stats::count_rejected();
  unsigned n = rcv.warnings.fetch_add(1, std::memory_order_relaxed);
  if (n >= kMaxWarnings) return;
  char who[96];
  std::string type;
  if (!truncated && received >= sizeof(Header) && why != Result::kBadMagic) {
    Header h;
    std::memcpy(&h, msg, sizeof h);
    type = type_name(h.type) + " ";
  }
  // A truncated message's header is not checked: do not trust its sender field.
  const char *from = truncated ? "an unknown rank" : rank_phrase(who, sizeof who, msg, received, source);
  mw::warn("transport", "dropped a %smessage of %s%zu bytes from %s: %s%s", type.c_str(),
           truncated ? "more than " : "", received, from, describe(why),
           n + 1 == kMaxWarnings ? " (further drops are counted, not reported)" : "");
}

void run_handler(const Header &h, std::span<const std::byte> payload) {
  t_in_handler = true;
  rcv.handlers[h.type](h, payload);
  t_in_handler = false;
}

// Runs the placer of an eager message that has a bulk and copies the bulk into place.
// Returns the head.
std::span<const std::byte> place_eager(Header &h, std::span<const std::byte> payload) {
  size_t head_len = payload.size() - h.bulk_len;
  std::span<const std::byte> head = payload.first(head_len);
  h.payload_len = head_len;
  std::vector<iovec> where;
  rcv.placers[h.type](h, head, where);
  if (total_len(where) != h.bulk_len)
    mw::fatal("transport", "the placer of %s messages gave %zu bytes of room for a %llu-byte bulk",
              type_name(h.type).c_str(), total_len(where),
              static_cast<unsigned long long>(h.bulk_len));
  const std::byte *src = payload.data() + head_len;
  for (const iovec &v : where) {
    std::memcpy(v.iov_base, src, v.iov_len);
    src += v.iov_len;
  }
  return head;
}

void deliver_eager(Header h, std::span<const std::byte> payload) {
  if (rcv.placers[h.type] && h.bulk_len > 0) payload = place_eager(h, payload);
  run_handler(h, payload);
}

// Runs the handlers of every message whose turn has come. Only at the outermost level of
// progress (handlers never nest).
int deliver_ready() {
  int n = 0;
  for (int s = 0; s < fab.cfg.nprocs && rcv.queued > 0; ++s) {
    auto &q = rcv.inbox[s];
    while (!q.empty() && q.front().ready()) {
      Delivery d = std::move(q.front());
      q.pop_front();
      --rcv.queued;
      ++n;
      if (!d.in) {
        deliver_eager(d.h, d.bytes);
        continue;
      }
      Incoming &in = *d.in;
      if (in.whole) {
        run_handler(in.h, {in.whole.data(), in.h.payload_len});  // the block goes back with d
      } else {
        run_handler(in.h, in.head);
      }
    }
  }
  return n;
}

bool deliverable() {
  if (rcv.queued == 0) return false;
  for (auto &q : rcv.inbox)
    if (!q.empty() && q.front().ready()) return true;
  return false;
}

void post_read(ReadOp *op) {
  long ret;
  {
    FabLock lk;
    ret = fi_read(fab.ep, op->dest, op->len, desc_of(op->local_mr), static_cast<fi_addr_t>(op->peer),
                  op->addr, op->key, &op->ctx);
  }
  if (ret == -FI_EAGAIN) {
    rcv.pending_reads.push_back(op);
    ring(op->peer);  // it may have to poll before we can read (see SendRetry::again)
    return;
  }
  if (ret < 0) fi_fatal("fi_read", ret, "of %zu bytes from rank %d", op->len, op->peer);
  rcv.reads_in_flight.fetch_add(1, std::memory_order_relaxed);
  ring(op->peer);
}

// kDone to the sender of a rendezvous: small enough to inject on every provider we know;
// otherwise it waits in pending_done for the next turn of the loop.
bool post_done(int dest, uint64_t id) {
  struct {
    Header h;
    DoneBody d;
  } m{make_header(MsgType::kDone, 0, 0, sizeof(DoneBody), 0), {id}};
  if (t_defer_sends) return false;
  long ret = -FI_EAGAIN;
  if (sizeof m <= fab.inject_limit) {
    PostLock pl;
    FabLock lk;
    ret = fi_inject(fab.ep, &m, sizeof m, static_cast<fi_addr_t>(dest));
  } else {
    SendBuf *b = nullptr;
    {
      std::lock_guard<std::mutex> lk(bufs.tx_mu);
      if (!bufs.tx_free.empty()) {
        b = bufs.tx_free.back();
        bufs.tx_free.pop_back();
      }
    }
    if (b) {
      std::memcpy(b->buf, &m, sizeof m);
      b->peer = dest;
      PostLock pl;
      FabLock lk;
      ret = fi_send(fab.ep, b->buf, sizeof m, desc_of(bufs.tx_mr), static_cast<fi_addr_t>(dest), &b->ctx);
      if (ret == 0) snd.sends_in_flight.fetch_add(1, std::memory_order_relaxed);
      if (ret != 0) {
        std::lock_guard<std::mutex> lk2(bufs.tx_mu);
        bufs.tx_free.push_back(b);
      }
    }
  }
  if (ret == -FI_EAGAIN) {
    ring(dest);  // it may have to poll before it can take it (see SendRetry::again)
    return false;
  }
  if (ret < 0) fi_fatal("fi_inject", ret, "of DONE to rank %d", dest);
  ring(dest);
  stats::sent(stats::Kind::Control, 0, sizeof m);
  return true;
}

void bulk_landed(Incoming *in, int sender) {
  in->ready = true;
  prog.bulk_in_flight.fetch_sub(in->bulk_len, std::memory_order_relaxed);
  if (!in->chunked) {
    if (!post_done(sender, in->id)) rcv.pending_done.emplace_back(sender, in->id);
  } else {
    rcv.chunked_in.erase({sender, in->id});
  }
}

// A rendezvous header arrived: decide where the bulk lands and start moving it.
void start_incoming(const Header &h, const std::byte *payload) {
  RtsBody rts;
  std::memcpy(&rts, payload, sizeof rts);
  std::vector<Segment> segs(rts.nseg);
  if (rts.nseg) std::memcpy(segs.data(), payload + sizeof rts, rts.nseg * sizeof(Segment));
  size_t head_off = sizeof rts + rts.nseg * sizeof(Segment);
  size_t head_len = h.payload_len - head_off;
  const std::byte *head = payload + head_off;

  auto in = std::make_unique<Incoming>();
  in->h = h;
  in->h.flags = 0;
  in->id = rts.id;
  in->bulk_len = h.bulk_len;
  in->chunked = (h.flags & kChunked) != 0;
  if (Placer placer = rcv.placers[h.type]) {
    in->head.assign(head, head + head_len);
    in->h.payload_len = head_len;
    std::vector<iovec> dest;
    placer(in->h, in->head, dest);
    append_merged(in->dest, dest);
    if (total_len(in->dest) != in->bulk_len)
      mw::fatal("transport",
                "the placer of %s messages gave %zu bytes of room for a %llu-byte bulk",
                type_name(h.type).c_str(), total_len(in->dest),
                static_cast<unsigned long long>(in->bulk_len));
  } else {
    in->h.payload_len = head_len + in->bulk_len;
    in->whole = blocks::take(in->h.payload_len, "an arriving message");
    std::memcpy(in->whole.data(), head, head_len);
    in->dest.push_back({in->whole.data() + head_len, in->bulk_len});
  }
  prog.bulk_in_flight.fetch_add(in->bulk_len, std::memory_order_relaxed);

  if (in->chunked) {
    rcv.chunked_in[{h.sender, in->id}] = in.get();
  } else {
    // Read each overlap of (destination piece, remote segment), kReadPiece at a time.
    size_t di = 0, si = 0, doff = 0, soff = 0;
    while (di < in->dest.size() && si < segs.size()) {
      size_t n = std::min({in->dest[di].iov_len - doff, segs[si].len - soff,
                           static_cast<size_t>(fab.max_msg), kReadPiece});
      if (n > 0) {
        auto op = std::make_unique<ReadOp>();
        op->kind = OpKind::kRead;
        op->peer = h.sender;
        op->in = in.get();
        op->dest = static_cast<std::byte *>(in->dest[di].iov_base) + doff;
        op->len = n;
        op->addr = segs[si].addr + soff;
        op->key = segs[si].key;
        op->local_mr = fab.mr_local ? reg(op->dest, n, FI_READ, "a read destination") : nullptr;
        in->reads.push_back(std::move(op));
      }
      doff += n;
      soff += n;
      if (doff == in->dest[di].iov_len) ++di, doff = 0;
      if (soff == segs[si].len) ++si, soff = 0;
    }
    in->reads_left = in->reads.size();
    for (auto &op : in->reads) post_read(op.get());
  }
  Delivery d;
  d.h = in->h;
  d.in = std::move(in);
  rcv.inbox[h.sender].push_back(std::move(d));
  ++rcv.queued;
}

void on_chunk(const Header &h, const std::byte *payload, int source, const RxBuf *rx, size_t len) {
  ChunkBody c;
  std::memcpy(&c, payload, sizeof c);
  auto it = rcv.chunked_in.find({h.sender, c.id});
  uint64_t n = h.payload_len - sizeof c;
  // A transfer's chunks are sent in order and arrive in order (FI_ORDER_SAS): each
  // starts where the bytes landed so far end. A repeated or overlapping chunk would
  // otherwise count twice and complete the bulk with bytes missing.
  if (it == rcv.chunked_in.end() || c.offset != it->second->landed ||
      n > it->second->bulk_len - c.offset) {
    reject(Result::kBadBody, rx->buf, len, source);
    return;
  }
  Incoming *in = it->second;
  // Scatter [offset, offset + n) of the bulk into the destination pieces.
  const std::byte *src = payload + sizeof c;
  uint64_t off = c.offset;
  for (const iovec &v : in->dest) {
    if (n == 0) break;
    if (off >= v.iov_len) {
      off -= v.iov_len;
      continue;
    }
    size_t k = std::min<uint64_t>(v.iov_len - off, n);
    std::memcpy(static_cast<std::byte *>(v.iov_base) + off, src, k);
    src += k;
    n -= k;
    off = 0;
  }
  in->landed += h.payload_len - sizeof c;
  if (in->landed == in->bulk_len) bulk_landed(in, h.sender);
}

// The payload of a kSplit header: the next message from the same sender, no header.
void on_split_payload(RxBuf *rx, size_t len, int source, bool run_handlers) {
  rcv.split_pending[source] = 0;
  Header h = rcv.split_from[source];
  const Result r = len != h.payload_len ? Result::kLengthMismatch
                   : !rcv.handlers[h.type] ? Result::kNoHandler
                                            : Result::kOk;
  if (r != Result::kOk) {
    reject(r, &h, sizeof h, source);
    post_recv(rx);
    return;
  }
  h.flags = 0;
  stats::received(kind_of(h.type), h.bulk_len, sizeof(Header) + len - h.bulk_len);
  if (run_handlers && rcv.inbox[source].empty()) {
    deliver_eager(h, {rx->buf, len});
  } else {
    Delivery d;
    d.h = h;
    d.bytes.assign(rx->buf, rx->buf + len);
    rcv.inbox[source].push_back(std::move(d));
    ++rcv.queued;
  }
  post_recv(rx);
}

void on_recv(RxBuf *rx, size_t len, fi_addr_t src, bool run_handlers) {
  int source = fab.have_source && src != FI_ADDR_NOTAVAIL && src < static_cast<fi_addr_t>(fab.cfg.nprocs)
                   ? static_cast<int>(src)
                   : kUnknownSource;
  if (source != kUnknownSource && rcv.split_pending[source]) {
    on_split_payload(rx, len, source, run_handlers);
    return;
  }
  Result r = validate(rx->buf, len, fab.limits, source);
  Header h{};
  if (r == Result::kOk) {
    std::memcpy(&h, rx->buf, sizeof h);
    // A split header's payload is dropped with it (on_split_payload): read as a message
    // of its own, it could pass for one.
    const bool split = h.flags == kSplit && source != kUnknownSource;
    if (is_protocol_type(h.type) && !rcv.handlers[h.type] && !split) r = Result::kNoHandler;
  }
  if (r != Result::kOk) {
    reject(r, rx->buf, len, source);
    post_recv(rx);
    return;
  }
  const std::byte *payload = rx->buf + sizeof(Header);
  if (h.type == static_cast<uint16_t>(MsgType::kDone)) {
    DoneBody d;
    std::memcpy(&d, payload, sizeof d);
    if (d.id == kGreetingId) {  // connect_peers(): the pair is connected, nothing to do
      fab.greetings.fetch_add(1, std::memory_order_acq_rel);
      unlink_region_once_mapped();
      post_recv(rx);
      return;
    }
  }
  // Bulk is data (a rendezvous' bulk counts with its header; a chunk carries part of
  // it, so counts as protocol only); the rest, header, head and descriptors, is protocol.
  if (h.type == static_cast<uint16_t>(MsgType::kChunk))
    stats::received(stats::Kind::Control, 0, sizeof(Header) + sizeof(ChunkBody));
  else if (h.flags == kSplit || h.type == static_cast<uint16_t>(MsgType::kFinalizing))
    ;  // counted with its payload; FINALIZING goes after the statistics are written
  else if (h.flags != 0)
    stats::received(kind_of(h.type), h.bulk_len, len);
  else
    stats::received(kind_of(h.type), h.bulk_len, len - h.bulk_len);
  switch (static_cast<MsgType>(h.type)) {
    case MsgType::kDone: {
      DoneBody d;
      std::memcpy(&d, payload, sizeof d);
      Outgoing *finished = nullptr;
      {
        std::lock_guard<std::mutex> lk(snd.out_mu);
        auto it = snd.outgoing.find(d.id);
        if (it == snd.outgoing.end() || it->second->dest != h.sender) {
          reject(Result::kBadBody, rx->buf, len, source);
        } else if (it->second->deferred) {
          finished = it->second;
          snd.outgoing.erase(it);
        } else {
          it->second->done.store(true, std::memory_order_release);
        }
      }
      if (finished) {
        for (fid_mr *mr : finished->mrs) unreg(mr, "a message's bulk");
        delete finished;
        snd.deferred_out.fetch_sub(1, std::memory_order_release);
      }
      break;
    }
    case MsgType::kChunk:
      on_chunk(h, payload, source, rx, len);
      break;
    default:
      if (h.flags == kSplit) {
        if (source == kUnknownSource) {  // cannot tell which message is its payload
          reject(Result::kBadBody, rx->buf, len, source);
          break;
        }
        rcv.split_from[source] = h;
        rcv.split_pending[source] = 1;
      } else if (h.flags != 0) {
        start_incoming(h, payload);
      } else if (run_handlers && rcv.inbox[h.sender].empty()) {
        // The fast path: handled in place, in the receive buffer.
        h.flags = 0;
        deliver_eager(h, {payload, h.payload_len});
      } else {
        Delivery d;
        d.h = h;
        d.bytes.assign(payload, payload + h.payload_len);
        rcv.inbox[h.sender].push_back(std::move(d));
        ++rcv.queued;
      }
      break;
  }
  post_recv(rx);
}

void on_read_done(ReadOp *op) {
  rcv.reads_in_flight.fetch_sub(1, std::memory_order_relaxed);
  if (op->local_mr) unreg(op->local_mr, "a read destination");
  op->local_mr = nullptr;
  Incoming *in = op->in;
  int sender = op->peer;
  in->landed += op->len;
  if (--in->reads_left == 0) {
    in->reads.clear();  // op with them
    bulk_landed(in, sender);
  }
}


[[noreturn]] void cq_failure(const fi_cq_err_entry &err) {
  char detail[256] = "";
  fi_cq_strerror(fab.cq, err.prov_errno, err.err_data, detail, sizeof detail);
  const Op *op = static_cast<const Op *>(err.op_context);
  const char *what = "an operation";
  bool to = false;
  int peer = -1;
  if (op) {
    peer = op->peer;
    to = op->kind == OpKind::kSend || op->kind == OpKind::kSendOwned;
    what = to ? "a send" : op->kind == OpKind::kRead ? "an RMA read" : "a receive";
  }
  char peer_s[32] = "an unknown rank";
  if (peer >= 0) std::snprintf(peer_s, sizeof peer_s, "rank %d", peer);
  mw::fatal("fi_cq_readerr", "%s %s %s failed on provider '%s': %s (%s)", what, to ? "to" : "from",
            peer_s, fab.provider.c_str(), fi_strerror(std::abs(err.err)), detail);
}

// Reads a batch of completions into the backlog. False: the CQ is empty.
bool refill() {
  fi_cq_data_entry e[kBatch];
  fi_addr_t src[kBatch];
  long n;
  {
    FabLock lk;
    n = fab.have_source ? fi_cq_readfrom(fab.cq, e, kBatch, src) : fi_cq_read(fab.cq, e, kBatch);
  }
  if (n == -FI_EAGAIN) return false;
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    long r;
    {
      FabLock lk;
      r = fi_cq_readerr(fab.cq, &err, 0);
    }
    if (r < 0) fi_fatal("fi_cq_readerr", r, "reading a failed completion");
    auto *op = static_cast<Op *>(err.op_context);
    int code = std::abs(err.err);  // shm reports -FI_ETRUNC, rxm FI_ETRUNC
    if (op && op->kind == OpKind::kRecv && code == FI_ETRUNC) {
      // A message longer than a receive buffer: the provider kept the first buf_len bytes.
      // Handled in its turn (take_received), as every receive is.
      Completion c{};
      c.e.op_context = op;
      c.e.len = bufs.buf_len;
      c.src = FI_ADDR_NOTAVAIL;
      c.truncated = true;
      rcv.backlog.push_back(c);
      return true;
    }
    if (op && op->kind == OpKind::kRecv && code == FI_ECANCELED && prog.stopping.load())
      return true;
    cq_failure(err);
  }
  if (n < 0) fi_fatal("fi_cq_read", n, "on the completion queue");
  for (long i = 0; i < n; ++i)
    rcv.backlog.push_back({e[i], fab.have_source ? src[i] : FI_ADDR_NOTAVAIL});
  return true;
}

void retry_pending() {
  size_t n = rcv.pending_reads.size();
  for (size_t i = 0; i < n; ++i) {
    ReadOp *op = rcv.pending_reads.front();
    rcv.pending_reads.pop_front();
    post_read(op);  // may queue it again
  }
  while (!rcv.pending_done.empty() && post_done(rcv.pending_done.front().first, rcv.pending_done.front().second))
    rcv.pending_done.pop_front();
}

// Handles the receives whose completions have been read, in the order they were posted,
// which is the order the provider matched them to messages: FI_ORDER_SAS matches a
// sender's messages in the order it sent them, and posted receives are matched in the
// order posted (fi_msg(3)). Their completions need not come in that order: tcp;ofi_rxm
// (comp_order FI_ORDER_NONE) reports a message larger than its own eager size (16 KiB;
// ours go up to 16 KiB and a header, which it segments) once its last segment is in,
// after smaller messages sent behind it, and every protocol here relies on a sender's
// messages being handled in the order sent. A receive waits here, in its buffer, for
// those posted before it (from any sender: a buffer does not say whose it will be).
void take_received(bool run_handlers) {
  const size_t n = bufs.rx_ring.size();
  while (bufs.rx_next < bufs.rx_posted) {
    RxBuf *rx = bufs.rx_ring[bufs.rx_next % n];
    if (!rx->arrived) break;
    ++bufs.rx_next;
    rx->arrived = false;
    if (rx->truncated) {
      rx->truncated = false;
      // An error entry does not say where the message came from.
      reject(Result::kTooLong, rx->buf, bufs.buf_len, kUnknownSource, true);
      post_recv(rx);
    } else {
      on_recv(rx, rx->len, rx->src, run_handlers);
    }
  }
}

// One turn of progress, for the role holder. Returns how much it did.
int poll_cq(bool run_handlers) {
  // What peers had posted when this poll began: mail() compares against it.
  if (wake.bells) wake.polled_at.store(wake.bells[fab.cfg.rank].posted.load(std::memory_order_seq_cst), std::memory_order_relaxed);
  if (!rcv.pending_reads.empty() || !rcv.pending_done.empty()) retry_pending();
  int n = 0;
  bool refilled = false;  // one fi_cq_read per turn: an empty one costs a provider progress
  for (int i = 0; i < kBatch; ++i) {
    if (rcv.backlog.empty()) {
      if (refilled || !refill()) break;
      refilled = true;
      if (rcv.backlog.empty()) {  // an error entry was handled
        ++n;
        break;
      }
    }
    Completion c = rcv.backlog.front();
    rcv.backlog.pop_front();
    ++n;
    auto *op = static_cast<Op *>(c.e.op_context);
    switch (op->kind) {
      case OpKind::kRecv: {
        auto *rx = static_cast<RxBuf *>(op);
        rx->arrived = true;
        rx->truncated = c.truncated;
        rx->len = c.e.len;
        rx->src = c.src;
        take_received(run_handlers);
        break;
      }
      case OpKind::kSend:
        release_sendbuf(static_cast<SendBuf *>(op));
        break;
      case OpKind::kSendOwned:
        snd.sends_in_flight.fetch_sub(1, std::memory_order_relaxed);
        static_cast<OwnedSend *>(op)->done.store(true, std::memory_order_release);
        break;
      case OpKind::kRead:
        on_read_done(static_cast<ReadOp *>(op));
        break;
    }
  }
  if (run_handlers && rcv.queued > 0) n += deliver_ready();
  return n;
}

void close_receiver() {
  rcv.inbox.clear();
  rcv.backlog.clear();
  rcv.queued = 0;
}

}  // namespace mw::transport
