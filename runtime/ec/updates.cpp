#include "ec/updates.hpp"

#include <sys/uio.h>

#include <cstring>
#include <string>

#include "core/blocks.hpp"
#include "ec/protocol.hpp"
#include "transport/transport.hpp"
#include "memory/window.hpp"

namespace mw::updates {

using transport::Header;
using transport::MsgType;

namespace {

// A run up to this long travels copied, packed with others into eager messages; a longer
// one is read by RMA where it lies. On shm each RMA read is a process_vm_readv, which costs
// about as much for 64 bytes as for 64 KiB, so many scattered small runs read one by one
// were far slower than copied (docs/PERFORMANCE.md, "Figures behind the code").
constexpr size_t kCopyMax = 2048;

// One message carrying `runs` (and `extra`, if any) as head and bulk.
void send_one(int dest, MsgType type, uintptr_t object, std::span<const timestamps::Run> runs,
              std::span<const std::byte *const> from, const void *extra, size_t extra_len,
              uint64_t clock, transport::Bulk keep) {
  Head hd{object, static_cast<uint32_t>(runs.size()), static_cast<uint32_t>(extra_len)};
  blocks::Vector<std::byte> head(sizeof hd + runs.size() * sizeof(RunDesc) + extra_len);
  blocks::Vector<iovec> bulk;  // blocks: see pending_updates::send_pending
  bulk.reserve(runs.size());
  std::memcpy(head.data(), &hd, sizeof hd);
  for (size_t k = 0; k < runs.size(); ++k) {
    const timestamps::Run &r = runs[k];
    RunDesc d{r.addr, r.len, r.stamp};
    std::memcpy(head.data() + sizeof hd + k * sizeof d, &d, sizeof d);
    const std::byte *src = from.empty() ? reinterpret_cast<const std::byte *>(r.addr) : from[k];
    bulk.push_back({const_cast<std::byte *>(src), r.len});
  }
  if (extra_len) std::memcpy(head.data() + sizeof hd + runs.size() * sizeof(RunDesc), extra, extra_len);
  iovec h{head.data(), head.size()};
  transport::send(dest, type, std::span<const iovec>(&h, 1), bulk, clock, keep);
}

}  // namespace

void send(int dest, MsgType part, MsgType last, uintptr_t object,
          std::span<const timestamps::Run> runs, const void *extra, size_t extra_len,
          uint64_t clock, transport::Bulk keep, std::span<const std::byte *const> from) {
  // Each message is a batch of runs. When they do not all fit one eager message, short
  // runs go first, as many to a message as fit eagerly; long ones then go
  // kMaxRunsPerMessage to a message, by rendezvous. The runs of one update are disjoint,
  // so their order across messages does not matter.
  const size_t budget = transport::eager_limit() - sizeof(Head) - extra_len;
  size_t whole = 0;
  for (const timestamps::Run &r : runs) whole += sizeof(RunDesc) + r.len;
  if (runs.size() <= kMaxRunsPerMessage && whole <= budget)
    return send_one(dest, last, object, runs, from, extra, extra_len, clock, keep);
  blocks::Vector<timestamps::Run> ordered;  // blocks: see pending_updates::send_pending
  blocks::Vector<const std::byte *> ordered_from;  // with `from`: where each of `ordered` lies
  ordered.reserve(runs.size());
  ordered_from.reserve(from.size());
  std::vector<std::pair<size_t, size_t>> batches;  // [begin, end) in `ordered`
  auto add = [&](size_t k) {
    ordered.push_back(runs[k]);
    if (!from.empty()) ordered_from.push_back(from[k]);
  };
  size_t room = 0;
  for (size_t k = 0; k < runs.size(); ++k)
    if (runs[k].len <= kCopyMax) {
      const size_t need = sizeof(RunDesc) + runs[k].len;
      if (batches.empty() || need > room || batches.back().second - batches.back().first == kMaxRunsPerMessage) {
        batches.emplace_back(ordered.size(), ordered.size());
        room = budget;
      }
      add(k);
      batches.back().second++;
      room -= need;
    }
  for (size_t k = 0, n = 0; k < runs.size(); ++k)
    if (runs[k].len > kCopyMax) {
      if (n++ % kMaxRunsPerMessage == 0) batches.emplace_back(ordered.size(), ordered.size());
      add(k);
      batches.back().second++;
    }
  for (size_t b = 0; b < batches.size(); ++b) {
    const bool final = b + 1 == batches.size();
    const size_t first = batches[b].first, n = batches[b].second - batches[b].first;
    std::span<const timestamps::Run> batch(ordered.data() + first, n);
    std::span<const std::byte *const> batch_from;
    if (!from.empty()) batch_from = std::span<const std::byte *const>(ordered_from.data() + first, n);
    send_one(dest, final ? last : part, object, batch, batch_from, final ? extra : nullptr,
             final ? extra_len : 0, clock, keep);
  }
}

namespace {

using protocol::malformed;

Head read_head(const Header &h, std::span<const std::byte> head) {
  Head hd;
  if (head.size() < sizeof hd) malformed(h, "shorter than an update head");
  std::memcpy(&hd, head.data(), sizeof hd);
  if (hd.nruns > kMaxRunsPerMessage) malformed(h, "too many runs");
  if (head.size() != sizeof hd + size_t{hd.nruns} * sizeof(RunDesc) + hd.extra_len)
    malformed(h, "the head's length does not match its run count");
  return hd;
}

// What a well-formed head says the message is about, as malformed() names it: a lock
// (a grant) or a barrier (an arrival, a release). Release-consistent updates name pages
// run by run, not one object.
std::string object_of(const Header &h, uint64_t object) {
  switch (static_cast<MsgType>(h.type)) {
    case MsgType::kLockGrant:
    case MsgType::kGrantData: return protocol::lock_object(object);
    case MsgType::kBarrierArrive:
    case MsgType::kBarrierData:
    case MsgType::kBarrierRelease: return protocol::barrier_object(object);
    default: return {};
  }
}

}  // namespace

void place(const Header &h, std::span<const std::byte> head, std::vector<iovec> &where) {
  Head hd = read_head(h, head);
  uint64_t total = 0;
  for (uint32_t k = 0; k < hd.nruns; ++k) {
    RunDesc d;
    std::memcpy(&d, head.data() + sizeof hd + k * sizeof d, sizeof d);
    void *p = reinterpret_cast<void *>(d.addr);
    if (d.len == 0 || !window::is_shared(p, d.len))
      malformed(h, "a run lies outside the shared window", object_of(h, hd.object));
    protocol::landing(d.addr, d.len);  // entry-consistent data needs no page fetch
    where.push_back({p, d.len});
    total += d.len;
  }
  if (total != h.bulk_len) malformed(h, "the runs do not add up to the data carried", object_of(h, hd.object));
}

Parsed parse(const Header &h, std::span<const std::byte> head, size_t extra_len) {
  Head hd = read_head(h, head);
  if (hd.extra_len != extra_len) malformed(h, "unexpected fields after the runs", object_of(h, hd.object));
  Parsed p;
  p.object = hd.object;
  p.runs.resize(hd.nruns);
  if (hd.nruns) std::memcpy(p.runs.data(), head.data() + sizeof hd, hd.nruns * sizeof(RunDesc));
  p.extra.assign(head.begin() + sizeof hd + hd.nruns * sizeof(RunDesc), head.end());
  return p;
}

WithData parse_with_data(const Header &h, std::span<const std::byte> payload, size_t extra_len) {
  Head hd;
  if (payload.size() < sizeof hd) malformed(h, "shorter than an update head");
  std::memcpy(&hd, payload.data(), sizeof hd);
  if (hd.nruns > kMaxRunsPerMessage) malformed(h, "too many runs");
  const size_t head_len = sizeof hd + size_t{hd.nruns} * sizeof(RunDesc) + hd.extra_len;
  if (payload.size() < head_len) malformed(h, "shorter than its head");
  WithData w{parse(h, payload.first(head_len), extra_len), payload.subspan(head_len)};
  uint64_t total = 0;
  for (const RunDesc &d : w.head.runs) {
    if (d.len == 0 || d.len > w.data.size() - total) malformed(h, "runs past the data carried");
    total += d.len;
  }
  if (total != w.data.size()) malformed(h, "data beyond its runs");
  return w;
}

}  // namespace mw::updates
