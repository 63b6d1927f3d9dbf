// Fork/join: rank 0 starts a function on every other rank and waits for it (sync/fork.hpp).
#include "sync/fork.hpp"

#include <link.h>

#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <vector>

#include "core/error.hpp"
#include "core/waits.hpp"
#include "ec/barriers.hpp"
#include "ec/protocol.hpp"
#include "ec/updates.hpp"
#include "memory/dirty.hpp"
#include "rc/pending_updates.hpp"
#include "transport/transport.hpp"

namespace mw::fork {
namespace {

using transport::MsgType;

constexpr int kCreator = 0;

struct Start {
  uint64_t fn;  // the function's address; 0: the job ends
};

std::mutex g_mu;
std::deque<uint64_t> g_starts;   // a worker's forks received and not yet run
uint64_t g_joined = 0;           // rank 0: kForkJoined received, over all forks
uint64_t g_expected = 0;         // rank 0: kForkJoined that end the outstanding fork
bool g_outstanding = false;
std::vector<timestamps::Run> g_joined_data;  // rank 0: barrier-bound data the workers sent

// Is addr inside an executable segment of a loaded object? Every rank runs the same
// program at the same addresses (memory/same_layout), so a fork's function is code here
// too; anything else would be a jump to wherever the message says.
bool is_code(uint64_t addr) {
  struct Find {
    uint64_t addr;
    bool found = false;
  } find{addr};
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        auto *f = static_cast<Find *>(data);
        for (int i = 0; i < info->dlpi_phnum; i++) {
          const ElfW(Phdr) &ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
          const uint64_t begin = info->dlpi_addr + ph.p_vaddr;
          if (f->addr >= begin && f->addr < begin + ph.p_memsz) f->found = true;
        }
        return f->found ? 1 : 0;
      },
      &find);
  return find.found;
}

void on_start(const transport::Header &h, std::span<const std::byte> payload) {
  if (h.sender != kCreator) protocol::malformed(h, "a fork from a rank other than 0");
  const Start s = protocol::read_body<Start>(h, payload);
  if (s.fn != 0 && !is_code(s.fn)) protocol::malformed(h, "a fork of an address that is not code in this program");
  std::lock_guard<std::mutex> g(g_mu);
  g_starts.push_back(s.fn);
}

void on_joined(const transport::Header &h, std::span<const std::byte> payload) {
  (void)protocol::read_body<Start>(h, payload);
  std::lock_guard<std::mutex> g(g_mu);
  if (protocol::rank() != kCreator) protocol::malformed(h, "a join at a rank other than 0");
  // One more would end a later fork's join before its workers are done.
  if (g_joined >= g_expected) protocol::malformed(h, "a join of no outstanding fork");
  g_joined++;
}

// Barrier-bound data a fork or a join carries (kForkData, ahead of the start or the
// join: a sender's messages arrive in order). A fork and a join order the creator's
// writes and the workers' as a crossing does, but no barrier is crossed: without this,
// data bound to a barrier written before a fork reached the workers only at their first
// crossing, and what a worker wrote after its last crossing never reached the creator,
// whose next crossing then took it for a write of the same phase. Placed by the placer;
// at a worker the bytes supersede its own marks, as a crossing's do. At the creator they
// are marked at the join, as if it had written them (by the application thread, whose
// own marks a handler's could race with): its next fork passes them to every worker.
void on_data(const transport::Header &h, std::span<const std::byte> head) {
  const updates::Parsed p = updates::parse(h, head, 0);
  if (protocol::rank() != kCreator) {
    if (h.sender != kCreator) protocol::malformed(h, "fork data from a rank other than 0");
    for (const updates::RunDesc &d : p.runs) dirty::clear(reinterpret_cast<void *>(d.addr), d.len);
    return;
  }
  std::lock_guard<std::mutex> g(g_mu);
  if (g_joined >= g_expected) protocol::malformed(h, "fork data of no outstanding fork");
  for (const updates::RunDesc &d : p.runs) g_joined_data.push_back({d.addr, d.len, 0});
}

// The barrier-bound bytes this rank wrote since its last crossing, to `ranks`, then out
// of its marks (they are there now; a crossing does not send them again).
void send_marked(std::span<const int> ranks) {
  const std::vector<timestamps::Run> runs = barriers::marked_runs();
  if (runs.empty()) return;
  for (int r : ranks)
    updates::send(r, MsgType::kForkData, MsgType::kForkData, 0, runs, nullptr, 0, protocol::tick());
  for (const timestamps::Run &run : runs) dirty::clear(reinterpret_cast<void *>(run.addr), run.len);
}

void start_all(uint64_t fn) {
  const Start s{fn};
  transport::as_handler([&] {
    std::vector<int> workers;
    for (int r = 0; r < protocol::nprocs(); r++)
      if (r != kCreator) workers.push_back(r);
    if (fn != 0) send_marked(workers);
    for (int r : workers) protocol::send_body(r, MsgType::kForkStart, s);
  });
}

}  // namespace

void init() {
  transport::on(MsgType::kForkStart, on_start);
  transport::on(MsgType::kForkJoined, on_joined);
  transport::on(MsgType::kForkData, on_data, updates::place);
}

void start(Function fn) {
  {
    std::lock_guard<std::mutex> g(g_mu);
    if (g_outstanding)
      fatal("mw_fork", "a fork is outstanding: call mw_join before forking again");
    g_outstanding = true;
    g_expected += static_cast<uint64_t>(protocol::nprocs() - 1);
  }
  if (protocol::nprocs() == 1) return;
  // Threads share one stdout: what the creator printed before the fork comes out before
  // what the workers print (Splash-3's FMM prints from main, then from a worker), not at
  // the creator's exit. done() does the same for the workers' output at the join.
  std::fflush(nullptr);
  pending_updates::flush();  // the creator's state reaches the workers first
  start_all(reinterpret_cast<uint64_t>(fn));
}

void join() {
  {
    std::lock_guard<std::mutex> g(g_mu);
    if (!g_outstanding) fatal("mw_join", "no fork is outstanding: call mw_fork first");
  }
  if (protocol::nprocs() > 1) {
    waits::Waiting waiting(waits::Kind::kJoin, 0, -1);
    transport::progress_until([] {
      std::lock_guard<std::mutex> g(g_mu);
      return g_joined >= g_expected;
    });
  }
  std::lock_guard<std::mutex> g(g_mu);
  g_outstanding = false;
  for (const timestamps::Run &run : g_joined_data) dirty::mark(reinterpret_cast<void *>(run.addr), run.len);
  g_joined_data.clear();
}

bool outstanding() {
  std::lock_guard<std::mutex> g(g_mu);
  return g_outstanding;
}

void end() {
  if (protocol::nprocs() > 1) start_all(0);
}

Function next() {
  {
    waits::Waiting waiting(waits::Kind::kFork, 0, kCreator);
    transport::progress_until([] {
      std::lock_guard<std::mutex> g(g_mu);
      return !g_starts.empty();
    });
  }
  std::lock_guard<std::mutex> g(g_mu);
  const uint64_t fn = g_starts.front();
  g_starts.pop_front();
  return reinterpret_cast<Function>(fn);
}

void done() {
  // Threads share one stdout: what a worker printed comes out before what rank 0 prints
  // after the join, not at the worker's exit.
  std::fflush(nullptr);
  pending_updates::flush();  // the worker's writes reach rank 0 before it hears of the join
  const Start nothing{0};
  transport::as_handler([&] {
    const int creator[] = {kCreator};
    send_marked(creator);
    protocol::send_body(kCreator, MsgType::kForkJoined, nothing);
  });
}

}  // namespace mw::fork
