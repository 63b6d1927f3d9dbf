// The transport's endpoint: the libfabric objects of this rank, every fi_* call checked,
// the one helper that posts and retries on -FI_EAGAIN, memory registration, and the
// message buffers. Internal to transport/ (the interface is transport.hpp).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace mw::transport {

using SteadyClock = std::chrono::steady_clock;

constexpr size_t kRxBuffers = 64;     // pre-posted receive buffers
constexpr size_t kSendBuffers = 64;   // copies of eager messages in flight
constexpr size_t kStackInject = 256;  // fi_inject from the stack up to this size
constexpr size_t kSplitMax = 4096;    // largest payload sent as header inject + payload inject
constexpr int kBatch = 16;            // completions read per fi_cq_read
constexpr uint64_t kGreetingId = 0;   // kDone for no transfer (they count from 1): connect_peers()

// ---- Errors ----

extern const char *g_provider_for_errors;

// "midway: fi_send: to rank 3 on provider 'shm': Resource temporarily unavailable (rank 1)"
[[noreturn]] __attribute__((format(printf, 3, 4))) void fi_fatal(const char *call, long ret,
                                                                  const char *fmt, ...);

#define MW_FI_CHECK(call, args, ...)                       \
  do {                                                     \
    long mw_ret_ = static_cast<long>(call args);           \
    if (mw_ret_ < 0) fi_fatal(#call, mw_ret_, __VA_ARGS__); \
  } while (0)

// ---- The quirks of Debian 12's libfabric (libfabric_quirks.cpp) ----

// Gives back to their default the signals libfabric's PSM dependency took at load.
void restore_signals_taken_by_psm();
// fi_getinfo, without the verbs provider's scan of /proc/kallsyms.
int getinfo(fi_info *hints, fi_info **info);

// ---- What a completion's context points at ----

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

// ---- The endpoint ----

struct Fabric {
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
  // Serializes every fi_* call on the endpoint's objects, where the provider does not
  // (FI_THREAD_DOMAIN); with FI_THREAD_SAFE the provider's own locks do it.
  std::mutex fab_mu;
  bool fab_lock = true;
  std::atomic<uint64_t> next_key{1};
  // shm: this endpoint's region in /dev/shm (core/leftovers.hpp), unlinked once every
  // peer has mapped it: when connect_peers() is done and every lower rank's greeting is in.
  std::string region_name;
  std::atomic<int> greetings{0};
  std::atomic<bool> greeted_all{false};
  std::atomic<bool> region_unlinked{false};
};
extern Fabric &fab;  // never destroyed: the service thread may outlive static destructors

// The eager buffers: pre-posted receives, and copies of eager sends in flight.
struct Buffers {
  std::byte *rx_slab = nullptr, *tx_slab = nullptr;
  size_t buf_len = 0;  // header + eager limit
  fid_mr *rx_mr = nullptr, *tx_mr = nullptr;
  std::vector<RxBuf> rx;
  // Receives in the order they were posted (receive.cpp, take_received): rx_ring[n % size]
  // is the n-th; those from rx_next on are posted and not yet handled. The role holder's.
  std::vector<RxBuf *> rx_ring;
  uint64_t rx_posted = 0, rx_next = 0;
  std::vector<SendBuf> tx;
  std::mutex tx_mu;
  std::vector<SendBuf *> tx_free;
};
extern Buffers &bufs;

// Held around each fi_* call on the endpoint's objects, if the provider needs it.
class FabLock {
 public:
  FabLock() : on_(fab.fab_lock) {
    if (on_) fab.fab_mu.lock();
  }
  ~FabLock() {
    if (on_) fab.fab_mu.unlock();
  }
  FabLock(const FabLock &) = delete;
  FabLock &operator=(const FabLock &) = delete;

 private:
  bool on_;
};

// Held around each message post (fi_send, fi_inject) when split sends are on.
class PostLock {
 public:
  PostLock() : on_(fab.split) {
    if (on_)
      while (fab.post_mu.test_and_set(std::memory_order_acquire)) __builtin_ia32_pause();
  }
  ~PostLock() {
    if (on_) fab.post_mu.clear(std::memory_order_release);
  }
  PostLock(const PostLock &) = delete;
  PostLock &operator=(const PostLock &) = delete;

 private:
  bool on_;
};

// Set while this thread holds the post lock between a split header and its payload:

// Posts with attempt() (fi_send, fi_inject, fi_recv, ...: 0, -FI_EAGAIN or a failure)
// until the provider takes it. -FI_EAGAIN means the provider needs progress first (ours,
// or the peer's): again() makes it (and backs off), then the post is tried again. Any
// other failure stops the rank: "<call>: <fmt...> on provider 'p': <fi_strerror>".
// Every retry-on-EAGAIN loop of the transport is this one.
// The rank a post on this thread sends to, or -1: a failure that says the peer cannot be
// reached (its host or link lost) is then reported as liveness reports a lost peer.
extern constinit thread_local int t_post_peer;
// liveness.cpp: stops this rank, naming `rank`, its host, its last wait and ours.
[[noreturn]] void peer_unreachable(int rank, const char *how);
// A post to t_post_peer failed because the network cannot reach it (ENETUNREACH...):
// true while that has lasted less than the liveness timeout (the caller sleeps a little
// and posts again: a link that comes back in time costs no error), false after.
bool unreachable_retry(long ret);
constinit inline thread_local long t_unreachable_since = 0;

template <class Attempt, class Again, class... Args>
void post(const char *call, Attempt &&attempt, Again &&again, const char *fmt, Args... args) {
  for (;;) {
    const long ret = attempt();
    if (ret == 0) {
      t_unreachable_since = 0;
      return;
    }
    if (ret != -FI_EAGAIN && unreachable_retry(ret)) continue;
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wformat-security"  // fmt is the caller's literal
    if (ret != -FI_EAGAIN) fi_fatal(call, ret, fmt, args...);
#pragma clang diagnostic pop
    again();
  }
}

inline long elapsed_ns(SteadyClock::time_point since) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - since).count();
}

// Between two empty polls, in the first stage of waiting (IdleTimer).
inline void cpu_relax() { __builtin_ia32_pause(); }

inline Header make_header(MsgType type, uint32_t flags, uint64_t clock, uint64_t payload_len,
                   uint64_t bulk_len) {
  Header h;
  h.magic = kMagic;
  h.version = kVersion;
  h.type = static_cast<uint16_t>(type);
  h.sender = fab.cfg.rank;
  h.flags = flags;
  h.secret_tag = secret_tag(fab.cfg.job_secret);
  h.clock = clock;
  h.payload_len = payload_len;
  h.bulk_len = bulk_len;
  return h;
}


// Copies the bytes [from, from + len) of a gather list to dst.
void gather(std::span<const iovec> iov, size_t from, std::byte *dst, size_t len);

inline size_t total_len(std::span<const iovec> iov) {
  size_t n = 0;
  for (const iovec &v : iov) n += v.iov_len;
  return n;
}

// Appends the non-empty pieces of `iov` to `out`, a piece that starts where the last one
// ends joining it: a rendezvous bulk is registered and read a piece at a time, and on shm
// each read is a process_vm_readv, a system call per 4 KiB page for the consecutive pages
// of a fault's read-ahead until they were joined.
inline void append_merged(std::vector<iovec> &out, std::span<const iovec> iov) {
  for (const iovec &v : iov) {
    if (v.iov_len == 0) continue;
    if (!out.empty() && static_cast<std::byte *>(out.back().iov_base) + out.back().iov_len == v.iov_base)
      out.back().iov_len += v.iov_len;
    else
      out.push_back(v);
  }
}

// shm: once every peer has mapped this endpoint's region, its name is needed no more;
// unlinked then, the region goes with the last process that maps it, however the job
// ends (a rank killed by SIGKILL included). Rank r knows every peer has it mapped when
// its own greetings to ranks above it have gone through (connect_peers()) and the
// greetings of the r ranks below it have arrived: a peer writes into this region to
// send here, and answers a connection request only once it has mapped the requester's.
void unlink_region_once_mapped();

// ---- Registration ----

fid_mr *reg(void *buf, size_t len, uint64_t access, const char *what);
void unreg(fid_mr *mr, const char *what);
inline void *desc_of(fid_mr *mr) { return mr ? fi_mr_desc(mr) : nullptr; }

// ---- Set-up ----

// Asks for the most the transport can use, then for less: RMA, then FI_SOURCE are optional.
fi_info *find_provider(const std::string &prov, bool want_rma);
// The eager buffers, the receives posted.
void open_buffers();
// Reverse of open_buffers, in two steps around closing the endpoint: the registrations
// before the domain closes, the memory (and the receives' contexts) only once the
// endpoint is closed and can complete no posted receive any more.
void unregister_buffers();
void free_buffers();

}  // namespace mw::transport
