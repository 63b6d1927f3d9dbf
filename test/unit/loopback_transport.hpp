// The transport's in-process implementation, for unit tests of the protocols (locks,
// barriers, timestamps, updates) without libfabric: the link-time seam of
// runtime/transport/transport.hpp. The test binary links it instead of transport/*.cpp,
// so the protocol code under test is the runtime's own, called exactly as in a job.
//
// This process is one rank of a job whose other ranks the test plays: what this rank
// sends is kept in order (sent()), and the test delivers the others' messages (deliver())
// as the real transport would: the type's placer puts the bulk, then its handler runs.
// While this rank waits for an answer (progress_until, wait_shared), the test's `peers`
// step runs between looks, so a test scripts the other ranks' side of a conversation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <vector>

#include "transport/transport.hpp"

namespace mw::transport::loopback {

struct Message {
  int dest;
  MsgType type;
  uint64_t clock;
  std::vector<std::byte> head, bulk;

  // The head read as one struct (a lock request, a revoke); the size must match.
  template <class T>
  T body() const {
    T t{};
    if (head.size() == sizeof t) std::memcpy(&t, head.data(), sizeof t);
    return t;
  }
};

// A job of `nprocs` in which this process is `rank`: forgets what was sent and the peers.
// (Handlers stay registered: the modules' init() registers them once per test binary.)
void start(int rank, int nprocs, size_t eager_limit = 16384);

// What this rank has sent since the last call, in order; takes it out.
std::vector<Message> sent();

// A message from rank `from` arrives: placer (if the type has one and a bulk), then the
// handler, on the calling thread, as a handler runs in a job.
void deliver(int from, MsgType type, std::span<const std::byte> head,
             std::span<const std::byte> bulk = {}, uint64_t clock = 0);
template <class T>
void deliver_body(int from, MsgType type, const T &body, uint64_t clock = 0) {
  deliver(from, type, std::span<const std::byte>(reinterpret_cast<const std::byte *>(&body), sizeof body), {},
          clock);
}
// Delivers m (sent by this rank, or crafted) as if from `from`.
void deliver(int from, const Message &m);

// What the other ranks do while this one waits: called between looks at the predicate.
// A wait the step does not end within 10000 looks stops the test binary, saying so.
void set_peers(std::function<void()> step);

}  // namespace mw::transport::loopback
