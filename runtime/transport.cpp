// The transport over libfabric. Read transport.hpp first; this file is, in order:
//
//   errors      every fi_* failure reported with the call, the provider, fi_strerror,
//               rank; and the signals libfabric's PSM dependency takes at load
//   state       the one endpoint of this process and what hangs off it
//   waking      the mechanisms an idle thread sleeps on and is woken by, per wait mode
//   receiving   the completion loop: validation, delivery in order, rendezvous reads
//   progress    who polls the CQ (the service thread, or an application thread that
//               waits) and when it blocks
//   sending     eager (inject, split, send buffer), rendezvous (RMA read), chunked
//   set-up      fi_getinfo by hints, the CQ and its wait object, buffers
//   interface   open, connect, send, progress_until, close (mirroring open), ...
//
// Large messages: rendezvous with RMA read; chunks only where RMA is absent.
//   With fi_read the bulk moves once, from the sender's memory straight to where the
//   receiver wants it (its shared data, for a lock grant; placers in transport.hpp), and
//   the sender's CPU is not needed for it on shm (the reader's process_vm_readv does the
//   copy). Chunking copies every byte twice more (into a send buffer, out of a receive
//   buffer) and costs a message per eager-limit bytes. 64 MiB ping-pong, medians of 5,
//   same moment: shm 2190 MB/s by RMA against 1550 by chunks, tcp;ofi_rxm ~2000 against
//   ~1300 (bench/transport_bench --pin [--no-rma], on a loaded machine; quiet figures
//   for the RMA path are in docs/PERFORMANCE.md).
//   The eager limit, 16 KiB: above it, rendezvous won on both providers (32 KiB: shm 6.2
//   against 8.3 us eager, tcp 28.6 against 30.4; 64 KiB: shm ~6-15 against 12.2, tcp 36
//   against 39.7); below it, eager won (8 KiB on tcp: 8 against 23 us).
//
// Idle progress threads must not burn a core (2-core machines run 8 ranks), yet a lock
// request must be served within microseconds. So a waiting thread polls, then yields
// between polls, then blocks on a wait object once it has spent spin_us of CPU time
// (IdleTimer). libfabric 1.17 gives, as open_cq() finds by trying:
//   tcp;ofi_rxm  CQ wait objects FI_WAIT_UNSPEC/FD/POLLFD; fi_control(FI_GETWAIT) gives
//                an fd that becomes readable when a message arrives -> kFd.
//   shm          only FI_WAIT_NONE and FI_WAIT_YIELD (UNSPEC means YIELD): fi_cq_sread
//                spins in sched_yield, a whole core per rank. Nothing in the kernel knows
//                a message arrived, so senders ring a doorbell instead: a futex word per
//                rank in a shared-memory page of the job, rung only when its owner has
//                announced it is going to sleep (kDoorbell; all ranks are on one host,
//                as shm requires anyway).
//   others       with neither: sleep with exponential backoff up to 2 ms (kSleep).
// When an application thread waits in progress_until, the service thread parks so that
// one thread polls. Handing the CQ back when the application thread leaves costs two
// cache-line transfers with a doorbell (done at once: no message waits), but fi_trywait
// and epoll_ctl with an fd (~3 us; done lazily, within kHandbackGraceNs; see park()).
#include "transport.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "error.hpp"
#include "leftovers.hpp"
#include "stats.hpp"

namespace mw::transport {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr size_t kRxBuffers = 64;     // pre-posted receive buffers
constexpr size_t kSendBuffers = 64;   // copies of eager messages in flight
constexpr size_t kStackInject = 256;  // fi_inject from the stack up to this size
constexpr size_t kSplitMax = 4096;    // largest payload sent as header inject + payload inject
// Rendezvous reads are posted in pieces of at most this, all at once. On tcp;ofi_rxm the
// target answers each read from its own progress, and several reads in flight keep its
// socket busy: 1 MiB ping-pong went from ~310 us (one read) to ~180 us with 512 KiB
// pieces (128 KiB pieces did as well at 1 MiB but made 64 MiB slower, 26 ms against
// 16 ms). On shm a piece is one process_vm_readv; the size made no measurable difference.
constexpr size_t kReadPiece = 512 << 10;
constexpr size_t kChunkSlack = 256;  // see send_chunked()
constexpr int kBatch = 16;            // completions read per fi_cq_read
constexpr int kIdleTimeoutMs = 100;   // a blocked thread re-polls this often regardless
constexpr int kBusyTimeoutMs = 1;     // ... and this often while its sends are in flight
constexpr long kHandbackGraceNs = 100'000;  // kFd: see park()
constexpr long kSleepMaxNs = 2'000'000;
constexpr uint64_t kMaxBulkSpinNs = 2'000'000;  // see spin_budget_ns()
constexpr unsigned kMaxWarnings = 20;
constexpr uint64_t kGreetingId = 0;  // kDone for no transfer (they count from 1): connect_peers()
constexpr int kSharedQuickLooks = 16;  // wait_shared(): see there

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

const char *g_provider_for_errors = "(none yet)";

// "midway: fi_send: to rank 3 on provider 'shm': Resource temporarily unavailable (rank 1)"
[[noreturn]] __attribute__((format(printf, 3, 4))) void fi_fatal(const char *call, long ret,
                                                                  const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  mw::fatal(call, "%s%son provider '%s': %s", what, what[0] ? " " : "", g_provider_for_errors,
            fi_strerror(static_cast<int>(-ret)));
}

#define MW_FI_CHECK(call, args, ...)                       \
  do {                                                     \
    long mw_ret_ = static_cast<long>(call args);           \
    if (mw_ret_ < 0) fi_fatal(#call, mw_ret_, __VA_ARGS__); \
  } while (0)

// Debian 12's libfabric links libinfinipath (the psm provider), whose load-time
// constructor takes over SIGINT, SIGILL, SIGABRT, SIGBUS, SIGSEGV and SIGTERM to print
// a backtrace and exit(1): a crashed rank would no longer die by its signal (launchers
// report "killed by signal 11" from that), and SIGINT/SIGTERM would not stop it as
// expected. Handlers that live in a PSM library go back to the default, at load and
// again after fi_getinfo (which may initialize PSM). Handlers of anyone else stay.
void restore_signals_taken_by_psm() {
  for (int sig : {SIGINT, SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGTERM}) {
    struct sigaction sa;
    if (sigaction(sig, nullptr, &sa) != 0) continue;
    void *h = (sa.sa_flags & SA_SIGINFO) ? reinterpret_cast<void *>(sa.sa_sigaction)
                                         : reinterpret_cast<void *>(sa.sa_handler);
    if (h == reinterpret_cast<void *>(SIG_DFL) || h == reinterpret_cast<void *>(SIG_IGN)) continue;
    Dl_info di{};
    if (!dladdr(h, &di) || !di.dli_fname) continue;
    if (std::strstr(di.dli_fname, "libinfinipath") || std::strstr(di.dli_fname, "libpsm")) {
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      sigaction(sig, &dfl, nullptr);
    }
  }
}

__attribute__((constructor)) void restore_signals_at_load() { restore_signals_taken_by_psm(); }

// Debian 12's libfabric, at its first fi_getinfo, has the verbs provider read all of
// /proc/kallsyms twice, line by line, looking for ib_umem_dmabuf_get (whether the kernel
// can register device memory by dma-buf, which this transport never asks for). The
// kernel formats some ten megabytes of text for it: 0.15-0.25 s of every rank's start-up
// here, more than the rest of mw_init. While this thread is in fi_getinfo, fopen (below)
// gives libfabric an empty file instead: verbs then reports no dma-buf support, and
// nothing else changes. Everyone else's fopen goes straight through.
thread_local bool t_in_getinfo = false;

int getinfo(fi_info *hints, fi_info **info) {
  t_in_getinfo = true;
  int ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), nullptr, nullptr, 0, hints, info);
  t_in_getinfo = false;
  return ret;
}

// ---------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------

enum class OpKind : uint8_t { kRecv, kSend, kSendOwned, kRead };

// What a completion's op_context points at. The provider's scratch space comes first
// (FI_CONTEXT / FI_CONTEXT2 mode).
struct Op {
  fi_context2 ctx;
  OpKind kind;
  int peer;
};

struct RxBuf : Op {
  std::byte *buf;
  uint64_t posted = 0;     // its place in the order receives were posted (take_received)
  bool arrived = false;    // its completion has been read, not yet handled
  bool truncated = false;  // ... as an error: longer than the buffer
  size_t len = 0;
  fi_addr_t src = FI_ADDR_NOTAVAIL;
};

struct SendBuf : Op {
  std::byte *buf;
};

struct OwnedSend : Op {  // a send from memory outside the pool, waited for by its poster
  std::atomic<bool> done{false};
};

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
  std::byte *whole = nullptr;   // without: head ‖ bulk, contiguous
  size_t whole_cap = 0;
  std::vector<iovec> dest;      // where the bulk lands, in bulk order
  uint64_t bulk_len = 0, landed = 0;
  size_t reads_left = 0;
  bool chunked = false, ready = false;
  std::vector<std::unique_ptr<ReadOp>> reads;
};

// A large message this rank is sending, until the receiver says kDone. A deferred one
// (Bulk::kDeferred) owns its registrations and staging buffer, and is freed at kDone.
struct Outgoing {
  uint64_t id;
  int dest;
  std::atomic<bool> done{false};
  bool deferred = false;
  std::vector<fid_mr *> mrs;
  std::unique_ptr<std::byte[]> staging;
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

// The doorbell word of one rank (kDoorbell), one cache line each:
//   (generation << 2) | kArmedApp | kArmedService
// An armed bit says that thread of the rank may be asleep and wants a ring for new
// messages; a ring clears both, bumps the generation and wakes (FUTEX_WAKE_BITSET) only
// the threads whose bit was set. Two bits, so that a ring meant for an application
// thread blocked in progress_until does not also wake the service thread parked beside it.
// Beside it, in the same line, `posted`: how many messages peers have posted to the rank
// (mail()). Bumped by ring(), whose fence it is, so it costs the sender nothing more.
struct alignas(64) Bell {
  std::atomic<uint32_t> word;
  std::atomic<uint32_t> posted;
};
constexpr uint32_t kArmedApp = 1, kArmedService = 2, kArmedBoth = 3, kBellGen = 4;

struct State {
  Config cfg;
  Limits limits{};
  std::string provider;
  bool opened = false, connected = false;

  fi_info *info = nullptr;
  fid_fabric *fabric = nullptr;
  fid_domain *domain = nullptr;
  fid_cq *cq = nullptr;
  fid_av *av = nullptr;
  fid_ep *ep = nullptr;
  bool rma = false, have_source = false, mr_local = false, mr_virt = false, mr_prov_key = false,
       mr_endpoint = false;
  size_t inject_limit = 0;
  // Split sends (kSplit): header and payload as two injects, for payloads that fit an
  // inject when the header does not fit with them. Needs the source of each message
  // (the payload has no header) and an inject size worth it (shm: 4096).
  bool split = false;
  size_t split_max = 0;
  // While split sends exist, every message post holds this, so that nothing of ours
  // comes between a split header and its payload (the receiver takes the sender's next
  // message as the payload).
  std::atomic_flag post_mu = ATOMIC_FLAG_INIT;
  uint64_t max_msg = 0;

  WaitMode wait = WaitMode::kSleep;
  int cq_fd = -1;     // kFd
  int event_fd = -1;  // kFd: local wake-ups
  int epoll_fd = -1;  // kFd: the service thread sleeps here on {event_fd, cq_fd when armed}
  std::atomic<bool> cq_armed{false};
  std::atomic<uint64_t> app_leaves{0};    // kFd: times the last application waiter left
  std::atomic<bool> service_untimed{false};  // kFd: parked until an application waiter leaves
  std::mutex arm_mu;
  Bell *bells = nullptr;  // kDoorbell: every rank's, mapped from the job's segment
  size_t bells_len = 0;
  std::string bells_name;
  // shm: this endpoint's region in /dev/shm (leftovers.hpp), unlinked once every peer
  // has mapped it: when connect_peers() is done and every lower rank's greeting is in.
  std::string region_name;
  std::atomic<int> greetings{0};
  std::atomic<bool> greeted_all{false};
  std::atomic<bool> region_unlinked{false};

  // Buffers.
  std::byte *rx_slab = nullptr, *tx_slab = nullptr;
  size_t buf_len = 0;  // header + eager limit
  fid_mr *rx_mr = nullptr, *tx_mr = nullptr;
  std::vector<RxBuf> rx;
  // Receives in the order they were posted (take_received): rx_ring[n % size] is the
  // n-th; those from rx_next on are posted and not yet handled. Owned by the role holder.
  std::vector<RxBuf *> rx_ring;
  uint64_t rx_posted = 0, rx_next = 0;
  std::vector<SendBuf> tx;
  std::mutex tx_mu;
  std::vector<SendBuf *> tx_free;

  // Serializes every fi_* call on the endpoint's objects, where the provider does not
  // (FI_THREAD_DOMAIN); with FI_THREAD_SAFE the provider's own locks do it.
  std::mutex fab_mu;
  bool fab_lock = true;

  // The progress role: whoever holds it reads the CQ and, at the outermost level, runs
  // handlers. `waiters` counts application threads that want it; the service thread
  // stands aside while it is non-zero.
  std::mutex role_mu;
  std::atomic<int> waiters{0};
  // IdleTimer's first stage, in empty polls (see there): 1 when this host's ranks
  // outnumber its CPUs.
  unsigned pause_polls = 64;
  std::atomic<bool> stopping{false};
  std::thread *service = nullptr;  // never destroyed by exit(): mw::fatal may exit any thread

  // Owned by the role holder.
  std::deque<Completion> backlog;  // read from the CQ, not yet handled (kept in CQ order)
  std::vector<std::deque<Delivery>> inbox;  // per sender
  std::vector<Header> split_from;           // per sender: the kSplit header whose payload is next
  std::vector<uint8_t> split_pending;
  size_t queued = 0;                        // deliveries in all inboxes
  std::map<std::pair<int, uint64_t>, Incoming *> chunked_in;
  std::deque<ReadOp *> pending_reads;           // fi_read said EAGAIN
  std::deque<std::pair<int, uint64_t>> pending_done;  // kDone not yet posted
  std::vector<std::pair<std::byte *, size_t>> big_cache;  // freed head ‖ bulk buffers

  std::mutex out_mu;
  std::unordered_map<uint64_t, Outgoing *> outgoing;
  std::atomic<uint64_t> next_id{1}, next_key{1};
  std::atomic<int> sends_in_flight{0}, reads_in_flight{0};
  std::atomic<uint64_t> bulk_in_flight{0};  // bytes of our rendezvous sends and receives under way
  std::atomic<int> deferred_out{0};
  std::atomic<uint32_t> polled_at{0};  // Bell::posted as the last poll of the CQ began (mail())  // Bulk::kDeferred sends not yet read (not in bulk_in_flight)

  Handler handlers[static_cast<size_t>(MsgType::kEnd)] = {};
  Placer placers[static_cast<size_t>(MsgType::kEnd)] = {};

  std::atomic<uint64_t> rejected_by[static_cast<size_t>(Result::kCount)] = {};
  std::atomic<uint64_t> rejected_total{0};
  std::atomic<unsigned> warnings{0};
};

State &g = *new State;  // never destroyed: the service thread may outlive static destructors

// shm: once every peer has mapped this endpoint's region, its name is needed no more;
// unlinked then, the region goes with the last process that maps it, however the job
// ends (a rank killed by SIGKILL included). Rank r knows every peer has it mapped when
// its own greetings to ranks above it have gone through (connect_peers()) and the
// greetings of the r ranks below it have arrived: a peer writes into this region to
// send here, and answers a connection request only once it has mapped the requester's.
void unlink_region_once_mapped() {
  if (g.region_name.empty() || !g.greeted_all.load(std::memory_order_acquire) ||
      g.greetings.load(std::memory_order_acquire) < g.cfg.rank)
    return;
  if (!g.region_unlinked.exchange(true)) shm_unlink(g.region_name.c_str());
}

// Held around each fi_* call on the endpoint's objects, if the provider needs it.
class FabLock {
 public:
  FabLock() : on_(g.fab_lock) {
    if (on_) g.fab_mu.lock();
  }
  ~FabLock() {
    if (on_) g.fab_mu.unlock();
  }
  FabLock(const FabLock &) = delete;
  FabLock &operator=(const FabLock &) = delete;

 private:
  bool on_;
};

// Held around each message post (fi_send, fi_inject) when split sends are on.
class PostLock {
 public:
  PostLock() : on_(g.split) {
    if (on_)
      while (g.post_mu.test_and_set(std::memory_order_acquire)) __builtin_ia32_pause();
  }
  ~PostLock() {
    if (on_) g.post_mu.clear(std::memory_order_release);
  }
  PostLock(const PostLock &) = delete;
  PostLock &operator=(const PostLock &) = delete;

 private:
  bool on_;
};

// Set while this thread holds the post lock between a split header and its payload:
// progress it makes then must post no message (kDone waits in pending_done).
thread_local bool t_defer_sends = false;

thread_local int t_role_depth = 0;  // > 0 while this thread holds the progress role
thread_local bool t_in_handler = false;
thread_local bool t_is_service = false;


long elapsed_ns(SteadyClock::time_point since) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - since).count();
}

// Between two empty polls, in the first stage of waiting (IdleTimer).
inline void cpu_relax() { __builtin_ia32_pause(); }

Header make_header(MsgType type, uint32_t flags, uint64_t clock, uint64_t payload_len,
                   uint64_t bulk_len) {
  Header h;
  h.magic = kMagic;
  h.version = kVersion;
  h.type = static_cast<uint16_t>(type);
  h.sender = g.cfg.rank;
  h.flags = flags;
  h.secret_tag = secret_tag(g.cfg.job_secret);
  h.clock = clock;
  h.payload_len = payload_len;
  h.bulk_len = bulk_len;
  return h;
}

// Copies the bytes [from, from + len) of a gather list to dst.
void gather(std::span<const iovec> iov, size_t from, std::byte *dst, size_t len) {
  for (const iovec &v : iov) {
    if (len == 0) break;
    if (from >= v.iov_len) {
      from -= v.iov_len;
      continue;
    }
    size_t n = std::min(v.iov_len - from, len);
    std::memcpy(dst, static_cast<const std::byte *>(v.iov_base) + from, n);
    dst += n;
    len -= n;
    from = 0;
  }
}

size_t total_len(std::span<const iovec> iov) {
  size_t n = 0;
  for (const iovec &v : iov) n += v.iov_len;
  return n;
}

// ---------------------------------------------------------------------------------------
// Memory registration
// ---------------------------------------------------------------------------------------

fid_mr *reg(void *buf, size_t len, uint64_t access, const char *what) {
  fid_mr *mr = nullptr;
  uint64_t key = g.mr_prov_key ? 0 : g.next_key.fetch_add(1);
  MW_FI_CHECK(fi_mr_reg, (g.domain, buf, len, access, 0, key, 0, &mr, nullptr),
              "registering %s (%zu bytes at %p)", what, len, buf);
  if (g.mr_endpoint) {
    MW_FI_CHECK(fi_mr_bind, (mr, &g.ep->fid, 0), "binding %s to the endpoint", what);
    MW_FI_CHECK(fi_mr_enable, (mr), "enabling %s", what);
  }
  return mr;
}

void unreg(fid_mr *mr, const char *what) {
  if (mr) MW_FI_CHECK(fi_close, (&mr->fid), "closing the registration of %s", what);
}

void *desc_of(fid_mr *mr) { return mr ? fi_mr_desc(mr) : nullptr; }

// ---------------------------------------------------------------------------------------
// Waking (the mechanisms; who uses them is under "Progress")
// ---------------------------------------------------------------------------------------

// Futexes on the bells are not FUTEX_PRIVATE: the words live in memory shared between
// processes.

// Sleeps while *addr == expected, until a wake for one of `bits` or timeout_ms. Returns
// false if it slept the whole timeout.
bool futex_wait(std::atomic<uint32_t> *addr, uint32_t expected, uint32_t bits, int timeout_ms) {
  // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time.
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += timeout_ms / 1000;
  ts.tv_nsec += (timeout_ms % 1000) * 1'000'000L;
  if (ts.tv_nsec >= 1'000'000'000L) ts.tv_sec += 1, ts.tv_nsec -= 1'000'000'000L;
  // EAGAIN (the word changed), ETIMEDOUT, EINTR: all mean "look again".
  return syscall(SYS_futex, reinterpret_cast<uint32_t *>(addr), FUTEX_WAIT_BITSET, expected, &ts,
                 nullptr, bits) == 0 ||
         errno != ETIMEDOUT;
}

void futex_wake(std::atomic<uint32_t> *addr, uint32_t bits) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(addr), FUTEX_WAKE_BITSET, INT_MAX, nullptr,
          nullptr, bits);
}

std::atomic<uint32_t> *my_bell() { return &g.bells[g.cfg.rank].word; }

// After posting a message to `dest`: wakes it if it announced it is going to sleep.
// The fence orders our post before our read of its bell; the sleeper arms its bell
// before its last look at the CQ (a Dekker pair), so one of the two sees the other.
// Also rung when the provider refuses a post with -FI_EAGAIN (SendRetry): the peer may
// have to poll before anything can be posted to it (shm's first contact; a full queue).
// A load of one cache line when the peer is awake.
// After the caller's fence: if any of `bits` is armed on bell b, clears them, bumps the
// generation and wakes the threads whose bit was set.
inline void wake_armed(std::atomic<uint32_t> *b, uint32_t bits) {
  uint32_t w = b->load(std::memory_order_relaxed);
  while (w & bits) {
    if (b->compare_exchange_weak(w, (w + kBellGen) & ~bits)) {
      futex_wake(b, w & bits);
      return;
    }
  }
}

inline void ring(int dest) {
  if (g.wait != WaitMode::kDoorbell) return;
  g.bells[dest].posted.fetch_add(1, std::memory_order_seq_cst);  // and the fence
  wake_armed(&g.bells[dest].word, kArmedBoth);
}

// ring() for a shared word instead of a message (transport.hpp): the same Dekker pair,
// with a fence where ring() has its RMW on `posted` (no message was posted, so mail() must
// not see one), and only the application thread's bit: the service thread has nothing to
// take from the CQ, and waking it would cost a core's worth of polling before it sleeps
// again. Clearing kArmedApp and bumping the generation makes a waiter that armed but has
// not yet slept return from futex_wait at once.
void ring_app(int dest) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  wake_armed(&g.bells[dest].word, kArmedApp);
}

// Wakes this rank's sleeping threads (close(), or messages queued for the service thread).
void wake_local() {
  switch (g.wait) {
    case WaitMode::kDoorbell:
      my_bell()->fetch_add(kBellGen);
      futex_wake(my_bell(), FUTEX_BITSET_MATCH_ANY);
      break;
    case WaitMode::kFd: {
      uint64_t one = 1;
      if (write(g.event_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        mw::fatal_errno("transport", "cannot wake the service thread (eventfd)");
      break;
    }
    default:
      break;  // kSleep: sleepers look again within 2 ms
  }
}

void set_cq_armed(bool on) {
  if (g.cq_armed.load() == on) return;
  epoll_event ev{};
  ev.events = on ? EPOLLIN : 0;
  ev.data.fd = g.cq_fd;
  if (epoll_ctl(g.epoll_fd, EPOLL_CTL_MOD, g.cq_fd, &ev) != 0)
    mw::fatal_errno("epoll_ctl", "cannot %s the completion queue's wait fd",
                    on ? "arm" : "disarm");
  g.cq_armed.store(on);
}

// kFd: lets the fd stand for the CQ (fi_trywait). False: completions are waiting, poll.
bool cq_trywait() {
  FabLock lk;
  fid *f = &g.cq->fid;
  int ret = fi_trywait(g.fabric, &f, 1);
  if (ret == -FI_EAGAIN) return false;
  if (ret < 0) fi_fatal("fi_trywait", ret, "on the completion queue");
  return true;
}

// ---------------------------------------------------------------------------------------
// Receiving
// ---------------------------------------------------------------------------------------

bool refill();

void post_recv(RxBuf *rx) {
  for (;;) {
    long ret;
    {
      FabLock lk;
      ret = fi_recv(g.ep, rx->buf, g.buf_len, desc_of(g.rx_mr), FI_ADDR_UNSPEC, &rx->ctx);
    }
    if (ret == 0) {
      rx->posted = g.rx_posted++;
      rx->arrived = false;
      g.rx_ring[rx->posted % g.rx_ring.size()] = rx;
      return;
    }
    if (ret != -FI_EAGAIN) fi_fatal("fi_recv", ret, "posting a receive buffer");
    // We never post more buffers than the receive queue holds, but a provider may need
    // to progress to free room: read completions into the backlog (keeping their order;
    // the caller holds the role, as every caller of post_recv does).
    if (!refill()) sched_yield();
  }
}

const char *rank_phrase(char *buf, size_t len, const void *msg, size_t received, int source) {
  int claimed = -1;
  if (received >= sizeof(Header)) {
    Header h;
    std::memcpy(&h, msg, sizeof h);
    claimed = h.sender;
  }
  if (source != kUnknownSource && claimed != source && claimed >= 0 && claimed < g.cfg.nprocs)
    std::snprintf(buf, len, "rank %d (which claims to be rank %d)", source, claimed);
  else if (source != kUnknownSource)
    std::snprintf(buf, len, "rank %d", source);
  else if (claimed >= 0 && claimed < g.cfg.nprocs)
    std::snprintf(buf, len, "rank %d", claimed);
  else
    std::snprintf(buf, len, "an unknown rank");
  return buf;
}

// Counts a dropped message and says why, once per message up to kMaxWarnings.
// `truncated`: the provider cut it to `received` bytes (it did not fit a receive buffer).
void reject(Result why, const void *msg, size_t received, int source, bool truncated = false) {
  g.rejected_by[static_cast<size_t>(why)].fetch_add(1, std::memory_order_relaxed);
  g.rejected_total.fetch_add(1, std::memory_order_relaxed);
  stats::count_rejected();
  unsigned n = g.warnings.fetch_add(1, std::memory_order_relaxed);
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
  g.handlers[h.type](h, payload);
  t_in_handler = false;
}

std::byte *big_alloc(size_t len, size_t *cap) {
  for (size_t i = 0; i < g.big_cache.size(); ++i) {
    auto [p, c] = g.big_cache[i];
    if (c >= len && c / 2 <= len) {
      g.big_cache.erase(g.big_cache.begin() + static_cast<long>(i));
      *cap = c;
      return p;
    }
  }
  auto *p = static_cast<std::byte *>(std::malloc(len));
  if (!p) mw::fatal("transport", "cannot allocate %zu bytes for an arriving message", len);
  *cap = len;
  return p;
}

void big_free(std::byte *p, size_t cap) {
  if (!p) return;
  if (g.big_cache.size() >= 4) {
    std::free(g.big_cache.front().first);
    g.big_cache.erase(g.big_cache.begin());
  }
  g.big_cache.emplace_back(p, cap);
}

// Runs the placer of an eager message that has a bulk and copies the bulk into place.
// Returns the head.
std::span<const std::byte> place_eager(Header &h, std::span<const std::byte> payload) {
  size_t head_len = payload.size() - h.bulk_len;
  std::span<const std::byte> head = payload.first(head_len);
  h.payload_len = head_len;
  std::vector<iovec> where;
  g.placers[h.type](h, head, where);
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
  if (g.placers[h.type] && h.bulk_len > 0) payload = place_eager(h, payload);
  run_handler(h, payload);
}

// Runs the handlers of every message whose turn has come. Only at the outermost level of
// progress (handlers never nest).
int deliver_ready() {
  int n = 0;
  for (int s = 0; s < g.cfg.nprocs && g.queued > 0; ++s) {
    auto &q = g.inbox[s];
    while (!q.empty() && q.front().ready()) {
      Delivery d = std::move(q.front());
      q.pop_front();
      --g.queued;
      ++n;
      if (!d.in) {
        deliver_eager(d.h, d.bytes);
        continue;
      }
      Incoming &in = *d.in;
      if (in.whole) {
        run_handler(in.h, {in.whole, in.h.payload_len});
        big_free(in.whole, in.whole_cap);
      } else {
        run_handler(in.h, in.head);
      }
    }
  }
  return n;
}

bool deliverable() {
  if (g.queued == 0) return false;
  for (auto &q : g.inbox)
    if (!q.empty() && q.front().ready()) return true;
  return false;
}

void post_read(ReadOp *op) {
  long ret;
  {
    FabLock lk;
    ret = fi_read(g.ep, op->dest, op->len, desc_of(op->local_mr), static_cast<fi_addr_t>(op->peer),
                  op->addr, op->key, &op->ctx);
  }
  if (ret == -FI_EAGAIN) {
    g.pending_reads.push_back(op);
    ring(op->peer);  // it may have to poll before we can read (see SendRetry::again)
    return;
  }
  if (ret < 0) fi_fatal("fi_read", ret, "of %zu bytes from rank %d", op->len, op->peer);
  g.reads_in_flight.fetch_add(1, std::memory_order_relaxed);
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
  if (sizeof m <= g.inject_limit) {
    PostLock pl;
    FabLock lk;
    ret = fi_inject(g.ep, &m, sizeof m, static_cast<fi_addr_t>(dest));
  } else {
    SendBuf *b = nullptr;
    {
      std::lock_guard<std::mutex> lk(g.tx_mu);
      if (!g.tx_free.empty()) {
        b = g.tx_free.back();
        g.tx_free.pop_back();
      }
    }
    if (b) {
      std::memcpy(b->buf, &m, sizeof m);
      b->peer = dest;
      PostLock pl;
      FabLock lk;
      ret = fi_send(g.ep, b->buf, sizeof m, desc_of(g.tx_mr), static_cast<fi_addr_t>(dest), &b->ctx);
      if (ret == 0) g.sends_in_flight.fetch_add(1, std::memory_order_relaxed);
      if (ret != 0) {
        std::lock_guard<std::mutex> lk2(g.tx_mu);
        g.tx_free.push_back(b);
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
  g.bulk_in_flight.fetch_sub(in->bulk_len, std::memory_order_relaxed);
  if (!in->chunked) {
    if (!post_done(sender, in->id)) g.pending_done.emplace_back(sender, in->id);
  } else {
    g.chunked_in.erase({sender, in->id});
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
  if (Placer placer = g.placers[h.type]) {
    in->head.assign(head, head + head_len);
    in->h.payload_len = head_len;
    placer(in->h, in->head, in->dest);
    if (total_len(in->dest) != in->bulk_len)
      mw::fatal("transport",
                "the placer of %s messages gave %zu bytes of room for a %llu-byte bulk",
                type_name(h.type).c_str(), total_len(in->dest),
                static_cast<unsigned long long>(in->bulk_len));
  } else {
    in->h.payload_len = head_len + in->bulk_len;
    in->whole = big_alloc(in->h.payload_len, &in->whole_cap);
    std::memcpy(in->whole, head, head_len);
    in->dest.push_back({in->whole + head_len, in->bulk_len});
  }
  g.bulk_in_flight.fetch_add(in->bulk_len, std::memory_order_relaxed);

  if (in->chunked) {
    g.chunked_in[{h.sender, in->id}] = in.get();
  } else {
    // Read each overlap of (destination piece, remote segment), kReadPiece at a time.
    size_t di = 0, si = 0, doff = 0, soff = 0;
    while (di < in->dest.size() && si < segs.size()) {
      size_t n = std::min({in->dest[di].iov_len - doff, segs[si].len - soff,
                           static_cast<size_t>(g.max_msg), kReadPiece});
      if (n > 0) {
        auto op = std::make_unique<ReadOp>();
        op->kind = OpKind::kRead;
        op->peer = h.sender;
        op->in = in.get();
        op->dest = static_cast<std::byte *>(in->dest[di].iov_base) + doff;
        op->len = n;
        op->addr = segs[si].addr + soff;
        op->key = segs[si].key;
        op->local_mr = g.mr_local ? reg(op->dest, n, FI_READ, "a read destination") : nullptr;
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
  g.inbox[h.sender].push_back(std::move(d));
  ++g.queued;
}

void on_chunk(const Header &h, const std::byte *payload, int source, const RxBuf *rx, size_t len) {
  ChunkBody c;
  std::memcpy(&c, payload, sizeof c);
  auto it = g.chunked_in.find({h.sender, c.id});
  uint64_t n = h.payload_len - sizeof c;
  if (it == g.chunked_in.end() || c.offset > it->second->bulk_len ||
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
  g.split_pending[source] = 0;
  Header h = g.split_from[source];
  if (len != h.payload_len) {
    reject(Result::kLengthMismatch, &h, sizeof h, source);
    post_recv(rx);
    return;
  }
  h.flags = 0;
  stats::received(kind_of(h.type), h.bulk_len, sizeof(Header) + len - h.bulk_len);
  if (run_handlers && g.inbox[source].empty()) {
    deliver_eager(h, {rx->buf, len});
  } else {
    Delivery d;
    d.h = h;
    d.bytes.assign(rx->buf, rx->buf + len);
    g.inbox[source].push_back(std::move(d));
    ++g.queued;
  }
  post_recv(rx);
}

void on_recv(RxBuf *rx, size_t len, fi_addr_t src, bool run_handlers) {
  int source = g.have_source && src != FI_ADDR_NOTAVAIL && src < static_cast<fi_addr_t>(g.cfg.nprocs)
                   ? static_cast<int>(src)
                   : kUnknownSource;
  if (source != kUnknownSource && g.split_pending[source]) {
    on_split_payload(rx, len, source, run_handlers);
    return;
  }
  Result r = validate(rx->buf, len, g.limits, source);
  Header h{};
  if (r == Result::kOk) {
    std::memcpy(&h, rx->buf, sizeof h);
    if (is_protocol_type(h.type) && !g.handlers[h.type]) r = Result::kNoHandler;
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
      g.greetings.fetch_add(1, std::memory_order_acq_rel);
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
        std::lock_guard<std::mutex> lk(g.out_mu);
        auto it = g.outgoing.find(d.id);
        if (it == g.outgoing.end() || it->second->dest != h.sender) {
          reject(Result::kBadBody, rx->buf, len, source);
        } else if (it->second->deferred) {
          finished = it->second;
          g.outgoing.erase(it);
        } else {
          it->second->done.store(true, std::memory_order_release);
        }
      }
      if (finished) {
        for (fid_mr *mr : finished->mrs) unreg(mr, "a message's bulk");
        delete finished;
        g.deferred_out.fetch_sub(1, std::memory_order_release);
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
        g.split_from[source] = h;
        g.split_pending[source] = 1;
      } else if (h.flags != 0) {
        start_incoming(h, payload);
      } else if (run_handlers && g.inbox[h.sender].empty()) {
        // The fast path: handled in place, in the receive buffer.
        h.flags = 0;
        deliver_eager(h, {payload, h.payload_len});
      } else {
        Delivery d;
        d.h = h;
        d.bytes.assign(payload, payload + h.payload_len);
        g.inbox[h.sender].push_back(std::move(d));
        ++g.queued;
      }
      break;
  }
  post_recv(rx);
}

void on_read_done(ReadOp *op) {
  g.reads_in_flight.fetch_sub(1, std::memory_order_relaxed);
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

void release_sendbuf(SendBuf *b) {
  g.sends_in_flight.fetch_sub(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lk(g.tx_mu);
  g.tx_free.push_back(b);
}

[[noreturn]] void cq_failure(const fi_cq_err_entry &err) {
  char detail[256] = "";
  fi_cq_strerror(g.cq, err.prov_errno, err.err_data, detail, sizeof detail);
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
            peer_s, g.provider.c_str(), fi_strerror(std::abs(err.err)), detail);
}

// Reads a batch of completions into the backlog. False: the CQ is empty.
bool refill() {
  fi_cq_data_entry e[kBatch];
  fi_addr_t src[kBatch];
  long n;
  {
    FabLock lk;
    n = g.have_source ? fi_cq_readfrom(g.cq, e, kBatch, src) : fi_cq_read(g.cq, e, kBatch);
  }
  if (n == -FI_EAGAIN) return false;
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    long r;
    {
      FabLock lk;
      r = fi_cq_readerr(g.cq, &err, 0);
    }
    if (r < 0) fi_fatal("fi_cq_readerr", r, "reading a failed completion");
    auto *op = static_cast<Op *>(err.op_context);
    int code = std::abs(err.err);  // shm reports -FI_ETRUNC, rxm FI_ETRUNC
    if (op && op->kind == OpKind::kRecv && code == FI_ETRUNC) {
      // A message longer than a receive buffer: the provider kept the first buf_len bytes.
      // Handled in its turn (take_received), as every receive is.
      Completion c{};
      c.e.op_context = op;
      c.e.len = g.buf_len;
      c.src = FI_ADDR_NOTAVAIL;
      c.truncated = true;
      g.backlog.push_back(c);
      return true;
    }
    if (op && op->kind == OpKind::kRecv && code == FI_ECANCELED && g.stopping.load())
      return true;
    cq_failure(err);
  }
  if (n < 0) fi_fatal("fi_cq_read", n, "on the completion queue");
  for (long i = 0; i < n; ++i)
    g.backlog.push_back({e[i], g.have_source ? src[i] : FI_ADDR_NOTAVAIL});
  return true;
}

void retry_pending() {
  size_t n = g.pending_reads.size();
  for (size_t i = 0; i < n; ++i) {
    ReadOp *op = g.pending_reads.front();
    g.pending_reads.pop_front();
    post_read(op);  // may queue it again
  }
  while (!g.pending_done.empty() && post_done(g.pending_done.front().first, g.pending_done.front().second))
    g.pending_done.pop_front();
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
  const size_t n = g.rx_ring.size();
  while (g.rx_next < g.rx_posted) {
    RxBuf *rx = g.rx_ring[g.rx_next % n];
    if (!rx->arrived) break;
    ++g.rx_next;
    rx->arrived = false;
    if (rx->truncated) {
      rx->truncated = false;
      // An error entry does not say where the message came from.
      reject(Result::kTooLong, rx->buf, g.buf_len, kUnknownSource, true);
      post_recv(rx);
    } else {
      on_recv(rx, rx->len, rx->src, run_handlers);
    }
  }
}

// One turn of progress, for the role holder. Returns how much it did.
int poll_cq(bool run_handlers) {
  // What peers had posted when this poll began: mail() compares against it.
  if (g.bells) g.polled_at.store(g.bells[g.cfg.rank].posted.load(std::memory_order_seq_cst), std::memory_order_relaxed);
  if (!g.pending_reads.empty() || !g.pending_done.empty()) retry_pending();
  int n = 0;
  bool refilled = false;  // one fi_cq_read per turn: an empty one costs a provider progress
  for (int i = 0; i < kBatch; ++i) {
    if (g.backlog.empty()) {
      if (refilled || !refill()) break;
      refilled = true;
      if (g.backlog.empty()) {  // an error entry was handled
        ++n;
        break;
      }
    }
    Completion c = g.backlog.front();
    g.backlog.pop_front();
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
        g.sends_in_flight.fetch_sub(1, std::memory_order_relaxed);
        static_cast<OwnedSend *>(op)->done.store(true, std::memory_order_release);
        break;
      case OpKind::kRead:
        on_read_done(static_cast<ReadOp *>(op));
        break;
    }
  }
  if (run_handlers && g.queued > 0) n += deliver_ready();
  return n;
}

// ---------------------------------------------------------------------------------------
// Progress: who polls, and how idle threads sleep
//
// One thread at a time holds the progress role (role_mu) and reads the CQ. Normally the
// service thread. An application thread that must wait (progress_until, or a send() that
// waits for a free buffer or for its bulk to be read) takes the role itself: waiters > 0
// tells the service thread to park, so two threads never spin on one rank's CQ (on a
// 2-core machine that would halve the latency-critical thread's share of a core).
//
// kDoorbell, the parked service thread sleeps on the bell with kArmedService clear: rings
// for new messages do not wake it while the application thread polls. When the last
// application waiter leaves (hand_back), it sets waiters to 0, then arms kArmedService,
// then looks at the CQ once more: what came before the arming is taken by that look, what
// comes after rings, and a service thread that the ring wakes finds nobody progressing
// and takes the CQ. No system call on the way in or out, so a tight acquire/release loop
// pays none.
// kFd, the service thread sleeps in epoll on {event_fd, cq_fd}; the cq_fd is disarmed
// while an application thread polls, and the parked service thread takes the CQ back by
// itself after the application thread leaves (park()).
//
// Wake-ups that no peer sends. A ring (or the CQ's fd) says a message arrived. Work that
// one of our threads leaves for another is not a message, so whoever leaves it wakes the
// others (wake_local): messages a thread took off the CQ but could not hand to their
// handlers (a send's wait, nudge()), rendezvous reads and kDone messages the provider has
// not taken yet (left_work()). Each such case, missed, cost a wake-up by timeout: 100 ms
// (kIdleTimeoutMs) or 1 s (park()).
// ---------------------------------------------------------------------------------------

bool busy() {
  return g.sends_in_flight.load(std::memory_order_relaxed) > 0 ||
         g.reads_in_flight.load(std::memory_order_relaxed) > 0 || !g.pending_reads.empty() ||
         !g.pending_done.empty() || g.bulk_in_flight.load(std::memory_order_relaxed) > 0;
}

int block_timeout_ms() { return busy() ? kBusyTimeoutMs : kIdleTimeoutMs; }

// How long an idle progress thread polls before it blocks: spin_us, and longer while a
// bulk transfer of ours is under way, by the time it should take (0.5 ns a byte, capped):
// the thread waiting for a 1 MiB transfer's kDone would otherwise fall asleep just
// before it comes, and pay a wake-up on every large message.
long spin_budget_ns() {
  uint64_t bulk = g.bulk_in_flight.load(std::memory_order_relaxed);
  return static_cast<long>(g.cfg.spin_us) * 1000 + static_cast<long>(std::min<uint64_t>(bulk / 2, kMaxBulkSpinNs));
}

// CPU time of the calling thread.
long thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1'000'000'000L + ts.tv_nsec;
}

// How an idle progress thread waits, in three stages:
//  1. pause between polls, for the first 64 empty polls (a few microseconds): an answer
//     from a peer running on another core comes within that. Not when the ranks on this
//     host outnumber its CPUs (State::pause_polls, set by open()): then the peer is
//     likely waiting for a core, maybe ours, and every pause keeps it from running. With
//     8 ranks on 2 cores the pauses made a barrier 65-80 us against 24-31 without, at 4
//     ranks 21-34 against 5-8 (ec_bench barrier, alternated, load average ~5);
//  2. sched_yield between polls: if the peer shares our core (more runnable threads than
//     cores, the common case of 8 ranks on 2 cores) it runs at once instead of after our
//     time slice;
//  3. block on the wait object, once spin_budget_ns() of this thread's CPU time is
//     spent. CPU time, not wall time: a thread preempted while it waits has not used its
//     budget. The clock is a system call, so it is read once per 32 empty polls, the
//     first time at the end of stage 1 or at the 32nd empty poll, whichever is later: a
//     wait with no stage 1 (ranks outnumbering cores, wait_shared) paid it at its first
//     empty poll, ~3% of a barrier's time at 4 ranks on 2 cores.
class IdleTimer {
 public:
  // pause_polls: the first stage's length (1: none; wait_shared spent it already).
  explicit IdleTimer(unsigned pause_polls = g.pause_polls) : pause_(pause_polls) {}
  void work() { empty_ = 0; }
  bool first_stage() const { return empty_ + 1 < pause_; }
  // Between two empty polls: false to keep polling (after relaxing), true to block.
  bool expired() {
    ++empty_;
    if (empty_ < pause_) {
      cpu_relax();
      return false;
    }
    const unsigned first = pause_ > 32 ? pause_ : 32;
    if (empty_ == first) since_ = thread_cpu_ns();
    else if (empty_ > first && (empty_ & 31) == 0 && thread_cpu_ns() - since_ > spin_budget_ns())
      return true;
    sched_yield();
    return false;
  }

 private:
  unsigned pause_;
  unsigned empty_ = 0;
  long since_ = 0;
};

// Work the role holder is leaving that no peer will ring this rank for: messages taken
// off the CQ whose handlers have not run (taken where handlers could not run), and
// rendezvous reads or kDone messages still to be retried or completed (a read on shm
// without CMA completes by our own progress after the peer's, unrung). The role holder
// only; whoever leaves such work wakes this rank's sleepers (wake_local).
bool left_work() {
  return deliverable() || g.reads_in_flight.load(std::memory_order_relaxed) > 0 ||
         !g.pending_reads.empty() || !g.pending_done.empty();
}

// Progress without taking the role from anyone for long: for a thread that needs the CQ
// to move (a full send queue, no free send buffer). Never runs handlers.
void nudge() {
  if (t_role_depth > 0) {
    poll_cq(false);
    return;
  }
  if (g.role_mu.try_lock()) {
    ++t_role_depth;
    poll_cq(false);
    --t_role_depth;
    // What this poll took, it could not deliver: the service thread (or an application
    // thread in progress_until) may be asleep, and no peer will ring for it again.
    bool left = left_work();
    g.role_mu.unlock();
    if (left) wake_local();
  } else {
    sched_yield();
  }
}

// How long a send may wait for the provider to accept it before the rank gives up.
std::atomic<int> g_stall_timeout_ms{kDefaultStallTimeoutMs};

// A send the provider cannot take yet (-FI_EAGAIN, or no free send buffer): progress
// first, which is what usually frees room; when that stops helping, sleep a little longer
// each time (up to 1 ms) rather than spin; and report a peer that has accepted nothing
// for the stall timeout (unreachable, or gone) instead of waiting for it forever.
class SendRetry {
 public:
  SendRetry(const char *what, int dest) : what_(what), dest_(dest) {}
  void again() {
    // The provider may need the *peer* to act before it accepts anything for it, and the
    // peer may be asleep on its doorbell, which only a successful post rings. shm's first
    // send to a peer it has never exchanged a message with fails with -FI_EAGAIN after
    // putting a connection request in the peer's queue (smr_verify_peer/smr_send_name);
    // only the peer's progress answers it, and until then every retry fails the same way.
    // Unrung, the peer slept until its idle timeout (kIdleTimeoutMs): `ec_bench cold` at
    // 8 ranks took ~96 ms for the first acquire from a manager in half of the runs. A
    // full receive queue at the peer drains only when it polls, likewise.
    if (dest_ >= 0) ring(dest_);
    nudge();
    if (++tries_ < kSpinTries) {
      // What we wait for is mostly another process's turn to run (the peer, woken just
      // now; on 2 cores with 8 ranks it shares ours): after a few quick retries, give it
      // the core between them. Spinning on, a first contact took 0.3-5 ms (1000 tries).
      if (tries_ > kQuickTries) sched_yield();
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (tries_ == kSpinTries) since_ = now;
    if (now - since_ > std::chrono::milliseconds(g_stall_timeout_ms.load(std::memory_order_relaxed))) {
      if (dest_ < 0)
        mw::fatal("transport", "sending %s: no send buffer came free for %d s (provider %s)",
                  what_, g_stall_timeout_ms.load() / 1000, g.provider.c_str());
      mw::fatal("transport",
                "sending %s to rank %d: the provider (%s) has accepted nothing for %d s; "
                "is rank %d reachable from here?",
                what_, dest_, g.provider.c_str(), g_stall_timeout_ms.load() / 1000, dest_);
    }
    sleep_us_ = std::min(sleep_us_ ? 2 * sleep_us_ : 1, 1000);
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
  }

 private:
  static constexpr unsigned kQuickTries = 16, kSpinTries = 1000;
  const char *what_;
  int dest_;
  unsigned tries_ = 0;
  int sleep_us_ = 0;
  std::chrono::steady_clock::time_point since_;
};

// An application thread wants the progress role (drive()): the service thread stands
// aside while waiters > 0. Called before the role is taken.
void enter_progress() {
  if (g.waiters.fetch_add(1) != 0 || g.wait != WaitMode::kFd) return;
  // kFd: the service thread, if it is the one asleep on the CQ's fd, must not wake for
  // what we are about to take: one epoll_ctl, only the first time after it took over.
  if (!g.cq_armed.load()) return;
  std::lock_guard<std::mutex> lk(g.arm_mu);
  if (g.waiters.load() > 0 && g.cq_armed.load()) {
    set_cq_armed(false);
    // cq_armed means the service thread armed the fd in block() and may be in epoll_wait
    // right now. With the fd disarmed, nothing would wake it there: not a message, and
    // not our leaving either (hand_back wakes only a thread asleep in park()). It slept
    // on until its timeout (100 ms) with messages waiting for it. Wake it, so that it
    // parks, where our leaving is seen within kHandbackGraceNs.
    wake_local();
  }
}

// The application thread now holds the role (after enter_progress).
void took_role() {
  // kDoorbell: peers need not ring the service thread while we poll; asleep, it stays so.
  // Not before we hold the role: a service thread that holds it inside a handler (a send
  // waiting for its kDone) sleeps on the bell with kArmedService, and the ring for that
  // kDone must still reach it while we wait for the role.
  if (g.wait == WaitMode::kDoorbell) my_bell()->fetch_and(~kArmedService);
}

// An application thread that holds the role (t_role_depth == 1) stops progressing: the
// CQ goes back to the service thread if no other application thread wants it, and work
// left behind wakes whoever is asleep. Releases the role.
// polled_at: peers' posted count (Bell::posted) read before this thread's last poll of
// the CQ, or nullptr where there is none.
void hand_back(std::unique_lock<std::mutex> &role, bool ran_handlers, const uint32_t *polled_at) {
  // waiters drops to 0 first. A service thread woken after this finds nobody progressing
  // and takes the CQ; one woken before it (by a ring, a wake-up or a timeout) parks
  // again. kDoorbell used to arm, take its last look and only then leave: a ring between
  // the arming and the leaving cleared kArmedService and woke the service thread, which
  // saw waiters > 0 and parked again with nothing armed, and the next message to this
  // rank waited for park's 1 s timeout (qs_dbg: acquires of exactly 1.000 s).
  const bool last = g.waiters.fetch_sub(1) == 1;
  if (last) {
    switch (g.wait) {
      case WaitMode::kDoorbell:
        // Arm, then look once more (holding the role, which saves taking it again): what
        // was posted before the arming is taken by this look, what comes after rings the
        // service thread (ring()'s Dekker pair). Nothing posted since the last poll (the
        // count, read after the arming: the same pair), no look: ~0.1 us of every return.
        my_bell()->fetch_or(kArmedService);
        if (polled_at && g.bells[g.cfg.rank].posted.load(std::memory_order_seq_cst) == *polled_at) break;
        while (poll_cq(ran_handlers) > 0) {
        }
        break;
      case WaitMode::kFd:
        // No hand-back here: re-arming the fd costs fi_trywait and epoll_ctl (~3 us per
        // call on this project's machines), which a rank waiting for a reply after every
        // request would pay each time. The parked service thread takes the CQ back by
        // itself within kHandbackGraceNs (park()); only if it sleeps untimed, after a long
        // wait of ours, does it need waking (below).
        g.app_leaves.fetch_add(1, std::memory_order_relaxed);
        break;
      default:
        break;
    }
  }
  bool wake = left_work();
  t_role_depth = 0;
  role.unlock();
  // service_untimed is read after waiters fell (seq_cst both): park() sets it before it
  // checks waiters, so one of us sees the other.
  if (last && g.wait == WaitMode::kFd && g.service_untimed.load()) wake = true;
  if (wake) wake_local();
}

// Blocks the calling thread, which is `who` (kArmedApp or kArmedService), until the wait
// object fires or timeout_ms pass. `recheck` polls once after arming the doorbell (see
// ring()) and returns non-zero if it found work, in which case there is no sleep.
// Returns false if it slept until timeout_ms with nothing to wake it.
template <class Recheck>
bool block(uint32_t who, int timeout_ms, long *sleep_ns, Recheck &&recheck) {
  bool woken = true;
  switch (g.wait) {
    case WaitMode::kDoorbell: {
      uint32_t w = my_bell()->fetch_or(who) | who;
      if (recheck() > 0) break;
      // The service thread stands aside (parks) once an application thread progresses,
      // unless it holds the role (inside a handler, a send waiting for its kDone): then
      // the application thread waits for the role, and the service thread must sleep
      // here, armed, to be rung when the kDone comes (not spin, not park).
      if (who == kArmedService && g.stopping.load()) break;
      if (who == kArmedService && t_role_depth == 0 && g.waiters.load() > 0) break;
      woken = futex_wait(my_bell(), w, who, timeout_ms);
      break;
    }
    case WaitMode::kFd: {
      if (!cq_trywait()) return true;
      // The service thread sleeps in epoll (where local wake-ups reach it too), unless it
      // holds the role (nested, see above): then it polls the CQ's fd like an application
      // thread, which works while an application thread has the fd disarmed in epoll.
      if (who == kArmedService && t_role_depth == 0) {
        {
          std::lock_guard<std::mutex> lk(g.arm_mu);
          if (g.waiters.load() > 0) return true;
          set_cq_armed(true);
        }
        epoll_event ev[2];
        int n = epoll_wait(g.epoll_fd, ev, 2, timeout_ms);
        woken = n != 0;
        for (int i = 0; i < n; ++i)
          if (ev[i].data.fd == g.event_fd) {
            uint64_t v;
            if (read(g.event_fd, &v, sizeof v) < 0 && errno != EAGAIN)
              mw::fatal_errno("transport", "reading the wake-up eventfd");
          }
      } else {
        pollfd p{g.cq_fd, POLLIN, 0};
        woken = poll(&p, 1, timeout_ms) != 0;
      }
      return woken;
    }
    default: {
      *sleep_ns = std::min(std::max(*sleep_ns * 2, 1000L), kSleepMaxNs);
      timespec ts{0, *sleep_ns};
      nanosleep(&ts, nullptr);
      return true;
    }
  }
  // Awake and about to poll: no ring is needed until we arm again. (Only when no other
  // thread of ours may be asleep with the same bit: one application waiter at most.)
  if (who == kArmedService || g.waiters.load() <= 1) my_bell()->fetch_and(~who);
  return woken;
}

// Progress on the calling thread until done(): the heart of progress_until() and of
// send()'s waits. run_handlers: at the outermost level only. pause_polls: IdleTimer's.
// mail_gated (wait_shared, where done() watches a shared word): during the first stage,
// poll the CQ only when peers have posted to this rank (the doorbell line's count) or
// every 16th look, and otherwise just ask done(): a look then costs a load, not a CQ
// poll, yet a message is taken here at once, with the service thread left parked.
template <class Done>
void drive(Done &&done, bool run_handlers, unsigned pause_polls = g.pause_polls, bool mail_gated = false) {
  long sleep_ns = 0;
  if (t_role_depth > 0) {
    // Nested: inside a handler or inside a poll. Keep the role (the outer level is in
    // the middle of its work); never run handlers; block like the outer level would.
    uint32_t who = t_is_service ? kArmedService : kArmedApp;
    IdleTimer idle;
    while (!done()) {
      if (poll_cq(false) > 0) {
        idle.work();
        sleep_ns = 0;
      } else if (idle.expired()) {
        block(who, block_timeout_ms(), &sleep_ns, [&] { return poll_cq(false) > 0 || done() ? 1 : 0; });
        idle.work();
      }
    }
    return;
  }
  enter_progress();
  std::unique_lock<std::mutex> role(g.role_mu);
  took_role();
  t_role_depth = 1;
  IdleTimer idle(pause_polls);
  // Peers' posted count, read before each poll (hand_back() and the mail gate use it).
  std::atomic<uint32_t> *const posted = g.bells ? &g.bells[g.cfg.rank].posted : nullptr;
  uint32_t polled_at = 0;
  bool polled = false, slept_out = false;
  unsigned quiet = 0;
  while (!done()) {
    if (posted) {
      const uint32_t now = posted->load(std::memory_order_seq_cst);
      if (mail_gated && polled && now == polled_at && idle.first_stage() && (++quiet & 15) != 0) {
        idle.expired();  // a pause, as after an empty poll
        continue;
      }
      polled_at = now;
      polled = true;
    }
    if (poll_cq(run_handlers) > 0) {
      idle.work();
      sleep_ns = 0;
      slept_out = false;
      continue;
    }
    // As in service_main: after a block that timed out, one look, then block again.
    if (!slept_out && !idle.expired()) continue;
    t_role_depth = 0;
    role.unlock();
    slept_out = !block(kArmedApp, block_timeout_ms(), &sleep_ns, [&] {
      std::lock_guard<std::mutex> lk(g.role_mu);
      t_role_depth = 1;
      polled = false;  // this poll leaves no count behind: hand_back looks again
      int n = poll_cq(run_handlers);
      t_role_depth = 0;
      return n > 0 || done() ? 1 : 0;
    });
    role.lock();
    t_role_depth = 1;
    idle.work();
  }
  hand_back(role, run_handlers, posted && polled ? &polled_at : nullptr);
}

// The service thread stands aside while an application thread progresses: asleep, and
// not woken by arriving messages (the application thread takes them).
void park() {
  switch (g.wait) {
    case WaitMode::kDoorbell: {
      uint32_t w = my_bell()->load();
      // Armed for us only once the application thread has left (and armed it).
      if (g.waiters.load() > 0 && !g.stopping.load()) futex_wait(my_bell(), w, kArmedService, 1000);
      break;
    }
    case WaitMode::kFd: {
      // While application threads come and go (a rank sending requests and waiting for
      // the replies), look again every kHandbackGraceNs: when none is progressing any
      // more, service_main takes the CQ over. Once one has stayed for a whole period
      // (a long wait), sleep until it leaves (hand_back wakes us).
      uint64_t seen = g.app_leaves.load(std::memory_order_relaxed);
      pollfd p{g.event_fd, POLLIN, 0};
      timespec grace{0, kHandbackGraceNs};
      ppoll(&p, 1, &grace, nullptr);
      if (g.waiters.load() > 0 && g.app_leaves.load(std::memory_order_relaxed) == seen) {
        g.service_untimed.store(true);
        if (g.waiters.load() > 0 && !g.stopping.load()) {
          timespec limit{1, 0};
          ppoll(&p, 1, &limit, nullptr);
        }
        g.service_untimed.store(false);
      }
      uint64_t v;
      if (read(g.event_fd, &v, sizeof v) < 0 && errno != EAGAIN)
        mw::fatal_errno("transport", "reading the wake-up eventfd");
      break;
    }
    default: {
      timespec ts{0, 1'000'000};
      nanosleep(&ts, nullptr);
      break;
    }
  }
}

void service_main() {
  t_is_service = true;
  long sleep_ns = 0;
  bool slept_out = false;  // the last block() ended by its timeout
  while (!g.stopping.load(std::memory_order_relaxed)) {
    if (g.waiters.load(std::memory_order_relaxed) > 0) {
      park();
      continue;
    }
    std::unique_lock<std::mutex> role(g.role_mu, std::try_to_lock);
    if (!role.owns_lock()) {
      sched_yield();
      continue;
    }
    // Poll while nobody else wants the role, keeping it between polls.
    t_role_depth = 1;
    IdleTimer idle;
    bool expired = false;
    while (!g.stopping.load(std::memory_order_relaxed) &&
           g.waiters.load(std::memory_order_relaxed) == 0) {
      if (poll_cq(true) > 0) {
        idle.work();
        sleep_ns = 0;
        slept_out = false;
      } else if (slept_out || idle.expired()) {
        expired = true;
        break;
      }
    }
    t_role_depth = 0;
    role.unlock();
    // Woken by its timeout alone, it looks once and sleeps again: a spin after every
    // timeout made 8 idle ranks over tcp use 4% of a core (Transport/Idle).
    if (expired)
      slept_out = !block(kArmedService, block_timeout_ms(), &sleep_ns, [&] {
        std::lock_guard<std::mutex> lk(g.role_mu);
        t_role_depth = 1;
        int k = poll_cq(true);
        t_role_depth = 0;
        return k;
      });
  }
}

// ---------------------------------------------------------------------------------------
// Sending
// ---------------------------------------------------------------------------------------

SendBuf *take_sendbuf(int dest) {
  SendRetry retry("a message", dest);
  for (;;) {
    {
      std::lock_guard<std::mutex> lk(g.tx_mu);
      if (!g.tx_free.empty()) {
        SendBuf *b = g.tx_free.back();
        g.tx_free.pop_back();
        return b;
      }
    }
    retry.again();
  }
}

void post_sendbuf(int dest, SendBuf *b, size_t len, const char *what) {
  b->peer = dest;
  g.sends_in_flight.fetch_add(1, std::memory_order_relaxed);
  SendRetry retry(what, dest);
  for (;;) {
    long ret;
    {
      PostLock pl;
      FabLock lk;
      ret = fi_send(g.ep, b->buf, len, desc_of(g.tx_mr), static_cast<fi_addr_t>(dest), &b->ctx);
    }
    if (ret == 0) break;
    if (ret != -FI_EAGAIN) fi_fatal("fi_send", ret, "of %s (%zu bytes) to rank %d", what, len, dest);
    retry.again();
  }
  ring(dest);
}

void post_inject(int dest, const void *buf, size_t len, const char *what) {
  SendRetry retry(what, dest);
  for (;;) {
    long ret;
    {
      PostLock pl;
      FabLock lk;
      ret = fi_inject(g.ep, buf, len, static_cast<fi_addr_t>(dest));
    }
    if (ret == 0) break;
    if (ret != -FI_EAGAIN) fi_fatal("fi_inject", ret, "of %s (%zu bytes) to rank %d", what, len, dest);
    retry.again();
  }
  ring(dest);
}

// A split send: the header, then at once the payload, with nothing of ours between.
void post_split(int dest, const Header &h, const void *payload, size_t len) {
  SendRetry retry("a message", dest);
  for (;;) {
    {
      PostLock pl;
      long ret;
      {
        FabLock lk;
        ret = fi_inject(g.ep, &h, sizeof h, static_cast<fi_addr_t>(dest));
      }
      if (ret != -FI_EAGAIN) {
        if (ret < 0)
          fi_fatal("fi_inject", ret, "of a message header (%zu bytes) to rank %d", sizeof h, dest);
        // The header is out: the payload must be the next message to dest, so progress
        // made while it waits for room posts nothing.
        t_defer_sends = true;
        for (;;) {
          {
            FabLock lk;
            ret = fi_inject(g.ep, payload, len, static_cast<fi_addr_t>(dest));
          }
          if (ret != -FI_EAGAIN) break;
          retry.again();
        }
        t_defer_sends = false;
        if (ret < 0)
          fi_fatal("fi_inject", ret, "of a message payload (%zu bytes) to rank %d", len, dest);
        break;
      }
    }
    retry.again();  // no room for the header: progress, without the post lock
  }
  ring(dest);
}

void check_send(const char *call, int dest, MsgType type) {
  if (!g.connected) mw::fatal(call, "called before transport::connect");
  if (dest < 0 || dest >= g.cfg.nprocs)
    mw::fatal(call, "destination rank %d is not in this job of %d ranks", dest, g.cfg.nprocs);
  if (!is_protocol_type(static_cast<uint16_t>(type)))
    mw::fatal(call, "%s is not a protocol message type",
              type_name(static_cast<uint16_t>(type)).c_str());
}

void send_eager(int dest, MsgType type, std::span<const iovec> head, std::span<const iovec> bulk,
                size_t head_len, size_t bulk_len, uint64_t clock) {
  Header h = make_header(type, 0, clock, head_len + bulk_len, bulk_len);
  size_t wire = sizeof h + head_len + bulk_len;
  if (wire <= g.inject_limit) {
    alignas(16) std::byte buf[kStackInject];
    std::memcpy(buf, &h, sizeof h);
    gather(head, 0, buf + sizeof h, head_len);
    gather(bulk, 0, buf + sizeof h + head_len, bulk_len);
    post_inject(dest, buf, wire, "a message");
    return;
  }
  if (g.split && head_len + bulk_len <= g.split_max) {
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
  if (body > g.cfg.eager_limit)
    mw::fatal("transport::send",
              "the head of a large %s message (%zu bytes, with %zu bulk pieces) does not fit one "
              "eager message of %zu bytes",
              type_name(static_cast<uint16_t>(type)).c_str(), head_len, segs.size(),
              g.cfg.eager_limit);
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

template <class Pred>
void wait_for(Pred &&pred) {
  drive(pred, false);
}

void send_rendezvous(int dest, MsgType type, std::span<const iovec> head,
                     std::span<const iovec> bulk, size_t head_len, size_t bulk_len,
                     uint64_t clock, Bulk keep) {
  // The bulk's pieces, registered where they lie. Past kMaxSegments pieces, the rest are
  // copied together into one staging buffer (many small runs: a copy beats many reads).
  std::vector<iovec> pieces;
  for (const iovec &v : bulk)
    if (v.iov_len) pieces.push_back(v);
  std::unique_ptr<std::byte[]> staging;
  if (pieces.size() > kMaxSegments) {
    size_t from = 0;
    for (size_t i = 0; i < kMaxSegments - 1; ++i) from += pieces[i].iov_len;
    size_t rest = bulk_len - from;
    staging.reset(new std::byte[rest]);
    gather(pieces, from, staging.get(), rest);
    pieces.resize(kMaxSegments - 1);
    pieces.push_back({staging.get(), rest});
  }
  std::vector<fid_mr *> mrs;
  std::vector<Segment> segs;
  for (const iovec &v : pieces) {
    fid_mr *mr = reg(v.iov_base, v.iov_len, FI_REMOTE_READ, "a message's bulk");
    mrs.push_back(mr);
    uint64_t addr = g.mr_virt ? reinterpret_cast<uint64_t>(v.iov_base) : 0;
    segs.push_back({addr, fi_mr_key(mr), v.iov_len});
  }
  if (keep == Bulk::kDeferred) {
    // Nobody waits for this one: the receiver reads the bulk when it can, and kDone
    // frees what the send holds. Not in bulk_in_flight, which makes idle threads spin
    // longer for a transfer somebody waits for.
    auto *og = new Outgoing;
    og->id = g.next_id.fetch_add(1);
    og->dest = dest;
    og->deferred = true;
    og->mrs = std::move(mrs);
    og->staging = std::move(staging);
    {
      std::lock_guard<std::mutex> lk(g.out_mu);
      g.outgoing[og->id] = og;
    }
    g.deferred_out.fetch_add(1, std::memory_order_relaxed);
    size_t wire;
    SendBuf *b = build_rts(type, kRendezvous, clock, og->id, segs, head, head_len, bulk_len, &wire);
    post_sendbuf(dest, b, wire, "a rendezvous header");
    return;
  }
  Outgoing og;
  og.id = g.next_id.fetch_add(1);
  og.dest = dest;
  {
    std::lock_guard<std::mutex> lk(g.out_mu);
    g.outgoing[og.id] = &og;
  }
  size_t wire;
  SendBuf *b = build_rts(type, kRendezvous, clock, og.id, segs, head, head_len, bulk_len, &wire);
  g.bulk_in_flight.fetch_add(bulk_len, std::memory_order_relaxed);
  post_sendbuf(dest, b, wire, "a rendezvous header");
  wait_for([&] { return og.done.load(std::memory_order_acquire); });
  g.bulk_in_flight.fetch_sub(bulk_len, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lk(g.out_mu);
    g.outgoing.erase(og.id);
  }
  for (fid_mr *mr : mrs) unreg(mr, "a message's bulk");
}

void send_chunked(int dest, MsgType type, std::span<const iovec> head, std::span<const iovec> bulk,
                  size_t head_len, size_t bulk_len, uint64_t clock) {
  uint64_t id = g.next_id.fetch_add(1);
  size_t wire;
  SendBuf *b = build_rts(type, kChunked, clock, id, {}, head, head_len, bulk_len, &wire);
  post_sendbuf(dest, b, wire, "a rendezvous header");
  // A chunk and its headers stay a little under the eager limit, so that a layered
  // provider's own header still fits its eager buffer: ofi_rxm's is 16 KiB, and a chunk
  // message 48 bytes over it took rxm's rendezvous each time (1 MiB over tcp: 1035 us
  // against 610 us with 16000-byte chunks).
  const size_t chunk = g.cfg.eager_limit - sizeof(Header) - sizeof(ChunkBody) - kChunkSlack;
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

// ---------------------------------------------------------------------------------------
// Set-up
// ---------------------------------------------------------------------------------------

fi_info *make_hints(const std::string &prov, uint64_t caps, fi_threading threading) {
  fi_info *h = fi_allocinfo();
  if (!h) mw::fatal("fi_allocinfo", "out of memory");
  h->ep_attr->type = FI_EP_RDM;
  h->caps = caps;
  h->mode = FI_CONTEXT | FI_CONTEXT2;
  h->domain_attr->mr_mode =
      FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  h->domain_attr->threading = threading;
  h->tx_attr->msg_order = FI_ORDER_SAS;  // delivery in order per sender rests on this
  h->rx_attr->msg_order = FI_ORDER_SAS;
  h->fabric_attr->prov_name = strdup(prov.c_str());
  return h;
}

// Asks for the most the transport can use, then for less: RMA, then FI_SOURCE are optional.
fi_info *find_provider(const std::string &prov, bool want_rma) {
  const uint64_t rma = FI_RMA | FI_READ | FI_REMOTE_READ;
  std::vector<uint64_t> tries;
  if (want_rma) tries = {FI_MSG | rma | FI_SOURCE, FI_MSG | rma};
  tries.push_back(FI_MSG | FI_SOURCE);
  tries.push_back(FI_MSG);
  int last = 0;
  // Thread-safe endpoints first (application threads and the service thread call in
  // concurrently); else the transport serializes its calls itself (FabLock).
  for (uint64_t caps : tries) {
    for (fi_threading threading : {FI_THREAD_SAFE, FI_THREAD_DOMAIN}) {
      fi_info *hints = make_hints(prov, caps, threading);
      fi_info *info = nullptr;
      last = getinfo(hints, &info);
      fi_freeinfo(hints);
      if (last == 0) return info;
      if (last != -FI_ENODATA)
        fi_fatal("fi_getinfo", last, "asking for provider '%s'", prov.c_str());
    }
  }
  // Is there such a provider at all?
  fi_info *hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup(prov.c_str());
  fi_info *any = nullptr;
  int ret = getinfo(hints, &any);
  fi_freeinfo(hints);
  if (ret != 0)
    mw::fatal("fi_getinfo", "no provider '%s' on this host: %s", prov.c_str(), fi_strerror(-ret));
  fi_freeinfo(any);
  mw::fatal("fi_getinfo",
            "provider '%s' offers no reliable datagram endpoint (FI_EP_RDM) with messages sent "
            "in order (FI_ORDER_SAS): %s",
            prov.c_str(), fi_strerror(-last));
}

// The completion queue, with the best wait object the provider has (see the top).
void open_cq(size_t size) {
  fi_cq_attr attr{};
  attr.size = size;
  attr.format = FI_CQ_FORMAT_DATA;
  WaitMode want = g.cfg.wait;
  if (want == WaitMode::kAuto || want == WaitMode::kFd) {
    attr.wait_obj = FI_WAIT_FD;
    int ret = fi_cq_open(g.domain, &attr, &g.cq, nullptr);
    if (ret == 0) {
      ret = fi_control(&g.cq->fid, FI_GETWAIT, &g.cq_fd);
      if (ret == 0) {
        g.wait = WaitMode::kFd;
        return;
      }
      fi_close(&g.cq->fid);
      g.cq = nullptr;
    }
    if (want == WaitMode::kFd)
      fi_fatal("fi_cq_open", ret, "with a wait fd (FI_WAIT_FD), as Config::wait asks,");
  }
  attr.wait_obj = FI_WAIT_NONE;
  MW_FI_CHECK(fi_cq_open, (g.domain, &attr, &g.cq, nullptr), "(no wait object)");
  if (want == WaitMode::kDoorbell && !g.cfg.all_local)
    mw::fatal("transport::open", "the doorbell wait mode needs every rank on this host (all_local)");
  g.wait = want == WaitMode::kSleep ? WaitMode::kSleep
           : g.cfg.all_local        ? WaitMode::kDoorbell
                                    : WaitMode::kSleep;
}

void open_bells() {
  g.bells_name = mw::leftovers::bells_name(g.cfg.job_secret);
  const char *name = g.bells_name.c_str();
  int fd = shm_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) mw::fatal_errno("shm_open", "cannot open the job's doorbell page %s", name);
  // The bells, then the shared lines (shared_line()): a line each, so a rank waiting on
  // its bell does not share a line with words its peers write for the protocols.
  g.bells_len = (sizeof(Bell) + sizeof(SharedLine)) * static_cast<size_t>(g.cfg.nprocs);
  // Every rank sizes it the same before touching it, so no rank maps past its end.
  if (ftruncate(fd, static_cast<off_t>(g.bells_len)) != 0)
    mw::fatal_errno("ftruncate", "cannot size the job's doorbell page %s", name);
  void *p = mmap(nullptr, g.bells_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) mw::fatal_errno("mmap", "cannot map the job's doorbell page %s", name);
  ::close(fd);
  g.bells = static_cast<Bell *>(p);
}

void open_wakeup_fds() {
  g.event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (g.event_fd < 0) mw::fatal_errno("eventfd", "cannot create the service thread's wake-up fd");
  g.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (g.epoll_fd < 0) mw::fatal_errno("epoll_create1", "cannot create the service thread's epoll");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = g.event_fd;
  if (epoll_ctl(g.epoll_fd, EPOLL_CTL_ADD, g.event_fd, &ev) != 0)
    mw::fatal_errno("epoll_ctl", "cannot watch the wake-up fd");
  ev.data.fd = g.cq_fd;
  if (epoll_ctl(g.epoll_fd, EPOLL_CTL_ADD, g.cq_fd, &ev) != 0)
    mw::fatal_errno("epoll_ctl", "cannot watch the completion queue's wait fd");
  g.cq_armed.store(true);
}

std::byte *alloc_slab(size_t len) {
  void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) mw::fatal_errno("mmap", "cannot allocate %zu bytes of message buffers", len);
  return static_cast<std::byte *>(p);
}

void open_buffers() {
  g.buf_len = sizeof(Header) + g.cfg.eager_limit;
  size_t rx_n = std::min<size_t>(kRxBuffers, std::max<size_t>(g.info->rx_attr->size, 1));
  size_t tx_n = std::min<size_t>(kSendBuffers, std::max<size_t>(g.info->tx_attr->size, 1));
  g.rx_slab = alloc_slab(rx_n * g.buf_len);
  g.tx_slab = alloc_slab(tx_n * g.buf_len);
  if (g.mr_local) {
    g.rx_mr = reg(g.rx_slab, rx_n * g.buf_len, FI_RECV, "the receive buffers");
    g.tx_mr = reg(g.tx_slab, tx_n * g.buf_len, FI_SEND, "the send buffers");
  }
  g.rx.resize(rx_n);
  g.rx_ring.assign(rx_n, nullptr);
  g.rx_posted = g.rx_next = 0;
  g.tx.resize(tx_n);
  for (size_t i = 0; i < tx_n; ++i) {
    g.tx[i].kind = OpKind::kSend;
    g.tx[i].buf = g.tx_slab + i * g.buf_len;
    g.tx_free.push_back(&g.tx[i]);
  }
  for (size_t i = 0; i < rx_n; ++i) {
    g.rx[i].kind = OpKind::kRecv;
    g.rx[i].peer = -1;
    g.rx[i].buf = g.rx_slab + i * g.buf_len;
    post_recv(&g.rx[i]);
  }
}

// Connects this rank to every peer now rather than at the first message between them.
// shm connects a pair lazily: the first send to a peer fails with -FI_EAGAIN after
// leaving a connection request in the peer's queue, and succeeds only once the peer's
// progress has answered it. In a running job that peer may be asleep (SendRetry rings
// it) or waiting for a core (8 ranks on 2): a first message took 0.1-5 ms, up to 30 ms
// on a loaded machine, against ~10 us once connected (ec_bench cold: a rank's first
// acquire of a lock managed by a rank it never talked to). Here every rank has just
// started its service thread and polls, so all pairs connect at once, in a few ms.
// Only for kDoorbell (shm): there a sleeping peer is woken by nothing but our ring, and
// the ranks are on one host, so every pair costs little. On tcp the first message opens
// a connection (~10 ms here; the peer's CQ fd wakes it for that), and connecting every
// pair of a large multi-host job up front would cost more than it saves.
// One message per pair, from the lower rank (the answer to the request connects both
// directions): a kDone for transfer kGreetingId, which the receiver drops unseen and
// neither side counts in the statistics (it is the provider's connection, not traffic).
void connect_peers() {
  if (g.wait != WaitMode::kDoorbell || !g.cfg.eager_connect) return;
  struct {
    Header h;
    DoneBody d;
  } m{make_header(MsgType::kDone, 0, 0, sizeof(DoneBody), 0), {kGreetingId}};
  if (sizeof m > g.inject_limit) return;
  std::vector<int> left;
  for (int p = g.cfg.rank + 1; p < g.cfg.nprocs; ++p) left.push_back(p);
  const auto start = SteadyClock::now();
  long nap_ns = 0;
  while (!left.empty()) {
    // Every peer still to connect at each turn: their requests are answered in parallel.
    size_t k = 0;
    for (int p : left) {
      long ret;
      {
        PostLock pl;
        FabLock lk;
        ret = fi_inject(g.ep, &m, sizeof m, static_cast<fi_addr_t>(p));
      }
      if (ret != 0 && ret != -FI_EAGAIN) fi_fatal("fi_inject", ret, "of a greeting to rank %d", p);
      ring(p);  // a request to answer, or a message to take
      if (ret == -FI_EAGAIN) left[k++] = p;
    }
    left.resize(k);
    if (left.empty()) break;
    if (elapsed_ns(start) / 1'000'000 > g_stall_timeout_ms.load(std::memory_order_relaxed))
      mw::fatal("transport::connect",
                "rank %d did not answer the provider's (%s) connection request within %d s; is it "
                "running?",
                left.front(), g.provider.c_str(), g_stall_timeout_ms.load() / 1000);
    nap_ns = std::min(std::max(nap_ns * 2, 1000L), 1'000'000L);
    timespec ts{0, nap_ns};
    nanosleep(&ts, nullptr);
  }
  g.greeted_all.store(true, std::memory_order_release);
  unlink_region_once_mapped();
}

}  // namespace

// ---------------------------------------------------------------------------------------
// The interface
// ---------------------------------------------------------------------------------------

// Regions of ranks that died before every peer had mapped them (see leftovers.hpp): a
// process given such a rank's pid could not name its own region so, and 16 MiB each
// stay in /dev/shm until someone removes them. Said once, on standard error.
void remove_dead_endpoints() {
  std::vector<mw::leftovers::Removed> removed = mw::leftovers::remove_dead_endpoints();
  if (!removed.empty()) mw::warn("mw_init", "%s", mw::leftovers::describe(removed).c_str());
}

// What this process made that would outlive it if it exits without close() (mw::fatal on
// any thread, a failed start-up, a program's exit() before mw_finalize) while the names
// are still there: its endpoint's shm region (16 MiB, until every peer has mapped it)
// and, before connect(), the job's doorbell page. Otherwise only a later job would remove
// them (leftovers.hpp). Closing the endpoint here could race the service thread, and only
// the names outlive the process: they go (peers that mapped them keep their mappings).
void remove_names_at_exit() {
  if (!g.region_name.empty() && !g.region_unlinked.exchange(true)) shm_unlink(g.region_name.c_str());
  if (!g.bells_name.empty()) shm_unlink(g.bells_name.c_str());
}

std::vector<uint8_t> open(const Config &cfg) {
  if (g.opened) mw::fatal("transport::open", "called twice without close");
  static const bool at_exit = std::atexit(remove_names_at_exit) == 0;
  (void)at_exit;
  if (cfg.nprocs < 1 || cfg.rank < 0 || cfg.rank >= cfg.nprocs)
    mw::fatal("transport::open", "rank %d is not in a job of %d ranks", cfg.rank, cfg.nprocs);
  if (cfg.eager_limit < 1024 || cfg.eager_limit > (64u << 20))
    mw::fatal("transport::open", "eager limit %zu is outside [1 KiB, 64 MiB]", cfg.eager_limit);
  if (mw::g_rank < 0) mw::g_rank = cfg.rank;
  g.cfg = cfg;
  g.limits = Limits{cfg.rank, cfg.nprocs, cfg.job_secret, cfg.eager_limit};
  g.provider = !cfg.provider.empty() ? cfg.provider : cfg.all_local ? "shm" : "tcp;ofi_rxm";
  g_provider_for_errors = g.provider.c_str();

  g.info = find_provider(g.provider, cfg.use_rma);
  restore_signals_taken_by_psm();
  g.provider = g.info->fabric_attr->prov_name;
  g_provider_for_errors = g.provider.c_str();
  g.rma = (g.info->caps & FI_RMA) != 0;
  g.fab_lock = g.info->domain_attr->threading != FI_THREAD_SAFE;
  g.have_source = (g.info->caps & FI_SOURCE) != 0;
  uint64_t mr_mode = static_cast<uint64_t>(g.info->domain_attr->mr_mode);
  g.mr_local = mr_mode & FI_MR_LOCAL;
  g.mr_virt = mr_mode & FI_MR_VIRT_ADDR;
  g.mr_prov_key = mr_mode & FI_MR_PROV_KEY;
  g.mr_endpoint = mr_mode & FI_MR_ENDPOINT;
  g.inject_limit = std::min<size_t>(g.info->tx_attr->inject_size, kStackInject);
  // Online CPUs, not this process's affinity: ranks pinned one to a core (taskset) are
  // not crowded, though each may run on one CPU only. Where it cannot tell how many
  // ranks share this host (several hosts), it keeps the pauses.
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  g.pause_polls = cfg.all_local && cpus > 0 && cfg.nprocs > cpus ? 1 : 64;
  g.split = g.have_source && g.info->tx_attr->inject_size >= 1024;
  g.split_max = std::min<size_t>({g.info->tx_attr->inject_size, kSplitMax, cfg.eager_limit});
  g.max_msg = g.info->ep_attr->max_msg_size;
  if (g.max_msg < sizeof(Header) + cfg.eager_limit)
    mw::fatal("transport::open", "provider '%s' carries messages of at most %llu bytes, less than "
              "the eager limit %zu plus a header", g.provider.c_str(),
              static_cast<unsigned long long>(g.max_msg), cfg.eager_limit);

  MW_FI_CHECK(fi_fabric, (g.info->fabric_attr, &g.fabric, nullptr), "");
  MW_FI_CHECK(fi_domain, (g.fabric, g.info, &g.domain, nullptr), "");
  open_cq(std::max<size_t>(g.info->tx_attr->size + g.info->rx_attr->size, 256));
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  av_attr.count = static_cast<size_t>(cfg.nprocs);
  MW_FI_CHECK(fi_av_open, (g.domain, &av_attr, &g.av, nullptr), "");
  MW_FI_CHECK(fi_endpoint, (g.domain, g.info, &g.ep, nullptr), "");
  MW_FI_CHECK(fi_ep_bind, (g.ep, &g.av->fid, 0), "(address vector)");
  MW_FI_CHECK(fi_ep_bind, (g.ep, &g.cq->fid, FI_TRANSMIT | FI_RECV), "(completion queue)");
  g.region_name.clear();
  g.greetings.store(0);
  g.greeted_all.store(false);
  g.region_unlinked.store(false);
  if (g.provider == "shm") {
    // Named by this process and rank, not by libfabric ("<pid>:0:0"), so that a later
    // job can tell a Midway rank's region, and whether its owner is gone.
    remove_dead_endpoints();
    g.region_name = mw::leftovers::endpoint_name(cfg.rank, getpid());
    MW_FI_CHECK(fi_setname, (&g.ep->fid, g.region_name.data(), g.region_name.size() + 1),
                "(%s)", g.region_name.c_str());
  }
  MW_FI_CHECK(fi_enable, (g.ep), "");
  if (g.wait == WaitMode::kDoorbell) open_bells();
  if (g.wait == WaitMode::kFd) open_wakeup_fds();
  g.inbox.clear();
  g.inbox.resize(static_cast<size_t>(cfg.nprocs));
  g.split_from.assign(static_cast<size_t>(cfg.nprocs), Header{});
  g.split_pending.assign(static_cast<size_t>(cfg.nprocs), 0);
  open_buffers();
  g.opened = true;

  std::vector<uint8_t> addr(64);
  size_t len = addr.size();
  int ret = fi_getname(&g.ep->fid, addr.data(), &len);
  if (ret == -FI_ETOOSMALL) {
    addr.resize(len);
    ret = fi_getname(&g.ep->fid, addr.data(), &len);
  }
  if (ret < 0) fi_fatal("fi_getname", ret, "");
  addr.resize(len);
  return addr;
}

void connect(const std::vector<std::vector<uint8_t>> &addresses) {
  if (!g.opened) mw::fatal("transport::connect", "called before transport::open");
  if (g.connected) mw::fatal("transport::connect", "called twice");
  if (addresses.size() != static_cast<size_t>(g.cfg.nprocs))
    mw::fatal("transport::connect", "%zu addresses for a job of %d ranks", addresses.size(),
              g.cfg.nprocs);
  for (int r = 0; r < g.cfg.nprocs; ++r) {
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    int ret = fi_av_insert(g.av, addresses[r].data(), 1, &fa, 0, nullptr);
    if (ret != 1) fi_fatal("fi_av_insert", ret < 0 ? ret : -FI_EINVAL, "of rank %d's address", r);
    if (fa != static_cast<fi_addr_t>(r)) {
      char mine[128] = "?", theirs[128] = "?";
      size_t l1 = sizeof mine, l2 = sizeof theirs;
      fi_av_straddr(g.av, addresses[r].data(), mine, &l1);
      if (fa < addresses.size()) fi_av_straddr(g.av, addresses[fa].data(), theirs, &l2);
      mw::fatal("fi_av_insert", "rank %d's address (%s) became entry %llu of the address vector "
                "(rank %llu's address: %s)", r, mine, static_cast<unsigned long long>(fa),
                static_cast<unsigned long long>(fa), theirs);
    }
  }
  // Every rank has opened the doorbell page before any rank learns all addresses: the
  // name can go now, and no page outlives the job.
  if (g.wait == WaitMode::kDoorbell) {
    shm_unlink(g.bells_name.c_str());
    g.bells_name.clear();
  }
  g.connected = true;
  g.stopping = false;
  g.service = new std::thread(service_main);
  connect_peers();
}

void on(MsgType type, Handler handler, Placer placer) {
  auto t = static_cast<uint16_t>(type);
  if (!is_protocol_type(t))
    mw::fatal("transport::on", "%s is not a protocol message type", type_name(t).c_str());
  if (g.connected)
    mw::fatal("transport::on", "handler for %s registered after connect", type_name(t).c_str());
  g.handlers[t] = handler;
  g.placers[t] = placer;
}

void send(int dest, MsgType type, std::span<const iovec> head, std::span<const iovec> bulk,
          uint64_t clock, Bulk keep) {
  check_send("transport::send", dest, type);
  size_t head_len = total_len(head), bulk_len = total_len(bulk);
  if (head_len + bulk_len <= g.cfg.eager_limit) {
    // FINALIZING is sent after this rank's statistics are written, and may arrive at a
    // peer before or after its own: counting it would make the job's totals disagree.
    if (type != MsgType::kFinalizing)
      stats::sent(kind_of(static_cast<uint16_t>(type)), bulk_len, sizeof(Header) + head_len);
    send_eager(dest, type, head, bulk, head_len, bulk_len, clock);
    return;
  }
  stats::sent(kind_of(static_cast<uint16_t>(type)), bulk_len,
              sizeof(Header) + sizeof(RtsBody) + head_len);  // + 24 per piece, roughly
  if (g.rma)
    send_rendezvous(dest, type, head, bulk, head_len, bulk_len, clock, keep);
  else
    send_chunked(dest, type, head, bulk, head_len, bulk_len, clock);
}

void send(int dest, MsgType type, std::span<const iovec> payload, uint64_t clock) {
  send(dest, type, {}, payload, clock);
}

void send(int dest, MsgType type, const void *payload, size_t len, uint64_t clock) {
  iovec v{const_cast<void *>(payload), len};
  send(dest, type, {}, std::span<const iovec>(&v, 1), clock);
}

void progress_until(bool (*done)(void *), void *arg) {
  if (!g.connected) mw::fatal("transport::progress_until", "called before transport::connect");
  if (t_in_handler || t_role_depth > 0)
    mw::fatal("transport::progress_until", "called from a message handler (handlers must not wait)");
  drive([&] { return done(arg); }, true);
}

void progress_after(void (*first)(void *), bool (*done)(void *), void *arg) {
  if (!g.connected) mw::fatal("transport::progress_after", "called before transport::connect");
  if (t_in_handler || t_role_depth > 0)
    mw::fatal("transport::progress_after", "called from a message handler (handlers must not wait)");
  // drive() takes the progress role and asks done() first: run first() there, once.
  bool ran = false;
  drive(
      [&] {
        if (!ran) {
          ran = true;
          first(arg);
        }
        return done(arg);
      },
      true);
}

void wait_sends() {
  if (!g.connected || g.deferred_out.load(std::memory_order_acquire) == 0) return;
  progress_until([] { return g.deferred_out.load(std::memory_order_acquire) == 0; });
}

void as_handler(void (*fn)(void *), void *arg) {
  if (!g.connected) return fn(arg);
  if (t_in_handler || t_role_depth > 0)
    mw::fatal("transport::as_handler", "called from a message handler (run the step directly)");
  // drive() takes the progress role and asks done() first: run fn there, once.
  drive(
      [&] {
        t_in_handler = true;
        fn(arg);
        t_in_handler = false;
        return true;
      },
      true);
}

void close() {
  if (!g.opened) return;
  if (g.connected) {
    // Let our sends finish (a peer may still be taking a chunk or a large eager copy).
    auto start = SteadyClock::now();
    wait_for([&] {
      return (!busy() && g.deferred_out.load(std::memory_order_acquire) == 0) ||
             elapsed_ns(start) > 2'000'000'000L;
    });
    g.stopping = true;
    wake_local();
    g.service->join();
    delete g.service;
    g.service = nullptr;
  }
  // Reverse of open().
  unreg(g.tx_mr, "the send buffers");
  unreg(g.rx_mr, "the receive buffers");
  MW_FI_CHECK(fi_close, (&g.ep->fid), "(endpoint)");
  MW_FI_CHECK(fi_close, (&g.av->fid), "(address vector)");
  MW_FI_CHECK(fi_close, (&g.cq->fid), "(completion queue)");
  MW_FI_CHECK(fi_close, (&g.domain->fid), "(domain)");
  MW_FI_CHECK(fi_close, (&g.fabric->fid), "(fabric)");
  fi_freeinfo(g.info);
  munmap(g.rx_slab, g.rx.size() * g.buf_len);
  munmap(g.tx_slab, g.tx.size() * g.buf_len);
  if (g.bells) munmap(g.bells, g.bells_len);
  if (g.epoll_fd >= 0) ::close(g.epoll_fd);
  if (g.event_fd >= 0) ::close(g.event_fd);
  for (auto &[p, c] : g.big_cache) std::free(p);
  g.big_cache.clear();
  g.tx_mr = g.rx_mr = nullptr;
  g.ep = nullptr;
  g.av = nullptr;
  g.cq = nullptr;
  g.domain = nullptr;
  g.fabric = nullptr;
  g.info = nullptr;
  g.bells = nullptr;
  if (!g.bells_name.empty()) shm_unlink(g.bells_name.c_str());  // closed before connect()
  g.bells_name.clear();
  g.epoll_fd = g.event_fd = g.cq_fd = -1;
  g.rx.clear();
  g.rx_ring.clear();
  g.tx.clear();
  g.tx_free.clear();
  g.inbox.clear();
  g.backlog.clear();
  g.queued = 0;
  g.opened = g.connected = false;
}

void set_stall_timeout(int ms) { g_stall_timeout_ms.store(ms, std::memory_order_relaxed); }

std::string provider_name() { return g.provider; }
WaitMode wait_mode() { return g.wait; }

bool mail() {
  if (g.wait != WaitMode::kDoorbell || !g.connected) return true;
  return g.bells[g.cfg.rank].posted.load(std::memory_order_relaxed) != g.polled_at.load(std::memory_order_relaxed);
}

bool has_mail_count() { return g.wait == WaitMode::kDoorbell; }

SharedLine *shared_line(int rank) {
  if (g.wait != WaitMode::kDoorbell || !g.connected || !g.bells) return nullptr;
  if (rank < 0 || rank >= g.cfg.nprocs)
    mw::fatal("transport::shared_line", "rank %d is not a rank of this job of %d", rank, g.cfg.nprocs);
  return reinterpret_cast<SharedLine *>(g.bells + g.cfg.nprocs) + rank;
}

void wait_shared(bool (*done)(void *), void *arg, bool peer_shares_cpu) {
  if (!g.connected) mw::fatal("transport::wait_shared", "called before transport::connect");
  if (t_in_handler || t_role_depth > 0)
    mw::fatal("transport::wait_shared", "called from a message handler (handlers must not wait)");
  if (done(arg)) return;
  if (peer_shares_cpu) {
    // The peer runs only once this thread gives the core up: at once.
    sched_yield();
    if (done(arg)) return;
  } else if (g.pause_polls > 1 && g.wait == WaitMode::kDoorbell) {
    // A peer running on another core often answers within a few hundred nanoseconds:
    // wait that long on done() alone, without the role's taking and handing back
    // (~0.17 us, half a two-rank barrier). The service thread is disarmed meanwhile, so
    // that a message coming now does not wake it: this thread sees the posted count move
    // and takes the message itself (below), or re-arms and looks if it leaves first.
    std::atomic<uint32_t> *const posted = &g.bells[g.cfg.rank].posted;
    my_bell()->fetch_and(~kArmedService);
    const uint32_t before = posted->load(std::memory_order_seq_cst);
    bool mail = false;
    for (int i = 0; i < kSharedQuickLooks && !mail; ++i) {
      cpu_relax();
      if (done(arg)) {
        my_bell()->fetch_or(kArmedService);
        if (posted->load(std::memory_order_seq_cst) == before) return;
        bool looked = false;  // something came while disarmed: one look takes it
        drive([&looked] { return std::exchange(looked, true); }, true);
        return;
      }
      mail = posted->load(std::memory_order_relaxed) != before;
    }
  }
  // The idle policy's first stage on done() alone (the 64 polls of the CQ it replaces
  // took 4.5-7 us), but holding the progress role, and polling where a message has come:
  // a lock request to a rank waiting at a barrier is taken here at once. Without the role
  // the service thread slept armed, and each such message woke it, on a shared core
  // preempting the very peer that waits for the answer (a remote acquire took 6-14 us
  // that way instead of 2-3; ~20000 wake-ups a second).
  drive([&] { return done(arg); }, true, peer_shares_cpu ? 1 : g.pause_polls, true);
}

void ring_waiter(int rank) {
  if (g.wait != WaitMode::kDoorbell || !g.connected) return;
  ring_app(rank);
}
bool uses_rma() { return g.rma; }
bool reports_source() { return g.have_source; }

uint64_t rejected() { return g.rejected_total.load(); }
uint64_t rejected(Result why) { return g.rejected_by[static_cast<size_t>(why)].load(); }

Result validate(const void *buf, size_t received, const Config &cfg, int source) {
  return validate(buf, received, Limits{cfg.rank, cfg.nprocs, cfg.job_secret, cfg.eager_limit},
                  source);
}

namespace testing {
void send_raw(int dest, const void *bytes, size_t len) {
  if (!g.connected) mw::fatal("transport::testing::send_raw", "called before connect");
  if (len <= g.buf_len) {
    SendBuf *b = take_sendbuf(dest);
    std::memcpy(b->buf, bytes, len);
    post_sendbuf(dest, b, len, "a raw test message");
    return;
  }
  // Longer than any receive buffer (the receiver sees it truncated): sent from a copy.
  auto copy = std::make_unique<std::byte[]>(len);
  std::memcpy(copy.get(), bytes, len);
  fid_mr *mr = g.mr_local ? reg(copy.get(), len, FI_SEND, "a raw test message") : nullptr;
  OwnedSend op;
  op.kind = OpKind::kSendOwned;
  op.peer = dest;
  g.sends_in_flight.fetch_add(1);
  for (;;) {
    long ret;
    {
      PostLock pl;
      FabLock lk;
      ret = fi_send(g.ep, copy.get(), len, desc_of(mr), static_cast<fi_addr_t>(dest), &op.ctx);
    }
    if (ret == 0) break;
    if (ret != -FI_EAGAIN) fi_fatal("fi_send", ret, "of a raw test message to rank %d", dest);
    ring(dest);  // see SendRetry::again
    nudge();
  }
  ring(dest);
  wait_for([&] { return op.done.load(std::memory_order_acquire); });
  unreg(mr, "a raw test message");
}
}  // namespace testing

// For the copyset fault handler (copysets.cpp): a fault on this thread now is the runtime's.
bool in_runtime_context() { return t_is_service || t_in_handler || t_role_depth > 0; }

}  // namespace mw::transport

// See getinfo(): the one fopen the process has, passing every call to the C library's.
extern "C" __attribute__((visibility("default"))) FILE *fopen(const char *path, const char *mode) {
  using Fopen = FILE *(*)(const char *, const char *);
  static const Fopen libc_fopen = reinterpret_cast<Fopen>(dlsym(RTLD_NEXT, "fopen"));
  if (!libc_fopen) {  // no C library after us: cannot happen in a dynamically linked program
    errno = ENOSYS;
    return nullptr;
  }
  if (mw::transport::t_in_getinfo && path && std::strcmp(path, "/proc/kallsyms") == 0) path = "/dev/null";
  return libc_fopen(path, mode);
}
