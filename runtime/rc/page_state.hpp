// The state of this rank's pages of the shared window, as the copyset module keeps it:
// a state byte per page, what it knows of each copyset, the fetch under way, and
// freezing (processor consistency's issue order). Internal to rc/: shared by
// copysets.cpp (the copyset protocol, at the home and the members) and page_fault.cpp
// (the fault handler and the fetch).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "core/bindings.hpp"
#include "memory/window.hpp"
#include "rc/copysets.hpp"
#include "transport/message.hpp"

namespace mw::copysets {

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
  // Bound in part, and a grant's or a barrier's data landed on it while it was absent
  // (place_entry): present, but not yet a member; until its fetch (join_landed), bytes
  // the application marks here are newer than the home's copy of them.
  kLanded = 128,
};

struct PageMsg {  // COPYSET_ACK, COPYSET_LEAVE
  uint64_t page;
};
struct PageRequest {  // PAGE_REQUEST
  uint64_t page;
  uint64_t pristine;  // bit i: the requester still holds page + i pages' initial image
  uint64_t ahead;     // bit i (i >= 1): page + i pages is asked for too (read-ahead)
  int32_t requester;  // forwarded by the allocator to the page's home: the rank that asked; else -1
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
  // Pages asked for ahead (read-ahead): the head is an AheadData.
  kAhead = 3,
  // Heap nobody has touched: the requester is its home from now on (copysets.cpp,
  // "homes where the data is first used"), and its initial image is the page.
  kHomed = 4,
  // The page's bytes, after a head (a PageData, `reserved` the count) and that many
  // Applied: a member's updates reached the home while it waited for the members'
  // acknowledgements, so the page already holds those flushes (copysets.cpp, serve).
  kApplied = 5,
};
struct Applied {
  int32_t rank;
  uint32_t reserved;
  uint64_t flush;  // the rank's last flush the page holds, if it touched the page
};
// PAGE_DATA answering the pages asked for ahead (copysets.cpp, serve_ahead): a PageData
// with status kAhead, `page` the page the requester faulted on, `members` which pages
// after it come (bit i: page + i pages), then which of them come with their data; the
// data follows the head, a page after another in address order. The copyset of each is
// the home and the requester.
struct AheadData {
  PageData d;
  uint64_t with_data;
  uint64_t homed;  // of those without data: the requester is their home from now on (kHomed)
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
  bool unbound = false;    // at the home: ... by data unbound from a lock (rc/unbound.cpp)
  bool updated_in_join = false;  // at the home: updates of the page came in during the join
  // At an allocator that is still the page's home (copysets.cpp, "homes that move to
  // their writer"): the ranks whose updates came since its last flush; the one rank that
  // alone updated it at `streak` of its flushes in a row; an offer under way.
  uint64_t updaters = 0;
  int8_t writer = -1;
  uint8_t streak = 0;
  bool offered = false;
  std::vector<std::pair<int, bool>> waiting;  // not a deque: that allocates for every page
};

// Waits for the senders of delay_joins' late notices (at stop).
void join_delayed_joins();

extern bool g_enabled;
extern bool g_handler;  // on_segv installed (every job, from mw_init to mw_finalize)
extern int g_me, g_np;
extern size_t g_page;
extern std::atomic<uint8_t> *g_state;  // one per page of the window
// The home of each heap page as this rank knows it, plus one; 0: the rank that allocated
// it (copysets.cpp, "homes where the data is first used").
extern std::atomic<uint8_t> *g_home;

// The containers are never destroyed: the flusher thread and the fault handler may
// still use them while a rank that leaves without mw_finalize runs static destructors.
extern std::mutex g_mu;  // a leaf: never held while waiting
extern std::map<uintptr_t, Info> &g_info;
// SharedPage pages (copysets.hpp) and their entries in g_info: a flush visits them all,
// without a lookup each.
extern std::map<uintptr_t, const Info *> &g_shared;
// The same pages as a flat list, rebuilt (when stale) at the next flush that needs it:
// a release copies it rather than walking the map (docs/PERFORMANCE.md, WATER's releases).
extern std::vector<uintptr_t> &g_shared_list;
extern bool g_shared_list_stale;
extern std::atomic<size_t> g_shared_count;
extern Bindings &g_bound;  // bound ranges on partly bound pages
// mw_malloc blocks (by base) of which this rank, their allocator, fetched back a page it had
// given to its first user: it uses the block itself, and gives no more of its pages
// (copysets.cpp, "homes where the data is first used").
extern std::set<uintptr_t> &g_blocks_used_here;
extern unsigned g_min_flush_us;

// The fetch the application thread waits for (it has one at a time).
extern uintptr_t g_fetch_page;
extern bool g_fetch_pristine;  // the fetch asked with the page's initial image here
// Read-ahead (page_fault.cpp, fetch): the pages after g_fetch_page asked for along with it
// and not yet arrived (bit i: g_fetch_page + i pages), and which of them were asked for
// with their initial image here. Under g_mu.
extern uint64_t g_fetch_ahead, g_fetch_ahead_pristine;
extern std::atomic<int> g_fetch_result;  // 0 under way, 1 arrived, 2 not shared memory
extern std::atomic<uintptr_t> g_fetch_ready;  // the page is writable, in memory, its marks clear
// Updates that reach this rank while it fetches the page they are for, kept in arrival
// order until the page comes. Each with its sender's flush number, once the flush's last
// message has come (0 until then): the home says which flushes the page it serves
// already holds (kApplied), and those are not applied again.
struct Kept {
  uintptr_t addr;
  int sender;
  uint64_t flush;
  std::vector<std::byte> bytes;
};
extern std::vector<Kept> &g_kept;
// The last flush of each rank whose updates are all in place here (at a home, what a
// page it serves holds: kApplied).
extern std::vector<uint64_t> &g_applied;

// The leaves under way (mw_discard waits for them): which members have answered.
struct Leaving {
  bool home_answered = false;
  uint64_t others = 0;    // the members the home named
  uint64_t answered = 0;  // those of them that have answered
};
extern std::map<uintptr_t, Leaving> &g_leaving;
extern std::atomic<size_t> g_leaving_count;

// Freezing (copysets.hpp, "issue order"). A fault on a frozen page waits on g_thaws, a
// futex word every thaw moves on; g_waiters says whether a thaw must wake anyone.
extern std::atomic<uint32_t> g_thaws;
extern std::atomic<uint32_t> g_waiters;
extern int g_mem;  // /proc/self/mem: writes there ignore page protection
extern thread_local bool t_app;  // the application thread (the one that called mw_init)
// Runs of processor-consistent pages from the messages of a flush before its last, by
// sender (under g_mu): they land with the last.
extern std::vector<std::vector<std::pair<uintptr_t, std::vector<std::byte>>>> &g_deferred;

inline uint64_t bit(int r) { return uint64_t{1} << r; }
inline size_t index_of(uintptr_t page) { return (page - window::kBase) / g_page; }
inline uintptr_t page_of(uintptr_t a) { return a & ~(uintptr_t{g_page} - 1); }
inline bool is_static(uintptr_t page) { return page < window::layout().static_end; }
// `page`'s home is rank r, as far as this rank knows (heap pages; static homes are fixed).
inline void learn_home(uintptr_t page, int r) {
  if (!is_static(page)) g_home[index_of(page)].store(static_cast<uint8_t>(r + 1), std::memory_order_release);
}

// The page's state byte. Home pages need no entry until something changes them (a bind).
uint8_t state(uintptr_t page);
inline void set_state(uintptr_t page, uint8_t s) { g_state[index_of(page)].store(s, std::memory_order_release); }
// What this rank knows of the page's copyset (under g_mu), made on first use.
Info &info(uintptr_t page);
unsigned flush_us_of(const Info &in);
// Keeps g_shared in step with a page's state and copyset (under g_mu).
void refresh(uintptr_t page);
// mprotect of [begin, begin+len) for `call` (what the program called); a failure names
// the real cause (the mappings limit when the kernel says ENOMEM) and is fatal.
void protect_pages(const char *call, uintptr_t begin, size_t len, int prot);
void make_rw(uintptr_t page);
void make_none(uintptr_t page);

// Freezing: present pages (sorted, distinct) protected with `prot` and marked kFrozen,
// under g_mu and the progress role; thaw undoes it and wakes the faults that wait.
void freeze(const std::vector<uintptr_t> &pages, int prot);
void thaw(const std::vector<uintptr_t> &pages);
// thaw without the protection: the pages' state (and protection) is already what it is to be.
void end_freeze(const std::vector<uintptr_t> &pages);
// In the fault handler: if `page` is frozen, waits until it is not and returns true (the
// access is then retried). Async-signal-safe: atomics and system calls only.
bool wait_thawed(uintptr_t page);
// Writes (or reads) len bytes at addr through /proc/self/mem: the page may be protected.
void mem_io(bool write, uintptr_t addr, std::byte *data, size_t len);

// The home's own marks on a page that goes to a joining rank travel with the page.
void clear_marks(uintptr_t page);
// Before a fetched page's data lands: writable and in memory.
void ready(uintptr_t page);
// The same for the pages [begin, end), all static or all heap, in a few system calls for
// the run: populated with their run, pages cost less than half as much to use first as
// one at a time (docs/PERFORMANCE.md, "First touches").
void ready(uintptr_t begin, uintptr_t end);
uintptr_t checked_page(const Header &h, uint64_t page);

// Pages bound in part that bound data landed on while this rank held no copy of them
// (kLanded), for join_landed (under g_mu; the count read without it).
extern std::vector<uintptr_t> &g_landed;
extern std::atomic<size_t> g_landed_count;
// Makes `page` such a page, with state `s` (kLanded added), and queues it. Under g_mu.
void land(uintptr_t page, uint8_t s);

// At the faulting rank (page_fault.cpp): the home's answer.
void on_page_data(const Header &h, Bytes payload);
// Data unbound by another rank, and the answers to this rank's own (unbound.cpp).
void on_unbound(const Header &h, Bytes payload);
void on_unbound_ack(const Header &h, Bytes payload);

}  // namespace mw::copysets
