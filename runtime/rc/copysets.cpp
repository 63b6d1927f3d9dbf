#include "rc/copysets.hpp"
#include "rc/page_state.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <span>
#include <thread>

#include "memory/dirty.hpp"
#include "core/waits.hpp"
#include "core/error.hpp"
#include "memory/heap.hpp"
#include "memory/image.hpp"
#include "ec/protocol.hpp"
#include "core/stats.hpp"
#include "core/trace.hpp"
#include "transport/transport.hpp"
#include "memory/window.hpp"


namespace mw::copysets {
namespace {

// The static shared objects, by address (place_static_homes; read-only after init).
std::vector<image::Object> &g_objects = *new std::vector<image::Object>;

// Whether every byte of every static object on `page` is bound (g_bound: sorted, merged):
// the bytes between objects belong to nobody, so a page whose objects are all bound is
// wholly bound though padding is not. (A page of a bound array followed by the padding
// before the next page-aligned object is such a page: counted bound in part, it was
// fetched from its home wherever the lock's data landed.) Under g_mu.
bool objects_bound(uintptr_t page) {
  if (g_objects.empty()) return false;
  const uintptr_t end = page + g_page;
  auto it = std::upper_bound(g_objects.begin(), g_objects.end(), page,
                             [](uintptr_t a, const image::Object &o) { return a < o.addr; });
  if (it != g_objects.begin()) --it;
  const std::vector<Range> &rs = g_bound.ranges();
  for (; it != g_objects.end() && it->addr < end; ++it) {
    if (it->size == 0) return false;  // its extent is unknown
    const uintptr_t x = std::max(it->addr, page), y = std::min(it->addr + it->size, end);
    if (x >= y) continue;
    auto r = std::upper_bound(rs.begin(), rs.end(), x, [](uintptr_t a, const Range &b) { return a < b.addr; });
    if (r == rs.begin() || std::prev(r)->end() < y) return false;
  }
  return true;
}

// ---- At the home ----

// Sends the page, or only the news that nobody has written it yet: then the requester's
// own initial image (the executable's data, or a fresh zero page) is the page, and the
// fetch moves no data (a master filling its matrices, a worker's first touch of its rows
// of the result).
// Whether the page must travel with its data (else the requester's initial image is it).
// `took`: marks were taken, so another thread than the application's must fence it
// before the page's data is read (dirty::fence_application).
bool with_data(uintptr_t page, Info &in, bool pristine, bool &took) {
  if (in.was_alone && !(state(page) & kEntry)) {
    std::vector<Range> taken;
    dirty::take(page, g_page, g_bound.ranges(), taken);
    if (!taken.empty()) in.written = took = true;
  } else if (dirty::any(page, g_page)) {
    in.written = true;
  }
  return in.written || !pristine;
}

void serve(uintptr_t page, Info &in, int r, bool pristine) {
  bool took = false;
  if (!with_data(page, in, pristine, took)) {
    PageData d{page, in.members, kUnwritten, 0};
    return protocol::send_body(r, MsgType::kPageData, d);
  }
  if (took && !t_app) dirty::fence_application();
  iovec b{reinterpret_cast<void *>(page), g_page};
  if (in.updated_in_join) {
    // Members' updates came in while the join waited for their acknowledgements. Those
    // a member sent once it knew of the requester went to the requester too, which keeps
    // them until the page comes and then applies them over it: right for the updates the
    // page does not hold yet, wrong for those it does, if a later write to the same
    // bytes, by a member that had not yet heard of the join (its notice overtaken by the
    // lock's hand-over), came here alone and is in the page too (test/rc/kept_updates.c).
    // So the page goes with the last flush of each member that this rank has applied.
    std::vector<Applied> applied;
    for (int q = 0; q < g_np; ++q)
      if (q != g_me && q != r && (in.members & bit(q)) && g_applied[static_cast<size_t>(q)] != 0)
        applied.push_back({q, 0, g_applied[static_cast<size_t>(q)]});
    PageData d{page, in.members, kApplied, static_cast<uint32_t>(applied.size())};
    const iovec head[2] = {{&d, sizeof d}, {applied.data(), applied.size() * sizeof(Applied)}};
    transport::send(r, MsgType::kPageData, std::span<const iovec>(head, applied.empty() ? 1 : 2),
                    std::span<const iovec>(&b, 1));
    return;
  }
  // The page's bytes and nothing else, the copyset in the header's clock field (which
  // this protocol has no other use for; the page is the one the requester waits for):
  // with a head the payload would not fit shm's inject size, and the message would go by
  // CMA, about twice as slow as the two injects of a page alone (docs/PERFORMANCE.md, "Figures behind the code").
  transport::send(r, MsgType::kPageData, {}, std::span<const iovec>(&b, 1), in.members);
}

// delay_joins: the rank whose notices leave late, by how much, and the threads that send
// them (joined at stop).
int g_delay_to = -1;
unsigned g_delay_ms = 0;
std::vector<std::thread> &g_delayed = *new std::vector<std::thread>;

void begin_join(uintptr_t page, Info &in, int r, bool pristine) {
  in.updated_in_join = false;
  uint64_t others = in.members & ~bit(g_me) & ~bit(r);
  in.was_alone = (in.members & ~bit(g_me)) == 0;
  in.members |= bit(r);
  refresh(page);
  if (others == 0) return serve(page, in, r, pristine);
  in.joining = r;
  in.joining_pristine = pristine;
  in.acks_left = __builtin_popcountll(others);
  MemberMsg m{page, r, 0};
  for (int q = 0; q < g_np; ++q) {
    if (!(others & bit(q))) continue;
    if (q == g_delay_to) {
      g_delayed.emplace_back([q, m] {
        std::this_thread::sleep_for(std::chrono::milliseconds(g_delay_ms));
        transport::as_handler([&] { protocol::send_body(q, MsgType::kCopysetJoin, m); });
      });
      continue;
    }
    protocol::send_body(q, MsgType::kCopysetJoin, m);
  }
}

// ---- Homes where the data is first used ----
//
// A heap page's home is at first the rank that allocated it (its partition holds it).
// A PARMACS program allocates everything on rank 0 and leaves most of it for the other
// ranks to fill: with the allocator as home, every write of theirs went to rank 0 at
// every release (OCEAN at two ranks: 101 MB of rank 1's 104), though rank 0 never reads
// most of it. So the first rank to ask for a page the allocator has never touched
// becomes its home: the page moves to it with no data (both initial images are zeros),
// and the allocator drops its copy. The allocator knows where each page went and sends
// later requests on to the home (forward), behind the page it gave (a sender's messages
// arrive in order); a rank that gets a page from a rank other than the allocator learns
// the home from it. An allocator that fetches back a page it gave uses the block itself
// (RADIX's keys, which both ranks scatter into): it gives no more pages of that block
// (g_blocks_used_here), and later first users join its copy instead, which spares it a
// fault for each page it would otherwise fetch back.
//
// "Never touched" is asked of the kernel, not of the dirty marks: the allocator first
// takes the page away from its own application (PROT_NONE; mprotect returns after the
// TLB shootdown), then asks mincore whether the page is in memory. An anonymous page no
// instruction has touched is not (a read maps it too), and a store after the protection
// faults and waits, then fetches the page from its new home. A store whose mark the
// compiled code has not yet set would be missed by the marks; it is not by mincore.

// Whether this rank, the allocator and still the home, may give `page` to `r`: on the
// heap, in a live block, here alone, nothing under way, never written, and r holds the
// page's initial image. (Not yet whether it was touched: take_untouched.)
bool may_give(uintptr_t page, bool pristine) {
  if (!pristine || is_static(page) || heap::owner_of(page) != g_me || home_of(page) != g_me) return false;
  const uint8_t s = state(page);
  if ((s & (kPresent | kMember)) != (kPresent | kMember) || (s & (kEntry | kPartlyBound | kFrozen | kHadCopy)))
    return false;
  auto it = g_info.find(page);
  if (it != g_info.end()) {
    const Info &in = it->second;
    if (in.joining >= 0 || in.members != bit(g_me) || in.written || flush_us_of(in) != 0) return false;
  } else if (protocol::model() == protocol::Model::kProcessor) {
    return false;
  }
  uintptr_t base, caller;
  size_t size;
  return heap::block_of(page, &base, &size, &caller) && !g_blocks_used_here.count(base) &&
         !dirty::any(page, g_page);
}

// Takes the pages of `pages` (sorted) from this rank's application, frozen (a fault there
// waits: copysets.hpp, "issue order"), and sorts them into those it has never touched
// and the others. The caller gives the first away (give) and hands the second back
// (thaw), then ends the freeze of all (end_freeze): a store that faulted meanwhile then
// finds the page here, or fetches it from its new home.
std::vector<uintptr_t> take_untouched(const std::vector<uintptr_t> &pages, std::vector<uintptr_t> &touched) {
  std::vector<uintptr_t> kept;
  for (uintptr_t q : pages)
    g_state[index_of(q)].store(static_cast<uint8_t>(state(q) | kFrozen), std::memory_order_seq_cst);
  for (size_t i = 0; i < pages.size();) {
    size_t j = i + 1;
    while (j < pages.size() && pages[j] == pages[j - 1] + g_page) ++j;
    protect_pages("copyset fault", pages[i], (j - i) * g_page, PROT_NONE);
    std::vector<unsigned char> in_memory(j - i);
    if (mincore(reinterpret_cast<void *>(pages[i]), (j - i) * g_page, in_memory.data()) != 0)
      std::fill(in_memory.begin(), in_memory.end(), 1);
    for (size_t k = i; k < j; ++k) (in_memory[k - i] & 1 ? touched : kept).push_back(pages[k]);
    i = j;
  }
  return kept;
}

// `page` is r's now: this rank forgets it.
void give(uintptr_t page, int r) {
  learn_home(page, r);
  g_info.erase(page);
  set_state(page, 0);
  refresh(page);
}

// Read-ahead (page_fault.cpp, fetch): the pages a requester asked for after the one it
// faulted on go to it in one message, before the answer for that page (a sender's
// messages arrive in order, and the requester's fetch ends with that answer). A page
// goes only if this rank holds it alone and nothing is under way for it: its join then
// needs nobody's acknowledgement, and no other rank can have an update of it on the way
// to the requester. The others are left out silently; they fault as usual when touched.
void serve_ahead(uintptr_t page, uint64_t ahead, uint64_t pristine, int r) {
  AheadData head{{page, 0, kAhead, 0}, 0, 0};
  std::vector<uintptr_t> pages, givable;
  for (ahead &= ~uint64_t{1}; ahead != 0; ahead &= ahead - 1) {
    const int i = __builtin_ctzll(ahead);
    const uintptr_t q = page + static_cast<uintptr_t>(i) * g_page;
    if (q >= window::kEnd) break;
    if (home_of(q) != g_me) continue;  // the requester's view of a heap page's home is old
    const uint8_t s = state(q);
    if (!(s & kPresent) || (s & (kEntry | kPartlyBound | kFrozen))) continue;
    // Heap not yet handed out is committed too; a copy of it would draw updates for data
    // this rank allocates later, which the requester never asked for. (A home that did
    // not allocate the page got it from within a block.)
    uintptr_t base, caller;
    size_t size;
    if (!is_static(q) && heap::owner_of(q) == g_me && !heap::block_of(q, &base, &size, &caller)) continue;
    if (g_state[index_of(q)].load(std::memory_order_relaxed) == 0) set_state(q, s);
    Info &in = info(q);
    if (in.joining >= 0 || (in.members & ~bit(g_me)) != 0 || flush_us_of(in) != 0) continue;
    pages.push_back(q);
    if (may_give(q, (pristine >> i & 1) != 0)) givable.push_back(q);
  }
  // Untouched pages of the block the requester faulted in become its own; beyond that
  // block it is not known to be their first user, and they are left out (not copied:
  // its writes to a copy would come here at every release).
  uintptr_t base = 0, caller;
  size_t size = 0;
  if (!givable.empty() && !heap::block_of(page, &base, &size, &caller)) base = size = 0;
  std::vector<uintptr_t> touched;
  std::vector<uintptr_t> given = take_untouched(givable, touched);
  for (uintptr_t q : given)
    if (q + g_page > base + size) touched.push_back(q);  // untouched, but not the requester's block
  thaw(touched);
  std::vector<iovec> data;
  bool took = false;
  for (uintptr_t q : pages) {
    const uint64_t b = bit(static_cast<int>((q - page) / g_page));
    if (std::binary_search(given.begin(), given.end(), q)) {
      if (q + g_page > base + size) continue;
      give(q, r);
      head.d.members |= b;
      head.homed |= b;
      continue;
    }
    Info &in = info(q);
    in.was_alone = true;
    in.members |= bit(r);
    refresh(q);
    head.d.members |= b;
    if (with_data(q, in, (pristine & b) != 0, took)) {
      head.with_data |= b;
      data.push_back({reinterpret_cast<void *>(q), g_page});
    }
  }
  if (took && !t_app) dirty::fence_application();
  end_freeze(givable);
  if (head.d.members == 0) return;
  iovec hv{&head, sizeof head};
  transport::send(r, MsgType::kPageData, std::span<const iovec>(&hv, 1), data);
}

// The requests that waited for a join or an offer of the page to end, one join at a time.
void serve_waiting(uintptr_t page, Info &in) {
  while (in.joining < 0 && !in.waiting.empty()) {
    auto [next, pristine] = in.waiting.front();
    in.waiting.erase(in.waiting.begin());
    begin_join(page, in, next, pristine);
  }
}

void (*g_before_serving)() = nullptr;

void on_page_request(const Header &h, Bytes payload) {
  PageRequest req = protocol::read_body<PageRequest>(h, payload);
  uintptr_t page = checked_page(h, req.page);
  if (g_before_serving && shortest_flush_us() != 0) g_before_serving();
  const int from = req.requester < 0 ? h.sender : req.requester;
  trace::Span serving(trace::Kind::kServe, from, page);
  serving.count = static_cast<uint64_t>(__builtin_popcountll(req.ahead | 1));
  if (from >= g_np || from == g_me || (req.requester >= 0 && h.sender != heap::owner_of(page)))
    protocol::malformed(h, "a request forwarded by a rank that did not allocate the page, or for this rank",
        protocol::page_object(page));
  std::lock_guard<std::mutex> g(g_mu);
  if (home_of(page) != g_me) {
    // This rank allocated the page and gave it to its first user: on to that home.
    if (req.requester >= 0 || is_static(page) || heap::owner_of(page) != g_me)
      protocol::malformed(h, "this rank is not the page's home", protocol::page_object(page));
    req.requester = h.sender;
    return protocol::send_body(home_of(page), MsgType::kPageRequest, req);
  }
  if (req.ahead & ~uint64_t{1}) serve_ahead(page, req.ahead, req.pristine, from);
  const uint8_t s = state(page);
  if (!(s & kPresent)) {  // heap this rank never allocated
    PageData d{page, 0, kNotShared, 0};
    return protocol::send_body(from, MsgType::kPageData, d);
  }
  // Spelled out, so that state() stops asking the window (a lock and a lookup) for it.
  if (g_state[index_of(page)].load(std::memory_order_relaxed) == 0) set_state(page, s);
  Info &in = info(page);
  if (in.joining >= 0 || in.offered) {
    in.waiting.emplace_back(from, (req.pristine & 1) != 0);
    return;
  }
  if (may_give(page, (req.pristine & 1) != 0)) {
    std::vector<uintptr_t> touched;
    const bool untouched = !take_untouched({page}, touched).empty();
    if (untouched) give(page, from);
    else thaw(touched);
    end_freeze({page});
    if (untouched) {
      PageData d{page, bit(from), kHomed, 0};
      return protocol::send_body(from, MsgType::kPageData, d);
    }
  }
  begin_join(page, in, from, (req.pristine & 1) != 0);
}

void on_ack(const Header &h, Bytes payload) {
  uintptr_t page = checked_page(h, protocol::read_body<PageMsg>(h, payload).page);
  std::lock_guard<std::mutex> g(g_mu);
  Info &in = info(page);
  if (in.joining < 0 || in.acks_left <= 0) protocol::malformed(h, "no join of that page is under way",
      protocol::page_object(page));
  if (--in.acks_left > 0) return;
  int r = in.joining;
  in.joining = -1;
  serve(page, in, r, in.joining_pristine);
  serve_waiting(page, in);
}

void on_leave(const Header &h, Bytes payload) {
  uintptr_t page = checked_page(h, protocol::read_body<PageMsg>(h, payload).page);
  if (home_of(page) != g_me) protocol::malformed(h, "this rank is not the page's home",
      protocol::page_object(page));
  std::lock_guard<std::mutex> g(g_mu);
  Info &in = info(page);
  in.members &= ~bit(h.sender);
  refresh(page);
  MemberMsg m{page, h.sender, 0};
  const uint64_t others = in.members & ~bit(g_me);
  for (int q = 0; q < g_np; ++q)
    if (others & bit(q)) protocol::send_body(q, MsgType::kCopysetLeft, m);
  // After every update this rank sent the leaver (a sender's messages arrive in order);
  // the members named answer the same way (on_left).
  LeftAck a{page, others};
  protocol::send_body(h.sender, MsgType::kCopysetLeftAck, a);
}

// ---- Homes that move to their writer ----
//
// A PARMACS program's master allocates and fills the data, then each worker writes its
// part at every step. The master, still the home of pages it no longer uses, drew every
// write to them at every flush (LU at two ranks: 11.9 MB of rank 1's 12 MB of updates,
// though rank 0 reads only the blocks on each step's perimeter). So an allocator that is
// still a page's home offers it to the one other member when, at kMoveAfter of its
// flushes in a row, that member's updates of the page came and its own marks there were
// none: the writer becomes the home, alone in the copyset, and the allocator drops its
// copy (its next touch fetches the page from the new home, as any non-member's does). A
// page moves once at most: only the allocator offers, and it goes on sending requests
// to the home it gave the page to (forward), as for homes by first use.
//
// An offer, then an answer: the writer takes a page only if it still holds it (its
// mw_discard may cross the offer). Until the answer the allocator keeps the page as it
// is, applying what comes, and holds requests for it back, as during a join. Its
// application thread waits for the answer in the flush that made the offer, so it
// touches none of the pages meanwhile, and the writer's updates sent before it took a
// page are ahead of the answer: they land on the allocator's copy before it is dropped.
constexpr uint8_t kMoveAfter = 2;  // after one flush: RADIX 98 -> 120 ms (pages it writes by turns)

std::vector<uintptr_t> &g_updated = *new std::vector<uintptr_t>;  // pages with updaters
std::vector<std::vector<uintptr_t>> &g_offered = *new std::vector<std::vector<uintptr_t>>;  // by writer (init)
std::atomic<int> g_offers_out{0};  // offers not yet answered

// Held here as a copyset page and nothing else: present, a member, no byte bound, no
// freeze or fetch under way. Only such a page is offered, or taken.
bool held_plainly(uint8_t s) {
  return (s & (kPresent | kMember)) == (kPresent | kMember) && !(s & (kEntry | kPartlyBound | kFrozen | kFetching));
}

// An update of `page` from `sender` came to this rank, its home (under g_mu).
void note_updater(uintptr_t page, Info &in, int sender) {
  if (in.updaters == 0 && !is_static(page) && heap::owner_of(page) == g_me) g_updated.push_back(page);
  in.updaters |= bit(sender);
}

// At a flush, before its marks are taken: counts the streak of each page updated since
// the last flush and offers those whose streak is long enough (under g_mu).
void offer_homes_locked() {
  for (uintptr_t page : g_updated) {
    auto it = g_info.find(page);
    if (it == g_info.end()) continue;
    Info &in = it->second;
    const uint64_t who = in.updaters;
    in.updaters = 0;
    const bool sole = __builtin_popcountll(who) == 1 && in.members == (bit(g_me) | who) &&
                      !dirty::any(page, g_page);
    if (!sole) {
      in.streak = 0;
      continue;
    }
    const int w = __builtin_ctzll(who);
    if (in.writer != w) in.streak = 0;
    in.writer = static_cast<int8_t>(w);
    if (++in.streak < kMoveAfter) continue;
    if (!held_plainly(state(page)) || in.joining >= 0 || in.offered || !in.waiting.empty() ||
        flush_us_of(in) != 0 || home_of(page) != g_me)
      continue;
    in.offered = true;
    g_offered[static_cast<size_t>(w)].push_back(page);
  }
  g_updated.clear();
  for (int w = 0; w < g_np; ++w) {
    std::vector<uintptr_t> &pages = g_offered[static_cast<size_t>(w)];
    if (pages.empty()) continue;
    std::sort(pages.begin(), pages.end());
    g_offers_out.fetch_add(1, std::memory_order_relaxed);
    static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "the offer's pages go as they are kept");
    iovec b{pages.data(), pages.size() * sizeof(uintptr_t)};
    transport::send(w, MsgType::kHomeOffer, {}, std::span<const iovec>(&b, 1));
  }
}

// At the writer: takes each page it still holds as the allocator gave it, and answers
// with a bit a page (bit i of word i / 64: the offer's page i).
void on_home_offer(const Header &h, Bytes payload) {
  if (payload.empty() || payload.size() % sizeof(uint64_t) != 0)
    protocol::malformed(h, "not a list of pages");
  const size_t n = payload.size() / sizeof(uint64_t);
  std::vector<uint64_t> taken((n + 63) / 64);
  std::lock_guard<std::mutex> g(g_mu);
  for (size_t i = 0; i < n; ++i) {
    uint64_t p;
    std::memcpy(&p, payload.data() + i * sizeof p, sizeof p);
    const uintptr_t page = checked_page(h, p);
    if (is_static(page) || heap::owner_of(page) != h.sender)
      protocol::malformed(h, "a page the sender did not allocate", protocol::page_object(page));
    if (!held_plainly(state(page)) || home_of(page) != h.sender) continue;  // it left meanwhile (mw_discard)
    Info &in = info(page);
    if (in.members != (bit(g_me) | bit(h.sender))) continue;
    learn_home(page, g_me);
    in.members = bit(g_me);
    in.written = true;
    refresh(page);
    taken[i / 64] |= uint64_t{1} << (i % 64);
  }
  iovec b{taken.data(), taken.size() * sizeof(uint64_t)};
  transport::send(h.sender, MsgType::kHomeAnswer, {}, std::span<const iovec>(&b, 1));
}

// At the allocator: drops the pages taken (requests held back go on to their new home)
// and keeps the others, serving what waited.
void on_home_answer(const Header &h, Bytes payload) {
  std::lock_guard<std::mutex> g(g_mu);
  std::vector<uintptr_t> &pages = g_offered[static_cast<size_t>(h.sender)];
  if (pages.empty()) protocol::malformed(h, "an answer to no offer");
  if (payload.size() != (pages.size() + 63) / 64 * sizeof(uint64_t))
    protocol::malformed(h, "an answer whose length does not match the offer's");
  std::vector<uintptr_t> dropped;
  for (size_t i = 0; i < pages.size(); ++i) {
    uint64_t word;
    std::memcpy(&word, payload.data() + i / 64 * sizeof word, sizeof word);
    const uintptr_t page = pages[i];
    Info &in = info(page);
    in.offered = false;
    if (!(word >> (i % 64) & 1)) {
      serve_waiting(page, in);
      continue;
    }
    const std::vector<std::pair<int, bool>> waiting = std::move(in.waiting);
    learn_home(page, h.sender);
    g_info.erase(page);
    set_state(page, kHadCopy);  // its bytes here are stale from now on
    refresh(page);
    dropped.push_back(page);
    for (const auto &[r, pristine] : waiting) {
      PageRequest req{page, pristine ? 1u : 0u, 1, r, 0};
      protocol::send_body(h.sender, MsgType::kPageRequest, req);
    }
  }
  pages.clear();
  for (size_t i = 0; i < dropped.size();) {  // pages offered in address order
    size_t j = i + 1;
    while (j < dropped.size() && dropped[j] == dropped[j - 1] + g_page) ++j;
    protect_pages("moving a page's home", dropped[i], (j - i) * g_page, PROT_NONE);
    i = j;
  }
  g_offers_out.fetch_sub(1, std::memory_order_release);
}

// ---- At the members ----

// Only a page's home changes its copyset, and a member knows the home (it learnt it from
// the page's data): a notice from another rank would add or drop a member behind the
// home's back, and updates would then go to a rank that lacks the page, or miss one that
// holds it. A rank that has just left may no longer know the home, and answers anyway.
void check_from_home(const Header &h, uintptr_t page) {
  if ((state(page) & kMember) && home_of(page) != h.sender)
    protocol::malformed(h, "a member change not from the page's home", protocol::page_object(page));
}

void on_join(const Header &h, Bytes payload) {
  MemberMsg m = protocol::read_body<MemberMsg>(h, payload);
  uintptr_t page = checked_page(h, m.page);
  if (m.rank < 0 || m.rank >= g_np) protocol::malformed(h, "no such rank", protocol::page_object(page));
  std::lock_guard<std::mutex> g(g_mu);
  check_from_home(h, page);
  if (state(page) & kMember) {  // a rank that has just left answers all the same
    info(page).members |= bit(m.rank);
    refresh(page);
  }
  PageMsg ack{page};
  protocol::send_body(h.sender, MsgType::kCopysetAck, ack);
}

void on_left(const Header &h, Bytes payload) {
  MemberMsg m = protocol::read_body<MemberMsg>(h, payload);
  uintptr_t page = checked_page(h, m.page);
  if (m.rank < 0 || m.rank >= g_np) protocol::malformed(h, "no such rank", protocol::page_object(page));
  if (m.rank == g_me) protocol::malformed(h, "this rank's own leave", protocol::page_object(page));
  std::lock_guard<std::mutex> g(g_mu);
  check_from_home(h, page);
  info(page).members &= ~bit(m.rank);
  refresh(page);
  // Behind every update this rank sent the leaver before it heard (see leave()).
  LeftAck a{page, 0};
  protocol::send_body(m.rank, MsgType::kCopysetLeftAck, a);
}

// ---- At the rank that left ----

void on_left_ack(const Header &h, Bytes payload) {
  const LeftAck a = protocol::read_body<LeftAck>(h, payload);
  uintptr_t page = checked_page(h, a.page);
  std::lock_guard<std::mutex> g(g_mu);
  auto it = g_leaving.find(page);
  if (it == g_leaving.end()) protocol::malformed(h, "no leave of that page is under way",
      protocol::page_object(page));
  Leaving &l = it->second;
  if (h.sender == home_of(page)) {
    const uint64_t ranks = g_np == 64 ? ~uint64_t{0} : bit(g_np) - 1;
    if (l.home_answered || (a.others & (bit(g_me) | bit(h.sender) | ~ranks)))
      protocol::malformed(h, "a second answer, or members that are not other ranks of the job",
          protocol::page_object(page));
    l.home_answered = true;
    l.others = a.others;
  } else {
    if (a.others != 0 || (l.answered & bit(h.sender))) protocol::malformed(h, "a second answer from a member",
        protocol::page_object(page));
    l.answered |= bit(h.sender);
  }
  if (!l.home_answered) return;
  if (l.answered & ~l.others) protocol::malformed(h, "an answer from a rank that is not a member",
      protocol::page_object(page));
  if (l.answered != l.others) return;
  g_leaving.erase(it);
  g_leaving_count.fetch_sub(1, std::memory_order_release);
}

}  // namespace


size_t page_size() { return g_page; }

void set_before_serving(void (*push)()) { g_before_serving = push; }

void delay_joins(int to, unsigned ms) {
  std::lock_guard<std::mutex> g(g_mu);
  g_delay_to = to;
  g_delay_ms = ms;
}

void join_delayed_joins() {
  for (std::thread &t : g_delayed) t.join();
  g_delayed.clear();
}
bool enabled() { return g_enabled; }

namespace {

// The homes of static data: each object of the program's shared sections (from the
// executable's symbol table; the whole static data if it has none) is cut into one block
// per rank, in rank order from rank 0, so that rank r's band of an array split in P
// bands is homed at r; an object of fewer pages than ranks goes whole to the next rank
// round, so that small objects spread too. Blocks, not pages round the ranks: a rank's
// copies of other ranks' pages then lie in a few runs, each one mapping with its own
// protection (page by page, 512 MiB at two ranks took more mappings than
// vm.max_map_count allows); and a program that splits an array into one band per rank
// finds its band homed where it works on it, so that the band's pages are shared with
// nobody and its releases send nothing for them. A page two objects share belongs to
// the first. Read-only once copysets::init has made it: the fault handler reads it.
struct Segment {
  size_t first;  // page index in the window
  size_t count;  // pages
  int start;     // the rank of the first block (0 unless the object is small)
};
std::vector<Segment> &g_segments = *new std::vector<Segment>;

void place_static_homes() {
  const uintptr_t begin = window::layout().static_begin, end = window::layout().static_end;
  if (begin >= end) return;
  std::vector<image::Object> objs =
      image::objects_in("/proc/self/exe", {MW_SHARED_SECTION, MW_SHARED_BSS_SECTION});
  if (objs.empty()) objs.push_back({begin, end - begin});
  g_objects = objs;
  std::sort(g_objects.begin(), g_objects.end(),
            [](const image::Object &x, const image::Object &y) { return x.addr < y.addr; });
  size_t next = 0;  // the first page not yet placed
  int small = 0;  // the rank the next small object goes to
  for (const image::Object &o : objs) {
    if (o.addr < begin || o.addr + o.size > end) continue;
    const size_t first = std::max(next, index_of(page_of(o.addr)));
    const size_t last = index_of(page_of(o.addr + o.size - 1));
    if (first > last) continue;
    const size_t count = last - first + 1;
    int start = 0;
    if (count < static_cast<size_t>(g_np)) {
      start = small;
      small = (small + 1) % g_np;
    }
    g_segments.push_back({first, count, start});
    next = last + 1;
  }
}

int static_home(size_t index) {
  auto it = std::upper_bound(g_segments.begin(), g_segments.end(), index,
                             [](size_t i, const Segment &s) { return i < s.first; });
  if (it != g_segments.begin() && index < std::prev(it)->first + std::prev(it)->count) {
    const Segment &s = *std::prev(it);
    return static_cast<int>(((index - s.first) * static_cast<size_t>(g_np) / s.count +
                             static_cast<size_t>(s.start)) % static_cast<size_t>(g_np));
  }
  // Padding between objects, or data of a symbol without a size: rank 0, whose block
  // it usually adjoins (round the ranks, a large stretch would again take a mapping a
  // page).
  return 0;
}

}  // namespace

int home_of(uintptr_t page) {
  if (page < window::kBase) return -1;
  if (is_static(page)) return static_home(index_of(page));
  if (g_home) {
    const uint8_t h = g_home[index_of(page)].load(std::memory_order_acquire);
    if (h != 0) return h - 1;
  }
  return heap::owner_of(page);
}


void init() {
  g_np = protocol::nprocs();
  g_page = window::page_size();
  if (g_np > 64)
    fatal("mw_init", "release and processor consistency support up to 64 ranks, not %d", g_np);
  const size_t npages = (window::kEnd - window::kBase) / g_page;
  void *t = mmap(nullptr, npages, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (t == MAP_FAILED) fatal_errno("mw_init", "cannot map the copyset table (%zu bytes)", npages);
  g_state = static_cast<std::atomic<uint8_t> *>(t);
  t = mmap(nullptr, npages, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (t == MAP_FAILED) fatal_errno("mw_init", "cannot map the table of heap homes (%zu bytes)", npages);
  g_home = static_cast<std::atomic<uint8_t> *>(t);
  // Static data: the pages homed elsewhere wait for their first touch; one mprotect,
  // and one mapping, per run of them.
  place_static_homes();
  const uintptr_t end = window::layout().static_end;
  for (uintptr_t p = window::kBase; p < end;) {
    if (home_of(p) == g_me) {
      p += g_page;
      continue;
    }
    uintptr_t q = p + g_page;
    while (q < end && home_of(q) != g_me) q += g_page;
    protect_pages("mw_init", p, q - p, PROT_NONE);
    p = q;
  }
  // Processor consistency applies updates through it from the service thread; opened
  // now, as the application thread, before anything may fail to find /proc later.
  g_mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
  if (g_mem < 0)
    warn("mw_init", "cannot open /proc/self/mem (%s): updates of processor-consistent data keep "
         "per-location order only", std::strerror(errno));
  g_deferred.resize(static_cast<size_t>(g_np));
  g_applied.assign(static_cast<size_t>(g_np), 0);
  g_offered.resize(static_cast<size_t>(g_np));
  t_app = true;
  g_enabled = true;
  transport::on(MsgType::kPageRequest, on_page_request);
  transport::on(MsgType::kPageData, on_page_data);
  transport::on(MsgType::kCopysetJoin, on_join);
  transport::on(MsgType::kCopysetAck, on_ack);
  transport::on(MsgType::kCopysetLeave, on_leave);
  transport::on(MsgType::kCopysetLeft, on_left);
  transport::on(MsgType::kCopysetLeftAck, on_left_ack);
  transport::on(MsgType::kHomeOffer, on_home_offer);
  transport::on(MsgType::kHomeAnswer, on_home_answer);
  transport::on(MsgType::kUnbound, on_unbound);
  transport::on(MsgType::kUnboundAck, on_unbound_ack);
  protocol::PageHooks hooks;
  hooks.bound = bound;
  hooks.landing = place_entry;
  hooks.unbound = unbound;
  protocol::set_page_hooks(hooks);
}


void bound(const void *p, size_t len) {
  if (!g_enabled || protocol::model() != protocol::Model::kEntry) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p), b = a + len;
  const uintptr_t static_end = window::layout().static_end;
  std::lock_guard<std::mutex> g(g_mu);
  g_bound.add(a, len);
  for (uintptr_t page = page_of(a); page < b; page += g_page) {
    // Bytes past the end of the static data belong to nobody: they count as bound.
    const uintptr_t page_end = is_static(page) ? std::min(page + g_page, static_end) : page + g_page;
    const auto &rs = g_bound.ranges();  // sorted and merged: one range covers the page, or none
    auto it = std::upper_bound(rs.begin(), rs.end(), page, [](uintptr_t x, const Range &r) { return x < r.addr; });
    const bool whole = (it != rs.begin() && std::prev(it)->end() >= page_end) ||
                       (is_static(page) && objects_bound(page));
    uint8_t s = state(page);
    if (whole) {
      // Wholly bound now: its bytes move only with their objects, and a landing queued
      // while it was bound in part must not fetch it (the home's copy of bytes bound
      // here would overwrite those a crossing or a grant brought).
      if (!(s & kPresent)) make_rw(page);
      set_state(page, static_cast<uint8_t>((s & ~(kPartlyBound | kFetching | kLanded)) | kPresent | kEntry | kHadCopy));
    } else if ((s & kEntry) && !(s & kMember) && home_of(page) != g_me) {
      // Data bound elsewhere landed here before this rank made the binding (another
      // rank's grant or crossing came first), and the page was taken for wholly bound:
      // it is a page this rank holds no copy of with landed bytes in it, as place_entry
      // leaves one.
      land(page, static_cast<uint8_t>((s & ~kEntry) | kPartlyBound | kHadCopy));
    } else {
      // Bound and unbound bytes share the page: it stays a copyset page (fetched at its
      // first touch), and its bound bytes stay out of its pending updates.
      set_state(page, static_cast<uint8_t>((s & ~kEntry) | kPartlyBound | ((s & kEntry) ? kMember : 0)));
    }
    refresh(page);
  }
}

std::string written_before_binding(const void *p, size_t len, bool *late) {
  *late = false;
  if (!g_enabled || protocol::model() != protocol::Model::kEntry) return "";
  const uintptr_t a = reinterpret_cast<uintptr_t>(p), b = a + len;
  window::commit_marks(a, b);
  if (dirty::next(a, b, true) < b) return "this rank has written to it";
  std::lock_guard<std::mutex> g(g_mu);
  for (uintptr_t page = (a + g_page - 1) / g_page * g_page; page + g_page <= b; page += g_page) {
    if (home_of(page) != g_me) continue;
    auto it = g_info.find(page);
    if (it != g_info.end() && it->second.unbound) {
      *late = true;
      return "another rank has already acquired the lock it was bound to and unbound it (this "
             "rank is the home of " + protocol::page_object(page) + ")";
    }
    if (it != g_info.end() && it->second.written)
      return "it has been written since the job began (this rank is the home of " +
             protocol::page_object(page) + ", which holds the writes released to it)";
  }
  return "";
}

std::vector<uintptr_t> &g_landed = *new std::vector<uintptr_t>;
std::atomic<size_t> g_landed_count{0};

void place_entry(uintptr_t p, size_t len) {
  if (!g_enabled) return;
  for (uintptr_t page = page_of(p); page < p + len; page += g_page) {
    uint8_t s = state(page);
    if (s & kPresent) continue;
    make_rw(page);
    if (!(s & kPartlyBound)) {
      set_state(page, static_cast<uint8_t>(s | kPresent | kEntry | kHadCopy));
      continue;
    }
    // Bound in part: its other bytes are release consistent, and this rank holds no copy
    // of them. A fetch under way keeps the landed bytes (it copies only the unbound
    // ones); else the application thread fetches the page at its next acquire, crossing
    // or flush (join_landed).
    if (s & kFetching) continue;
    std::lock_guard<std::mutex> g(g_mu);
    land(page, static_cast<uint8_t>(s | kPresent | kHadCopy));
  }
}

void land(uintptr_t page, uint8_t s) {
  set_state(page, static_cast<uint8_t>(s | kLanded));
  g_landed.push_back(page);
  g_landed_count.store(g_landed.size(), std::memory_order_release);
}

void leave(const void *p, size_t len) {
  if (!g_enabled) return;
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::unique_lock<std::mutex> g(g_mu);
  for (uintptr_t page = page_of(a); page < a + len; page += g_page) {
    uint8_t s = state(page);
    int home = home_of(page);
    if (home == g_me || !(s & kMember) || (s & (kEntry | kPartlyBound))) continue;
    set_state(page, kHadCopy);  // its bytes here are stale now: fetch them in full next time
    // The copyset is forgotten (a rank that joins again learns it from the home), but not
    // mw_processor_consistent's interval: the page stays processor consistent here.
    const unsigned flush_us = info(page).flush_us;
    g_info.erase(page);
    if (flush_us) info(page).flush_us = flush_us;
    refresh(page);
    make_none(page);
    g_leaving.try_emplace(page);
    g_leaving_count.fetch_add(1, std::memory_order_relaxed);
    PageMsg m{page};
    protocol::send_body(home, MsgType::kCopysetLeave, m);
  }
  g.unlock();
  // A member that has not yet heard of the leave still sends this rank its updates of
  // the page. Were one still on its way when this rank fetched the page again, it would
  // land over the newer page (or be kept and applied over it) and undo what was written
  // since: messages of different senders keep no order. Every member answers the leave
  // directly, behind whatever it sent before, so once all have answered nothing old of
  // the page can still arrive, and the updates that do arrive are dropped meanwhile.
  if (g_leaving_count.load(std::memory_order_acquire) > 0)
    transport::progress_until([] { return g_leaving_count.load(std::memory_order_acquire) == 0; });
}

void drop_entry(const Bindings &drop) {
  if (!g_enabled) return;
  std::lock_guard<std::mutex> g(g_mu);
  for (const Range &r : drop.ranges()) {
    const uintptr_t first = (r.addr + g_page - 1) & ~(g_page - 1);
    for (uintptr_t page = first; page + g_page <= r.end(); page += g_page) {
      const uint8_t s = state(page);
      if (home_of(page) == g_me || (s & (kPresent | kEntry)) != (kPresent | kEntry)) continue;
      // The next grant writes what the lock ships over whatever the page holds; until
      // then it reads as the program's initial image (a private mapping's pages).
      if (madvise(reinterpret_cast<void *>(page), g_page, MADV_DONTNEED) != 0)
        fatal_errno("mw_discard", "cannot drop page 0x%lx", static_cast<unsigned long>(page));
    }
  }
}

void processor_consistent(const void *p, size_t len, unsigned us) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  // Every rank makes the call alike, so the rank whose part of the heap a page lies in
  // can tell whether it allocated it (the window holds more than shared memory).
  for (uintptr_t page = page_of(a); page < a + len; page += g_page) {
    const int home = home_of(page);
    if (home < 0 || (home == g_me && !is_static(page) &&
                     !window::accessible(reinterpret_cast<void *>(page), g_page)))
      fatal("mw_processor_consistent",
            "[%p, +%zu) is not in shared memory: page %p is neither MW_SHARED data nor in a "
            "block from mw_malloc", p, len, reinterpret_cast<void *>(page));
  }
  std::lock_guard<std::mutex> g(g_mu);
  for (uintptr_t page = page_of(a); page < a + len; page += g_page) info(page).flush_us = us;
  if (g_min_flush_us == 0 || us < g_min_flush_us) g_min_flush_us = us;
}

void written(uintptr_t page) {
  if (home_of(page) != g_me) return;
  std::lock_guard<std::mutex> g(g_mu);
  Info &in = info(page);
  in.written = true;
  in.streak = 0;
}

void offer_homes() {
  if (!g_enabled || protocol::checking_races()) return;
  std::lock_guard<std::mutex> g(g_mu);
  if (!g_updated.empty()) offer_homes_locked();
}

void await_answers() {
  if (g_offers_out.load(std::memory_order_acquire) == 0) return;
  waits::Waiting waiting(waits::Kind::kUpdateAcks, 0, -1);  // part of the flush, as its acknowledgements
  transport::progress_until([] { return g_offers_out.load(std::memory_order_acquire) == 0; });
}

size_t shared_page_count() { return g_shared_count.load(std::memory_order_acquire); }

void shared_pages(bool pc_only, std::vector<uintptr_t> &out) {
  std::lock_guard<std::mutex> g(g_mu);
  out.clear();
  if (pc_only) {
    for (const auto &[page, in] : g_shared)
      if (flush_us_of(*in) != 0) out.push_back(page);
    return;
  }
  if (g_shared_list_stale) {
    g_shared_list.clear();
    for (const auto &entry : g_shared) g_shared_list.push_back(entry.first);
    g_shared_list_stale = false;
  }
  out.assign(g_shared_list.begin(), g_shared_list.end());
}

unsigned shortest_flush_us() {
  if (protocol::model() == protocol::Model::kProcessor)
    return g_min_flush_us ? std::min(g_min_flush_us, protocol::pc_interval_us()) : protocol::pc_interval_us();
  return g_min_flush_us;
}

void take(std::span<const uintptr_t> marked, bool pc_only, bool copy, Snapshot &out) {
  std::lock_guard<std::mutex> g(g_mu);
  std::vector<SharedPage> &pages = out.pages;
  std::vector<uintptr_t> frozen, more;
  auto add = [&](uintptr_t page, const Info &in, unsigned us) {
    const bool partly = (state(page) & kPartlyBound) != 0;
    pages.push_back({page, in.members, us, partly});
    if (copy && !partly) more.push_back(page);
  };
  for (uintptr_t page : marked) {
    auto it = g_shared.find(page);
    if (it == g_shared.end()) continue;
    const unsigned us = flush_us_of(*it->second);
    if (!pc_only || us != 0) add(page, *it->second, us);
  }
  // The application's stores that a frozen page holds must come with every store it
  // issued before them: those may lie on processor-consistent pages that had no marks
  // when `marked` was made. They have marks by the time the later store's page is frozen
  // (a store's mark is set before the next store is issued), so freeze every such page
  // too, and look again, until a look after the last freeze finds no page with marks
  // left out. A store to a page after its freeze faults and waits, so none issued after
  // it is in memory: what the frozen pages hold is a prefix of the application's stores.
  while (!more.empty()) {
    freeze(more, PROT_READ);
    frozen.insert(frozen.end(), more.begin(), more.end());
    more.clear();
    for (const auto &[page, in] : g_shared) {
      const uint8_t st = g_state[index_of(page)].load(std::memory_order_relaxed);
      if (st & (kFrozen | kPartlyBound)) continue;
      const unsigned us = flush_us_of(*in);
      if (us == 0 || !dirty::any(page, g_page)) continue;
      add(page, *in, us);  // not frozen and not bound in part: not among `pages` yet
    }
  }
  std::sort(pages.begin(), pages.end(), [](const SharedPage &x, const SharedPage &y) { return x.page < y.page; });
  std::sort(frozen.begin(), frozen.end());
  const std::vector<Range> none;
  for (const SharedPage &p : pages) {
    out.first.push_back(out.runs.size());
    dirty::take(p.page, g_page, p.partly_bound ? g_bound.ranges() : none, out.runs, t_app && !copy);
  }
  out.first.push_back(out.runs.size());
  if (!t_app && !out.runs.empty()) dirty::fence_application();
  if (!copy) return;
  size_t total = 0;
  for (const Range &r : out.runs) total += r.len;
  out.data.resize(total);
  std::byte *to = out.data.data();
  for (const Range &r : out.runs) {
    std::memcpy(to, reinterpret_cast<const void *>(r.addr), r.len);
    to += r.len;
  }
  if (!frozen.empty()) thaw(frozen);
}

namespace {

bool processor_consistent_here(uintptr_t page) {
  // No processor-consistent data here at all (the usual case): no lookup per run.
  if (g_min_flush_us == 0 && protocol::model() != protocol::Model::kProcessor) return false;
  auto it = g_info.find(page);
  if (it != g_info.end()) return flush_us_of(it->second) != 0;
  return protocol::model() == protocol::Model::kProcessor && protocol::pc_interval_us() != 0;
}

// A run of one aligned word (1, 2, 4 or 8 bytes) lands in one store: the application
// sees all of it or none, with no freeze (a flag, a counter).
template <class T>
bool store_word(const Piece &p) {
  if (p.len != sizeof(T) || p.addr % sizeof(T) != 0) return false;
  T v;
  std::memcpy(&v, p.data, sizeof v);
  __atomic_store_n(reinterpret_cast<T *>(p.addr), v, __ATOMIC_RELAXED);
  return true;
}
bool one_store(const Piece &p) {
  return store_word<uint64_t>(p) || store_word<uint32_t>(p) || store_word<uint16_t>(p) ||
         store_word<uint8_t>(p);
}

// Runs on processor-consistent pages, all at once as the application sees them (under
// g_mu). From a thread other than the application's, their pages are made inaccessible
// while the bytes are written through /proc/self/mem.
void land_together(std::vector<Piece> &pc) {
  if (pc.empty() || (pc.size() == 1 && one_store(pc[0]))) return;
  if (t_app || g_mem < 0) {
    for (const Piece &p : pc) std::memcpy(reinterpret_cast<void *>(p.addr), p.data, p.len);
    return;
  }
  std::sort(pc.begin(), pc.end(), [](const Piece &x, const Piece &y) { return x.addr < y.addr; });
  std::vector<uintptr_t> pages;
  for (const Piece &p : pc)
    if (pages.empty() || pages.back() != page_of(p.addr)) pages.push_back(page_of(p.addr));
  freeze(pages, PROT_NONE);
  std::vector<std::byte> span;
  for (size_t i = 0; i < pc.size();) {
    size_t j = i + 1;
    while (j < pc.size() && page_of(pc[j].addr) == page_of(pc[i].addr)) ++j;
    if (j - i <= 2) {  // a system call a run
      for (size_t k = i; k < j; ++k) mem_io(true, pc[k].addr, const_cast<std::byte *>(pc[k].data), pc[k].len);
    } else {  // more: the page's bytes from the first run to the last, read, overlaid, written
      const uintptr_t from = pc[i].addr, to = pc[j - 1].addr + pc[j - 1].len;
      span.resize(to - from);
      mem_io(false, from, span.data(), span.size());
      for (size_t k = i; k < j; ++k) std::memcpy(span.data() + (pc[k].addr - from), pc[k].data, pc[k].len);
      mem_io(true, from, span.data(), span.size());
    }
    i = j;
  }
  thaw(pages);
}

}  // namespace

void apply_update(int sender, std::span<const Piece> pieces, bool last, uint64_t flush) {
  std::lock_guard<std::mutex> g(g_mu);
  auto &later = g_deferred[static_cast<size_t>(sender)];
  std::vector<Piece> pc;
  auto one = [&](const Piece &p) {
    const uintptr_t page = page_of(p.addr);
    const uint8_t s = state(page);
    // A page fetched while present (bound data landed on it first: kLanded) takes its
    // updates after its data, as an absent one does.
    if ((s & kPresent) && !(s & kFetching)) {
      if (home_of(page) == g_me) {
        Info &in = info(page);
        in.written = true;
        if (in.joining >= 0) in.updated_in_join = true;
        note_updater(page, in, sender);
      }
      if (!(s & kPartlyBound) && processor_consistent_here(page)) {
        if (last) pc.push_back(p);
        else later.emplace_back(p.addr, std::vector<std::byte>(p.data, p.data + p.len));
        return;
      }
      std::memcpy(reinterpret_cast<void *>(p.addr), p.data, p.len);
    } else if (s & kFetching) {
      g_kept.push_back({p.addr, sender, 0, std::vector<std::byte>(p.data, p.data + p.len)});
    }  // else: this rank left the copyset while the update was in flight
  };
  if (last)  // the flush's earlier messages first: their runs came first
    for (const auto &[addr, bytes] : later) one({addr, bytes.data(), bytes.size()});
  for (const Piece &p : pieces) one(p);
  if (!last) return;
  land_together(pc);
  later.clear();
  for (Kept &k : g_kept)
    if (k.sender == sender && k.flush == 0) k.flush = flush;
  g_applied[static_cast<size_t>(sender)] = flush;
}

}  // namespace mw::copysets
