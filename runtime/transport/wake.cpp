// Waking (wake.hpp). Which wait mode a provider allows, found by trying (open_cq):
//   tcp;ofi_rxm  CQ wait objects FI_WAIT_UNSPEC/FD/POLLFD; fi_control(FI_GETWAIT) gives
//                an fd that becomes readable when a message arrives -> kFd.
//   shm          only FI_WAIT_NONE and FI_WAIT_YIELD (UNSPEC means YIELD): fi_cq_sread
//                spins in sched_yield, a whole core per rank. Nothing in the kernel knows
//                a message arrived, so senders ring a doorbell instead: a futex word per
//                rank in a shared-memory page of the job, rung only when its owner has
//                announced it is going to sleep (kDoorbell; all ranks are on one host,
//                as shm requires anyway).
//   others       with neither: sleep with exponential backoff up to 2 ms (kSleep).
#include "transport/wake.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "core/error.hpp"
#include "core/leftovers.hpp"

namespace mw::transport {

Wake &wake = *new Wake;


// Futexes on the bells are not FUTEX_PRIVATE: the words live in memory shared between
// processes.

// Sleeps while *addr == expected, until a wake for one of `bits` or timeout_ms. Returns
// false if it slept the whole timeout.
bool futex_wait(std::atomic<uint32_t> *addr, uint32_t expected, uint32_t bits, int timeout_ms) {
  return futex_wait_ns(addr, expected, bits, timeout_ms * 1'000'000L);
}

bool futex_wait_ns(std::atomic<uint32_t> *addr, uint32_t expected, uint32_t bits, long timeout_ns) {
  // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time.
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += timeout_ns / 1'000'000'000L;
  ts.tv_nsec += timeout_ns % 1'000'000'000L;
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


// ring() for a shared word instead of a message (transport.hpp): the same Dekker pair,
// with a fence where ring() has its RMW on `posted` (no message was posted, so mail() must
// not see one), and only the application thread's bit: the service thread has nothing to
// take from the CQ, and waking it would cost a core's worth of polling before it sleeps
// again. Clearing kArmedApp and bumping the generation makes a waiter that armed but has
// not yet slept return from futex_wait at once.
void ring_app(int dest) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  wake_armed(&wake.bells[dest].word, kArmedApp);
}

// Wakes this rank's sleeping threads (close(), or messages queued for the service thread).
void wake_local() {
  switch (wake.wait) {
    case WaitMode::kDoorbell:
      my_bell()->fetch_add(kBellGen);
      futex_wake(my_bell(), FUTEX_BITSET_MATCH_ANY);
      break;
    case WaitMode::kFd: {
      uint64_t one = 1;
      if (write(wake.event_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        mw::fatal_errno("transport", "cannot wake the service thread (eventfd)");
      break;
    }
    default:
      break;  // kSleep: sleepers look again within 2 ms
  }
}

void set_cq_armed(bool on) {
  if (wake.cq_armed.load() == on) return;
  epoll_event ev{};
  ev.events = on ? EPOLLIN : 0;
  ev.data.fd = wake.cq_fd;
  if (epoll_ctl(wake.epoll_fd, EPOLL_CTL_MOD, wake.cq_fd, &ev) != 0)
    mw::fatal_errno("epoll_ctl", "cannot %s the completion queue's wait fd",
                    on ? "arm" : "disarm");
  wake.cq_armed.store(on);
}

// kFd: lets the fd stand for the CQ (fi_trywait). False: completions are waiting, poll.
bool cq_trywait() {
  FabLock lk;
  fid *f = &fab.cq->fid;
  int ret = fi_trywait(fab.fabric, &f, 1);
  if (ret == -FI_EAGAIN) return false;
  if (ret < 0) fi_fatal("fi_trywait", ret, "on the completion queue");
  return true;
}

// The completion queue, with the best wait object the provider has (see the top of this file).
void open_cq(size_t size) {
  fi_cq_attr attr{};
  attr.size = size;
  attr.format = FI_CQ_FORMAT_DATA;
  WaitMode want = fab.cfg.wait;
  if (want == WaitMode::kAuto || want == WaitMode::kFd) {
    attr.wait_obj = FI_WAIT_FD;
    int ret = fi_cq_open(fab.domain, &attr, &fab.cq, nullptr);
    if (ret == 0) {
      ret = fi_control(&fab.cq->fid, FI_GETWAIT, &wake.cq_fd);
      if (ret == 0) {
        wake.wait = WaitMode::kFd;
        return;
      }
      fi_close(&fab.cq->fid);
      fab.cq = nullptr;
    }
    if (want == WaitMode::kFd)
      fi_fatal("fi_cq_open", ret, "with a wait fd (FI_WAIT_FD), as Config::wait asks,");
  }
  attr.wait_obj = FI_WAIT_NONE;
  MW_FI_CHECK(fi_cq_open, (fab.domain, &attr, &fab.cq, nullptr), "(no wait object)");
  if (want == WaitMode::kDoorbell && !fab.cfg.all_local)
    mw::fatal("transport::open", "the doorbell wait mode needs every rank on this host (all_local)");
  wake.wait = want == WaitMode::kSleep ? WaitMode::kSleep
           : fab.cfg.all_local        ? WaitMode::kDoorbell
                                    : WaitMode::kSleep;
}

void open_bells() {
  wake.bells_name = leftovers::bells_name(
      !fab.cfg.job_id.empty() ? fab.cfg.job_id : "secret " + std::to_string(fab.cfg.job_secret));
  const char *name = wake.bells_name.c_str();
  int fd = shm_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) mw::fatal_errno("shm_open", "cannot open the job's doorbell page %s", name);
  // Its name is no secret: a page someone else made first is not ours to share.
  struct stat st;
  if (fstat(fd, &st) != 0) mw::fatal_errno("fstat", "of the job's doorbell page /dev/shm%s", name);
  if (st.st_uid != geteuid() || (st.st_mode & 077) != 0)
    mw::fatal("transport::open",
              "the job's doorbell page /dev/shm%s belongs to user %u with mode %03o, not to this "
              "user alone: another user made it before this job; remove it, or start the job again",
              name, static_cast<unsigned>(st.st_uid), static_cast<unsigned>(st.st_mode & 0777));
  // The bells, then the shared lines (shared_line()): two lines each, so a rank waiting on
  // its bell does not share a line with words its peers write for the protocols.
  // Then, page-aligned, a page per rank holding its poll word: a page, because the rank
  // maps its own at the fixed address the pass's polls read (Config::poll_word_at).
  wake.page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t lines = (sizeof(Bell) + sizeof(SharedLine)) * static_cast<size_t>(fab.cfg.nprocs);
  const size_t polls_at = (lines + wake.page - 1) / wake.page * wake.page;
  wake.bells_len = polls_at + wake.page * static_cast<size_t>(fab.cfg.nprocs);
  // Every rank sizes it the same before touching it, so no rank maps past its end.
  if (ftruncate(fd, static_cast<off_t>(wake.bells_len)) != 0)
    mw::fatal_errno("ftruncate", "cannot size the job's doorbell page %s", name);
  void *p = mmap(nullptr, wake.bells_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) mw::fatal_errno("mmap", "cannot map the job's doorbell page %s", name);
  wake.bells = static_cast<Bell *>(p);
  wake.poll_pages = static_cast<std::byte *>(p) + polls_at;
  if (void *at = fab.cfg.poll_word_at) {
    // Over the zero page memory/window.cpp mapped there when the library was loaded: a
    // poll between the two reads one or the other, never an unmapped address.
    const off_t mine = static_cast<off_t>(polls_at + wake.page * static_cast<size_t>(fab.cfg.rank));
    if (mmap(at, wake.page, PROT_READ, MAP_SHARED | MAP_FIXED, fd, mine) == MAP_FAILED)
      mw::fatal_errno("mmap", "cannot map rank %d's poll word at %p", fab.cfg.rank, at);
    wake.poll_word_at = at;
  }
  ::close(fd);
}

void open_wakeup_fds() {
  wake.event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake.event_fd < 0) mw::fatal_errno("eventfd", "cannot create the service thread's wake-up fd");
  wake.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (wake.epoll_fd < 0) mw::fatal_errno("epoll_create1", "cannot create the service thread's epoll");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake.event_fd;
  if (epoll_ctl(wake.epoll_fd, EPOLL_CTL_ADD, wake.event_fd, &ev) != 0)
    mw::fatal_errno("epoll_ctl", "cannot watch the wake-up fd");
  ev.data.fd = wake.cq_fd;
  if (epoll_ctl(wake.epoll_fd, EPOLL_CTL_ADD, wake.cq_fd, &ev) != 0)
    mw::fatal_errno("epoll_ctl", "cannot watch the completion queue's wait fd");
  wake.cq_armed.store(true);
}

void close_wake() {
  if (void *at = wake.poll_word_at) {
    // Polls after mw_finalize read zero again.
    if (mmap(at, wake.page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
      mw::fatal_errno("mmap", "cannot put the zero page back at the poll word %p", at);
    wake.poll_word_at = nullptr;
  }
  wake.poll_pages = nullptr;
  if (wake.bells) munmap(wake.bells, wake.bells_len);
  if (wake.epoll_fd >= 0) ::close(wake.epoll_fd);
  if (wake.event_fd >= 0) ::close(wake.event_fd);
  wake.bells = nullptr;
  if (!wake.bells_name.empty()) shm_unlink(wake.bells_name.c_str());  // closed before connect()
  wake.bells_name.clear();
  wake.epoll_fd = wake.event_fd = wake.cq_fd = -1;
}

}  // namespace mw::transport
