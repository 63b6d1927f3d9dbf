// Updates: runs of shared data sent from one rank's memory to the same addresses in
// another's, as a lock grant or a barrier message carries them.
//
// Wire format of the head (the bulk is the runs' bytes, in order):
//
//   Head | RunDesc[nruns] | extra (extra_len bytes, the message type's own fields)
//
// The receiver's placer (place) reads the run descriptors and has the transport put the
// bulk straight at those addresses: one copy on eager messages, none with RMA. An update
// that does not fit one eager message goes in several: all but the last of type `part`,
// carrying runs only, then one of type `last` with the rest and the extra fields; a
// sender's messages arrive in order, so the receiver has every run when `last` is
// handled. Short runs are then packed into eager messages (copied: an RMA read costs
// about as much for 64 bytes as for 64 KiB), long ones read where they lie.
#pragma once
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "transport/message.hpp"
#include "transport/transport.hpp"
#include "ec/timestamps.hpp"

namespace mw::updates {

struct Head {
  uint64_t object;  // the lock or barrier
  uint32_t nruns;
  uint32_t extra_len;
};
struct RunDesc {
  uint64_t addr, len, stamp;
};
// Runs per message: keeps a head (with a rendezvous' segment list) within the eager limit.
inline constexpr uint32_t kMaxRunsPerMessage = 256;

// Sends `runs` (read from their addresses here) and `extra` to dest; `keep` as for
// transport::send (a lock grant defers: see locks.cpp, grant()). `from`, if not empty,
// says where each run's bytes are read instead (a copy taken earlier: the processor-
// consistency flusher's snapshot), one pointer per run.
void send(int dest, transport::MsgType part, transport::MsgType last, uintptr_t object,
          std::span<const timestamps::Run> runs, const void *extra, size_t extra_len,
          uint64_t clock, transport::Bulk keep = transport::Bulk::kWait,
          std::span<const std::byte *const> from = {});

// The placer of every type that carries updates.
void place(const transport::Header &h, std::span<const std::byte> head, std::vector<iovec> &where);

struct Parsed {
  uintptr_t object = 0;
  std::vector<RunDesc> runs;
  std::vector<std::byte> extra;
};
// An arriving update's head, checked (the placer checked the runs already); a malformed
// one stops this rank (protocol::malformed).
Parsed parse(const transport::Header &h, std::span<const std::byte> head, size_t extra_len);

// An arriving update of a type with no placer (pending updates: the receiver lands the
// runs itself), whose payload is head ‖ the runs' bytes: the head, checked as parse()
// checks it, and the bytes after it, checked to be exactly the runs' bytes.
struct WithData {
  Parsed head;
  std::span<const std::byte> data;
};
WithData parse_with_data(const transport::Header &h, std::span<const std::byte> payload,
                         size_t extra_len);

}  // namespace mw::updates
