// A peer that breaks the protocol, between real processes over shm: both ranks set up the
// modules whose handlers the message meets, one sends the other a message no correct
// rank sends, and the receiver must stop with an error naming the message, the sender
// and what is wrong (protocol::malformed), instead of corrupting its state.
#pragma once
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "ec/protocol.hpp"
#include "fork_job.hpp"
#include "transport/transport.hpp"

namespace mw::test {

// Two ranks over shm, their error output kept.
inline JobOptions two_ranks() {
  JobOptions o;
  o.nprocs = 2;
  o.cfg.provider = "shm";
  o.cfg.all_local = true;
  o.capture_stderr = true;
  o.timeout_s = 20;
  return o;
}

// Both ranks run `setup(rank)` (it registers the handlers) and connect; then rank `from`
// runs `send(to)` and leaves, while the other runs `wait`, or sleeps: the message's
// handler stops it long before.
inline JobResult one_message(int from, void (*setup)(int rank), void (*send)(int to),
                             void (*wait)() = nullptr) {
  return run_job(two_ranks(), [=](Child &c) {
    protocol::start(c.rank(), 2);
    setup(c.rank());
    c.start();
    if (c.rank() == from) send(1 - from);
    else if (wait) wait();
    else sleep(5);
    transport::close();
  });
}

// Rank `rank` stopped (not a clean exit) with `what` in its error output.
inline void expect_stopped(const JobResult &r, const std::string &what, int rank = 0) {
  ASSERT_FALSE(r.timed_out);
  EXPECT_FALSE(WIFEXITED(r.status[rank]) && WEXITSTATUS(r.status[rank]) == 0);
  EXPECT_THAT(r.err[rank], testing::HasSubstr(what));
}

// How a malformed message's report names the object it is about: " about lock 0x40000010".
inline std::string about(const char *kind, uint64_t addr) {
  char b[96];
  std::snprintf(b, sizeof b, " about %s 0x%llx", kind, static_cast<unsigned long long>(addr));
  return b;
}

// The same, for an object whose address only the child knew (a heap page it found): the
// report names `kind` at some address, then says `why`.
inline void expect_stopped_about(const JobResult &r, const std::string &message, const char *kind,
                                 const std::string &why, int rank = 0) {
  expect_stopped(r, message + " about " + kind + " 0x", rank);
  EXPECT_THAT(r.err[rank], testing::ContainsRegex(" about " + std::string(kind) + " 0x[0-9a-f]+: "));
  EXPECT_THAT(r.err[rank], testing::HasSubstr(": " + why));
}

template <class T>
void append(std::vector<std::byte> &v, const T &t) {
  const auto *p = reinterpret_cast<const std::byte *>(&t);
  v.insert(v.end(), p, p + sizeof t);
}

// One message of `head` (bookkeeping) and `bulk` (data) bytes.
inline void send_parts(int to, transport::MsgType type, std::vector<std::byte> head,
                       std::vector<std::byte> bulk = {}, uint64_t clock = 0) {
  iovec h{head.data(), head.size()}, b{bulk.data(), bulk.size()};
  transport::send(to, type, std::span<const iovec>(&h, head.empty() ? 0 : 1),
                  std::span<const iovec>(&b, bulk.empty() ? 0 : 1), clock);
}

}  // namespace mw::test
