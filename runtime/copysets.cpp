#include "copysets.hpp"

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

#include "dirty_map.hpp"
#include "error.hpp"
#include "heap.hpp"
#include "protocol.hpp"
#include "stats.hpp"
#include "transport.hpp"
#include "window.hpp"

namespace mw::copysets {
namespace {

using transport::Header;
using transport::MsgType;
using Bytes = std::span<const std::byte>;

// A page's state byte.
enum : uint8_t {
  kPresent = 1,      // accessible here
  kMember = 2,       // in the copyset (the home always is)
  kEntry = 4,        // entry consistent here: wholly bound, not a copyset page
  kFetching = 8,     // a fetch from the home is under way
  kPartlyBound = 16, // some of its bytes are bound: left out of its updates
  kHadCopy = 32,     // the page has been here before: its bytes are no longer its initial image
  kFrozen = 64,      // protected for a moment (processor consistency): a fault here waits
};

struct PageMsg {  // COPYSET_ACK, COPYSET_LEAVE
  uint64_t page;
};
struct PageRequest {  // PAGE_REQUEST
  uint64_t page;
  uint32_t pristine;  // the requester still holds the page's initial image
  uint32_t reserved;
};
struct PageData {  // PAGE_DATA without the page's bytes (status not kOk; see serve())
  uint64_t page;
  uint64_t members;
  uint32_t status;
  uint32_t reserved;
};
enum : uint32_t {
  kOk = 0,
  kNotShared = 1,
  kUnwritten = 2,  // nobody has written the page: the requester's initial image is it, no data
};
struct MemberMsg {  // COPYSET_JOIN, COPYSET_LEFT
  uint64_t page;
  int32_t rank;
  uint32_t reserved;
};
struct LeftAck {  // COPYSET_LEFT_ACK
  uint64_t page;
  uint64_t others;  // from the home: the other members, which answer too (bit r: rank r); else 0
};

// What a rank knows of one page's copyset. At the home, also the join under way: one
// at a time per page, later requesters wait their turn.
struct Info {
  uint64_t members = 0;
  unsigned flush_us = 0;  // mw_processor_consistent
  int joining = -1;
  int acks_left = 0;
  bool was_alone = false;  // the home was the only member when the join began
  bool joining_pristine = false;
  bool written = false;    // at the home: the page has changed since the job began
  std::vector<std::pair<int, bool>> waiting;  // not a deque: that allocates for every page
};

bool g_enabled = false;
bool g_handler = false;  // on_segv installed (every job, from mw_init to mw_finalize)
int g_me = 0, g_np = 1;
size_t g_page = 4096;
std::atomic<uint8_t> *g_state = nullptr;  // one per page of the window

// The containers are never destroyed: the flusher thread and the fault handler may
// still use them while a rank that leaves without mw_finalize runs static destructors.
std::mutex g_mu;                 // a leaf: never held while waiting
std::map<uintptr_t, Info> &g_info = *new std::map<uintptr_t, Info>;
// SharedPage pages (copysets.hpp) and their entries in g_info: a flush visits them all,
// without a lookup each.
std::map<uintptr_t, const Info *> &g_shared = *new std::map<uintptr_t, const Info *>;
std::atomic<size_t> g_shared_count{0};
Bindings &g_bound = *new Bindings;  // bound ranges on partly bound pages
unsigned g_min_flush_us = 0;

// The fetch the application thread waits for (it has one at a time).
uintptr_t g_fetch_page = 0;
bool g_fetch_pristine = false;  // the fetch asked with the page's initial image here
std::atomic<int> g_fetch_result{0};  // 0 under way, 1 arrived, 2 not shared memory
std::atomic<uintptr_t> g_fetch_ready{0};  // the page is writable, in memory, its marks clear
std::vector<std::pair<uintptr_t, std::vector<std::byte>>> &g_stashed =
    *new std::vector<std::pair<uintptr_t, std::vector<std::byte>>>;  // updates meanwhile

// The leaves under way (mw_discard waits for them): which members have answered.
struct Leaving {
  bool home_answered = false;
  uint64_t others = 0;    // the members the home named
  uint64_t answered = 0;  // those of them that have answered
};
std::map<uintptr_t, Leaving> &g_leaving = *new std::map<uintptr_t, Leaving>;
std::atomic<size_t> g_leaving_count{0};

struct sigaction g_previous_segv;

// Freezing (copysets.hpp, "issue order"). A fault on a frozen page waits on g_thaws, a
// futex word every thaw moves on; g_waiters says whether a thaw must wake anyone.
std::atomic<uint32_t> g_thaws{0};
std::atomic<uint32_t> g_waiters{0};
// A fault on a present page that is not frozen: the freeze it met may have ended before
// the handler looked. It is retried once per address and thaw; a second fault with no
// thaw between is a real one and is reported.
std::atomic<uintptr_t> g_retried_at{0};
std::atomic<uint32_t> g_retried_thaws{0};
int g_mem = -1;  // /proc/self/mem: writes there ignore page protection
thread_local bool t_app = false;  // the application thread (the one that called mw_init)
// Runs of processor-consistent pages from the messages of a flush before its last, by
// sender (under g_mu): they land with the last.
std::vector<std::vector<std::pair<uintptr_t, std::vector<std::byte>>>> &g_deferred =
    *new std::vector<std::vector<std::pair<uintptr_t, std::vector<std::byte>>>>;

uint64_t bit(int r) { return uint64_t{1} << r; }
size_t index_of(uintptr_t page) { return (page - window::kBase) / g_page; }
uintptr_t page_of(uintptr_t a) { return a & ~(uintptr_t{g_page} - 1); }
bool is_static(uintptr_t page) { return page < window::layout().static_end; }

// Home pages need no entry until something changes them (a bind).
uint8_t state(uintptr_t page) {
  uint8_t s = g_state[index_of(page)].load(std::memory_order_acquire);
  if (s == 0 && home_of(page) == g_me && (is_static(page) || window::accessible(reinterpret_cast<void *>(page), g_page)))
    return kPresent | kMember;
  return s;
}
void set_state(uintptr_t page, uint8_t s) { g_state[index_of(page)].store(s, std::memory_order_release); }

Info &info(uintptr_t page) {
  auto [it, fresh] = g_info.try_emplace(page);
  if (fresh) it->second.members = bit(home_of(page));
  return it->second;
}

unsigned flush_us_of(const Info &in) {
  if (in.flush_us) return in.flush_us;
  return protocol::model() == protocol::Model::kProcessor ? protocol::pc_interval_us() : 0;
}

// Keeps g_shared in step with a page's state and copyset (under g_mu).
void refresh(uintptr_t page) {
  uint8_t s = state(page);
  const Info &in = info(page);
  bool shared = (s & kMember) && !(s & kEntry) && __builtin_popcountll(in.members) > 1;
  if (shared) g_shared[page] = &in;
  else g_shared.erase(page);
  g_shared_count.store(g_shared.size(), std::memory_order_release);
}

void make_rw(uintptr_t page) {
  if (is_static(page)) {
    if (mprotect(reinterpret_cast<void *>(page), g_page, PROT_READ | PROT_WRITE) != 0)
      fatal_errno("copyset", "cannot make shared page 0x%lx accessible", static_cast<unsigned long>(page));
  } else {
    window::commit(page, page + g_page);
  }
}

void make_none(uintptr_t page) {
  if (mprotect(reinterpret_cast<void *>(page), g_page, PROT_NONE) != 0)
    fatal_errno("mw_discard", "cannot protect shared page 0x%lx", static_cast<unsigned long>(page));
}

// ---- Freezing ----

// mprotect on `pages` (sorted, distinct), contiguous ones in one call.
void protect(const std::vector<uintptr_t> &pages, int prot) {
  for (size_t i = 0; i < pages.size();) {
    size_t j = i + 1;
    while (j < pages.size() && pages[j] == pages[j - 1] + g_page) ++j;
    if (mprotect(reinterpret_cast<void *>(pages[i]), (j - i) * g_page, prot) != 0)
      fatal_errno("processor consistency", "cannot %s shared pages [0x%lx, +%zu)",
                  prot == (PROT_READ | PROT_WRITE) ? "unprotect" : "protect",
                  static_cast<unsigned long>(pages[i]), (j - i) * g_page);
    i = j;
  }
}

// Freezes present pages (sorted, distinct; under g_mu, under the progress role): the state
// first, so that a fault the protection causes finds it. A home page that has no state
// entry yet gets its state spelled out, so that it still reads as present meanwhile.
void freeze(const std::vector<uintptr_t> &pages, int prot) {
  for (uintptr_t page : pages)
    g_state[index_of(page)].store(static_cast<uint8_t>(state(page) | kFrozen), std::memory_order_seq_cst);
  protect(pages, prot);
}

// The protection back first, then the state: a fault that finds the page no longer
// frozen may retry at once. Then wakes the faults that wait. g_thaws moves on both before
// the state is cleared and after: a fault that finds the page thawed has seen the first
// (on_segv's retry-once rule counts on it: a fault met between the clear and a single
// later count was reported as real, once in a few hundred loaded runs of pc_order), and
// a fault that read the count, then found the page frozen, sleeps on a value the second
// changes, so it is not left asleep.
void thaw(const std::vector<uintptr_t> &pages) {
  protect(pages, PROT_READ | PROT_WRITE);
  g_thaws.fetch_add(1, std::memory_order_seq_cst);
  for (uintptr_t page : pages)
    g_state[index_of(page)].fetch_and(static_cast<uint8_t>(~kFrozen), std::memory_order_seq_cst);
  g_thaws.fetch_add(1, std::memory_order_seq_cst);
  if (g_waiters.load(std::memory_order_seq_cst) > 0)
    syscall(SYS_futex, &g_thaws, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

// In the fault handler: if `page` is frozen, waits until it is not and returns true (the
// access is then retried). Async-signal-safe: atomics and system calls only.
bool wait_thawed(uintptr_t page) {
  std::atomic<uint8_t> &st = g_state[index_of(page)];
  if (!(st.load(std::memory_order_seq_cst) & kFrozen)) return false;
  // A freeze lasts a few microseconds: look a little before sleeping.
  for (int i = 0; i < 200; ++i) {
    if (!(st.load(std::memory_order_acquire) & kFrozen)) return true;
    __builtin_ia32_pause();
  }
  for (;;) {
    const uint32_t seen = g_thaws.load(std::memory_order_seq_cst);
    g_waiters.fetch_add(1, std::memory_order_seq_cst);
    // Either the thaw clears the bit after this look, and then sees g_waiters and wakes
    // (or has moved g_thaws past `seen`, and the wait returns at once); or the look sees
    // the bit clear.
    const bool frozen = st.load(std::memory_order_seq_cst) & kFrozen;
    if (frozen) syscall(SYS_futex, &g_thaws, FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
    g_waiters.fetch_sub(1, std::memory_order_seq_cst);
    if (!frozen) return true;
  }
}

// Writes (or reads) len bytes at addr through /proc/self/mem: the page may be protected.
void mem_io(bool write, uintptr_t addr, std::byte *data, size_t len) {
  while (len > 0) {
    const ssize_t n = write ? pwrite(g_mem, data, len, static_cast<off_t>(addr))
                            : pread(g_mem, data, len, static_cast<off_t>(addr));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      fatal_errno("processor consistency", "cannot %s %zu bytes at 0x%lx through /proc/self/mem",
                  write ? "write" : "read", len, static_cast<unsigned long>(addr));
    addr += static_cast<size_t>(n);
    data += n;
    len -= static_cast<size_t>(n);
  }
}

void send_head(int dest, MsgType type, const void *head, size_t len, const void *bulk = nullptr,
               size_t bulk_len = 0) {
  iovec h{const_cast<void *>(head), len};
  iovec b{const_cast<void *>(bulk), bulk_len};
  transport::send(dest, type, std::span<const iovec>(&h, 1),
                  std::span<const iovec>(&b, bulk_len ? 1 : 0));
}

// Would the home's own marks on the page travel twice? Not if they go with the page:
// a home alone in the copyset has flushed them to no one, and the page it sends holds
// them (under g_mu).
void clear_marks(uintptr_t page) {
  std::vector<Range> taken;
  dirty::take(page, g_page, g_bound.ranges(), taken);
}

// Before a fetched page's data lands: writable and in memory. (And clear_marks: stale
// marks from before a leave.)
void ready(uintptr_t page) {
  if (is_static(page)) {
    make_rw(page);
    window::populate(page);
  } else {
    window::commit_page(page);
  }
}

template <class T>
T read_msg(const Header &h, Bytes payload, size_t at_least = sizeof(T)) {
  if (payload.size() < at_least) protocol::malformed(h, "too short");
  T t;
  std::memcpy(&t, payload.data(), sizeof t);
  return t;
}

uintptr_t checked_page(const Header &h, uint64_t page) {
  if (page % g_page != 0 || !window::contains(reinterpret_cast<void *>(page), g_page))
    protocol::malformed(h, "not a page of the shared window");
  return static_cast<uintptr_t>(page);
}

// ---- At the home ----

// Sends the page, or only the news that nobody has written it yet: then the requester's
// own initial image (the executable's data, or a fresh zero page) is the page, and the
// fetch moves no data (a master filling its matrices, a worker's first touch of its rows
// of the result).
void serve(uintptr_t page, Info &in, int r, bool pristine) {
  if (in.was_alone && !(state(page) & kEntry)) {
    std::vector<Range> taken;
    dirty::take(page, g_page, g_bound.ranges(), taken);
    if (!taken.empty()) in.written = true;
  } else if (dirty::next(page, page + g_page, true) != page + g_page) {
    in.written = true;
  }
  if (!in.written && pristine) {
    PageData d{page, in.members, kUnwritten, 0};
    return send_head(r, MsgType::kPageData, &d, sizeof d);
  }
  // The page's bytes and nothing else, the copyset in the header's clock field (which
  // this protocol has no other use for; the page is the one the requester waits for):
  // with a head the payload would not fit shm's inject size, and the message would go by
  // CMA, which took 3.6 us at the home against ~1.5 for the two injects of a page alone.
  iovec b{reinterpret_cast<void *>(page), g_page};
  transport::send(r, MsgType::kPageData, {}, std::span<const iovec>(&b, 1), in.members);
}

void begin_join(uintptr_t page, Info &in, int r, bool pristine) {
  uint64_t others = in.members & ~bit(g_me) & ~bit(r);
  in.was_alone = (in.members & ~bit(g_me)) == 0;
  in.members |= bit(r);
  refresh(page);
  if (others == 0) return serve(page, in, r, pristine);
  in.joining = r;
  in.joining_pristine = pristine;
  in.acks_left = __builtin_popcountll(others);
  MemberMsg m{page, r, 0};
  for (int q = 0; q < g_np; ++q)
    if (others & bit(q)) send_head(q, MsgType::kCopysetJoin, &m, sizeof m);
}

void on_page_request(const Header &h, Bytes payload) {
  const PageRequest req = read_msg<PageRequest>(h, payload);
  uintptr_t page = checked_page(h, req.page);
  if (home_of(page) != g_me) protocol::malformed(h, "this rank is not the page's home");
  std::lock_guard<std::mutex> g(g_mu);
  const uint8_t s = state(page);
  if (!(s & kPresent)) {  // heap this rank never allocated
    PageData d{page, 0, kNotShared, 0};
    return send_head(h.sender, MsgType::kPageData, &d, sizeof d);
  }
  // Spelled out, so that state() stops asking the window (a lock and a lookup) for it.
  if (g_state[index_of(page)].load(std::memory_order_relaxed) == 0) set_state(page, s);
  Info &in = info(page);
  if (in.joining >= 0) {
    in.waiting.emplace_back(h.sender, req.pristine != 0);
    return;
  }
  begin_join(page, in, h.sender, req.pristine != 0);
}

void on_ack(const Header &h, Bytes payload) {
  uintptr_t page = checked_page(h, read_msg<PageMsg>(h, payload).page);
  std::lock_guard<std::mutex> g(g_mu);
  Info &in = info(page);
  if (in.joining < 0 || in.acks_left <= 0) protocol::malformed(h, "no join of that page is under way");
  if (--in.acks_left > 0) return;
  int r = in.joining;
  in.joining = -1;
  serve(page, in, r, in.joining_pristine);
  while (in.joining < 0 && !in.waiting.empty()) {
    auto [next, pristine] = in.waiting.front();
    in.waiting.erase(in.waiting.begin());
    begin_join(page, in, next, pristine);
  }
}

void on_leave(const Header &h, Bytes payload) {
  uintptr_t page = checked_page(h, read_msg<PageMsg>(h, payload).page);
  if (home_of(page) != g_me) protocol::malformed(h, "this rank is not the page's home");
  std::lock_guard<std::mutex> g(g_mu);
  Info &in = info(page);
  in.members &= ~bit(h.sender);
  refresh(page);
  MemberMsg m{page, h.sender, 0};
  const uint64_t others = in.members & ~bit(g_me);
  for (int q = 0; q < g_np; ++q)
    if (others & bit(q)) send_head(q, MsgType::kCopysetLeft, &m, sizeof m);
  // After every update this rank sent the leaver (a sender's messages arrive in order);
  // the members named answer the same way (on_left).
  LeftAck a{page, others};
  send_head(h.sender, MsgType::kCopysetLeftAck, &a, sizeof a);
}

// ---- At the members ----

void on_join(const Header &h, Bytes payload) {
  MemberMsg m = read_msg<MemberMsg>(h, payload);
  uintptr_t page = checked_page(h, m.page);
  if (m.rank < 0 || m.rank >= g_np) protocol::malformed(h, "no such rank");
  std::lock_guard<std::mutex> g(g_mu);
  if (state(page) & kMember) {  // a rank that has just left answers all the same
    info(page).members |= bit(m.rank);
    refresh(page);
  }
  PageMsg ack{page};
  send_head(h.sender, MsgType::kCopysetAck, &ack, sizeof ack);
}

void on_left(const Header &h, Bytes payload) {
  MemberMsg m = read_msg<MemberMsg>(h, payload);
  uintptr_t page = checked_page(h, m.page);
  if (m.rank < 0 || m.rank >= g_np) protocol::malformed(h, "no such rank");
  if (m.rank == g_me) protocol::malformed(h, "this rank's own leave");
  std::lock_guard<std::mutex> g(g_mu);
  info(page).members &= ~bit(m.rank);
  refresh(page);
  // Behind every update this rank sent the leaver before it heard (see leave()).
  LeftAck a{page, 0};
  send_head(m.rank, MsgType::kCopysetLeftAck, &a, sizeof a);
}

// ---- At the rank that left ----

void on_left_ack(const Header &h, Bytes payload) {
  const LeftAck a = read_msg<LeftAck>(h, payload);
  uintptr_t page = checked_page(h, a.page);
  std::lock_guard<std::mutex> g(g_mu);
  auto it = g_leaving.find(page);
  if (it == g_leaving.end()) protocol::malformed(h, "no leave of that page is under way");
  Leaving &l = it->second;
  if (h.sender == home_of(page)) {
    const uint64_t ranks = g_np == 64 ? ~uint64_t{0} : bit(g_np) - 1;
    if (l.home_answered || (a.others & (bit(g_me) | bit(h.sender) | ~ranks)))
      protocol::malformed(h, "a second answer, or members that are not other ranks of the job");
    l.home_answered = true;
    l.others = a.others;
  } else {
    if (a.others != 0 || (l.answered & bit(h.sender))) protocol::malformed(h, "a second answer from a member");
    l.answered |= bit(h.sender);
  }
  if (!l.home_answered) return;
  if (l.answered & ~l.others) protocol::malformed(h, "an answer from a rank that is not a member");
  if (l.answered != l.others) return;
  g_leaving.erase(it);
  g_leaving_count.fetch_sub(1, std::memory_order_release);
}

// ---- At the faulting rank ----

void on_page_data(const Header &h, Bytes payload) {
  std::lock_guard<std::mutex> g(g_mu);
  PageData d;
  if (h.bulk_len != 0) {  // the page's bytes (serve())
    if (h.bulk_len != g_page || payload.size() != g_page) protocol::malformed(h, "not a page's worth of data");
    d = PageData{g_fetch_page, h.clock, kOk, 0};
  } else {
    d = read_msg<PageData>(h, payload);
    if (d.status == kOk) protocol::malformed(h, "a page without its data");
  }
  uintptr_t page = checked_page(h, d.page);
  uint8_t s = g_state[index_of(page)].load(std::memory_order_relaxed);
  if (page != g_fetch_page || !(s & kFetching)) protocol::malformed(h, "a page this rank did not ask for");
  if (d.status == kNotShared) {
    set_state(page, s & ~kFetching);
    g_fetch_result.store(2, std::memory_order_release);
    return;
  }
  const bool unwritten = d.status == kUnwritten;
  if (!(d.members & bit(g_me))) protocol::malformed(h, "a copyset without this rank");
  if (unwritten && !g_fetch_pristine) protocol::malformed(h, "no data for a page this rank held before");
  if (g_fetch_ready.load(std::memory_order_acquire) != page) {  // not if fetch() polls, as it does
    ready(page);
    clear_marks(page);
  }
  const std::byte *bytes = payload.data();
  if (unwritten) {
    // This rank's own initial image is the page.
  } else if (!(s & kPartlyBound)) {
    std::memcpy(reinterpret_cast<void *>(page), bytes, g_page);
  } else {
    // Only the unbound bytes: the bound ones are entry consistent, and what this rank
    // holds of them (a grant or a barrier's data that landed during the fetch, or their
    // initial values) is newer than the home's copy, which no lock keeps current.
    uintptr_t at = page;
    auto copy_to = [&](uintptr_t end) {
      if (end > at) std::memcpy(reinterpret_cast<void *>(at), bytes + (at - page), end - at);
    };
    for (const Range &r : g_bound.ranges()) {
      if (r.end() <= page) continue;
      if (r.addr >= page + g_page) break;
      copy_to(std::max(r.addr, page));
      at = std::max(at, std::min(r.end(), page + g_page));
    }
    copy_to(page + g_page);
  }
  for (auto &[addr, bytes] : g_stashed)  // updates that overtook the page, in arrival order
    std::memcpy(reinterpret_cast<void *>(addr), bytes.data(), bytes.size());
  g_stashed.clear();
  set_state(page, static_cast<uint8_t>((s & kPartlyBound) | kPresent | kMember | kHadCopy));
  info(page).members = d.members;
  refresh(page);
  g_fetch_result.store(1, std::memory_order_release);
}

// Fetches `page` from its home and joins its copyset. Application thread (a fault, a
// bind, a lock object's first use): waits, progressing the transport.
bool fetch(uintptr_t page, int home) {
  stats::page_fault();
  stats::ScopedWait wait(stats::Wait::Fault);
  bool pristine;
  {
    std::lock_guard<std::mutex> g(g_mu);
    const uint8_t s = g_state[index_of(page)].load(std::memory_order_relaxed);
    pristine = !(s & kHadCopy);
    g_fetch_page = page;
    g_fetch_pristine = pristine;
    g_fetch_result.store(0, std::memory_order_relaxed);
    g_fetch_ready.store(0, std::memory_order_relaxed);
    set_state(page, s | kFetching);
  }
  // While the request travels and the home serves it, this thread readies the page for
  // its data: writable, in memory (no page fault when the data lands) and without stale
  // marks. Done by the handler once the data had come, this was about 2 of the fault's
  // 10.5 us on shm. The page is accessible before its data is here, but only to this
  // thread, which waits for the data (one thread per rank touches shared data), and to
  // handlers, which keep updates for it aside while kFetching. It does so holding the
  // progress role, so the reply waits in the queue meanwhile and rings nobody.
  transport::progress_after(
      [&] {
        PageRequest req{page, pristine ? 1u : 0u, 0};
        send_head(home, MsgType::kPageRequest, &req, sizeof req);
        ready(page);
        std::lock_guard<std::mutex> g(g_mu);
        clear_marks(page);
        info(page);  // its entry is made here too, not in the handler
        g_fetch_ready.store(page, std::memory_order_release);
      },
      [] { return g_fetch_result.load(std::memory_order_acquire) != 0; });
  if (g_fetch_result.load(std::memory_order_acquire) == 2 && !is_static(page))
    window::uncommit_page(page);  // nobody allocated it: the access faults again, and is reported
  return g_fetch_result.load(std::memory_order_acquire) == 1;
}

// ---- The copyset fault ----

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char *fmt, ...) {
  char buf[400];
  int n = std::snprintf(buf, sizeof buf, "midway: rank %d: ", g_me);
  va_list ap;
  va_start(ap, fmt);
  n += std::vsnprintf(buf + n, sizeof buf - static_cast<size_t>(n), fmt, ap);
  va_end(ap);
  if (n > static_cast<int>(sizeof buf) - 2) n = static_cast<int>(sizeof buf) - 2;
  buf[n++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, buf, static_cast<size_t>(n));
  (void)ignored;
}

// A fault on a page of the window this rank is not a member of is a copyset fault: fetch
// the page and retry the access. Any other fault is the crash it is: say where, and let
// the previous disposition (by default, death by SIGSEGV) have it.
void on_segv(int sig, siginfo_t *si, void *ctx) {
  if (si->si_code <= 0) {  // sent by kill or raise, not a fault: nothing to serve or to say
    sigaction(sig, &g_previous_segv, nullptr);
    raise(sig);
    return;
  }
  const uintptr_t a = reinterpret_cast<uintptr_t>(si->si_addr);
  const bool in_window = a >= window::kBase && a < window::kEnd;
  if (in_window && g_enabled) {
    const uintptr_t page = page_of(a);
    if (wait_thawed(page)) return;  // frozen for a moment (processor consistency): retried
    const int home = home_of(page);
    if (transport::in_runtime_context()) {
      say("segmentation fault at %p: the runtime's own code touched shared page %p, which is "
          "not present on this rank (a Midway bug: please report it)",
          si->si_addr, reinterpret_cast<void *>(page));
    } else if (home < 0 || (home == g_me && !(state(page) & kPresent))) {
      say("segmentation fault at %p: inside the shared window but not shared memory (no "
          "MW_SHARED data and no mw_malloc block there)", si->si_addr);
    } else if (!(state(page) & kPresent)) {
      int saved = errno;
      bool ok = fetch(page, home);
      errno = saved;
      if (ok) return;  // the access is retried, on the page now here
      say("segmentation fault at %p: in the shared heap of rank %d, but not in memory it "
          "allocated with mw_malloc", si->si_addr, home);
    } else {
      // Present and not frozen: the freeze this access met may have ended before the look
      // above. Retried once per address and thaw; faulting again with no thaw between, it
      // is a real fault.
      const uint32_t thaws = g_thaws.load(std::memory_order_seq_cst);
      if (g_retried_at.load(std::memory_order_relaxed) != a ||
          g_retried_thaws.load(std::memory_order_relaxed) != thaws) {
        g_retried_at.store(a, std::memory_order_relaxed);
        g_retried_thaws.store(thaws, std::memory_order_relaxed);
        return;
      }
      say("segmentation fault at %p (shared page %p is present on this rank)", si->si_addr,
          reinterpret_cast<void *>(page));
    }
  } else if (in_window) {  // a one-rank job: its shared memory is all accessible
    say("segmentation fault at %p: inside the shared window but not shared memory (no "
        "MW_SHARED data and no mw_malloc block there)", si->si_addr);
  } else {
    say("segmentation fault at %p (outside the shared window)", si->si_addr);
  }
  sigaction(sig, &g_previous_segv, nullptr);
  (void)ctx;  // returning re-runs the access, which now meets the previous disposition
}

}  // namespace

size_t page_size() { return g_page; }
bool enabled() { return g_enabled; }

int home_of(uintptr_t page) {
  if (page < window::kBase) return -1;
  if (is_static(page)) return static_cast<int>(index_of(page) % static_cast<size_t>(g_np));
  return heap::owner_of(page);
}

void report_faults() {
  g_me = protocol::rank();
  struct sigaction sa {};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, &g_previous_segv) != 0) fatal_errno("mw_init", "cannot install the fault handler");
  g_handler = true;
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
  // Static data: the pages homed elsewhere wait for their first touch.
  const uintptr_t end = window::layout().static_end;
  for (uintptr_t p = window::kBase; p < end; p += g_page)
    if (home_of(p) != g_me) make_none(p);
  // Processor consistency applies updates through it from the service thread; opened
  // now, as the application thread, before anything may fail to find /proc later.
  g_mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
  if (g_mem < 0)
    warn("mw_init", "cannot open /proc/self/mem (%s): updates of processor-consistent data keep "
         "per-location order only", std::strerror(errno));
  g_deferred.resize(static_cast<size_t>(g_np));
  t_app = true;
  g_enabled = true;
  transport::on(MsgType::kPageRequest, on_page_request);
  transport::on(MsgType::kPageData, on_page_data);
  transport::on(MsgType::kCopysetJoin, on_join);
  transport::on(MsgType::kCopysetAck, on_ack);
  transport::on(MsgType::kCopysetLeave, on_leave);
  transport::on(MsgType::kCopysetLeft, on_left);
  transport::on(MsgType::kCopysetLeftAck, on_left_ack);
}

void stop() {
  if (!g_handler) return;
  sigaction(SIGSEGV, &g_previous_segv, nullptr);
}

void bound(const void *p, size_t len, const char *) {
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
    const bool whole = it != rs.begin() && std::prev(it)->end() >= page_end;
    uint8_t s = state(page);
    if (whole) {
      if (!(s & kPresent)) make_rw(page);
      set_state(page, static_cast<uint8_t>((s & ~(kPartlyBound | kFetching)) | kPresent | kEntry | kHadCopy));
    } else {
      // Bound and unbound bytes share the page: it stays a copyset page (fetched at its
      // first touch), and its bound bytes stay out of its pending updates.
      set_state(page, s | kPartlyBound);
    }
    refresh(page);
  }
}

void place_entry(uintptr_t p, size_t len) {
  if (!g_enabled) return;
  for (uintptr_t page = page_of(p); page < p + len; page += g_page) {
    uint8_t s = state(page);
    if (s & kPresent) continue;
    make_rw(page);
    set_state(page, static_cast<uint8_t>(s | kPresent | kEntry | kHadCopy));
  }
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
    send_head(home, MsgType::kCopysetLeave, &m, sizeof m);
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
  info(page).written = true;
}

size_t shared_page_count() { return g_shared_count.load(std::memory_order_acquire); }

std::vector<SharedPage> shared_pages(bool pc_only) {
  std::lock_guard<std::mutex> g(g_mu);
  std::vector<SharedPage> out;
  out.reserve(g_shared.size());
  for (const auto &[page, in] : g_shared) {
    unsigned us = flush_us_of(*in);
    if (pc_only && us == 0) continue;
    out.push_back({page, in->members, us, (state(page) & kPartlyBound) != 0});
  }
  return out;
}

unsigned shortest_flush_us() {
  if (protocol::model() == protocol::Model::kProcessor)
    return g_min_flush_us ? std::min(g_min_flush_us, protocol::pc_interval_us()) : protocol::pc_interval_us();
  return g_min_flush_us;
}

void take(const std::vector<uintptr_t> &marked, bool pc_only, bool copy, Snapshot &out) {
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
      if (us == 0 || dirty::next(page, page + g_page, true) == page + g_page) continue;
      add(page, *in, us);  // not frozen and not bound in part: not among `pages` yet
    }
  }
  std::sort(pages.begin(), pages.end(), [](const SharedPage &x, const SharedPage &y) { return x.page < y.page; });
  std::sort(frozen.begin(), frozen.end());
  const std::vector<Range> none;
  for (const SharedPage &p : pages) {
    out.first.push_back(out.runs.size());
    dirty::take(p.page, g_page, p.partly_bound ? g_bound.ranges() : none, out.runs);
  }
  out.first.push_back(out.runs.size());
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

void apply_update(int sender, std::span<const Piece> pieces, bool last) {
  std::lock_guard<std::mutex> g(g_mu);
  auto &later = g_deferred[static_cast<size_t>(sender)];
  std::vector<Piece> pc;
  auto one = [&](const Piece &p) {
    const uintptr_t page = page_of(p.addr);
    const uint8_t s = state(page);
    if (s & kPresent) {
      if (home_of(page) == g_me) info(page).written = true;
      if (!(s & kPartlyBound) && processor_consistent_here(page)) {
        if (last) pc.push_back(p);
        else later.emplace_back(p.addr, std::vector<std::byte>(p.data, p.data + p.len));
        return;
      }
      std::memcpy(reinterpret_cast<void *>(p.addr), p.data, p.len);
    } else if (s & kFetching) {
      g_stashed.emplace_back(p.addr, std::vector<std::byte>(p.data, p.data + p.len));
    }  // else: this rank left the copyset while the update was in flight
  };
  if (last)  // the flush's earlier messages first: their runs came first
    for (const auto &[addr, bytes] : later) one({addr, bytes.data(), bytes.size()});
  for (const Piece &p : pieces) one(p);
  if (!last) return;
  land_together(pc);
  later.clear();
}

}  // namespace mw::copysets
