// Semaphores and condition variables kept by a manager rank (sync/semaphores.hpp).
#include "sync/semaphores.hpp"

#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "core/error.hpp"
#include "core/waits.hpp"
#include "ec/locks.hpp"
#include "ec/protocol.hpp"
#include "memory/symbols.hpp"
#include "midway.h"
#include "rc/pending_updates.hpp"
#include "transport/transport.hpp"

namespace mw::semaphores {
namespace {

using transport::MsgType;

struct Body {
  uint64_t addr;  // the object's address
  uint64_t all;   // kCondSignal: wake every waiter, not one
};

// Manager side: the state of the objects this rank manages.
struct Semaphore {
  uint64_t count = 0;
  std::deque<int> waiters;
};
struct Condition {
  std::deque<int> waiters;
};
// Waiter side: answers received and not yet taken, and answers asked for and not yet
// received (an answer beyond them, a grant nobody waits for, would let a later wait
// return without its turn).
struct Answers {
  uint64_t grants = 0, queued = 0, wakes = 0;
  uint64_t asked_grants = 0, asked_queued = 0, asked_wakes = 0;
};

std::mutex g_mu;
std::unordered_map<uint64_t, Semaphore> g_sems;
std::unordered_map<uint64_t, Condition> g_conds;
std::unordered_map<uint64_t, Answers> g_answers;

// Sends body to dest, or in a job of one rank (no transport) runs its handler here.
void to(int dest, MsgType type, const Body &b);

// The object of a message, as a malformed message is reported: its kind by the type.
std::string object_of(const transport::Header &h, uint64_t addr) {
  const auto t = static_cast<MsgType>(h.type);
  const bool sem = t == MsgType::kSemWait || t == MsgType::kSemPost || t == MsgType::kSemGrant;
  return std::string(sem ? "semaphore " : "condition variable ") +
         symbols::variable(addr, sem ? sizeof(mw_sem_t) : sizeof(mw_cond_t));
}

// A request's body, sent to this rank as the object's manager.
Body request_of(const transport::Header &h, std::span<const std::byte> payload, const char *why) {
  const Body b = protocol::read_body<Body>(h, payload);
  if (locks::manager_of(b.addr) != protocol::rank()) protocol::malformed(h, why, object_of(h, b.addr));
  return b;
}
constexpr const char *kNotSemManager = "a request for a semaphore this rank does not manage";
constexpr const char *kNotCondManager = "a request for a condition variable this rank does not manage";

void on_sem_wait(const transport::Header &h, std::span<const std::byte> payload) {
  const Body b = request_of(h, payload, kNotSemManager);
  std::unique_lock<std::mutex> g(g_mu);
  Semaphore &s = g_sems[b.addr];
  if (s.count == 0) {
    s.waiters.push_back(h.sender);
    return;
  }
  s.count--;
  g.unlock();
  to(h.sender, MsgType::kSemGrant, b);
}

void on_sem_post(const transport::Header &h, std::span<const std::byte> payload) {
  const Body b = request_of(h, payload, kNotSemManager);
  std::unique_lock<std::mutex> g(g_mu);
  Semaphore &s = g_sems[b.addr];
  if (s.waiters.empty()) {
    s.count++;
    return;
  }
  const int waiter = s.waiters.front();
  s.waiters.pop_front();
  g.unlock();
  to(waiter, MsgType::kSemGrant, b);
}

void on_cond_wait(const transport::Header &h, std::span<const std::byte> payload) {
  const Body b = request_of(h, payload, kNotCondManager);
  {
    std::lock_guard<std::mutex> g(g_mu);
    g_conds[b.addr].waiters.push_back(h.sender);
  }
  to(h.sender, MsgType::kCondQueued, b);
}

void on_cond_signal(const transport::Header &h, std::span<const std::byte> payload) {
  const Body b = request_of(h, payload, kNotCondManager);
  std::deque<int> wake;
  {
    std::lock_guard<std::mutex> g(g_mu);
    std::deque<int> &w = g_conds[b.addr].waiters;
    if (b.all) {
      wake.swap(w);
    } else if (!w.empty()) {
      wake.push_back(w.front());
      w.pop_front();
    }
  }
  for (int r : wake) to(r, MsgType::kCondWake, b);
}

void on_answer(const transport::Header &h, std::span<const std::byte> payload) {
  const Body b = protocol::read_body<Body>(h, payload);
  if (h.sender != locks::manager_of(b.addr)) protocol::malformed(h, "an answer from a rank that does not manage the object",
      object_of(h, b.addr));
  std::lock_guard<std::mutex> g(g_mu);
  Answers &a = g_answers[b.addr];
  uint64_t Answers::*got = &Answers::wakes, Answers::*asked = &Answers::asked_wakes;
  if (h.type == static_cast<uint16_t>(MsgType::kSemGrant)) {
    got = &Answers::grants;
    asked = &Answers::asked_grants;
  } else if (h.type == static_cast<uint16_t>(MsgType::kCondQueued)) {
    got = &Answers::queued;
    asked = &Answers::asked_queued;
  }
  if (a.*asked == 0) protocol::malformed(h, "an answer this rank did not ask for", object_of(h, b.addr));
  a.*asked -= 1;
  a.*got += 1;
}

void to(int dest, MsgType type, const Body &b) {
  if (protocol::nprocs() > 1) {
    protocol::send_body(dest, type, b);
    return;
  }
  transport::Header h{};
  h.type = static_cast<uint16_t>(type);
  h.sender = protocol::rank();
  const auto payload = std::as_bytes(std::span<const Body>(&b, 1));
  switch (type) {
    case MsgType::kSemWait: on_sem_wait(h, payload); break;
    case MsgType::kSemPost: on_sem_post(h, payload); break;
    case MsgType::kCondWait: on_cond_wait(h, payload); break;
    case MsgType::kCondSignal: on_cond_signal(h, payload); break;
    default: on_answer(h, payload); break;
  }
}

// Sends a request to the object's manager as a handler would (in order with the
// handlers' own messages). A wait counts the answers it asks for first: in a job of one
// rank the answer comes inside to().
void request(const void *object, MsgType type, bool all = false) {
  const Body b{reinterpret_cast<uint64_t>(object), all ? 1u : 0u};
  if (type == MsgType::kSemWait || type == MsgType::kCondWait) {
    std::lock_guard<std::mutex> g(g_mu);
    Answers &a = g_answers[b.addr];
    if (type == MsgType::kSemWait) {
      a.asked_grants++;
    } else {
      a.asked_queued++;
      a.asked_wakes++;
    }
  }
  const int manager = locks::manager_of(b.addr);
  transport::as_handler([&] { to(manager, type, b); });
}

// Sleeps until an answer of the kind `field` selects has come for object (a semaphore or
// a condition variable, as `kind` says), and takes it. In a job of one rank nobody else
// can answer: stops with `call`'s name instead.
void await(const char *call, const void *object, uint64_t Answers::*field, waits::Kind kind) {
  const uint64_t addr = reinterpret_cast<uint64_t>(object);
  auto arrived = [addr, field] {
    std::lock_guard<std::mutex> g(g_mu);
    return g_answers[addr].*field > 0;
  };
  if (!arrived()) {
    const bool sem = kind == waits::Kind::kSemaphore;
    if (protocol::nprocs() == 1)
      fatal(call, "%s %s: would wait forever, no other rank can wake it (a job of one rank)",
            sem ? "semaphore" : "condition",
            symbols::variable(addr, sem ? sizeof(mw_sem_t) : sizeof(mw_cond_t)).c_str());
    waits::Waiting waiting(kind, addr, locks::manager_of(addr));
    transport::progress_until([&arrived] { return arrived(); });
  }
  std::lock_guard<std::mutex> g(g_mu);
  g_answers[addr].*field -= 1;
}

}  // namespace

void init() {
  transport::on(MsgType::kSemWait, on_sem_wait);
  transport::on(MsgType::kSemPost, on_sem_post);
  transport::on(MsgType::kSemGrant, on_answer);
  transport::on(MsgType::kCondWait, on_cond_wait);
  transport::on(MsgType::kCondQueued, on_answer);
  transport::on(MsgType::kCondSignal, on_cond_signal);
  transport::on(MsgType::kCondWake, on_answer);
}

void post(const mw_sem_t *s) {
  pending_updates::flush();  // a release: what this rank wrote reaches the others first
  request(s, MsgType::kSemPost);
}

void wait(const mw_sem_t *s) {
  request(s, MsgType::kSemWait);
  await("mw_sem_wait", s, &Answers::grants, waits::Kind::kSemaphore);
}

void cond_wait(const mw_cond_t *c, mw_lock_t *l) {
  if (!locks::held_exclusive("mw_cond_wait", l))
    fatal("mw_cond_wait", "lock %s is not held exclusively by this rank: acquire it "
          "(MW_EXCLUSIVE) before waiting on condition %s", symbols::variable(l, sizeof *l).c_str(),
          symbols::variable(c, sizeof *c).c_str());
  // Queued before the lock goes: a signaller takes the lock after this release, so its
  // signal reaches the manager after this rank is in the queue and cannot be lost.
  request(c, MsgType::kCondWait);
  await("mw_cond_wait", c, &Answers::queued, waits::Kind::kCondition);
  pending_updates::flush();
  locks::release(l);
  await("mw_cond_wait", c, &Answers::wakes, waits::Kind::kCondition);
  locks::acquire(l, MW_EXCLUSIVE);
}

void cond_signal(const mw_cond_t *c, bool all) {
  pending_updates::flush();
  request(c, MsgType::kCondSignal, all);
}

}  // namespace mw::semaphores
