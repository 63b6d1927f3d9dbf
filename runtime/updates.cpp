#include "updates.hpp"

#include <sys/uio.h>

#include <cstring>

#include "copysets.hpp"
#include "protocol.hpp"
#include "transport.hpp"
#include "window.hpp"

namespace mw::updates {

using transport::Header;
using transport::MsgType;

void send(int dest, MsgType part, MsgType last, uintptr_t object,
          std::span<const timestamps::Run> runs, const void *extra, size_t extra_len,
          uint64_t clock) {
  std::vector<std::byte> head;
  std::vector<iovec> bulk;
  size_t i = 0;
  do {
    size_t n = std::min<size_t>(runs.size() - i, kMaxRunsPerMessage);
    bool final = i + n == runs.size();
    Head hd{object, static_cast<uint32_t>(n), final ? static_cast<uint32_t>(extra_len) : 0};
    head.resize(sizeof hd + n * sizeof(RunDesc) + hd.extra_len);
    std::memcpy(head.data(), &hd, sizeof hd);
    bulk.clear();
    for (size_t k = 0; k < n; ++k) {
      const timestamps::Run &r = runs[i + k];
      RunDesc d{r.addr, r.len, r.stamp};
      std::memcpy(head.data() + sizeof hd + k * sizeof d, &d, sizeof d);
      bulk.push_back({reinterpret_cast<void *>(r.addr), r.len});
    }
    if (hd.extra_len) std::memcpy(head.data() + sizeof hd + n * sizeof(RunDesc), extra, extra_len);
    iovec h{head.data(), head.size()};
    transport::send(dest, final ? last : part, std::span<const iovec>(&h, 1), bulk, clock);
    i += n;
  } while (i < runs.size());
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

}  // namespace

void place(const Header &h, std::span<const std::byte> head, std::vector<iovec> &where) {
  Head hd = read_head(h, head);
  uint64_t total = 0;
  for (uint32_t k = 0; k < hd.nruns; ++k) {
    RunDesc d;
    std::memcpy(&d, head.data() + sizeof hd + k * sizeof d, sizeof d);
    void *p = reinterpret_cast<void *>(d.addr);
    if (d.len == 0 || !window::is_shared(p, d.len))
      malformed(h, "a run lies outside the shared window");
    copysets::place_entry(d.addr, d.len);  // entry-consistent data needs no page fetch
    where.push_back({p, d.len});
    total += d.len;
  }
  if (total != h.bulk_len) malformed(h, "the runs do not add up to the data carried");
}

Parsed parse(const Header &h, std::span<const std::byte> head, size_t extra_len) {
  Head hd = read_head(h, head);
  if (hd.extra_len != extra_len) malformed(h, "unexpected fields after the runs");
  Parsed p;
  p.object = hd.object;
  p.runs.resize(hd.nruns);
  if (hd.nruns) std::memcpy(p.runs.data(), head.data() + sizeof hd, hd.nruns * sizeof(RunDesc));
  p.extra.assign(head.begin() + sizeof hd + hd.nruns * sizeof(RunDesc), head.end());
  return p;
}

}  // namespace mw::updates
