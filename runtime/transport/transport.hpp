// The transport: typed messages between the ranks of a job over libfabric.
//
// One reliable-datagram endpoint (FI_EP_RDM) per rank, on the provider fi_getinfo finds
// for the requested name ("shm", "tcp;ofi_rxm", "verbs;ofi_rxm", ...): nothing here names
// a provider except the defaults. Set-up is in two steps around the launcher's exchange
// of addresses:
//
//   auto me = transport::open(cfg);          // every rank: endpoint up, its address out
//   ... the launcher gathers every rank's address (index = rank) ...
//   transport::on(MsgType::kPing, handler);  // every handler before connect
//   transport::connect(addresses);           // address vector filled, service thread up
//   transport::send(dest, MsgType::kPing, payload);
//   ... a job-wide barrier ...
//   transport::close();
//
// Delivery. Messages from one sender are delivered in the order it sent them. Each
// arriving message is checked once (validate() in message.hpp); a malformed one is
// dropped, counted (rejected()) and reported with a one-line warning.
//
// Handlers run on one thread at a time, never concurrently with each other: the
// service thread, or an application thread inside progress_until(). They must not block
// and must not call progress_until(); they may call send().
//
// Payload sizes. A message whose payload fits the eager limit (Config::eager_limit) is
// copied once into a send buffer and lands in a pre-posted receive buffer; the handler
// reads it there. A larger one goes by rendezvous: the sender registers its pieces
// (fi_mr_reg) and sends a small header naming them; the receiver reads them with RMA
// (fi_read) straight into their destination and answers kDone. Where the provider has
// no RMA (or Config::use_rma is false) the sender pushes the bulk in eager-sized chunks
// instead (transport/send.cpp says why; docs/PERFORMANCE.md has the measurements).
//
// Head and bulk. A payload is a head (small: descriptors, lock state) and a bulk (data).
// The handler receives head ‖ bulk contiguous, unless the receiver registered a Placer
// for the type: then the placer names where the bulk must land (for example the shared
// data a lock grant carries, at its own addresses), the bulk is read directly there with
// no intermediate copy, and the handler receives the head only.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "transport/message.hpp"

namespace mw::transport {

// How an idle progress thread waits for the next completion.
enum class WaitMode : uint8_t {
  kAuto,      // kFd if the provider's CQ has a wait fd, else kDoorbell if all_local, else kSleep
  kFd,        // block in poll()/epoll on the CQ's wait fd (tcp;ofi_rxm)
  kDoorbell,  // block on a futex in a job-wide shared-memory page that senders ring (shm)
  kSleep,     // sleep with exponential backoff up to 2 ms (a provider with no wait object)
};

struct Config {
  int rank = 0;
  int nprocs = 1;
  std::string provider;   // fi_getinfo provider name; "" = "shm" if all_local else "tcp;ofi_rxm"
  bool all_local = false;  // every rank runs on this host
  uint64_t job_secret = 0;  // unique per job; every rank of the job passes the same
  std::string job_id;       // unique per job on a host (names its doorbell page); "": from the secret
  // Tuning, identical on every rank of a job:
  size_t eager_limit = 16384;  // largest payload sent eagerly (receive buffers are this + 48)
  unsigned spin_us = 50;       // CPU time an idle progress thread polls for before it blocks
  WaitMode wait = WaitMode::kAuto;
  bool use_rma = true;  // false: send large bulk in chunks even where the provider has RMA
  // kDoorbell (shm): connect() connects every pair of ranks before it returns, instead of
  // the provider doing it at the first message between them, which then waits for the
  // peer to poll (see connect_peers() in transport/transport.cpp). false: lazily (tests of that path).
  bool eager_connect = true;
  // kDoorbell: map this rank's poll word here (MW_POLL_WORD for a program's rank: the
  // pass's polls read it), over a page the caller reserved. nullptr: nowhere (tests that
  // run several endpoints in one process).
  void *poll_word_at = nullptr;
  // Liveness (transport/liveness.cpp): a peer that answers none of a waiting rank's pings
  // for this long stops the job (0: never). By rank, the host names errors give.
  int liveness_ms = 0;
  std::vector<std::string> host_names;
};

// Opens fabric, domain, completion queue, address vector and endpoint on the provider
// the config asks for, and posts the receive buffers. Returns this rank's endpoint
// address (fi_getname) for the launcher to publish.
std::vector<uint8_t> open(const Config &cfg);

// Inserts every rank's address (index = rank, this rank's own included) into the address
// vector and starts the service thread. Messages may be sent from then on. With a
// doorbell (shm) it also connects this rank to every other (Config::eager_connect), so it
// returns once every peer has called connect() too (or stops the rank after the stall
// timeout, naming a peer that never did).
void connect(const std::vector<std::vector<uint8_t>> &addresses);

// Runs on the progress thread for each valid message of its type. `h` is the message's
// header as delivered (flags cleared, payload_len = payload.size(), bulk_len = the bulk's
// length); `payload` is head ‖ bulk, or the head only for a type with a placer. The
// payload is valid until the handler returns.
using Handler = void (*)(const Header &h, std::span<const std::byte> payload);

// Called when a message of its type with a bulk arrives, before the bulk moves: fills
// `where` with the buffers the bulk lands in, in order, h.bulk_len bytes in all. Runs on
// whichever thread is progressing, possibly inside another thread's send(): it must only
// compute addresses (no locks the application holds around send()).
using Placer = void (*)(const Header &h, std::span<const std::byte> head,
                        std::vector<iovec> &where);

// Registers the handler (and optionally the placer) of a protocol message type. Before
// connect(); a type without a handler is rejected on arrival.
void on(MsgType type, Handler handler, Placer placer = nullptr);

// Sends a message to `dest` (this rank included). Returns when the payload's memory may
// be reused: at once for an eager message (it was copied), after the receiver has
// fetched the bulk for a large one. May progress the transport meanwhile, but never runs
// handlers, so a caller may hold its own locks across it.
// The payload is all bulk (data); a message that carries only bookkeeping (a lock
// request) should pass it as the head of the form below, so the statistics tell data
// from protocol.
void send(int dest, MsgType type, std::span<const iovec> payload, uint64_t clock = 0);
void send(int dest, MsgType type, const void *payload, size_t len, uint64_t clock = 0);

// How long a large bulk must stay as it is. kWait: send() returns once the receiver has
// read it, and the memory may then change. kDeferred: send() returns once the message is
// posted, and the receiver reads the bulk when it gets to it; the caller knows nothing
// writes that memory meanwhile (a lock grant: the protocol lets no rank write bound data
// until the acquirer has its grant) and calls wait_sends() before anything that might
// (mw_discard dropping pages). A rank's owner then serves several acquirers at once
// instead of one read after another.
enum class Bulk : uint8_t { kWait, kDeferred };

// Sends a head and a bulk, each a gather list, so a grant carries many runs of data
// without copying them together first. When the message is large, the head travels in
// the rendezvous header and must fit the eager limit with 16 + 24 bytes per bulk piece
// (at most 64 pieces are registered; more are copied together into the last).
void send(int dest, MsgType type, std::span<const iovec> head, std::span<const iovec> bulk,
          uint64_t clock = 0, Bulk keep = Bulk::kWait);

// Waits until every kDeferred send of this rank has been read. Application thread.
void wait_sends();

// Progresses the transport on the calling thread, running handlers here, until done()
// is true; the service thread stands aside meanwhile. Spins briefly, then blocks on the
// provider's wait object. For an application thread waiting for a reply (a lock grant,
// a barrier release); not from a handler.
void progress_until(bool (*done)(void *), void *arg);
template <class Pred>
void progress_until(Pred &&done) {
  progress_until([](void *p) { return (*static_cast<Pred *>(p))(); }, &done);
}

// progress_until, but first() runs once on the calling thread after it has taken the
// progress role and before it polls: to send a request and work on while the reply
// travels (a copyset fault readies the page). Sent that way, the reply finds this thread
// about to poll, not the service thread asleep: no ring, no futex wake at the sender, no
// second thread taking the reply here.
void progress_after(void (*first)(void *), bool (*done)(void *), void *arg);
template <class First, class Pred>
void progress_after(First &&first, Pred &&done) {
  struct Both {
    First &first;
    Pred &done;
  } both{first, done};
  progress_after([](void *p) { static_cast<Both *>(p)->first(); },
                 [](void *p) { return static_cast<Both *>(p)->done(); }, &both);
}

// Runs fn on the calling thread as a handler runs: never concurrently with a handler,
// and sends from it nest like a handler's. For an application thread's protocol step
// that changes state handlers also change and sends messages that must stay in order
// with theirs (a lock request, a barrier arrival). Like a handler, fn must not wait.
// Before connect() (a job of one rank) it simply calls fn.
void as_handler(void (*fn)(void *), void *arg);
template <class F>
void as_handler(F &&fn) {
  as_handler([](void *p) { (*static_cast<F *>(p))(); }, &fn);
}
// Waits for this rank's sends to complete, stops the service thread and closes what
// open() opened, in reverse. Call after a job-wide barrier: a message that arrives later
// is lost.
void close();

// How long a send may wait for the provider to accept it (a peer unreachable or gone)
// before the rank stops with an error naming the peer.
inline constexpr int kDefaultStallTimeoutMs = 60'000;
void set_stall_timeout(int ms);

// The provider in use, as libfabric names it ("shm", "tcp;ofi_rxm").
std::string provider_name();

// How idle threads wait (kFd, kDoorbell or kSleep once open() has chosen).
WaitMode wait_mode();

// Has a peer posted a message to this rank since the last poll of its CQ began (by any
// of its threads)? One load of a shared line, and one of a local word, when the ranks
// share a doorbell page (has_mail_count()): for a thread that re-takes a cached lock in a
// loop and must notice a request without polling the CQ each time. Messages already
// taken (the acknowledgements a release waited for) do not count. Without a doorbell
// page, always true.
bool mail();

// A poll in the program's code (__mw_poll; midway.h, "Polls"): if messages were posted to
// this rank and the progress role is free, serves them on the calling thread, as the
// service thread would, and returns how many it took; 0 at once otherwise. Never waits
// for anything: not inside the runtime on this thread (a handler, a wait holding the
// role), and not while another thread holds the role (the service thread serving, or a
// flusher whose frozen pages the caller may be about to touch).
int serve_polled();
bool has_mail_count();

// Two cache lines per rank in the job's shared page, for a protocol step that needs a few
// words, not a message, when every rank shares this host (kDoorbell): a barrier crossing
// with no data to move (ec/barriers.cpp). The page is the doorbells' (one shm_open per job,
// zero-filled, unmapped by close()); the transport never reads or writes these lines, so
// their layout is the user's. nullptr when there is no such page: another wait mode (tcp,
// ranks on several hosts), a job of one rank, before connect() or after close().
struct alignas(64) SharedLine {
  std::atomic<uint64_t> word[16];
};
SharedLine *shared_line(int rank);

// After storing to a shared line a word that `rank`'s application thread may be waiting
// for inside progress_until (its predicate reads it): wakes that thread if it sleeps.
// The store must come first; ring_waiter's fence orders it before the look at the
// sleeper's doorbell, which the sleeper armed before its last look at the predicate
// (the Dekker pair of ring() in transport/wake.hpp and block() in transport/progress.cpp), so either the sleeper sees
// the store or this sees it armed. A load of one cache line when the thread is awake; it
// never wakes the rank's service thread (a shared word is no message to take).
void ring_waiter(int rank);

// progress_until for an answer that most likely comes as a store to a shared line
// (shared_line) rather than as a message: a barrier release. It first looks at done()
// alone, without taking the progress role, for what would have been the idle policy's
// first stage (a couple of microseconds of pauses; none when this host's ranks outnumber
// its CPUs): taking the role, polling the CQ between looks and handing it back cost a
// good part of a barrier's time. Messages meanwhile go to whichever
// thread progresses (the service thread). Then it progresses as progress_until does,
// from the policy's second stage (yields). peer_shares_cpu: the rank whose store it waits
// for last ran on this CPU, so it runs only once this thread yields: no pauses, a
// yield first. done() is first called outside the progress role, where it must not send
// (in_runtime_context() tells it which).
void wait_shared(bool (*done)(void *), void *arg, bool peer_shares_cpu);
template <class Pred>
void wait_shared(Pred &&done, bool peer_shares_cpu) {
  wait_shared([](void *p) { return (*static_cast<std::remove_reference_t<Pred> *>(p))(); }, &done,
              peer_shares_cpu);
}

// The largest payload sent eagerly: Config::eager_limit as open() was given it (the
// default before open()).
size_t eager_limit();

// Whether large payloads go by RMA read (else by chunks).
bool uses_rma();

// Whether the provider reports each message's source (FI_SOURCE), so that a sender field
// naming another rank is caught; without it a sender is only checked to be in range.
bool reports_source();

// Messages dropped on arrival, in all and for one reason. (Also counted in the
// statistics, stats::count_rejected; every message sent and received is counted there
// by its kind_of() with the bulk as payload bytes and header, head and rendezvous
// descriptor as protocol bytes.)
uint64_t rejected();
uint64_t rejected(Result why);

// validate() for this transport's config (see message.hpp); `source` is the rank the
// provider says the message came from, if it says.
Result validate(const void *buf, size_t received, const Config &cfg, int source = kUnknownSource);

// Is the calling thread the service thread, or running a handler? (A fault there is the
// runtime's own: the copyset fault handler must not try to serve it.)
bool in_runtime_context();

namespace testing {
// Sends `len` raw bytes as one message, no header added: for tests of the validation
// point only.
void send_raw(int dest, const void *bytes, size_t len);
}  // namespace testing

}  // namespace mw::transport
