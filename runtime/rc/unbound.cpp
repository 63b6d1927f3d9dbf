// Data unbound from its lock (mw_unbind) becomes release consistent again: its pages go
// back to their copysets.
//
// While bound, a page wholly bound is entry consistent on each rank that knows the
// binding (copysets.hpp): present with no fetch, left out of every flush, and current
// only where the lock is held. Its home's copy is as old as the last time the data was
// release consistent, and so are the copies of ranks that never held the lock. Left so,
// a write after the unbinding would reach no rank, and a reader would keep its stale
// copy.
//
// So the rank that unbinds while holding the lock (the one rank with the newest bytes:
// any other write to them would have needed the lock) sends those bytes to every other
// rank (UNBOUND), and waits until each has answered (UNBOUND_ACK) before mw_unbind
// returns, hence before the lock can move. Every rank then does the same to the range's
// pages (return_pages): a page that was entry consistent here becomes a copyset page
// again if this rank is its home or still a member, with the bytes written over its
// copy; otherwise this rank drops its copy, and its next touch fetches the page from the
// home, which has the bytes by then; but a page with bytes still bound stays, to be
// joined by the application thread (the runtime may read those bytes for a grant). A page that was already a copyset page here (bound
// in part) takes the bytes where it is present, or keeps them for the fetch under way.
// A page may stay bound in part, to other guards: a fetch copies only its unbound bytes.
//
// Every rank hears of it at once, not at its next grant of the lock: a rank that never
// acquires the lock again reads the data as release-consistent data, and it is a
// broadcast of one range, which mw_unbind makes rarely (to move data to another lock,
// or before freeing it). The start-up pattern (every rank unbinds alike before any holds
// the lock) sends nothing: nobody can have written the data under the lock yet.
//
// Under release or processor consistency (mwrun --model) bound data is a copyset's all
// along, and UNBOUND carries no bytes: it only tells the other ranks that the binding is
// gone, since a rank whose record still held it would refuse its own later mw_bind of the
// bytes to another lock as a second guard.
#include <cstring>

#include "ec/locks.hpp"
#include "ec/protocol.hpp"
#include "memory/dirty.hpp"
#include "rc/page_state.hpp"
#include "transport/transport.hpp"

namespace mw::copysets {
namespace {

struct UnboundHead {  // UNBOUND, followed by the range's bytes
  uint64_t lock;
  uint64_t addr;
  uint64_t len;
};

std::atomic<int> g_answers_left{0};  // UNBOUND_ACKs the unbinding rank still waits for

// [a, a+len) is bound to nothing on this rank now; `data` (if not null) its newest bytes,
// from `sender`. Under g_mu.
void return_pages(uintptr_t a, size_t len, const std::byte *data, int sender) {
  g_bound.remove(a, len);
  for (uintptr_t page = page_of(a); page < a + len; page += g_page) {
    const uintptr_t lo = std::max(a, page), hi = std::min(a + len, page + g_page);
    bool partly = false;
    for (const Range &r : g_bound.ranges())
      if (r.addr < page + g_page && r.end() > page) partly = true;
    const uint8_t flag = partly ? kPartlyBound : 0;
    const uint8_t s = state(page);
    const bool home = home_of(page) == g_me;
    // The home's copy holds what was written under the lock from now on: a fetch must
    // carry it.
    auto written = [&] {
      if (!home) return;
      Info &in = info(page);
      in.written = in.unbound = true;
    };
    auto put = [&] {
      if (data) std::memcpy(reinterpret_cast<void *>(lo), data + (lo - a), hi - lo);
    };
    if (s & kEntry) {
      if (home || (s & kMember)) {
        set_state(page, static_cast<uint8_t>((s & ~(kEntry | kPartlyBound)) | kPresent | kMember | flag));
        put();
        written();
      } else if (partly) {
        // Other bytes of the page stay bound, and this rank may have to send them on (a
        // grant reads them here): the page stays, current, but no member yet. The
        // application thread joins its copyset at its next acquire, crossing or flush,
        // as for bound data landed on such a page (join_landed).
        land(page, static_cast<uint8_t>((s & ~kEntry) | kPresent | kPartlyBound | kHadCopy));
        put();
      } else {
        // Not in the copyset: no update of the page would reach this copy. Dropped, as a
        // leave drops it (leave()); the bound bytes it holds stay in memory, and a fetch
        // copies only the unbound ones.
        const unsigned flush_us = info(page).flush_us;
        g_info.erase(page);
        if (flush_us) info(page).flush_us = flush_us;
        set_state(page, static_cast<uint8_t>(kHadCopy | flag));
        make_none(page);
      }
    } else {
      if (s != 0) set_state(page, static_cast<uint8_t>((s & ~kPartlyBound) | flag));
      if ((s & kFetching) && data)  // applied over the page when it comes, as an update is
        g_kept.push_back({lo, sender, 0, std::vector<std::byte>(data + (lo - a), data + (hi - a))});
      else if ((s & kPresent) && data) {
        put();
        written();
      }
    }
    refresh(page);
  }
}

}  // namespace

void unbound(uintptr_t lock, const void *p, size_t len, bool holder) {
  if (!g_enabled || len == 0) return;
  const bool entry = protocol::model() == protocol::Model::kEntry;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (holder) {
    // A copy: this rank may drop its pages below before a peer has read the bytes.
    std::vector<std::byte> bytes(entry ? len : 0);
    std::memcpy(bytes.data(), p, bytes.size());
    UnboundHead head{lock, a, len};
    const iovec h{&head, sizeof head}, b{bytes.data(), bytes.size()};
    g_answers_left.store(g_np - 1, std::memory_order_relaxed);
    for (int q = 0; q < g_np; ++q)
      if (q != g_me) transport::send(q, MsgType::kUnbound, std::span<const iovec>(&h, 1), std::span<const iovec>(&b, 1));
    transport::progress_until([] { return g_answers_left.load(std::memory_order_acquire) == 0; });
    if (!entry) return;
    // Written under the lock, and now everywhere: no flush is to send them again.
    dirty::clear(p, len);
    // Its own pages take the bytes as a peer's do: a home must count them written, or it
    // would answer a fetch by a rank that never held the page with "unwritten", and that
    // rank would read its initial image (test/e2e/move_between_locks.c).
    std::lock_guard<std::mutex> g(g_mu);
    return return_pages(a, len, bytes.data(), g_me);
  }
  if (!entry) return;
  std::lock_guard<std::mutex> g(g_mu);
  return_pages(a, len, nullptr, g_me);
}

void on_unbound(const Header &h, Bytes payload) {
  if (payload.size() < sizeof(UnboundHead)) protocol::malformed(h, "wrong length");
  UnboundHead head;
  std::memcpy(&head, payload.data(), sizeof head);
  const bool entry = protocol::model() == protocol::Model::kEntry;
  if (payload.size() - sizeof head != (entry ? head.len : 0))
    protocol::malformed(h, "wrong length", protocol::lock_object(head.lock));
  const uintptr_t a = static_cast<uintptr_t>(head.addr);
  if (head.len == 0 || !window::contains(reinterpret_cast<void *>(a), head.len))
    protocol::malformed(h, "a range outside the shared window", protocol::lock_object(head.lock));
  if (g_enabled) {
    locks::forget(head.lock, a, head.len);
    if (entry) {
      std::lock_guard<std::mutex> g(g_mu);
      return_pages(a, head.len, payload.data() + sizeof head, h.sender);
    }
  }
  protocol::send_body(h.sender, MsgType::kUnboundAck, head.lock);
}

void on_unbound_ack(const Header &h, Bytes payload) {
  const uint64_t lock = protocol::read_body<uint64_t>(h, payload);
  int left = g_answers_left.load(std::memory_order_relaxed);
  if (left <= 0)
    protocol::malformed(h, "no mw_unbind of this rank waits for an answer", protocol::lock_object(lock));
  g_answers_left.store(left - 1, std::memory_order_release);
}

}  // namespace mw::copysets
