// Copysets (Midway, section 4.4): which ranks hold a copy of each page of release- and
// processor-consistent data, and the copyset fault that adds a rank to one.
//
// Every page of the shared window has a home, chosen by address: static data by object,
// one block of pages per rank (copysets.cpp, place_static_homes), heap pages at the rank
// that allocated them, or at the first rank to use a page that rank never touched
// (copysets.cpp, "homes where the data is first used"), or at the one other rank that
// writes a page its allocator has stopped writing (copysets.cpp, "homes that move to
// their writer"). The home always holds its pages
// and knows their copysets exactly;
// every member keeps a view of the copyset, which says where its pending updates go
// (pending_updates.hpp). A rank outside a page's copyset keeps the page inaccessible
// (PROT_NONE): its first touch faults (SIGSEGV), and the fault handler fetches the page
// from the home, together with pages after it that the home holds alone (read-ahead:
// up to 64 pages for a write, a window that starts at one page and doubles while reads
// walk forward for a read; joined with no acknowledgements: page_fault.cpp, fetch). For
// each page, the home adds the rank to the copyset and tells the other members,
// and answers only once they have all acknowledged: an update a member sent before it
// heard of the newcomer reaches the home before its acknowledgement does (a sender's
// messages arrive in order), so the page the newcomer gets already holds it, and every
// later update goes to the newcomer directly. Updates that reach the newcomer while its
// fetch is under way are kept and applied over the page when it arrives, but those the
// page already holds (the home's own, and members' flushes the home applied before
// serving it: page_state.hpp, kApplied), which would undo a later write the page holds.
// A member other than the home may leave a copyset (mw_discard); it faults again
// at its next touch. The home tells the other members, and the home and each of them
// answer the leaver directly, behind every update they sent it before; the leave is
// over when all have answered, so no update from before it can land on the page this
// rank fetches next.
//
// Entry-consistent pages (model ec: data bound to a lock or a barrier) are not the
// copysets' business: a bind or a grant makes them accessible here without a fetch, and
// their updates come with the lock, until mw_unbind gives them back (rc/unbound.cpp). A page that is only partly bound stays a copyset
// page, so that its unbound bytes stay release consistent; its bound bytes are left out
// of its pending updates, and a fetch of the page copies only its unbound bytes (the
// home's copy of the bound ones is no newer than what came with the lock). A grant's
// or a barrier's data that lands on such a page before this rank has touched it is
// written there, and the application thread fetches the page at its next acquire,
// crossing or flush (join_landed).
//
// Threads. One state byte per page, read without locks (by the fault handler and the
// statistics of a hot path); copyset views and the home's bookkeeping are under this
// module's own mutex, a leaf: nothing is waited for while it is held.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/bindings.hpp"
#include "core/blocks.hpp"

namespace mw::copysets {

// At mw_init, in every job: installs the SIGSEGV handler, which reports a fault that is
// not a copyset fault with its address, what lies there and the rank. After the
// transport's endpoint is open: libfabric's shm provider installs a SIGSEGV handler of
// its own that unlinks the endpoint's region and re-raises; installed after ours, it
// would see every copyset fault first, and a peer still connecting would find the
// region gone (fi_av_insert: "shm_open error").
void report_faults();
// In a job of more than one rank, after report_faults and before transport::connect (a
// peer may ask for a page as soon as it is connected): protects the static pages homed
// elsewhere, registers the message handlers and tells the entry-consistency layer to
// report bindings and landing data here (protocol::set_page_hooks). From here on, data
// bound to nothing is release (or processor) consistent.
void init();
// At mw_finalize: from then on a fault in the window fetches nothing (the transport is
// closed); the handler says that shared memory was touched after mw_finalize, and the
// fault meets the disposition report_faults found.
void stop();

// Fault injection, for test/rc/kept_updates.c only (api.cpp, __mw_test_delay_joins): the
// COPYSET_JOIN notices this rank sends as a home to rank `to` leave `ms` milliseconds
// late, as a notice overtaken by other ranks' messages arrives late (messages of
// different senders keep no order).
void delay_joins(int to, unsigned ms);
bool enabled();

int home_of(uintptr_t page);
size_t page_size();

// [p, p+len) is bound to a lock or a barrier (model ec): a page the bindings so far
// cover wholly becomes entry consistent here with no fetch; one they cover partly stays
// a copyset page whose bound bytes are left out of its updates. (The entry-consistency
// layer calls it through protocol::PageHooks, which init sets.)
void bound(const void *p, size_t len);
// mw_unbind took [p, p+len) from `lock`: its pages go back to their copysets here, and,
// from the lock's exclusive holder, on every other rank with the holder's bytes
// (rc/unbound.cpp). Application thread; the holder returns once every rank has them.
// (Called through protocol::PageHooks.)
void unbound(uintptr_t lock, const void *p, size_t len, bool holder);

// What a start-up binding of [p, p+len) would lose, or "": the writes made to it so far,
// which travel as release consistency has them (to a page's copyset, at a release) and
// not with the lock. A grant carries only what was written under its lock, and a rank
// that never held a page takes its initial image at the binding. So a start-up binding
// is refused when this rank has marks in the range (writes not yet taken by a flush, or
// never sent: a page nobody else held), or is the home of a page the range covers whole
// that has been written since the job began (by any rank, released to it). Bytes of a
// page bound only in part are checked for this rank's own writes only. `late`: not
// writes but the data of an earlier binding, which another rank unbound holding the lock
// (rc/unbound.cpp): this start-up binding came after that rank's first acquire.
// Application thread.
std::string written_before_binding(const void *p, size_t len, bool *late);

// A grant's data lands on [p, p+len): makes its pages present with no fetch (entry
// consistent). A page bound only in part is made present too, but its unbound bytes are
// still to be fetched (join_landed). Safe in a placer. (Called through
// protocol::PageHooks too.)
void place_entry(uintptr_t p, size_t len);
// The pages bound in part that bound data landed on while this rank held no copy of them
// join their copysets now: fetched from their homes, which copies the unbound bytes the
// application has not written since (those writes go with the next flush). At every
// flush (before its marks are taken) and at the end of an acquire or a crossing, so that
// the program reads the unbound bytes as a fetch at its first touch would have given
// them. Application thread.
void join_landed();

// Before a system call that hands [p, p+len) to the kernel (read(2) into it, write(2)
// from it; compiled code calls this through __mw_before_syscall): the kernel meets a page
// this rank holds no copy of with EFAULT, not with a fault the handler could serve, so
// each such page of the window is fetched here, as its first touch would. Stops at a
// page that is not shared memory (the call then fails as it would have). Application
// thread only.
void bring_in(const void *p, size_t len, bool write);

// mw_discard: this rank drops its copies of the pages of [p, p+len) it does not
// home; pending updates must have been flushed. Returns once every member of each page
// has answered (progressing the transport meanwhile): application thread only.
void leave(const void *p, size_t len);

// mw_discard: returns to the system the pages wholly inside `drop` (bytes bound to locks
// this rank neither owns nor holds) that are entry consistent here and homed elsewhere.
void drop_entry(const Bindings &drop);

// mw_processor_consistent: the pages of [p, p+len) are flushed every `us` microseconds.
void processor_consistent(const void *p, size_t len, unsigned us);

// A page whose pending updates this rank must push: a member that is not entry
// consistent here and whose copyset has another member.
struct SharedPage {
  uintptr_t page;
  uint64_t members;      // bit r: rank r holds a copy (this rank included)
  unsigned flush_us;     // processor consistent: flush interval; 0 = release consistent
  bool partly_bound;     // some bytes are entry consistent: leave them out
};
// This rank flushed updates of `page`: if it is the home, the page is no longer its
// initial image (a fetch must carry its data).
void written(uintptr_t page);
// At a flush on the application thread, under the progress role, before its marks are
// taken: offers pages this rank allocated, homes and no longer writes to the one other
// member that writes them (copysets.cpp, "homes that move to their writer").
void offer_homes();
// After it, outside the role: waits until every offer is answered.
void await_answers();
// How many such pages there are: 0 lets a release skip its flush with one load.
size_t shared_page_count();
// Their pages, in address order, into `out` (processor-consistent pages only if
// pc_only). A flush copies the list at every release; the caller keeps `out`'s storage.
void shared_pages(bool pc_only, std::vector<uintptr_t> &out);
// The shortest flush interval of any processor-consistent page (0: none).
unsigned shortest_flush_us();
// `push` runs before this rank, as a home, serves a page while it has processor-
// consistent data (under the progress role, outside this module's mutex): it pushes
// what the flusher would (pending_updates.cpp), so that the page served, which holds
// every write this rank made to it, reaches the requester after the writes this rank
// issued before them on other pages.
void set_before_serving(void (*push)());

// ---- Processor consistency: issue order across locations ----
//
// A rank's stores to processor-consistent data reach every other rank in the order they
// were issued. A page this rank serves as a home carries every store it made there, so
// what it has not pushed of its other processor-consistent pages goes first
// (set_before_serving). Two places need more than the marks for that, both where a
// thread other than the application's touches the data while the application runs:
//
//  - The flusher thread takes marks and copies data while the application goes on
//    writing. It first freezes the pages (read-only, kFrozen): mprotect returns after the
//    TLB shootdown, so the application's earlier stores are in memory and any later one
//    to those pages faults, and waits in the fault handler until the thaw. What it takes
//    then is a prefix of the application's stores (see take()).
//  - An update applied by the service thread while the application reads: the pages it
//    touches are made inaccessible (kFrozen) while the runs are written through
//    /proc/self/mem, which ignores page protection; the application sees all of them
//    or none. On the application thread (a handler run by progress_until) the runs are
//    written directly: the application is not reading meanwhile.
//
// A fault on a frozen page waits for the thaw and retries the access. Freezing happens
// only under the progress role (a handler, or the flusher inside transport::as_handler),
// so two freezes never overlap, and the application thread holds no runtime lock while
// it touches shared data, so its wait cannot block the thaw. Pages bound in part are not
// frozen: a grant's or a barrier's data may land there by RMA read (process_vm_readv
// fails on a protected page); their unbound bytes keep only per-location order.

// Takes the marks of the pages of `marked` that are copyset pages shared with another
// rank now (the processor-consistent ones only if pc_only), leaving out bound bytes.
// Under the progress role (transport::as_handler). With `copy`, the flusher's snapshot
// (processor-consistent pages only): freezes those pages (all but the ones bound in
// part), then every other processor-consistent page that has marks by then (a store the
// application issued before one a frozen page holds must be taken too; repeated until
// none is left), takes the marks, copies the marked bytes into `data`, and thaws.
struct Snapshot {
  std::vector<SharedPage> pages;  // in address order
  std::vector<Range> runs;        // the marked bytes taken, page by page, in address order
  std::vector<size_t> first;      // pages[i]'s runs are runs[first[i] .. first[i + 1])
  std::vector<std::byte> data;    // the runs' bytes, one after the other
};
void take(std::span<const uintptr_t> marked, bool pc_only, bool copy, Snapshot &out);

// One run of an arriving update: len bytes for addr (within one page), read from data.
struct Piece {
  uintptr_t addr;
  const std::byte *data;
  size_t len;
};
// An update message from `sender` arrived (`last`: the final message of its flush). Each
// run lands at its page if the page is present, is kept until the page arrives if a
// fetch is under way, and is dropped otherwise (this rank left the copyset while the
// update was in flight). Runs on processor-consistent pages land together, with the
// last message of the flush (the earlier ones' are kept until then), frozen unless on
// the application thread. `flush` is the sender's flush number, which the last message
// carries (0 in the others). Called by the update handlers.
void apply_update(int sender, std::span<const Piece> pieces, bool last, uint64_t flush);

}  // namespace mw::copysets
