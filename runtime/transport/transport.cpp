// The transport over libfabric: its interface (transport.hpp), in parts:
//
//   fabric.*             the endpoint: fi_getinfo by hints, every fi_* call checked, the
//                        one post-and-retry helper, registration, the message buffers
//   libfabric_quirks.cpp what one libfabric build needs worked around (PSM's signal
//                        handlers, the verbs provider's /proc/kallsyms scan)
//   wake.*               what an idle thread sleeps on and who wakes it, per wait mode;
//                        the job's shared page (doorbells, shared lines)
//   receive.*            the completion loop: validation, delivery in order, rendezvous reads
//   progress.*           who polls the CQ (the service thread, or an application thread
//                        that waits), and the idle policy: spin, yield, block
//   send.*               eager (inject, split, send buffer), rendezvous (RMA read), chunked
//   message.*            the wire format and validate(), the one check at arrival
//   accounting.hpp       what each message counts as in the statistics
//   transport.cpp        open, connect, send, progress_until, close (mirroring open), ...
//
// Idle progress threads must not burn a core (2-core machines run 8 ranks), yet a lock
// request must be served within microseconds: a waiting thread polls, then yields between
// polls, then blocks on the wait object its provider allows (wake.cpp).
#include "transport/transport.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <utility>

#include "core/error.hpp"
#include "core/leftovers.hpp"
#include "core/stats.hpp"
#include "transport/fabric.hpp"
#include "transport/progress.hpp"
#include "transport/receive.hpp"
#include "transport/send.hpp"
#include "transport/wake.hpp"

namespace mw::transport {
namespace {

// Connects this rank to every peer now rather than at the first message between them.
// shm connects a pair lazily: the first send to a peer fails with -FI_EAGAIN after
// leaving a connection request in the peer's queue, and succeeds only once the peer's
// progress has answered it. In a running job that peer may be asleep (SendRetry rings
// it) or waiting for a core (8 ranks on 2): a first message took hundreds of times
// longer than one between connected ranks (docs/PERFORMANCE.md, "Figures behind the code"). Here every
// rank has just started its service thread and polls, so all pairs connect at once.
// Only for kDoorbell (shm): there a sleeping peer is woken by nothing but our ring, and
// the ranks are on one host, so every pair costs little. On tcp the first message opens
// a connection (the peer's CQ fd wakes it for that), and connecting every
// pair of a large multi-host job up front would cost more than it saves.
// One message per pair, from the lower rank (the answer to the request connects both
// directions): a kDone for transfer kGreetingId, which the receiver drops unseen and
// neither side counts in the statistics (it is the provider's connection, not traffic).
void connect_peers() {
  if (wake.wait != WaitMode::kDoorbell || !fab.cfg.eager_connect) return;
  struct {
    Header h;
    DoneBody d;
  } m{make_header(MsgType::kDone, 0, 0, sizeof(DoneBody), 0), {kGreetingId}};
  if (sizeof m > fab.inject_limit) return;
  std::vector<int> left;
  for (int p = fab.cfg.rank + 1; p < fab.cfg.nprocs; ++p) left.push_back(p);
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
        ret = fi_inject(fab.ep, &m, sizeof m, static_cast<fi_addr_t>(p));
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
                left.front(), fab.provider.c_str(), g_stall_timeout_ms.load() / 1000);
    nap_ns = std::min(std::max(nap_ns * 2, 1000L), 1'000'000L);
    timespec ts{0, nap_ns};
    nanosleep(&ts, nullptr);
  }
  fab.greeted_all.store(true, std::memory_order_release);
  unlink_region_once_mapped();
}

// Regions of ranks that died before every peer had mapped them (core/leftovers.hpp): a
// process given such a rank's pid could not name its own region so, and 16 MiB each
// stay in /dev/shm until someone removes them. Said once, on standard error.
void remove_dead_endpoints() {
  std::vector<leftovers::Removed> removed = leftovers::remove_dead_endpoints();
  if (!removed.empty()) mw::warn("mw_init", "%s", leftovers::describe(removed).c_str());
}

// What this process made that would outlive it if it exits without close() (mw::fatal on
// any thread, a failed start-up, a program's exit() before mw_finalize) while the names
// are still there: its endpoint's shm region (16 MiB, until every peer has mapped it)
// and, before connect(), the job's doorbell page. Otherwise only a later job would remove
// them (core/leftovers.hpp). Closing the endpoint here could race the service thread, and
// only the names outlive the process: they go (peers that mapped them keep their mappings).
void remove_names_at_exit() {
  if (!fab.region_name.empty() && !fab.region_unlinked.exchange(true)) shm_unlink(fab.region_name.c_str());
  if (!wake.bells_name.empty()) shm_unlink(wake.bells_name.c_str());
}

}  // namespace

// ---------------------------------------------------------------------------------------
// The interface
// ---------------------------------------------------------------------------------------

std::vector<uint8_t> open(const Config &cfg) {
  if (fab.opened) mw::fatal("transport::open", "called twice without close");
  static const bool at_exit = std::atexit(remove_names_at_exit) == 0;
  (void)at_exit;
  if (cfg.nprocs < 1 || cfg.rank < 0 || cfg.rank >= cfg.nprocs)
    mw::fatal("transport::open", "rank %d is not in a job of %d ranks", cfg.rank, cfg.nprocs);
  if (cfg.eager_limit < 1024 || cfg.eager_limit > (64u << 20))
    mw::fatal("transport::open", "eager limit %zu is outside [1 KiB, 64 MiB]", cfg.eager_limit);
  if (mw::g_rank < 0) mw::g_rank = cfg.rank;
  fab.cfg = cfg;
  fab.limits = Limits{cfg.rank, cfg.nprocs, cfg.job_secret, cfg.eager_limit};
  fab.provider = !cfg.provider.empty() ? cfg.provider : cfg.all_local ? "shm" : "tcp;ofi_rxm";
  g_provider_for_errors = fab.provider.c_str();

  fab.info = find_provider(fab.provider, cfg.use_rma);
  restore_signals_taken_by_psm();
  fab.provider = fab.info->fabric_attr->prov_name;
  g_provider_for_errors = fab.provider.c_str();
  fab.rma = (fab.info->caps & FI_RMA) != 0;
  fab.fab_lock = fab.info->domain_attr->threading != FI_THREAD_SAFE;
  fab.have_source = (fab.info->caps & FI_SOURCE) != 0;
  uint64_t mr_mode = static_cast<uint64_t>(fab.info->domain_attr->mr_mode);
  fab.mr_local = mr_mode & FI_MR_LOCAL;
  fab.mr_virt = mr_mode & FI_MR_VIRT_ADDR;
  fab.mr_prov_key = mr_mode & FI_MR_PROV_KEY;
  fab.mr_endpoint = mr_mode & FI_MR_ENDPOINT;
  fab.inject_limit = std::min<size_t>(fab.info->tx_attr->inject_size, kStackInject);
  // Online CPUs, not this process's affinity: ranks pinned one to a core (taskset) are
  // not crowded, though each may run on one CPU only. Where it cannot tell how many
  // ranks share this host (several hosts), it keeps the pauses.
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const bool crowded = cfg.all_local && cpus > 0 && cfg.nprocs > cpus;
  prog.pause_polls = crowded ? 1 : 1024;
  prog.lazy_handback = !crowded;
  fab.split = fab.have_source && fab.info->tx_attr->inject_size >= 1024;
  fab.split_max = std::min<size_t>({fab.info->tx_attr->inject_size, kSplitMax, cfg.eager_limit});
  fab.max_msg = fab.info->ep_attr->max_msg_size;
  if (fab.max_msg < sizeof(Header) + cfg.eager_limit)
    mw::fatal("transport::open", "provider '%s' carries messages of at most %llu bytes, less than "
              "the eager limit %zu plus a header", fab.provider.c_str(),
              static_cast<unsigned long long>(fab.max_msg), cfg.eager_limit);

  MW_FI_CHECK(fi_fabric, (fab.info->fabric_attr, &fab.fabric, nullptr), "");
  MW_FI_CHECK(fi_domain, (fab.fabric, fab.info, &fab.domain, nullptr), "");
  open_cq(std::max<size_t>(fab.info->tx_attr->size + fab.info->rx_attr->size, 256));
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  av_attr.count = static_cast<size_t>(cfg.nprocs);
  MW_FI_CHECK(fi_av_open, (fab.domain, &av_attr, &fab.av, nullptr), "");
  MW_FI_CHECK(fi_endpoint, (fab.domain, fab.info, &fab.ep, nullptr), "");
  MW_FI_CHECK(fi_ep_bind, (fab.ep, &fab.av->fid, 0), "(address vector)");
  MW_FI_CHECK(fi_ep_bind, (fab.ep, &fab.cq->fid, FI_TRANSMIT | FI_RECV), "(completion queue)");
  fab.region_name.clear();
  fab.greetings.store(0);
  fab.greeted_all.store(false);
  fab.region_unlinked.store(false);
  if (fab.provider == "shm") {
    // Named by this process and rank, not by libfabric ("<pid>:0:0"), so that a later
    // job can tell a Midway rank's region, and whether its owner is gone.
    remove_dead_endpoints();
    fab.region_name = leftovers::endpoint_name(cfg.rank, getpid());
    MW_FI_CHECK(fi_setname, (&fab.ep->fid, fab.region_name.data(), fab.region_name.size() + 1),
                "(%s)", fab.region_name.c_str());
  }
  MW_FI_CHECK(fi_enable, (fab.ep), "");
  if (wake.wait == WaitMode::kDoorbell) open_bells();
  if (wake.wait == WaitMode::kFd) open_wakeup_fds();
  rcv.inbox.clear();
  rcv.inbox.resize(static_cast<size_t>(cfg.nprocs));
  rcv.split_from.assign(static_cast<size_t>(cfg.nprocs), Header{});
  rcv.split_pending.assign(static_cast<size_t>(cfg.nprocs), 0);
  open_buffers();
  liveness_init();
  fab.opened = true;

  std::vector<uint8_t> addr(64);
  size_t len = addr.size();
  int ret = fi_getname(&fab.ep->fid, addr.data(), &len);
  if (ret == -FI_ETOOSMALL) {
    addr.resize(len);
    ret = fi_getname(&fab.ep->fid, addr.data(), &len);
  }
  if (ret < 0) fi_fatal("fi_getname", ret, "");
  addr.resize(len);
  return addr;
}

void connect(const std::vector<std::vector<uint8_t>> &addresses) {
  if (!fab.opened) mw::fatal("transport::connect", "called before transport::open");
  if (fab.connected) mw::fatal("transport::connect", "called twice");
  if (addresses.size() != static_cast<size_t>(fab.cfg.nprocs))
    mw::fatal("transport::connect", "%zu addresses for a job of %d ranks", addresses.size(),
              fab.cfg.nprocs);
  for (int r = 0; r < fab.cfg.nprocs; ++r) {
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    int ret = fi_av_insert(fab.av, addresses[r].data(), 1, &fa, 0, nullptr);
    if (ret != 1) fi_fatal("fi_av_insert", ret < 0 ? ret : -FI_EINVAL, "of rank %d's address", r);
    if (fa != static_cast<fi_addr_t>(r)) {
      char mine[128] = "?", theirs[128] = "?";
      size_t l1 = sizeof mine, l2 = sizeof theirs;
      fi_av_straddr(fab.av, addresses[r].data(), mine, &l1);
      if (fa < addresses.size()) fi_av_straddr(fab.av, addresses[fa].data(), theirs, &l2);
      mw::fatal("fi_av_insert", "rank %d's address (%s) became entry %llu of the address vector "
                "(rank %llu's address: %s)", r, mine, static_cast<unsigned long long>(fa),
                static_cast<unsigned long long>(fa), theirs);
    }
  }
  // Every rank has opened the doorbell page before any rank learns all addresses: the
  // name can go now, and no page outlives the job.
  if (wake.wait == WaitMode::kDoorbell) {
    shm_unlink(wake.bells_name.c_str());
    wake.bells_name.clear();
  }
  fab.connected = true;
  if (wake.wait == WaitMode::kDoorbell) wake.mine = &wake.bells[fab.cfg.rank];
  prog.stopping = false;
  prog.service = new std::thread(service_main);
  connect_peers();
}

void on(MsgType type, Handler handler, Placer placer) {
  auto t = static_cast<uint16_t>(type);
  if (!is_protocol_type(t))
    mw::fatal("transport::on", "%s is not a protocol message type", type_name(t).c_str());
  if (fab.connected)
    mw::fatal("transport::on", "handler for %s registered after connect", type_name(t).c_str());
  rcv.handlers[t] = handler;
  rcv.placers[t] = placer;
}

void send(int dest, MsgType type, std::span<const iovec> head, std::span<const iovec> bulk,
          uint64_t clock, Bulk keep) {
  send_message(dest, type, head, bulk, clock, keep);
}

void send(int dest, MsgType type, std::span<const iovec> payload, uint64_t clock) {
  send(dest, type, {}, payload, clock);
}

void send(int dest, MsgType type, const void *payload, size_t len, uint64_t clock) {
  iovec v{const_cast<void *>(payload), len};
  send(dest, type, {}, std::span<const iovec>(&v, 1), clock);
}

void progress_until(bool (*done)(void *), void *arg) {
  if (!fab.connected) mw::fatal("transport::progress_until", "called before transport::connect");
  if (t_in_handler || t_role_depth > 0)
    mw::fatal("transport::progress_until", "called from a message handler (handlers must not wait)");
  // Mail-gated, as wait_shared (progress.cpp, drive): while a waiter's first stage lasts
  // it polls the CQ only when peers have posted to this rank, or every 16th look. Each
  // poll takes libfabric's locks, which the peer sending the awaited answer takes too
  // (docs/PERFORMANCE.md, "Asking ahead for locks").
  drive([&] { return done(arg); }, true, prog.pause_polls, true);
}

void progress_after(void (*first)(void *), bool (*done)(void *), void *arg) {
  if (!fab.connected) mw::fatal("transport::progress_after", "called before transport::connect");
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
  if (!fab.connected || snd.deferred_out.load(std::memory_order_acquire) == 0) return;
  progress_until([] { return snd.deferred_out.load(std::memory_order_acquire) == 0; });
}

void as_handler(void (*fn)(void *), void *arg) {
  if (!fab.connected) return fn(arg);
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
  if (!fab.opened) return;
  if (fab.connected) {
    // Let our sends finish (a peer may still be taking a chunk or a large eager copy).
    auto start = SteadyClock::now();
    wait_for([&] {
      return (!busy() && snd.deferred_out.load(std::memory_order_acquire) == 0) ||
             elapsed_ns(start) > 2'000'000'000L;
    });
    prog.stopping = true;
    wake_local();
    prog.service->join();
    delete prog.service;
    prog.service = nullptr;
  }
  // Reverse of open().
  wake.mine = nullptr;
  unregister_buffers();
  MW_FI_CHECK(fi_close, (&fab.ep->fid), "(endpoint)");
  MW_FI_CHECK(fi_close, (&fab.av->fid), "(address vector)");
  MW_FI_CHECK(fi_close, (&fab.cq->fid), "(completion queue)");
  MW_FI_CHECK(fi_close, (&fab.domain->fid), "(domain)");
  MW_FI_CHECK(fi_close, (&fab.fabric->fid), "(fabric)");
  fi_freeinfo(fab.info);
  free_buffers();
  close_wake();
  close_receiver();
  fab.ep = nullptr;
  fab.av = nullptr;
  fab.cq = nullptr;
  fab.domain = nullptr;
  fab.fabric = nullptr;
  fab.info = nullptr;
  fab.opened = fab.connected = false;
}

void set_stall_timeout(int ms) { g_stall_timeout_ms.store(ms, std::memory_order_relaxed); }

std::string provider_name() { return fab.provider; }
WaitMode wait_mode() { return wake.wait; }

bool mail() {
  const Bell *mine = wake.mine;
  return !mine || mine->posted.load(std::memory_order_relaxed) != wake.polled_at.load(std::memory_order_relaxed);
}

bool has_mail_count() { return wake.wait == WaitMode::kDoorbell; }

SharedLine *shared_line(int rank) {
  if (wake.wait != WaitMode::kDoorbell || !fab.connected || !wake.bells) return nullptr;
  if (rank < 0 || rank >= fab.cfg.nprocs)
    mw::fatal("transport::shared_line", "rank %d is not a rank of this job of %d", rank, fab.cfg.nprocs);
  return reinterpret_cast<SharedLine *>(wake.bells + fab.cfg.nprocs) + rank;
}

void wait_shared(bool (*done)(void *), void *arg, bool peer_shares_cpu) {
  if (!fab.connected) mw::fatal("transport::wait_shared", "called before transport::connect");
  if (t_in_handler || t_role_depth > 0)
    mw::fatal("transport::wait_shared", "called from a message handler (handlers must not wait)");
  if (done(arg)) return;
  if (peer_shares_cpu) {
    // The peer runs only once this thread gives the core up: at once.
    sched_yield();
    if (done(arg)) return;
  } else if (prog.pause_polls > 1 && wake.wait == WaitMode::kDoorbell) {
    // A peer running on another core often answers within a few hundred nanoseconds:
    // wait that long on done() alone, without the role's taking and handing back (a good
    // part of a two-rank barrier). The service thread is disarmed meanwhile, so
    // that a message coming now does not wake it: this thread sees the posted count move
    // and takes the message itself (below), or re-arms and looks if it leaves first.
    std::atomic<uint32_t> *const posted = &wake.bells[fab.cfg.rank].posted;
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
  // The idle policy's first stage on done() alone (cheaper than the 64 polls of the CQ it
  // replaces), but holding the progress role, and polling where a message has come: a
  // lock request to a rank waiting at a barrier is taken here at once. Without the role
  // the service thread slept armed, and each such message woke it, on a shared core
  // preempting the very peer that waits for the answer (docs/PERFORMANCE.md, "Figures behind the code").
  drive([&] { return done(arg); }, true, peer_shares_cpu ? 1 : prog.pause_polls, true);
}

void ring_waiter(int rank) {
  if (wake.wait != WaitMode::kDoorbell || !fab.connected) return;
  ring_app(rank);
}
size_t eager_limit() { return fab.cfg.eager_limit; }
bool uses_rma() { return fab.rma; }
bool reports_source() { return fab.have_source; }

uint64_t rejected() { return rcv.rejected_total.load(); }
uint64_t rejected(Result why) { return rcv.rejected_by[static_cast<size_t>(why)].load(); }

Result validate(const void *buf, size_t received, const Config &cfg, int source) {
  return validate(buf, received, Limits{cfg.rank, cfg.nprocs, cfg.job_secret, cfg.eager_limit},
                  source);
}

namespace testing {
void send_raw(int dest, const void *bytes, size_t len) {
  if (!fab.connected) mw::fatal("transport::testing::send_raw", "called before connect");
  if (len <= bufs.buf_len) {
    SendBuf *b = take_sendbuf(dest);
    std::memcpy(b->buf, bytes, len);
    post_sendbuf(dest, b, len, "a raw test message");
    return;
  }
  // Longer than any receive buffer (the receiver sees it truncated): sent from a copy.
  auto copy = std::make_unique<std::byte[]>(len);
  std::memcpy(copy.get(), bytes, len);
  fid_mr *mr = fab.mr_local ? reg(copy.get(), len, FI_SEND, "a raw test message") : nullptr;
  OwnedSend op;
  op.kind = OpKind::kSendOwned;
  op.peer = dest;
  snd.sends_in_flight.fetch_add(1);
  SendRetry retry("a raw test message", dest);
  post(
      "fi_send",
      [&] {
        PostLock pl;
        FabLock lk;
        return fi_send(fab.ep, copy.get(), len, desc_of(mr), static_cast<fi_addr_t>(dest), &op.ctx);
      },
      [&] { retry.again(); }, "of a raw test message to rank %d", dest);
  ring(dest);
  wait_for([&] { return op.done.load(std::memory_order_acquire); });
  unreg(mr, "a raw test message");
}
}  // namespace testing

// For the copyset fault handler (rc/page_fault.cpp): a fault on this thread now is the runtime's.
bool in_runtime_context() { return t_is_service || t_in_handler || t_role_depth > 0; }

}  // namespace mw::transport
