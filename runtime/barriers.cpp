#include "barriers.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bindings.hpp"
#include "dirty_map.hpp"
#include "error.hpp"
#include "protocol.hpp"
#include "stats.hpp"
#include "timestamps.hpp"
#include "transport.hpp"
#include "updates.hpp"

namespace mw::barriers {
namespace {

using transport::Header;
using transport::MsgType;
using Bytes = std::span<const std::byte>;
using timestamps::Run;

constexpr int kManager = 0;

struct ArriveExtra {
  uint64_t epoch;  // which crossing of the barrier, from 1
  uint32_t final;
  uint32_t reserved;
};
struct ReleaseExtra {
  uint64_t epoch;
};

struct Barrier {
  uintptr_t addr = 0;
  Bindings bindings;
  uint64_t crossings = 0;                // by this rank
  bool waiting = false;                  // this rank waits for a release
  std::atomic<uint64_t> released{0};     // the last crossing released here
  // At the manager: the crossing being gathered.
  uint64_t open = 1;
  int arrived = 0;
  bool final = false;
  std::vector<char> seen;
  std::vector<std::pair<int, std::vector<Run>>> arrivals;
};

// Never destroyed (as all module state the service thread touches): a rank that
// exits without mw_finalize runs static destructors while the service thread still
// serves peers.
std::unordered_map<uintptr_t, std::unique_ptr<Barrier>> &g_barriers =
    *new std::unordered_map<uintptr_t, std::unique_ptr<Barrier>>;  // under protocol::mu()
std::vector<int> &g_finalized = *new std::vector<int>;  // ranks that have reached mw_finalize

int me() { return protocol::rank(); }

Barrier &get(uintptr_t addr) {
  auto &slot = g_barriers[addr];
  if (!slot) {
    slot = std::make_unique<Barrier>();
    slot->addr = addr;
    slot->seen.assign(static_cast<size_t>(protocol::nprocs()), 0);
  }
  return *slot;
}

const char *call_of(bool final) { return final ? "mw_barrier_final" : "mw_barrier"; }

std::string ranks_that(const Barrier &k, bool arrived) {
  std::string s;
  for (int r = 0; r < protocol::nprocs(); ++r)
    if ((k.seen[static_cast<size_t>(r)] != 0) == arrived) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

// A rank has reached mw_finalize: any barrier it has not crossed can never complete.
void check_finalized(const char *call, const Barrier &k) {
  for (int f : g_finalized) {
    if (me() == kManager && k.arrived > 0 && !k.seen[static_cast<size_t>(f)])
      fatal(call,
            "barrier %p can never complete: rank(s) %s reached it, but rank %d has reached "
            "mw_finalize without crossing it (every rank must cross a barrier as often)",
            reinterpret_cast<void *>(k.addr), ranks_that(k, true).c_str(), f);
    // Another waiting rank cannot tell a rank that never crossed from one whose release
    // is in flight, except for the manager, which releases before it can finalize.
    if (f == kManager && me() != kManager && k.waiting &&
        k.released.load(std::memory_order_relaxed) < k.crossings)
      fatal(call,
            "barrier %p can never complete: this rank waits at it, but rank %d has reached "
            "mw_finalize without crossing it (every rank must cross a barrier as often)",
            reinterpret_cast<void *>(k.addr), f);
  }
}

// The union of the runs of every arrival but rank r's, in address order.
std::vector<Run> lacking(const Barrier &k, int r) {
  std::vector<Run> all;
  for (const auto &[rank, runs] : k.arrivals)
    if (rank != r) all.insert(all.end(), runs.begin(), runs.end());
  std::sort(all.begin(), all.end(), [](const Run &a, const Run &b) { return a.addr < b.addr; });
  std::vector<Run> out;
  for (const Run &x : all) {
    if (!out.empty() && x.addr <= out.back().addr + out.back().len) {
      uintptr_t end = std::max(out.back().addr + out.back().len, x.addr + x.len);
      out.back().len = end - out.back().addr;
    } else {
      out.push_back(x);
    }
  }
  return out;
}

void complete(Barrier &k) {
  const uint64_t epoch = k.open;
  if (!k.final) {
    ReleaseExtra ex{epoch};
    for (int r = 0; r < protocol::nprocs(); ++r) {
      if (r == kManager) continue;
      std::vector<Run> runs = lacking(k, r);
      updates::send(r, MsgType::kBarrierData, MsgType::kBarrierRelease, k.addr, runs, &ex,
                    sizeof ex, protocol::tick());
    }
  }
  k.open++;
  k.arrived = 0;
  std::fill(k.seen.begin(), k.seen.end(), 0);
  k.arrivals.clear();
  k.released.store(epoch, std::memory_order_release);  // the manager's own crossing
}

void arrive(Barrier &k, int rank, uint64_t epoch, bool final, std::vector<Run> runs) {
  const char *call = call_of(final);
  if (epoch != k.open)
    fatal(call, "barrier %p: rank %d arrived for its crossing %llu while crossing %llu is open",
          reinterpret_cast<void *>(k.addr), rank, static_cast<unsigned long long>(epoch),
          static_cast<unsigned long long>(k.open));
  if (k.arrived == 0) {
    k.final = final;
  } else if (k.final != final) {
    fatal(call,
          "barrier %p: rank %d crossed it with %s while rank(s) %s crossed it with %s (every "
          "rank must call the same one)",
          reinterpret_cast<void *>(k.addr), rank, call_of(final), ranks_that(k, true).c_str(),
          call_of(k.final));
  }
  k.seen[static_cast<size_t>(rank)] = 1;
  k.arrived++;
  k.arrivals.emplace_back(rank, std::move(runs));
  check_finalized(call, k);
  if (k.arrived == protocol::nprocs()) complete(k);
}

void on_arrive(const Header &h, Bytes head) {
  updates::Parsed p = updates::parse(h, head, sizeof(ArriveExtra));
  ArriveExtra ex;
  std::memcpy(&ex, p.extra.data(), sizeof ex);
  std::vector<Run> runs;
  for (const updates::RunDesc &d : p.runs) runs.push_back({d.addr, d.len, 0});
  std::lock_guard<std::mutex> g(protocol::mu());
  protocol::observe(h.clock);
  if (me() != kManager)
    protocol::malformed(h, "this rank manages no barrier");
  Barrier &k = get(p.object);
  if (k.seen[static_cast<size_t>(h.sender)])
    protocol::malformed(h, "it arrived twice");
  arrive(k, h.sender, ex.epoch, ex.final != 0, std::move(runs));
}

// Updates in place (the placer put them there): this rank's own marks on those bytes
// are superseded.
void on_data(const Header &h, Bytes head) {
  updates::Parsed p = updates::parse(h, head, 0);
  for (const updates::RunDesc &d : p.runs) dirty::clear(reinterpret_cast<void *>(d.addr), d.len);
}

void on_release(const Header &h, Bytes head) {
  updates::Parsed p = updates::parse(h, head, sizeof(ReleaseExtra));
  ReleaseExtra ex;
  std::memcpy(&ex, p.extra.data(), sizeof ex);
  for (const updates::RunDesc &d : p.runs) dirty::clear(reinterpret_cast<void *>(d.addr), d.len);
  std::lock_guard<std::mutex> g(protocol::mu());
  protocol::observe(h.clock);
  Barrier &k = get(p.object);
  if (ex.epoch != k.crossings || !k.waiting)
    protocol::malformed(h, "a crossing this rank is not in");
  k.released.store(ex.epoch, std::memory_order_release);
}

void on_finalizing(const Header &h, Bytes) {
  std::lock_guard<std::mutex> g(protocol::mu());
  g_finalized.push_back(h.sender);
  for (auto &[addr, k] : g_barriers) check_finalized("mw_barrier", *k);
}

Barrier *record_of(mw_barrier_t *b) {
  std::lock_guard<std::mutex> g(protocol::mu());
  return &get(reinterpret_cast<uintptr_t>(b));
}

}  // namespace

void init() {
  transport::on(MsgType::kBarrierArrive, on_arrive, updates::place);
  transport::on(MsgType::kBarrierData, on_data, updates::place);
  transport::on(MsgType::kBarrierRelease, on_release, updates::place);
  transport::on(MsgType::kFinalizing, on_finalizing);
}

void cross(mw_barrier_t *b, bool final) {
  const char *call = call_of(final);
  protocol::check_object(call, "barrier", b, sizeof *b);
  Barrier *k = record_of(b);
  stats::ScopedWait wait(stats::Wait::Barrier);
  uint64_t epoch = 0;
  transport::as_handler([&] {
    std::lock_guard<std::mutex> g(protocol::mu());
    epoch = ++k->crossings;
    k->waiting = !final || me() == kManager;
    check_finalized(call, *k);
    // This rank's updates: exactly the bytes it wrote since it last crossed.
    std::vector<Run> runs;
    // Under --model=rc/pc bindings ship nothing (the marks are pending updates).
    if (protocol::model() == protocol::Model::kEntry)
      for (const Range &r : k->bindings.ranges())
        dirty::for_each_run(r.addr, r.len, [&](uintptr_t p, size_t n) { runs.push_back({p, n, 0}); });
    for (const Run &r : runs) dirty::clear(reinterpret_cast<void *>(r.addr), r.len);
    if (me() == kManager) {
      arrive(*k, me(), epoch, final, std::move(runs));
    } else {
      ArriveExtra ex{epoch, final ? 1u : 0u, 0};
      updates::send(kManager, MsgType::kBarrierData, MsgType::kBarrierArrive, k->addr, runs, &ex,
                    sizeof ex, protocol::tick());
    }
  });
  stats::barrier_crossed();
  if (k->waiting) {
    if (k->released.load(std::memory_order_acquire) < epoch)
      transport::progress_until(
          [k, epoch] { return k->released.load(std::memory_order_acquire) >= epoch; });
    std::lock_guard<std::mutex> g(protocol::mu());
    k->waiting = false;
  }
}

void bind(mw_barrier_t *b, const void *addr, size_t len) {
  protocol::check_object("mw_barrier_bind", "barrier", b, sizeof *b);
  protocol::check_range("mw_barrier_bind", "barrier", b, addr, len);
  Barrier *k = record_of(b);
  std::lock_guard<std::mutex> g(protocol::mu());
  k->bindings.add(reinterpret_cast<uintptr_t>(addr), len);
}

Bindings bound_in(uintptr_t a, uintptr_t b) {
  std::lock_guard<std::mutex> g(protocol::mu());
  Bindings out;
  for (const auto &[addr, k] : g_barriers)
    for (const Range &r : k->bindings.ranges())
      if (r.addr < b && r.end() > a) out.add(std::max(r.addr, a), std::min(r.end(), b) - std::max(r.addr, a));
  return out;
}

void finalize() {
  if (protocol::nprocs() == 1) return;
  transport::as_handler([] {
    std::lock_guard<std::mutex> g(protocol::mu());
    for (auto &[addr, k] : g_barriers)
      if (me() == kManager && k->arrived > 0 && !k->seen[kManager])
        fatal("mw_finalize",
              "barrier %p was reached by rank(s) %s, but this rank reached mw_finalize without "
              "crossing it (every rank must cross a barrier as often)",
              reinterpret_cast<void *>(addr), ranks_that(*k, true).c_str());
    for (int r = 0; r < protocol::nprocs(); ++r)
      if (r != me()) transport::send(r, MsgType::kFinalizing, nullptr, 0, protocol::tick());
  });
}

}  // namespace mw::barriers
