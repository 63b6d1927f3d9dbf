// Sending (send.hpp). Large messages go by rendezvous with RMA read, by chunks only
// where RMA is absent: with fi_read the bulk moves once, from the sender's memory straight
// to where the receiver wants it (its shared data, for a lock grant), and the sender's CPU
// is not needed for it on shm (the reader's process_vm_readv does the copy). Chunking
// copies every byte twice more and costs a message per eager-limit bytes. The figures
// behind this and the 16 KiB eager limit (docs/PERFORMANCE.md, "Figures behind the code").
#include "transport/send.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "transport/accounting.hpp"
#include "transport/progress.hpp"
#include "transport/wake.hpp"

namespace mw::transport {

constexpr size_t kChunkSlack = 256;  // see send_chunked()
// A bulk whose pieces average less than this is copied whole into one staging buffer
// (see send_rendezvous()).
constexpr size_t kGatherBelow = 16 << 10;

Sender &snd = *new Sender;
std::atomic<int> g_stall_timeout_ms{kDefaultStallTimeoutMs};

void SendRetry::again() {
  // The provider may need the *peer* to act before it accepts anything for it, and the
  // peer may be asleep on its doorbell, which only a successful post rings. shm's first
  // send to a peer it has never exchanged a message with fails with -FI_EAGAIN after
  // putting a connection request in the peer's queue (smr_verify_peer/smr_send_name);
  // only the peer's progress answers it, and until then every retry fails the same way.
  // Unrung, the peer slept until its idle timeout (kIdleTimeoutMs). A full receive queue
  // at the peer drains only when it polls, likewise.
  if (dest_ >= 0) ring(dest_);
  nudge();
  if (++tries_ < kSpinTries) {
    // What we wait for is mostly another process's turn to run (the peer, woken just
    // now; on 2 cores with 8 ranks it shares ours): after a few quick retries, give it
    // the core between them rather than spin (docs/PERFORMANCE.md, "Figures behind the code").
    if (tries_ > kQuickTries) sched_yield();
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (tries_ == kSpinTries) since_ = now;
  if (now - since_ > std::chrono::milliseconds(g_stall_timeout_ms.load(std::memory_order_relaxed))) {
    if (dest_ < 0)
      mw::fatal("transport", "sending %s: no send buffer came free for %d s (provider %s)",
                what_, g_stall_timeout_ms.load() / 1000, fab.provider.c_str());
    mw::fatal("transport",
              "sending %s to rank %d: the provider (%s) has accepted nothing for %d s; "
              "is rank %d reachable from here?",
              what_, dest_, fab.provider.c_str(), g_stall_timeout_ms.load() / 1000, dest_);
  }
  sleep_us_ = std::min(sleep_us_ ? 2 * sleep_us_ : 1, 1000);
  std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
}

void release_sendbuf(SendBuf *b) {
  snd.sends_in_flight.fetch_sub(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lk(bufs.tx_mu);
  bufs.tx_free.push_back(b);
}

SendBuf *take_sendbuf(int dest) {
  SendRetry retry("a message", dest);
  for (;;) {
    {
      std::lock_guard<std::mutex> lk(bufs.tx_mu);
      if (!bufs.tx_free.empty()) {
        SendBuf *b = bufs.tx_free.back();
        bufs.tx_free.pop_back();
        return b;
      }
    }
    retry.again();
  }
}

void post_sendbuf(int dest, SendBuf *b, size_t len, const char *what) {
  b->peer = dest;
  snd.sends_in_flight.fetch_add(1, std::memory_order_relaxed);
  SendRetry retry(what, dest);
  post(
      "fi_send",
      [&] {
        PostLock pl;
        FabLock lk;
        return fi_send(fab.ep, b->buf, len, desc_of(bufs.tx_mr), static_cast<fi_addr_t>(dest), &b->ctx);
      },
      [&] { retry.again(); }, "of %s (%zu bytes) to rank %d", what, len, dest);
  ring(dest);
}

void post_inject(int dest, const void *buf, size_t len, const char *what) {
  SendRetry retry(what, dest);
  post(
      "fi_inject",
      [&] {
        PostLock pl;
        FabLock lk;
        return fi_inject(fab.ep, buf, len, static_cast<fi_addr_t>(dest));
      },
      [&] { retry.again(); }, "of %s (%zu bytes) to rank %d", what, len, dest);
  ring(dest);
}

// A split send: the header, then at once the payload, with nothing of ours between.
void post_split(int dest, const Header &h, const void *payload, size_t len) {
  SendRetry retry("a message", dest);
  post(
      "fi_inject",
      [&] {
        PostLock pl;
        long ret;
        {
          FabLock lk;
          ret = fi_inject(fab.ep, &h, sizeof h, static_cast<fi_addr_t>(dest));
        }
        if (ret != 0) return ret;  // no room for the header: progress, without the post lock
        // The header is out: the payload must be the next message to dest, so progress
        // made while it waits for room posts nothing.
        t_defer_sends = true;
        post(
            "fi_inject",
            [&] {
              FabLock lk;
              return fi_inject(fab.ep, payload, len, static_cast<fi_addr_t>(dest));
            },
            [&] { retry.again(); }, "of a message payload (%zu bytes) to rank %d", len, dest);
        t_defer_sends = false;
        return 0L;
      },
      [&] { retry.again(); }, "of a message header (%zu bytes) to rank %d", sizeof h, dest);
  ring(dest);
}

void check_send(const char *call, int dest, MsgType type) {
  if (!fab.connected) mw::fatal(call, "called before transport::connect");
  if (dest < 0 || dest >= fab.cfg.nprocs)
    mw::fatal(call, "destination rank %d is not in this job of %d ranks", dest, fab.cfg.nprocs);
  if (!is_protocol_type(static_cast<uint16_t>(type)))
    mw::fatal(call, "%s is not a protocol message type",
              type_name(static_cast<uint16_t>(type)).c_str());
}

void send_eager(int dest, MsgType type, std::span<const iovec> head, std::span<const iovec> bulk,
                size_t head_len, size_t bulk_len, uint64_t clock) {
  Header h = make_header(type, 0, clock, head_len + bulk_len, bulk_len);
  size_t wire = sizeof h + head_len + bulk_len;
  if (wire <= fab.inject_limit) {
    alignas(16) std::byte buf[kStackInject];
    std::memcpy(buf, &h, sizeof h);
    gather(head, 0, buf + sizeof h, head_len);
    gather(bulk, 0, buf + sizeof h + head_len, bulk_len);
    post_inject(dest, buf, wire, "a message");
    return;
  }
  if (fab.split && head_len + bulk_len <= fab.split_max) {
    alignas(64) std::byte buf[kSplitMax];
    gather(head, 0, buf, head_len);
    gather(bulk, 0, buf + head_len, bulk_len);
    h.flags = kSplit;
    post_split(dest, h, buf, head_len + bulk_len);
    return;
  }
  SendBuf *b = take_sendbuf(dest);
  std::memcpy(b->buf, &h, sizeof h);
  gather(head, 0, b->buf + sizeof h, head_len);
  gather(bulk, 0, b->buf + sizeof h + head_len, bulk_len);
  post_sendbuf(dest, b, wire, "a message");
}

// The rendezvous header: RtsBody, segments, head.
SendBuf *build_rts(MsgType type, uint32_t flags, uint64_t clock, uint64_t id,
                   const std::vector<Segment> &segs, std::span<const iovec> head, size_t head_len,
                   size_t bulk_len, size_t *wire) {
  size_t body = sizeof(RtsBody) + segs.size() * sizeof(Segment) + head_len;
  if (body > fab.cfg.eager_limit)
    mw::fatal("transport::send",
              "the head of a large %s message (%zu bytes, with %zu bulk pieces) does not fit one "
              "eager message of %zu bytes",
              type_name(static_cast<uint16_t>(type)).c_str(), head_len, segs.size(),
              fab.cfg.eager_limit);
  Header h = make_header(type, flags, clock, body, bulk_len);
  RtsBody rts{id, static_cast<uint32_t>(segs.size()), 0};
  SendBuf *b = take_sendbuf(-1);  // any free buffer; the peer is not known here
  std::byte *p = b->buf;
  std::memcpy(p, &h, sizeof h);
  std::memcpy(p + sizeof h, &rts, sizeof rts);
  if (!segs.empty())
    std::memcpy(p + sizeof h + sizeof rts, segs.data(), segs.size() * sizeof(Segment));
  gather(head, 0, p + sizeof h + sizeof rts + segs.size() * sizeof(Segment), head_len);
  *wire = sizeof h + body;
  return b;
}


void send_rendezvous(int dest, MsgType type, std::span<const iovec> head,
                     std::span<const iovec> bulk, size_t head_len, size_t bulk_len,
                     uint64_t clock, Bulk keep) {
  // The bulk's pieces, registered where they lie; but small pieces are copied together
  // into one staging buffer, a reused block (core/blocks.hpp: a fresh one's pages cost a
  // first touch each): all of them when they average under kGatherBelow, else those past
  // kMaxSegments. The receiver reads each segment with a read of its own (on shm a
  // process_vm_readv, ~1.8 µs whatever the length; on tcp a round trip), where a copy of
  // a few KiB costs a microsecond or less (RADIX's scattered updates: docs/PERFORMANCE.md,
  // "What a flush costs").
  std::vector<iovec> pieces;
  append_merged(pieces, bulk);
  blocks::Block staging;
  size_t in_place = pieces.size();  // pieces read where they lie; the rest gathered
  if (pieces.size() > 1 && bulk_len / pieces.size() < kGatherBelow)
    in_place = 0;
  else if (pieces.size() > kMaxSegments)
    in_place = kMaxSegments - 1;
  if (in_place < pieces.size()) {
    size_t from = 0;
    for (size_t i = 0; i < in_place; ++i) from += pieces[i].iov_len;
    size_t rest = bulk_len - from;
    staging = blocks::take(rest, "a message's staging copy");
    gather(pieces, from, staging.data(), rest);
    pieces.resize(in_place);
    pieces.push_back({staging.data(), rest});
  }
  std::vector<fid_mr *> mrs;
  std::vector<Segment> segs;
  for (const iovec &v : pieces) {
    fid_mr *mr = reg(v.iov_base, v.iov_len, FI_REMOTE_READ, "a message's bulk");
    mrs.push_back(mr);
    uint64_t addr = fab.mr_virt ? reinterpret_cast<uint64_t>(v.iov_base) : 0;
    segs.push_back({addr, fi_mr_key(mr), v.iov_len});
  }
  if (keep == Bulk::kDeferred) {
    // Nobody waits for this one: the receiver reads the bulk when it can, and kDone
    // frees what the send holds. Not in bulk_in_flight, which makes idle threads spin
    // longer for a transfer somebody waits for.
    auto *og = new Outgoing;
    og->id = snd.next_id.fetch_add(1);
    og->dest = dest;
    og->deferred = true;
    og->mrs = std::move(mrs);
    og->staging = std::move(staging);
    {
      std::lock_guard<std::mutex> lk(snd.out_mu);
      snd.outgoing[og->id] = og;
    }
    snd.deferred_out.fetch_add(1, std::memory_order_relaxed);
    size_t wire;
    SendBuf *b = build_rts(type, kRendezvous, clock, og->id, segs, head, head_len, bulk_len, &wire);
    post_sendbuf(dest, b, wire, "a rendezvous header");
    return;
  }
  Outgoing og;
  og.id = snd.next_id.fetch_add(1);
  og.dest = dest;
  {
    std::lock_guard<std::mutex> lk(snd.out_mu);
    snd.outgoing[og.id] = &og;
  }
  size_t wire;
  SendBuf *b = build_rts(type, kRendezvous, clock, og.id, segs, head, head_len, bulk_len, &wire);
  prog.bulk_in_flight.fetch_add(bulk_len, std::memory_order_relaxed);
  post_sendbuf(dest, b, wire, "a rendezvous header");
  wait_for([&] { return og.done.load(std::memory_order_acquire); });
  prog.bulk_in_flight.fetch_sub(bulk_len, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lk(snd.out_mu);
    snd.outgoing.erase(og.id);
  }
  for (fid_mr *mr : mrs) unreg(mr, "a message's bulk");
}

void send_chunked(int dest, MsgType type, std::span<const iovec> head, std::span<const iovec> bulk,
                  size_t head_len, size_t bulk_len, uint64_t clock) {
  uint64_t id = snd.next_id.fetch_add(1);
  size_t wire;
  SendBuf *b = build_rts(type, kChunked, clock, id, {}, head, head_len, bulk_len, &wire);
  post_sendbuf(dest, b, wire, "a rendezvous header");
  // A chunk and its headers stay a little under the eager limit, so that a layered
  // provider's own header still fits its eager buffer: ofi_rxm's is 16 KiB, and a chunk
  // message 48 bytes over it took rxm's rendezvous each time (docs/PERFORMANCE.md, "Figures behind the code").
  const size_t chunk = fab.cfg.eager_limit - sizeof(Header) - sizeof(ChunkBody) - kChunkSlack;
  for (size_t off = 0; off < bulk_len; off += chunk) {
    size_t n = std::min(chunk, bulk_len - off);
    Header h = make_header(MsgType::kChunk, 0, 0, sizeof(ChunkBody) + n, 0);
    ChunkBody c{id, off};
    SendBuf *cb = take_sendbuf(dest);
    std::memcpy(cb->buf, &h, sizeof h);
    std::memcpy(cb->buf + sizeof h, &c, sizeof c);
    gather(bulk, off, cb->buf + sizeof h + sizeof c, n);
    post_sendbuf(dest, cb, sizeof h + sizeof c + n, "a chunk");
    stats::sent(stats::Kind::Control, 0, sizeof h + sizeof c);  // its bytes count with the header
  }
}

void send_message(int dest, MsgType type, std::span<const iovec> head, std::span<const iovec> bulk,
                  uint64_t clock, Bulk keep) {
  check_send("transport::send", dest, type);
  size_t head_len = total_len(head), bulk_len = total_len(bulk);
  if (head_len + bulk_len <= fab.cfg.eager_limit) {
    // FINALIZING is sent after this rank's statistics are written, and may arrive at a
    // peer before or after its own: counting it would make the job's totals disagree.
    if (type != MsgType::kFinalizing)
      stats::sent(kind_of(static_cast<uint16_t>(type)), bulk_len, sizeof(Header) + head_len);
    send_eager(dest, type, head, bulk, head_len, bulk_len, clock);
    return;
  }
  stats::sent(kind_of(static_cast<uint16_t>(type)), bulk_len,
              sizeof(Header) + sizeof(RtsBody) + head_len);  // + 24 per piece, roughly
  if (fab.rma)
    send_rendezvous(dest, type, head, bulk, head_len, bulk_len, clock, keep);
  else
    send_chunked(dest, type, head, bulk, head_len, bulk_len, clock);
}

}  // namespace mw::transport
