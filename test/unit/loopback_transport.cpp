// The in-process transport (loopback_transport.hpp).
#include "loopback_transport.hpp"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "core/error.hpp"

namespace mw::transport {
namespace {

struct Loopback {
  Config cfg;
  Handler handlers[static_cast<size_t>(MsgType::kEnd)] = {};
  Placer placers[static_cast<size_t>(MsgType::kEnd)] = {};
  std::vector<loopback::Message> sent;
  std::function<void()> peers;
};
Loopback &lb = *new Loopback;
thread_local bool t_in_handler = false;

[[noreturn]] void unsupported(const char *call) {
  std::fprintf(stderr, "loopback transport: %s is not part of the in-process transport\n", call);
  std::abort();
}

template <class Done>
void wait(const char *call, Done &&done) {
  for (int look = 0; look < 10000; ++look) {
    if (done()) return;
    if (lb.peers) lb.peers();
  }
  if (done()) return;
  std::fprintf(stderr, "loopback transport: %s would wait forever: the test's peers never answered\n", call);
  std::abort();
}

std::vector<std::byte> gathered(std::span<const iovec> iov) {
  std::vector<std::byte> out;
  for (const iovec &v : iov) {
    auto *p = static_cast<const std::byte *>(v.iov_base);
    out.insert(out.end(), p, p + v.iov_len);
  }
  return out;
}

}  // namespace

namespace loopback {

void start(int rank, int nprocs, size_t eager_limit) {
  lb.cfg = Config{};
  lb.cfg.rank = rank;
  lb.cfg.nprocs = nprocs;
  lb.cfg.eager_limit = eager_limit;
  lb.sent.clear();
  lb.peers = nullptr;
}

std::vector<Message> sent() { return std::exchange(lb.sent, {}); }

void deliver(int from, MsgType type, std::span<const std::byte> head, std::span<const std::byte> bulk,
             uint64_t clock) {
  const auto t = static_cast<size_t>(type);
  if (!lb.handlers[t]) {
    std::fprintf(stderr, "loopback transport: no handler for %s\n", type_name(static_cast<uint16_t>(type)).c_str());
    std::abort();
  }
  Header h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.type = static_cast<uint16_t>(type);
  h.sender = from;
  h.clock = clock;
  h.bulk_len = bulk.size();
  std::vector<std::byte> payload(head.begin(), head.end());
  if (lb.placers[t] && !bulk.empty()) {
    h.payload_len = head.size();
    std::vector<iovec> where;
    lb.placers[t](h, head, where);
    size_t off = 0;
    for (const iovec &v : where) {
      std::memcpy(v.iov_base, bulk.data() + off, v.iov_len);
      off += v.iov_len;
    }
  } else {
    payload.insert(payload.end(), bulk.begin(), bulk.end());
    h.payload_len = payload.size();
  }
  const bool nested = std::exchange(t_in_handler, true);
  lb.handlers[t](h, payload);
  t_in_handler = nested;
}

void deliver(int from, const Message &m) { deliver(from, m.type, m.head, m.bulk, m.clock); }

void set_peers(std::function<void()> step) { lb.peers = std::move(step); }

}  // namespace loopback

// ---- transport.hpp, in process ----

std::vector<uint8_t> open(const Config &) { unsupported("transport::open"); }
void connect(const std::vector<std::vector<uint8_t>> &) { unsupported("transport::connect"); }
void close() {}

void on(MsgType type, Handler handler, Placer placer) {
  lb.handlers[static_cast<size_t>(type)] = handler;
  lb.placers[static_cast<size_t>(type)] = placer;
}

void send(int dest, MsgType type, std::span<const iovec> head, std::span<const iovec> bulk, uint64_t clock,
          Bulk) {
  if (dest < 0 || dest >= lb.cfg.nprocs)
    mw::fatal("transport::send", "destination rank %d is not in this job of %d ranks", dest, lb.cfg.nprocs);
  lb.sent.push_back({dest, type, clock, gathered(head), gathered(bulk)});
}
void send(int dest, MsgType type, std::span<const iovec> payload, uint64_t clock) {
  send(dest, type, {}, payload, clock);
}
void send(int dest, MsgType type, const void *payload, size_t len, uint64_t clock) {
  iovec v{const_cast<void *>(payload), len};
  send(dest, type, {}, std::span<const iovec>(&v, 1), clock);
}

void wait_sends() {}

void progress_until(bool (*done)(void *), void *arg) {
  wait("transport::progress_until", [&] { return done(arg); });
}

void progress_after(void (*first)(void *), bool (*done)(void *), void *arg) {
  first(arg);
  progress_until(done, arg);
}

void as_handler(void (*fn)(void *), void *arg) {
  const bool nested = std::exchange(t_in_handler, true);
  fn(arg);
  t_in_handler = nested;
}

void set_stall_timeout(int) {}
std::string provider_name() { return "loopback"; }
WaitMode wait_mode() { return WaitMode::kSleep; }
bool mail() { return true; }
bool has_mail_count() { return false; }
SharedLine *shared_line(int) { return nullptr; }  // no shared page: barriers go by message
void ring_waiter(int) {}
void wait_shared(bool (*done)(void *), void *arg, bool) { progress_until(done, arg); }
size_t eager_limit() { return lb.cfg.eager_limit; }
bool uses_rma() { return false; }
bool reports_source() { return true; }
uint64_t rejected() { return 0; }
uint64_t rejected(Result) { return 0; }
Result validate(const void *buf, size_t received, const Config &cfg, int source) {
  return validate(buf, received, Limits{cfg.rank, cfg.nprocs, cfg.job_secret, cfg.eager_limit}, source);
}
bool in_runtime_context() { return t_in_handler; }

namespace testing {
void send_raw(int, const void *, size_t) { unsupported("transport::testing::send_raw"); }
}  // namespace testing

}  // namespace mw::transport
