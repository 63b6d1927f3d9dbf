// The transport between real processes over real libfabric endpoints: every test forks
// its ranks (test/harness/fork_job.hpp, a stand-in for mwrun) on shm and on tcp;ofi_rxm
// over loopback.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <random>
#include <thread>
#include <vector>

#include "fork_job.hpp"
#include "transport/transport.hpp"

namespace mw::test {
namespace {

using transport::Header;
using transport::MsgType;
using transport::Result;
using transport::WaitMode;

bool child_failed() { return ::testing::Test::HasFailure(); }

// tcp over loopback, so that no test depends on the host's other interfaces.
struct LoopbackTcp : ::testing::Environment {
  void SetUp() override { setenv("FI_TCP_IFACE", "lo", 0); }
};
const auto *const kLoopback = ::testing::AddGlobalTestEnvironment(new LoopbackTcp);

std::string pretty(const std::string &prov) {
  std::string s;
  for (char c : prov) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

double cpu_seconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);  // every thread of the process
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

// ---- Content that names its sender and size, checkable without a copy -------------------

uint64_t seed_of(int sender, size_t size) { return (uint64_t(sender) << 40) ^ size ^ 0x5eedULL; }

void fill(std::byte *p, size_t size, uint64_t seed) {
  size_t words = size / 8;
  auto *w = reinterpret_cast<uint64_t *>(p);
  for (size_t i = 0; i < words; ++i) w[i] = (seed + i) * 0x9E3779B97F4A7C15ULL;
  for (size_t i = words * 8; i < size; ++i) p[i] = static_cast<std::byte>(seed + i);
}

bool check(const std::byte *p, size_t size, uint64_t seed) {
  size_t words = size / 8;
  uint64_t bad = 0;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, p + i * 8, 8);
    bad |= w ^ ((seed + i) * 0x9E3779B97F4A7C15ULL);
  }
  for (size_t i = words * 8; i < size; ++i) bad |= uint64_t(p[i] != static_cast<std::byte>(seed + i));
  return bad == 0;
}

// ---- All-to-all -----------------------------------------------------------------------

// The largest is 64 MiB up to 4 ranks. At 8 ranks on 2 cores it is 8 MiB: 64 messages of
// 64 MiB into fresh memory took ~37 s of a 60 s timeout in a quiet run, and the same
// paths (pieces, reads in kReadPiece) are crossed with 8 MiB.
size_t kSizes[] = {8, 4096, 1 << 20, 64 << 20};
std::atomic<int> g_got[4];
std::atomic<int> g_bad{0};

int size_index(size_t n) {
  for (int i = 0; i < 4; ++i)
    if (kSizes[i] == n) return i;
  return -1;
}

void on_data(const Header &h, std::span<const std::byte> p) {
  int i = size_index(p.size());
  if (i < 0 || h.payload_len != p.size() || !check(p.data(), p.size(), seed_of(h.sender, p.size()))) {
    g_bad.fetch_add(1);
    return;
  }
  g_got[i].fetch_add(1);
}

void all_to_all_body(Child &c) {
  transport::on(MsgType::kData, on_data);
  if (c.config().nprocs > 4) kSizes[3] = 8 << 20;  // this rank's process only (see kSizes)
  c.start();
  const int n = c.config().nprocs, me = c.rank();
  auto buf = std::make_unique<std::byte[]>(kSizes[3]);
  for (int i = 0; i < 4; ++i) {
    size_t size = kSizes[i];
    fill(buf.get(), size, seed_of(me, size));
    // Three pieces, to go through the gather path.
    size_t a = size / 3, b = size / 3;
    iovec v[3] = {{buf.get(), a}, {buf.get() + a, b}, {buf.get() + a + b, size - a - b}};
    for (int k = 0; k < n; ++k) transport::send((me + k) % n, MsgType::kData, v);
    // Even ranks wait by progressing themselves, odd ones leave it to the service thread.
    if (me % 2 == 0) {
      transport::progress_until([&] { return g_got[i].load() + g_bad.load() >= n; });
    } else {
      while (g_got[i].load() + g_bad.load() < n) usleep(200);
    }
    EXPECT_EQ(g_got[i].load(), n) << "rank " << me << ", " << size << " bytes";
  }
  EXPECT_EQ(g_bad.load(), 0) << "rank " << me;
  EXPECT_EQ(transport::rejected(), 0u);
  c.barrier();
  transport::close();
}

struct AllToAllCase {
  std::string provider;
  int nprocs;
  WaitMode wait = WaitMode::kAuto;
  bool use_rma = true;
};

void PrintTo(const AllToAllCase &c, std::ostream *os) {
  *os << c.provider << ", " << c.nprocs << " ranks" << (c.use_rma ? "" : ", chunks")
      << (c.wait == WaitMode::kSleep ? ", sleeping wait" : "");
}

class AllToAll : public ::testing::TestWithParam<AllToAllCase> {};

TEST_P(AllToAll, EveryPayloadSizeArrivesIntact) {
  const AllToAllCase &tc = GetParam();
  JobOptions o;
  o.nprocs = tc.nprocs;
  o.cfg.provider = tc.provider;
  o.cfg.all_local = true;
  o.cfg.wait = tc.wait;
  o.cfg.use_rma = tc.use_rma;
  JobResult r = run_job(o, all_to_all_body, child_failed);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.all_exited_zero());
}

INSTANTIATE_TEST_SUITE_P(
    Transport, AllToAll,
    ::testing::Values(AllToAllCase{"shm", 2}, AllToAllCase{"shm", 4}, AllToAllCase{"shm", 8},
                      AllToAllCase{"tcp;ofi_rxm", 2}, AllToAllCase{"tcp;ofi_rxm", 4},
                      AllToAllCase{"tcp;ofi_rxm", 8},
                      // The fallbacks: chunks instead of RMA, a sleeping wait, a doorbell on tcp.
                      AllToAllCase{"shm", 4, WaitMode::kAuto, false},
                      AllToAllCase{"tcp;ofi_rxm", 2, WaitMode::kAuto, false},
                      AllToAllCase{"shm", 2, WaitMode::kSleep}),
    [](const auto &info) {
      const AllToAllCase &c = info.param;
      std::string s = pretty(c.provider) + "_" + std::to_string(c.nprocs) + "ranks";
      if (!c.use_rma) s += "_chunked";
      if (c.wait == WaitMode::kSleep) s += "_sleep";
      if (c.wait == WaitMode::kDoorbell) s += "_doorbell";
      return s;
    });

// ---- Two threads of one rank sending to the same rank at once ----------------------------

constexpr int kConcurrent = 2000;
std::unique_ptr<std::byte[]> g_page;

void on_ping_send_page(const Header &h, std::span<const std::byte>) {
  // On the service thread, while the application thread sends too.
  transport::send(h.sender, MsgType::kData, g_page.get(), 4096);
}

class ConcurrentSenders : public ::testing::TestWithParam<std::string> {};

// Page-sized messages on shm go as a header and a payload, two messages the receiver
// pairs by order: a second thread's message must never come between them.
TEST_P(ConcurrentSenders, MessagesOfTwoThreadsToOneRankArriveWhole) {
  JobOptions o;
  o.nprocs = 2;
  o.cfg.provider = GetParam();
  o.cfg.all_local = true;
  JobResult r = run_job(
      o,
      [](Child &c) {
        g_page = std::make_unique<std::byte[]>(4096);
        fill(g_page.get(), 4096, seed_of(c.rank(), 4096));
        transport::on(MsgType::kData, on_data);
        transport::on(MsgType::kPing, on_ping_send_page);
        c.start();
        c.barrier();
        if (c.rank() == 1) {
          for (int i = 0; i < kConcurrent; ++i) transport::send(0, MsgType::kPing, nullptr, 0);
          transport::progress_until([] { return g_got[1].load() + g_bad.load() >= 2 * kConcurrent; });
          EXPECT_EQ(g_got[1].load(), 2 * kConcurrent);
          EXPECT_EQ(g_bad.load(), 0);
          EXPECT_EQ(transport::rejected(), 0u);
        } else {
          for (int i = 0; i < kConcurrent; ++i) transport::send(1, MsgType::kData, g_page.get(), 4096);
        }
        c.barrier();
        transport::close();
      },
      child_failed);
  EXPECT_TRUE(r.all_exited_zero());
}

INSTANTIATE_TEST_SUITE_P(Transport, ConcurrentSenders, ::testing::Values("shm", "tcp;ofi_rxm"),
                         [](const auto &info) { return pretty(info.param); });

// ---- Order: a sender's messages are handled in the order it sent them ------------------

constexpr int kOrdered = 1000;
std::atomic<uint64_t> g_next_seq[4];
std::atomic<int> g_order_bad{0};
std::atomic<int> g_ordered{0};

void on_ordered(const Header &h, std::span<const std::byte> p) {
  uint64_t seq = ~uint64_t{0};
  if (p.size() >= sizeof seq) std::memcpy(&seq, p.data(), sizeof seq);
  // One more than the last from this sender: a message that overtook another counts once,
  // and so does the one it overtook.
  if (h.sender < 0 || h.sender >= 4 || seq != g_next_seq[h.sender].load()) g_order_bad.fetch_add(1);
  if (h.sender >= 0 && h.sender < 4) g_next_seq[h.sender].store(seq + 1);
  g_ordered.fetch_add(1);
}

class Order : public ::testing::TestWithParam<std::string> {};

// Every eager size, up to a payload of the whole eager limit (a header more than tcp;ofi_rxm's
// own eager size, 16 KiB: it then segments the message, and reports its completion after
// those of smaller messages sent behind it), interleaved at random: three senders to one.
TEST_P(Order, EagerMessagesOfEverySizeAreHandledInTheOrderSent) {
  JobOptions o;
  o.nprocs = 4;
  o.cfg.provider = GetParam();
  o.cfg.all_local = true;
  JobResult r = run_job(
      o,
      [](Child &c) {
        transport::on(MsgType::kData, on_ordered);
        c.start();
        c.barrier();
        const size_t limit = c.config().eager_limit;
        if (c.rank() == 0) {
          transport::progress_until([] { return g_ordered.load() >= 3 * kOrdered; });
          EXPECT_EQ(g_order_bad.load(), 0) << "messages handled out of the order sent";
          EXPECT_EQ(g_ordered.load(), 3 * kOrdered);
        } else {
          std::vector<std::byte> buf(limit);
          std::mt19937 rng(static_cast<unsigned>(c.rank()));
          const size_t sizes[] = {8, 100, 4096, limit - 64, limit - 8, limit};
          for (uint64_t seq = 0; seq < kOrdered; ++seq) {
            std::memcpy(buf.data(), &seq, sizeof seq);
            transport::send(0, MsgType::kData, buf.data(), sizes[rng() % std::size(sizes)]);
          }
        }
        c.barrier();
        transport::close();
      },
      child_failed);
  EXPECT_TRUE(r.all_exited_zero());
}

INSTANTIATE_TEST_SUITE_P(Transport, Order, ::testing::Values("shm", "tcp;ofi_rxm"),
                         [](const auto &info) { return pretty(info.param); });

// ---- Malformed messages ------------------------------------------------------------------

std::atomic<int> g_pings{0};
std::atomic<uint64_t> g_ping_value{0};

void on_ping(const Header &, std::span<const std::byte> p) {
  uint64_t v = 0;
  if (p.size() == sizeof v) std::memcpy(&v, p.data(), sizeof v);
  g_ping_value.store(v);
  g_pings.fetch_add(1);
}

Header good_header(const transport::Config &cfg, uint64_t payload_len) {
  Header h{};
  h.magic = transport::kMagic;
  h.version = transport::kVersion;
  h.type = static_cast<uint16_t>(MsgType::kPing);
  h.sender = cfg.rank;
  h.secret_tag = transport::secret_tag(cfg.job_secret);
  h.payload_len = payload_len;
  return h;
}

std::vector<std::byte> message(const Header &h, size_t payload_len) {
  std::vector<std::byte> m(sizeof h + payload_len, std::byte{7});
  std::memcpy(m.data(), &h, sizeof h);
  return m;
}

// A job of `nprocs` local ranks over `provider` whose error output the test reads.
JobOptions capturing(const std::string &provider, int nprocs) {
  JobOptions o;
  o.nprocs = nprocs;
  o.cfg.provider = provider;
  o.cfg.all_local = true;
  o.capture_stderr = true;
  return o;
}

// Every rank exited 0, and rank 1, the receiver, warned with `line`.
void expect_warned(const JobResult &r, const std::string &line) {
  EXPECT_TRUE(r.all_exited_zero()) << r.err[0] << r.err[1];
  EXPECT_NE(r.err[1].find(line), std::string::npos) << r.err[1];
}

class Malformed : public ::testing::TestWithParam<std::string> {};

TEST_P(Malformed, IsDroppedAndCountedAndTheNextGoodMessageArrives) {
  JobOptions o = capturing(GetParam(), 2);
  // The over-long message below meets two libfabric 1.17 bugs, which the transport never
  // triggers itself (it sends at most a header plus the eager limit, which every rank of
  // a job shares):
  // - shm moves messages over 4 KiB by CMA, and its copy loop (smr_cma_loop) never ends
  //   when the receive buffer is shorter than the message: the receiver spins inside
  //   fi_cq_read. Hence small receive buffers here, so the message goes by inject.
  // - tcp under rxm, receiving straight into the posted buffer ("dynamic receive
  //   buffer"), reports the truncation but leaves the rest of the message in the
  //   stream: every later message on that connection is lost. Hence that path is off.
  o.cfg.eager_limit = 1024;
  setenv("FI_OFI_RXM_ENABLE_DYN_RBUF", "0", 1);
  JobResult r = run_job(
      o,
      [](Child &c) {
        transport::on(MsgType::kPing, on_ping);
        c.start();
        const transport::Config &cfg = c.config();
        if (c.rank() == 0) {
          Header h = good_header(cfg, 8);
          std::vector<std::vector<std::byte>> bad;
          {
            Header x = h;
            x.magic ^= 1;
            bad.push_back(message(x, 8));
          }
          {
            Header x = h;
            x.secret_tag ^= 0x100;
            bad.push_back(message(x, 8));
          }
          {
            Header x = h;  // declares more than it carries
            x.payload_len = 1 << 20;
            bad.push_back(message(x, 8));
          }
          {
            auto m = message(h, 8);  // truncated: half a header
            m.resize(sizeof(Header) / 2);
            bad.push_back(m);
          }
          {
            Header x = h;  // longer than any receive buffer
            x.payload_len = cfg.eager_limit + 1024;
            bad.push_back(message(x, cfg.eager_limit + 1024));
          }
          {
            Header x = h;
            x.type = 999;
            bad.push_back(message(x, 8));
          }
          {
            Header x = h;
            x.sender = 7;  // not a rank of a job of 2
            bad.push_back(message(x, 8));
          }
          {
            Header x = h;
            x.version += 1;
            bad.push_back(message(x, 8));
          }
          {
            Header x = h;  // valid, but this rank handles no DATA
            x.type = static_cast<uint16_t>(MsgType::kData);
            bad.push_back(message(x, 8));
          }
          {
            Header x = h;  // the end of a transfer this rank never made
            x.type = static_cast<uint16_t>(MsgType::kDone);
            x.payload_len = sizeof(transport::DoneBody);
            auto m = message(x, x.payload_len);
            transport::DoneBody d{12345};
            std::memcpy(m.data() + sizeof x, &d, sizeof d);
            bad.push_back(m);
          }
          {
            Header x = h;  // a piece of a transfer never announced
            x.type = static_cast<uint16_t>(MsgType::kChunk);
            x.payload_len = sizeof(transport::ChunkBody) + 8;
            auto m = message(x, x.payload_len);
            transport::ChunkBody k{12345, 0};
            std::memcpy(m.data() + sizeof x, &k, sizeof k);
            bad.push_back(m);
          }
          {
            Header x = h;  // a rendezvous header whose segments do not add up
            x.flags = transport::kRendezvous;
            x.bulk_len = 1 << 20;
            x.payload_len = sizeof(transport::RtsBody) + sizeof(transport::Segment);
            auto m = message(x, x.payload_len);
            transport::RtsBody rts{1, 1, 0};
            transport::Segment seg{0, 0, 4096};
            std::memcpy(m.data() + sizeof x, &rts, sizeof rts);
            std::memcpy(m.data() + sizeof x + sizeof rts, &seg, sizeof seg);
            bad.push_back(m);
          }
          for (auto &m : bad) transport::testing::send_raw(1, m.data(), m.size());
          uint64_t v = 42;
          transport::send(1, MsgType::kPing, &v, sizeof v);
        } else {
          transport::progress_until([] { return g_pings.load() > 0; });
          EXPECT_EQ(g_pings.load(), 1);
          EXPECT_EQ(g_ping_value.load(), 42u);
          EXPECT_EQ(transport::rejected(), 12u);
          EXPECT_EQ(transport::rejected(Result::kBadMagic), 1u);
          EXPECT_EQ(transport::rejected(Result::kBadSecret), 1u);
          EXPECT_EQ(transport::rejected(Result::kLengthMismatch), 1u);
          EXPECT_EQ(transport::rejected(Result::kShort), 1u);
          EXPECT_EQ(transport::rejected(Result::kTooLong), 1u);
          EXPECT_EQ(transport::rejected(Result::kUnknownType), 1u);
          EXPECT_EQ(transport::rejected(Result::kBadSender), 1u);
          EXPECT_EQ(transport::rejected(Result::kBadVersion), 1u);
          EXPECT_EQ(transport::rejected(Result::kNoHandler), 1u);
          EXPECT_EQ(transport::rejected(Result::kBadBody), 3u);  // DONE, CHUNK, rendezvous
        }
        c.barrier();
        transport::close();
      },
      child_failed);
  unsetenv("FI_OFI_RXM_ENABLE_DYN_RBUF");
  EXPECT_TRUE(r.all_exited_zero()) << r.err[0] << r.err[1];
  // One line per drop, naming the sender and the reason.
  const std::string &log = r.err[1];
  EXPECT_NE(log.find("midway: warning: transport: dropped a message of 56 bytes from rank 0: bad "
                     "magic (not a Midway message) (rank 1)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("from rank 0: job secret does not match"), std::string::npos) << log;
  EXPECT_NE(log.find("declared length differs from the bytes received"), std::string::npos) << log;
  EXPECT_NE(log.find("shorter than a message header"), std::string::npos) << log;
  EXPECT_NE(log.find("longer than the eager limit"), std::string::npos) << log;
  EXPECT_NE(log.find("sender is not a rank of this job"), std::string::npos) << log;
  EXPECT_NE(log.find("from rank 0: protocol version does not match"), std::string::npos) << log;
  EXPECT_NE(log.find("dropped a DATA message of 56 bytes from rank 0: no handler registered for its type"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("dropped a DONE message of 56 bytes from rank 0: inconsistent transport message body"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("dropped a CHUNK message of 72 bytes from rank 0: inconsistent transport message body"),
            std::string::npos)
      << log;
}

std::mutex g_whole_mu;
std::vector<std::byte> g_whole;  // the last PING's payload

void on_ping_keep(const Header &, std::span<const std::byte> p) {
  {
    std::lock_guard<std::mutex> g(g_whole_mu);
    g_whole.assign(p.begin(), p.end());
  }
  g_pings.fetch_add(1);
}

// A chunk that repeats bytes of its transfer is dropped: counted as landed, it would
// complete the message with bytes missing and others overwritten.
TEST_P(Malformed, ARepeatedChunkIsDroppedAndTheTransferArrivesIntact) {
  JobOptions o = capturing(GetParam(), 2);
  g_pings = 0;
  JobResult r = run_job(
      o,
      [](Child &c) {
        transport::on(MsgType::kPing, on_ping_keep);
        c.start();
        const transport::Config &cfg = c.config();
        constexpr uint64_t kId = 777, kPiece = 8;
        if (c.rank() == 0) {
          Header rts = good_header(cfg, sizeof(transport::RtsBody));
          rts.flags = transport::kChunked;
          rts.bulk_len = 2 * kPiece;
          auto announce = message(rts, rts.payload_len);
          const transport::RtsBody body{kId, 0, 0};
          std::memcpy(announce.data() + sizeof rts, &body, sizeof body);
          auto chunk = [&](uint64_t offset, char fill) {
            Header x = good_header(cfg, sizeof(transport::ChunkBody) + kPiece);
            x.type = static_cast<uint16_t>(MsgType::kChunk);
            auto m = message(x, x.payload_len);
            const transport::ChunkBody k{kId, offset};
            std::memcpy(m.data() + sizeof x, &k, sizeof k);
            std::memset(m.data() + sizeof x + sizeof k, fill, kPiece);
            return m;
          };
          for (const auto &m : {announce, chunk(0, 'a'), chunk(0, 'x'), chunk(kPiece, 'b')})
            transport::testing::send_raw(1, m.data(), m.size());
        } else {
          transport::progress_until([] { return g_pings.load() > 0; });
          std::lock_guard<std::mutex> g(g_whole_mu);
          EXPECT_EQ(std::string(reinterpret_cast<const char *>(g_whole.data()), g_whole.size()),
                    "aaaaaaaabbbbbbbb");
          EXPECT_EQ(transport::rejected(Result::kBadBody), 1u);
        }
        c.barrier();
        transport::close();
      },
      child_failed);
  expect_warned(r, "dropped a CHUNK message of 72 bytes from rank 0: inconsistent transport message body");
}

// A split message (kSplit: the header alone, then its payload as the sender's next
// message) whose payload is not the length its header declares is dropped, and so is a
// payload no split header announced; the next message is read as a message again.
// Without FI_SOURCE the receiver cannot tell whose next message the payload is: it drops
// the split header itself, and the payloads, read as messages, are too short for one.
TEST_P(Malformed, ASplitPayloadOfTheWrongLengthIsDroppedAndTheNextGoodMessageArrives) {
  JobOptions o = capturing(GetParam(), 2);
  g_pings = 0;
  JobResult r = run_job(
      o,
      [](Child &c) {
        transport::on(MsgType::kPing, on_ping);
        c.start();
        if (c.rank() == 0) {
          Header split = good_header(c.config(), 8);
          split.flags = transport::kSplit;
          const std::vector<std::byte> header = message(split, 0), longer(12, std::byte{7}), stray(8, std::byte{7});
          for (const auto &m : {header, longer, stray}) transport::testing::send_raw(1, m.data(), m.size());
          uint64_t v = 42;
          transport::send(1, MsgType::kPing, &v, sizeof v);
        } else {
          transport::progress_until([] { return g_pings.load() > 0; });
          EXPECT_EQ(g_pings.load(), 1);
          EXPECT_EQ(g_ping_value.load(), 42u);
          c.report(transport::reports_source());
          if (transport::reports_source()) {
            EXPECT_EQ(transport::rejected(), 2u);
            EXPECT_EQ(transport::rejected(Result::kLengthMismatch), 1u);
            EXPECT_EQ(transport::rejected(Result::kShort), 1u);  // the stray payload
          } else {
            EXPECT_EQ(transport::rejected(), 3u);
            EXPECT_EQ(transport::rejected(Result::kBadBody), 1u);  // the split header
            EXPECT_EQ(transport::rejected(Result::kShort), 2u);    // both payloads
          }
        }
        c.barrier();
        transport::close();
      },
      child_failed);
  EXPECT_TRUE(r.all_exited_zero()) << r.err[0] << r.err[1];
  ASSERT_EQ(r.reports.size(), 1u);
  const bool knows = r.reports[0] != 0;
  const std::string &log = r.err[1];
  if (knows) {
    // The split header is what is reported: the PING message's own 48 bytes.
    EXPECT_NE(log.find("dropped a PING message of 48 bytes from rank 0: declared length differs from the bytes "
                       "received"),
              std::string::npos)
        << log;
  } else {
    EXPECT_NE(log.find("dropped a PING message of 48 bytes from rank 0: inconsistent transport message body"),
              std::string::npos)
        << log;
  }
  EXPECT_NE(log.find(std::string("dropped a message of 8 bytes from ") + (knows ? "rank 0" : "an unknown rank") +
                     ": shorter than a message header"),
            std::string::npos)
      << log;
}

// A split message of a type this rank has no handler for is dropped whole: its payload,
// the sender's next message, must not be read as a message of its own (here it looks
// like one, a PING the sender never sent as such).
TEST_P(Malformed, ASplitMessageWithNoHandlerIsDroppedWithItsPayload) {
  JobOptions o = capturing(GetParam(), 2);
  g_pings = 0;
  JobResult r = run_job(
      o,
      [](Child &c) {
        transport::on(MsgType::kPing, on_ping);
        c.start();
        if (c.rank() == 0) {
          Header ping = good_header(c.config(), 8);
          std::vector<std::byte> inner = message(ping, 8);
          const uint64_t v = 5;
          std::memcpy(inner.data() + sizeof ping, &v, sizeof v);
          Header split = good_header(c.config(), inner.size());
          split.type = static_cast<uint16_t>(MsgType::kData);  // rank 1 handles no DATA
          split.flags = transport::kSplit;
          const std::vector<std::byte> header = message(split, 0);
          for (const auto &m : {header, inner}) transport::testing::send_raw(1, m.data(), m.size());
          const uint64_t w = 6;
          transport::send(1, MsgType::kPing, &w, sizeof w);
        } else {
          transport::progress_until([] { return g_ping_value.load() == 6; });
          // Without FI_SOURCE no split header can be matched to its payload (the
          // transport then sends none); the payload is read as the message it looks like.
          if (transport::reports_source()) {
            EXPECT_EQ(g_pings.load(), 1);
            EXPECT_EQ(transport::rejected(), 1u);
            EXPECT_EQ(transport::rejected(Result::kNoHandler), 1u);
          }
        }
        c.barrier();
        transport::close();
      },
      child_failed);
  expect_warned(r, "dropped a DATA message of 48 bytes from rank 0: no handler registered for its type");
}

TEST_P(Malformed, ASenderClaimingAnotherRankIsCaughtWhereTheProviderKnowsTheSource) {
  JobOptions o = capturing(GetParam(), 3);
  JobResult r = run_job(
      o,
      [](Child &c) {
        transport::on(MsgType::kPing, on_ping);
        c.start();
        if (c.rank() == 0) {
          Header h = good_header(c.config(), 8);
          h.sender = 2;  // rank 0 pretends to be rank 2
          auto m = message(h, 8);
          uint64_t v = 5;
          std::memcpy(m.data() + sizeof h, &v, 8);
          transport::testing::send_raw(1, m.data(), m.size());
          v = 6;
          transport::send(1, MsgType::kPing, &v, sizeof v);
        } else if (c.rank() == 1) {
          bool knows = transport::reports_source();
          int expect = knows ? 1 : 2;
          transport::progress_until([&] { return g_pings.load() >= expect; });
          EXPECT_EQ(g_ping_value.load(), 6u);
          EXPECT_EQ(transport::rejected(Result::kSenderMismatch), knows ? 1u : 0u);
        }
        c.barrier();
        transport::close();
      },
      child_failed);
  EXPECT_TRUE(r.all_exited_zero()) << r.err[1];
}

INSTANTIATE_TEST_SUITE_P(Transport, Malformed, ::testing::Values("shm", "tcp;ofi_rxm"),
                         [](const auto &info) { return pretty(info.param); });

// ---- Errors ---------------------------------------------------------------------------

TEST(TransportErrors, AnUnknownProviderStopsWithTheCallTheProviderAndTheRank) {
  JobOptions o;
  o.nprocs = 1;
  o.capture_stderr = true;
  o.cfg.provider = "verbs;ofi_rxm";
  JobResult r = run_job(o, [](Child &) {
    transport::Config cfg;
    cfg.rank = 1;
    cfg.nprocs = 2;
    cfg.provider = "verbs;ofi_rxm";
    transport::open(cfg);
  });
  ASSERT_TRUE(WIFEXITED(r.status[0]));
  EXPECT_EQ(WEXITSTATUS(r.status[0]), 1);
  EXPECT_EQ(r.err[0],
            "midway: fi_getinfo: no provider 'verbs;ofi_rxm' on this host: No data available "
            "(rank 1)\n");
}

// ---- Placement: the bulk lands where the receiver says, the head goes to the handler ----

constexpr size_t kPlacedBulk = 8 << 20;
std::byte *g_landing;
std::atomic<int> g_placed{0};
std::atomic<int> g_placed_bad{0};

// The head names the offset in the landing zone and the bulk's size; the bulk lands in
// two pieces to exercise the scatter path.
struct PlacedHead {
  uint64_t offset, size, seq;
};

void place_data(const Header &h, std::span<const std::byte> head, std::vector<iovec> &where) {
  PlacedHead ph;
  std::memcpy(&ph, head.data(), sizeof ph);
  size_t half = h.bulk_len / 2;
  where.push_back({g_landing + ph.offset, half});
  where.push_back({g_landing + ph.offset + half, h.bulk_len - half});
}

void on_placed(const Header &h, std::span<const std::byte> head) {
  PlacedHead ph;
  if (head.size() != sizeof ph) {
    g_placed_bad.fetch_add(1);
    return;
  }
  std::memcpy(&ph, head.data(), sizeof ph);
  if (ph.size != h.bulk_len || ph.seq != static_cast<uint64_t>(g_placed.load()) ||
      !check(g_landing + ph.offset, ph.size, seed_of(h.sender, ph.size)))
    g_placed_bad.fetch_add(1);
  g_placed.fetch_add(1);
}

class Placement : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(Placement, BulkLandsInPlaceAndMessagesKeepTheirOrder) {
  JobOptions o;
  o.nprocs = 2;
  o.cfg.provider = std::get<0>(GetParam());
  o.cfg.use_rma = std::get<1>(GetParam());
  o.cfg.all_local = true;
  JobResult r = run_job(
      o,
      [](Child &c) {
        g_landing = static_cast<std::byte *>(std::aligned_alloc(4096, 2 * kPlacedBulk));
        std::memset(g_landing, 0, 2 * kPlacedBulk);
        transport::on(MsgType::kData, on_placed, place_data);
        c.start();
        // Small and large messages interleaved: each must be handled in the order sent,
        // even though a large one's handler waits for its bulk.
        const size_t sizes[] = {64, kPlacedBulk, 100, 3000, kPlacedBulk / 2, 8};
        if (c.rank() == 0) {
          auto src = std::make_unique<std::byte[]>(kPlacedBulk);
          uint64_t off = 0, seq = 0;
          for (size_t s : sizes) {
            fill(src.get(), s, seed_of(0, s));
            PlacedHead ph{off, s, seq++};
            iovec head{&ph, sizeof ph};
            iovec bulk{src.get(), s};
            transport::send(1, MsgType::kData, {&head, 1}, {&bulk, 1});
            off += s;
          }
        } else {
          transport::progress_until([] { return g_placed.load() == 6; });
          EXPECT_EQ(g_placed_bad.load(), 0);
        }
        c.barrier();
        transport::close();
      },
      child_failed);
  EXPECT_TRUE(r.all_exited_zero());
}

// A test's name from its (provider, RMA or not) parameter.
std::string provider_and_mode(const ::testing::TestParamInfo<std::tuple<std::string, bool>> &info) {
  return pretty(std::get<0>(info.param)) + (std::get<1>(info.param) ? "_rma" : "_chunked");
}

INSTANTIATE_TEST_SUITE_P(Transport, Placement,
                         ::testing::Combine(::testing::Values("shm", "tcp;ofi_rxm"),
                                            ::testing::Bool()),
                         provider_and_mode);

// ---- Handlers that send large replies (nested progress) --------------------------------

constexpr size_t kReply = 4 << 20;
std::atomic<int> g_pongs{0};
std::unique_ptr<std::byte[]> g_reply;

void on_ping_reply_big(const Header &h, std::span<const std::byte>) {
  // send() from a handler waits for the peer to read the bulk: the peer is doing the
  // same at the same moment, so each must serve the other's read while it waits.
  transport::send(h.sender, MsgType::kPong, g_reply.get(), kReply);
}

void on_pong(const Header &h, std::span<const std::byte> p) {
  if (p.size() == kReply && check(p.data(), p.size(), seed_of(h.sender, kReply))) g_pongs.fetch_add(1);
}

class NestedSend : public ::testing::TestWithParam<std::string> {};

TEST_P(NestedSend, TwoHandlersSendingLargeRepliesToEachOtherDoNotDeadlock) {
  JobOptions o;
  o.nprocs = 2;
  o.cfg.provider = GetParam();
  o.cfg.all_local = true;
  o.timeout_s = 30;
  JobResult r = run_job(
      o,
      [](Child &c) {
        g_reply = std::make_unique<std::byte[]>(kReply);
        fill(g_reply.get(), kReply, seed_of(c.rank(), kReply));
        transport::on(MsgType::kPing, on_ping_reply_big);
        transport::on(MsgType::kPong, on_pong);
        c.start();
        c.barrier();
        for (int i = 0; i < 3; ++i) transport::send(1 - c.rank(), MsgType::kPing, nullptr, 0);
        // Not progressing here: the service thread runs the handlers.
        while (g_pongs.load() < 3) usleep(200);
        c.barrier();
        transport::close();
      },
      child_failed);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.all_exited_zero());
}

INSTANTIATE_TEST_SUITE_P(Transport, NestedSend, ::testing::Values("shm", "tcp;ofi_rxm"),
                         [](const auto &info) { return pretty(info.param); });

// ---- Reused buffers: large, small, large again -----------------------------------------
//
// A sender's staging copy (a bulk of pieces averaging under 16 KiB, all of it; of more
// than kMaxSegments larger pieces, those past the 63rd: both sizes are below) and a receiver's
// head ‖ bulk buffer (a type with no placer) are blocks kept for reuse (core/blocks.hpp).
// A reused block is larger than what it carries and holds the previous message's bytes:
// each message must still arrive with its own bytes and its own length. The content
// differs from message to message (the seed counts them), so stale bytes would show.

constexpr size_t kReuseSizes[] = {3 << 20, 20 << 10, 5 << 20, (70 << 10) + 3, 3 << 20, 40 << 20, 1 << 20};
constexpr int kReuseCount = sizeof kReuseSizes / sizeof kReuseSizes[0];
constexpr size_t kReusePieces = 200;  // over kMaxSegments: some or all go through a staging copy
std::atomic<int> g_reused{0}, g_reused_bad{0};

void on_reused(const Header &, std::span<const std::byte> p) {
  const int k = g_reused.load() % kReuseCount;
  if (p.size() != kReuseSizes[k] || !check(p.data(), p.size(), seed_of(g_reused.load(), p.size())))
    g_reused_bad.fetch_add(1);
  g_reused.fetch_add(1);
}

// The bulk of `size` bytes at `buf`, in kReusePieces pieces.
std::vector<iovec> in_pieces(std::byte *buf, size_t size) {
  std::vector<iovec> v;
  const size_t piece = size / kReusePieces;
  for (size_t i = 0; i < kReusePieces; ++i)
    v.push_back({buf + i * piece, i + 1 == kReusePieces ? size - i * piece : piece});
  return v;
}

class ReusedBuffers : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(ReusedBuffers, LargeSmallLargeBulksEachArriveWithTheirOwnBytes) {
  JobOptions o;
  o.nprocs = 2;
  o.cfg.provider = std::get<0>(GetParam());
  o.cfg.use_rma = std::get<1>(GetParam());
  o.cfg.all_local = true;
  o.timeout_s = 60;
  JobResult r = run_job(
      o,
      [](Child &c) {
        transport::on(MsgType::kData, on_reused);
        c.start();
        if (c.rank() == 0) {
          // Twice through the sizes: each send waiting for its reads, then all deferred
          // (their staging blocks in use at once until the reads are done).
          std::vector<std::unique_ptr<std::byte[]>> bufs;
          int n = 0;
          for (transport::Bulk keep : {transport::Bulk::kWait, transport::Bulk::kDeferred})
            for (size_t size : kReuseSizes) {
              bufs.push_back(std::make_unique<std::byte[]>(size));
              fill(bufs.back().get(), size, seed_of(n++, size));
              std::vector<iovec> bulk = in_pieces(bufs.back().get(), size);
              transport::send(1, MsgType::kData, {}, bulk, 0, keep);
            }
          transport::wait_sends();
        } else {
          transport::progress_until([] { return g_reused.load() == 2 * kReuseCount; });
          EXPECT_EQ(g_reused_bad.load(), 0);
        }
        c.barrier();
        transport::close();
      },
      child_failed);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.all_exited_zero());
}

INSTANTIATE_TEST_SUITE_P(Transport, ReusedBuffers,
                         ::testing::Combine(::testing::Values("shm", "tcp;ofi_rxm"),
                                            ::testing::Bool()),
                         provider_and_mode);

// ---- Deferred sends: the owner posts, the readers read when they can -------------------

constexpr size_t kDeferredBulk = 1 << 20;
std::atomic<int> g_deferred_ok{0}, g_deferred_bad{0};

void on_deferred(const Header &h, std::span<const std::byte> p) {
  if (p.size() == kDeferredBulk && check(p.data(), p.size(), seed_of(h.sender, kDeferredBulk)))
    g_deferred_ok.fetch_add(1);
  else
    g_deferred_bad.fetch_add(1);
}

class Deferred : public ::testing::TestWithParam<std::string> {};

// Rank 0 sends one buffer to every other rank, three times, with Bulk::kDeferred, as a
// lock's owner grants bound data to several acquirers: send() returns before the reads,
// wait_sends() only after all of them, and the buffer may change after that without the
// receivers seeing it. Then more deferred sends are left for close() to wait for.
TEST_P(Deferred, ReadersGetTheDataAsSentAndWaitSendsWaitsForEveryRead) {
  JobOptions o;
  o.nprocs = 3;
  o.cfg.provider = GetParam();
  o.cfg.all_local = true;
  o.timeout_s = 60;
  JobResult r = run_job(
      o,
      [](Child &c) {
        transport::on(MsgType::kData, on_deferred);
        c.start();
        const int n = c.config().nprocs;
        if (c.rank() == 0) {
          auto buf = std::make_unique<std::byte[]>(kDeferredBulk);
          for (int round = 0; round < 3; ++round) {
            fill(buf.get(), kDeferredBulk, seed_of(0, kDeferredBulk));
            iovec v{buf.get(), kDeferredBulk};
            for (int d = 1; d < n; ++d)
              transport::send(d, MsgType::kData, {}, {&v, 1}, 0, transport::Bulk::kDeferred);
            transport::wait_sends();
            std::memset(buf.get(), 0xEE, kDeferredBulk);  // read already: nobody sees this
          }
          fill(buf.get(), kDeferredBulk, seed_of(0, kDeferredBulk));
          iovec v{buf.get(), kDeferredBulk};
          for (int d = 1; d < n; ++d)
            transport::send(d, MsgType::kData, {}, {&v, 1}, 0, transport::Bulk::kDeferred);
          c.barrier();
          transport::close();  // waits for the last reads before the buffer goes
          return;
        }
        transport::progress_until([] { return g_deferred_ok.load() + g_deferred_bad.load() == 4; });
        EXPECT_EQ(g_deferred_ok.load(), 4) << "rank " << c.rank();
        EXPECT_EQ(g_deferred_bad.load(), 0) << "rank " << c.rank();
        c.barrier();
        transport::close();
      },
      child_failed);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.all_exited_zero());
}

INSTANTIATE_TEST_SUITE_P(Transport, Deferred, ::testing::Values("shm", "tcp;ofi_rxm"),
                         [](const auto &info) { return pretty(info.param); });

// ---- Wake-ups: a sleeping thread is woken by what it waits for, not by its timeout ------
//
// An idle progress thread blocks with a timeout (100 ms; 1 s for a parked service thread),
// so a lost wake-up shows as a delay of up to that. These tests time what such losses
// used to delay, with thresholds that a loaded 2-core machine does not reach by itself.

constexpr double kLostWakeup = 0.05;  // seconds: half of kIdleTimeoutMs
// A parked service thread's timeout is 1 s; 0.4 s stays clear of the delays a loaded
// 2-core machine gives a thread that was woken in time (up to ~190 ms seen).
constexpr double kLostParked = 0.4;

double now_s() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

std::atomic<int> g_wake_pongs{0};

void on_ping_pong_back(const Header &h, std::span<const std::byte>) {
  g_pings.fetch_add(1);
  transport::send(h.sender, MsgType::kPong, nullptr, 0);
}

void on_wake_pong(const Header &, std::span<const std::byte>) { g_wake_pongs.fetch_add(1); }

class Wakeups : public ::testing::TestWithParam<std::string> {};

// The first message between two ranks, to a rank asleep in progress_until. shm connects a
// pair at its first send, which the provider refuses until the peer has polled: the peer
// must be rung for it (the send never got as far as ringing it), or it slept until its
// timeout. Connections are left lazy here (Config::eager_connect = false) to time exactly that.
TEST_P(Wakeups, AFirstMessageReachesAPeerAsleepInProgressUntil) {
  JobOptions o;
  o.nprocs = 4;
  o.cfg.provider = GetParam();
  o.cfg.all_local = true;
  o.cfg.eager_connect = false;
  JobResult r = run_job(
      o,
      [](Child &c) {
        transport::on(MsgType::kPing, on_ping_pong_back);
        transport::on(MsgType::kPong, on_wake_pong);
        c.start();
        for (int d = 1; d < c.config().nprocs; ++d) {
          // Through the parent: no message has crossed the fabric between 0 and d yet.
          // Rank d goes to sleep from here on, and its blocks time out 100 ms later; so
          // rank 0 contacts it 30 ms later, when it is asleep with 70 ms to go.
          c.barrier();
          if (c.rank() == d) {
            transport::progress_until([] { return g_pings.load() >= 1; });
          } else if (c.rank() == 0) {
            usleep(30'000);
            const double t0 = now_s();
            transport::send(d, MsgType::kPing, nullptr, 0);
            transport::progress_until([&] { return g_wake_pongs.load() >= d; });
            c.report(now_s() - t0);
          }
        }
        c.barrier();
        transport::close();
      },
      child_failed);
  ASSERT_TRUE(r.all_exited_zero());
  ASSERT_EQ(r.reports.size(), 3u);
  std::vector<double> t = r.reports;
  for (double x : t)
    std::printf("first contact with a sleeping rank on %s: %.3f ms\n", GetParam().c_str(), x * 1e3);
  // The middle one: a busy machine may delay one wake-up; a lost one delays them all.
  std::sort(t.begin(), t.end());
  EXPECT_LT(t[1], kLostWakeup);
}

constexpr int kHandbacks = 300;
constexpr int kBurst = 8;        // pongs sent at once for each ping, then one more a little later
constexpr int kSlowAllowed = 2;  // answers slower than kLostWakeup that a busy machine excuses

double spin_until(double t) {
  double n;
  while ((n = now_s()) < t) {
  }
  return n;
}

void on_ping_pong_burst(const Header &h, std::span<const std::byte>) {
  g_pings.fetch_add(1);
  for (int i = 0; i < kBurst; ++i) transport::send(h.sender, MsgType::kPong, nullptr, 0);
  spin_until(now_s() + 300e-6);  // the last pong comes after the pinger left progress
  transport::send(h.sender, MsgType::kPong, nullptr, 0);
}

// Messages that arrive while the application thread hands the CQ back to the service
// thread, then one that arrives after it left. Rank 0 sends each ping from as_handler
// (the application thread takes the progress role, sends, lingers a few microseconds,
// hands back) and then waits without progressing; rank 1 answers with a burst of pongs,
// which rank 0's hand-back drains while they ring its doorbell, and a last pong 300 us
// later, which only rank 0's service thread can take. A ring in the middle of the
// hand-back used to wake the service thread while the application thread still counted
// as progressing: it parked again with the doorbell disarmed, and the last pong waited
// for the park's 1 s timeout.
TEST_P(Wakeups, MessagesArrivingAroundTheHandBackAreHandledByTheServiceThread) {
  JobOptions o;
  o.nprocs = 2;
  o.cfg.provider = GetParam();
  o.cfg.all_local = true;
  o.timeout_s = 120;
  JobResult r = run_job(
      o,
      [](Child &c) {
        transport::on(MsgType::kPing, on_ping_pong_burst);
        transport::on(MsgType::kPong, on_wake_pong);
        c.start();
        c.barrier();
        if (c.rank() == 0) {
          // Connected first (a first message on tcp waits for the connection, ~10 ms).
          transport::send(1, MsgType::kPing, nullptr, 0);
          transport::progress_until([] { return g_wake_pongs.load() == kBurst + 1; });
          double worst = 0;
          int slow = 0;
          for (int i = 0; i < kHandbacks; ++i) {
            const int want = g_wake_pongs.load() + kBurst + 1;
            const double t0 = now_s();
            // Lingering 0-90 us in the role, so that the burst meets the hand-back at
            // every offset.
            const double linger = 10e-6 * (i % 10);
            // Every other ping, the service thread has gone to sleep first (its spin ends
            // after 50 us of CPU), so that the application thread takes the CQ from a
            // sleeping service thread as well as from a spinning one.
            if (i % 2) usleep(1000);
            transport::as_handler([&] {
              transport::send(1, MsgType::kPing, nullptr, 0);
              spin_until(now_s() + linger);
            });
            while (g_wake_pongs.load() < want) {
              if (now_s() - t0 > 2.0) break;  // lost for good: fail below, not at the timeout
              usleep(20);
            }
            const double t = now_s() - t0;
            worst = std::max(worst, t);
            slow += t > kLostWakeup;
            if (t > kLostParked || slow == kSlowAllowed + 1) break;  // each costs up to 1 s
          }
          c.report(worst);
          c.report(slow);
        }
        // Rank 1's service thread answers the pings while its application thread waits here.
        c.barrier();
        transport::close();
      },
      child_failed);
  ASSERT_TRUE(r.all_exited_zero());
  ASSERT_EQ(r.reports.size(), 2u);
  std::printf("%d pings sent from as_handler on %s: slowest answer %.3f ms, %d over %.0f ms\n",
              kHandbacks, GetParam().c_str(), r.reports[0] * 1e3, static_cast<int>(r.reports[1]),
              kLostWakeup * 1e3);
  // A parked service thread left unwoken shows as a delay near 1 s; an idle block left
  // unwoken (tcp: a service thread asleep in epoll with the CQ's fd disarmed) as ~100 ms,
  // every few dozen pings. A loaded machine may delay one answer past kLostWakeup.
  EXPECT_LT(r.reports[0], kLostParked);
  EXPECT_LE(r.reports[1], kSlowAllowed);
}

INSTANTIATE_TEST_SUITE_P(Transport, Wakeups, ::testing::Values("shm", "tcp;ofi_rxm"),
                         [](const auto &info) { return pretty(info.param); });

// ---- Shared lines: words instead of messages, and the ring that goes with them ---------

class SharedLines : public ::testing::TestWithParam<std::string> {};

// Ranks 0 and 1 pass a count back and forth through their lines (each waits in
// wait_shared for the other's store, then stores and rings): a ping-pong with no message.
// Before each round rank 0 sleeps long enough for rank 1 to fall asleep on its
// doorbell (its spin budget is 50 us of CPU), so every round's answer must come from
// ring_waiter waking it, not from its timeout. Without a shared page (tcp) there are no
// lines.
TEST_P(SharedLines, AStoreAndRingWakeAPeerAsleepInWaitShared) {
  JobOptions o;
  o.nprocs = 3;  // rank 2 only looks on: its line stays zero
  o.cfg.provider = GetParam();
  o.cfg.all_local = true;
  JobResult r = run_job(
      o,
      [](Child &c) {
        c.start();
        if (transport::wait_mode() != WaitMode::kDoorbell) {
          EXPECT_EQ(transport::shared_line(c.rank()), nullptr);
          c.barrier();
          transport::close();
          return;
        }
        transport::SharedLine *mine = transport::shared_line(c.rank());
        ASSERT_NE(mine, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(mine) % 64, 0u);
        for (int w = 0; w < 8; ++w) EXPECT_EQ(mine->word[w].load(), 0u);  // a fresh page
        c.barrier();
        constexpr int kRounds = 6;
        if (c.rank() < 2) {
          const int peer = 1 - c.rank();
          transport::SharedLine *theirs = transport::shared_line(peer);
          for (uint64_t i = 1; i <= kRounds; ++i) {
            if (c.rank() == 0) {
              usleep(30'000);  // rank 1 is asleep by now, 70 ms before its timeout
              const double t0 = now_s();
              theirs->word[0].store(i, std::memory_order_release);
              transport::ring_waiter(peer);
              transport::wait_shared([&] { return mine->word[0].load(std::memory_order_acquire) >= i; },
                                     false);
              c.report(now_s() - t0);
            } else {
              transport::wait_shared([&] { return mine->word[0].load(std::memory_order_acquire) >= i; },
                                     false);
              theirs->word[0].store(i, std::memory_order_release);
              transport::ring_waiter(peer);
            }
          }
        }
        c.barrier();
        EXPECT_EQ(transport::shared_line(2)->word[0].load(), 0u);
        transport::close();
      },
      child_failed);
  ASSERT_TRUE(r.all_exited_zero());
  if (GetParam() != "shm") return;
  ASSERT_EQ(r.reports.size(), 6u);
  std::vector<double> t = r.reports;
  for (double x : t) std::printf("a round through shared lines, peer asleep: %.3f ms\n", x * 1e3);
  // The middle one: a busy machine may delay one wake-up; a lost one delays them all.
  std::sort(t.begin(), t.end());
  EXPECT_LT(t[t.size() / 2], kLostWakeup);
}

INSTANTIATE_TEST_SUITE_P(Transport, SharedLines, ::testing::Values("shm", "tcp;ofi_rxm"),
                         [](const auto &info) { return pretty(info.param); });

// ---- Idle ranks use no CPU ---------------------------------------------------------------

class Idle : public ::testing::TestWithParam<std::string> {};

// 8 ranks connected and idle for a second (the application asleep, then the application
// blocked in progress_until) use, all processes together, under 5% of one core.
TEST_P(Idle, EightIdleRanksUseUnderFivePercentOfACore) {
  JobOptions o;
  o.nprocs = 8;
  o.cfg.provider = GetParam();
  o.cfg.all_local = true;
  JobResult r = run_job(
      o,
      [](Child &c) {
        transport::on(MsgType::kPing, on_ping);
        c.start();
        // Warm up every connection, then go quiet.
        for (int d = 0; d < c.config().nprocs; ++d) transport::send(d, MsgType::kPing, nullptr, 0);
        transport::progress_until([&] { return g_pings.load() == c.config().nprocs; });
        c.barrier();
        usleep(100'000);  // let every rank's spin phase end
        double t0 = cpu_seconds();
        usleep(1'000'000);  // idle: the service thread alone
        double t1 = cpu_seconds();
        c.report(t1 - t0);
        c.barrier();
        // Idle in progress_until: blocked until rank 0 pings everyone a second later.
        if (c.rank() == 0) {
          usleep(1'000'000);
          for (int d = 1; d < c.config().nprocs; ++d) transport::send(d, MsgType::kPing, nullptr, 0);
          c.report(0);
        } else {
          int want = g_pings.load() + 1;
          double a = cpu_seconds();
          transport::progress_until([&] { return g_pings.load() >= want; });
          c.report(cpu_seconds() - a);
        }
        c.barrier();
        transport::close();
      },
      child_failed);
  ASSERT_TRUE(r.all_exited_zero());
  ASSERT_EQ(r.reports.size(), 16u);
  double asleep = 0, waiting = 0;
  for (size_t i = 0; i < 8; ++i) asleep += r.reports[i];
  for (size_t i = 8; i < 16; ++i) waiting += r.reports[i];
  std::printf("8 idle ranks on %s: %.1f ms CPU in 1 s asleep, %.1f ms in ~1 s blocked waiting\n",
              GetParam().c_str(), asleep * 1e3, waiting * 1e3);
  EXPECT_LT(asleep, 0.05);
  EXPECT_LT(waiting, 0.05);
}

INSTANTIATE_TEST_SUITE_P(Transport, Idle, ::testing::Values("shm", "tcp;ofi_rxm"),
                         [](const auto &info) { return pretty(info.param); });

}  // namespace
}  // namespace mw::test
