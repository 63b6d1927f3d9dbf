// Waking: what an idle thread of this rank sleeps on and who wakes it, per wait mode
// (WaitMode in transport.hpp), and the job's shared page on one host: a doorbell and a
// shared line per rank. Who sleeps when is progress.cpp's business.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "transport/fabric.hpp"

namespace mw::transport {

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

struct Wake {
  WaitMode wait = WaitMode::kSleep;
  int cq_fd = -1;     // kFd
  int event_fd = -1;  // kFd: local wake-ups
  int epoll_fd = -1;  // kFd: the service thread sleeps here on {event_fd, cq_fd when armed}
  std::atomic<bool> cq_armed{false};
  std::atomic<uint64_t> app_leaves{0};       // kFd: times the last application waiter left
  std::atomic<bool> service_untimed{false};  // kFd: parked until an application waiter leaves
  std::mutex arm_mu;
  Bell *bells = nullptr;  // kDoorbell: every rank's, then every rank's shared line (the job's page)
  // kDoorbell, between connect() and close(): this rank's bell, and its `posted` count as
  // the last poll of the CQ began (mail(): a cached lock re-acquire reads these two).
  Bell *mine = nullptr;
  std::atomic<uint32_t> polled_at{0};
  size_t bells_len = 0;
  std::string bells_name;
  // kDoorbell: every rank's poll word (midway.h, "Polls"), a page each after the bells
  // and shared lines, so that a rank can map its own at MW_POLL_WORD
  // (Config::poll_word_at). ring() sets it; serve_polled() clears it.
  std::byte *poll_pages = nullptr;
  size_t page = 0;
  void *poll_word_at = nullptr;  // where this rank's poll page is mapped, if anywhere
};
extern Wake &wake;

// Sleeps while *addr == expected, until a wake for one of `bits` or timeout_ms.
bool futex_wait(std::atomic<uint32_t> *addr, uint32_t expected, uint32_t bits, int timeout_ms);
bool futex_wait_ns(std::atomic<uint32_t> *addr, uint32_t expected, uint32_t bits, long timeout_ns);
void futex_wake(std::atomic<uint32_t> *addr, uint32_t bits);

inline std::atomic<uint32_t> *my_bell() { return &wake.bells[fab.cfg.rank].word; }
inline std::atomic<uint64_t> *poll_word(int rank) {
  return reinterpret_cast<std::atomic<uint64_t> *>(wake.poll_pages + static_cast<size_t>(rank) * wake.page);
}


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
  if (wake.wait != WaitMode::kDoorbell) return;
  wake.bells[dest].posted.fetch_add(1, std::memory_order_seq_cst);  // and the fence
  // The peer's poll word: its application code, busy in a loop, serves the message at the
  // loop's next poll. Written only when clear, so that a burst costs one line transfer.
  std::atomic<uint64_t> *pw = poll_word(dest);
  if (pw->load(std::memory_order_relaxed) == 0) pw->store(1, std::memory_order_release);
  wake_armed(&wake.bells[dest].word, kArmedBoth);
}

// ring() for a shared word instead of a message (ring_waiter in transport.hpp).
void ring_app(int dest);
// Wakes this rank's sleeping threads (close(), or messages queued for the service thread).
void wake_local();
// kFd: whether the service thread's epoll watches the CQ's fd.
void set_cq_armed(bool on);
// kFd: lets the fd stand for the CQ (fi_trywait). False: completions are waiting, poll.
bool cq_trywait();

// The completion queue, with the best wait object the provider has: sets wake.wait.
void open_cq(size_t size);
// kDoorbell: the job's shared page (core/leftovers.hpp: bells_name), mapped.
void open_bells();
// kFd: the service thread's eventfd and epoll.
void open_wakeup_fds();
void close_wake();

}  // namespace mw::transport
