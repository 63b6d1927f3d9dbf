// The messages ranks send each other: one fixed header, the type's payload after it, and
// one function, validate(), that every arriving message passes before anything reads it.
//
// Wire format (native byte order: the ranks of a job share one ABI, and a rank of the
// other byte order fails the magic check):
//
//   Header (48 bytes) | payload (payload_len bytes)
//
// An eager message carries its whole payload: head bytes, then bulk bytes (bulk_len of
// them, at the end). Or, with kSplit, the header comes alone and the payload is the
// sender's next message, headerless: so that header + payload need not fit one inject
// (shm injects up to 4096 bytes; a 4 KiB page plus a header would not). A large message is announced by a rendezvous header (kRendezvous or
// kChunked in flags) whose payload is RtsBody, nseg Segments, then the head; its bulk
// (bulk_len bytes) travels separately: read by the receiver from the Segments with RMA, or
// pushed by the sender in kChunk messages. See transport.hpp for what head and bulk are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mw::transport {

inline constexpr uint32_t kMagic = 0x5941574d;  // "MWAY" in memory on a little-endian host
inline constexpr uint16_t kVersion = 1;

// Message types. 1..15 are the transport's own; the protocols add theirs from
// kFirstProtocol on, before kEnd, and give each a name in type_name() and a kind in
// kind_of() (accounting.hpp).
enum class MsgType : uint16_t {
  kInvalid = 0,
  kDone = 1,   // rendezvous: the receiver has read the bulk; the sender may reuse it
  kChunk = 2,  // a piece of the bulk of a large message, where RMA is not used
  kFirstProtocol = 16,
  kPing = kFirstProtocol,  // tests and benchmarks
  kPong,
  kData,
  kHello,  // start-up: each rank greets the next, proving the fabric connects them
  // Entry consistency (ec/locks.cpp, ec/barriers.cpp; the update wire format is ec/updates.hpp).
  kLockRequest,    // acquirer -> the lock's manager
  kLockForward,    // manager -> the lock's probable owner (the request, unchanged)
  kLockGrant,      // owner -> acquirer: the lock, with the bound data it lacks
  kGrantData,      // owner -> acquirer: more of a grant's data, ahead of kLockGrant
  kLockBindings,   // owner -> acquirer: the lock's bindings, ahead of a grant, when long
  kLockRevoke,     // owner -> a rank holding a non-exclusive copy: give it up
  kLockRevokeAck,  // ... given up (at once, or at its release)
  kBarrierArrive,  // crosser -> the barrier's manager, with its updates to bound data
  kBarrierData,    // more of an arrival's or a release's updates, ahead of it
  kBarrierRelease, // manager -> crosser, with the updates of the others it lacks
  kBarrierBindings,// crosser -> the manager, at its first crossing: its bindings' digest
  kFinalizing,     // a rank reached mw_finalize: it crosses no more barriers
  // Release and processor consistency (rc/copysets.cpp, rc/pending_updates.cpp).
  kPageRequest,    // faulting rank -> the page's home: send me the page, add me
  kPageData,       // home -> faulting rank: the page and its copyset
  kCopysetJoin,    // home -> the page's other members: a rank joins (they answer kCopysetAck)
  kCopysetAck,     // member -> home: ... noted; the home may now send the page
  kCopysetLeave,   // member -> home: this rank drops its copy of the page
  kCopysetLeft,    // home -> the page's other members: ... a rank left
  kCopysetLeftAck, // home and each other member -> the rank that left: noted, and every
                   // update sent it before is ahead of this (the home's says who else answers)
  kHomeOffer,      // allocator, still the home -> a page's only other member, its writer:
                   // be the home of these pages
  kHomeAnswer,     // ... which of them it took (the others it no longer holds)
  kUnbound,        // a lock's holder -> every other rank: data unbound from it, its bytes
  kUnboundAck,     // ... bound to nothing here now, its bytes in place (rc/unbound.cpp)
  kUpdate,         // writer -> a page's copyset member: pending updates, in issue order
  kUpdateData,     // more of a flush's updates, ahead of kUpdate
  kUpdateAck,      // member -> writer: a release's updates are in place
  // Liveness (transport/liveness.cpp).
  kAlive,          // a waiting rank -> each peer: are you there?
  kAliveAck,       // ... yes; the payload says what the peer waits for
  // Fork/join, semaphores and condition variables (sync/).
  kForkStart,      // rank 0 -> every other rank: run this function (0: the job ends)
  kForkJoined,     // worker -> rank 0: the function returned, its writes are out
  kForkData,       // barrier-bound data ahead of kForkStart or kForkJoined (sync/fork.cpp)
  kSemWait,        // waiter -> the semaphore's manager: take one, or queue me
  kSemPost,        // poster -> the manager: one more (its writes are out)
  kSemGrant,       // manager -> waiter: you took one
  kCondWait,       // waiter -> the condition's manager: queue me
  kCondQueued,     // manager -> waiter: queued (the waiter may now release its lock)
  kCondSignal,     // signaller -> the manager: wake one waiter, or all
  kCondWake,       // manager -> waiter: woken
  kEnd  // one past the last type
};

inline constexpr bool is_protocol_type(uint16_t t) {
  return t >= static_cast<uint16_t>(MsgType::kFirstProtocol) &&
         t < static_cast<uint16_t>(MsgType::kEnd);
}

// Header.flags
inline constexpr uint32_t kRendezvous = 1u << 0;  // bulk is exposed for RMA read (Segments)
inline constexpr uint32_t kChunked = 1u << 1;     // bulk follows in kChunk messages
inline constexpr uint32_t kSplit = 1u << 2;       // payload_len bytes follow as the next message
inline constexpr uint32_t kKnownFlags = kRendezvous | kChunked | kSplit;

struct Header {
  uint32_t magic;
  uint16_t version;
  uint16_t type;         // MsgType
  int32_t sender;        // rank
  uint32_t flags;
  uint64_t secret_tag;   // secret_tag(job secret): keeps a stray message of another job out
  uint64_t clock;        // Lamport clock: opaque here, the protocols fill and read it
  uint64_t payload_len;  // bytes after the header in this message
  uint64_t bulk_len;     // eager: trailing bytes of the payload that are bulk; rendezvous: total bulk
};
static_assert(sizeof(Header) == 48, "the header is part of the wire format");

// Payload of a rendezvous header: this, Segment[nseg], then the head.
struct RtsBody {
  uint64_t id;  // the sender's transfer number, echoed by kDone / carried by kChunk
  uint32_t nseg;
  uint32_t reserved;
};
struct Segment {  // a registered piece of the sender's bulk, in bulk order
  uint64_t addr;  // remote address as the provider's MR mode wants it (virtual or offset)
  uint64_t key;
  uint64_t len;
};
struct DoneBody {
  uint64_t id;
};
struct ChunkBody {  // followed by the chunk's bytes
  uint64_t id;
  uint64_t offset;  // into the bulk
};

inline constexpr uint32_t kMaxSegments = 64;            // per rendezvous header
inline constexpr uint64_t kMaxBulk = uint64_t{1} << 40;  // 1 TiB: the size of the shared window

// What validate() needs to know about the receiving rank and the job.
struct Limits {
  int rank;
  int nprocs;
  uint64_t job_secret;
  size_t eager_limit;  // the largest payload_len of a message (receive buffers hold header + this)
};

enum class Result : uint8_t {
  kOk,
  kShort,           // fewer bytes than a header
  kBadMagic,
  kBadVersion,
  kUnknownType,
  kBadSender,       // sender not a rank of this job
  kSenderMismatch,  // sender is not the rank the provider says the message came from
  kBadSecret,
  kLengthMismatch,  // payload_len disagrees with the bytes received
  kTooLong,         // longer than the eager limit (or than a receive buffer)
  kBadBody,         // a transport message (rendezvous, kDone, kChunk) that is inconsistent
  kNoHandler,       // valid, but this rank registered no handler for the type
  kCount
};

// Why a message was rejected, as a phrase: "bad magic", "job secret does not match", ...
const char *describe(Result r);

// "PING", "DATA", ..., or "type 37".
std::string type_name(uint16_t type);

// The tag a job secret becomes on the wire (a mix of it, not the secret itself). It is a
// guard against messages of another job, not authentication: the fabric is trusted.
uint64_t secret_tag(uint64_t job_secret);

inline constexpr int kUnknownSource = -1;

// The one validation point. `buf` holds `received` bytes as they arrived; `source` is the
// rank the provider reports the message came from (FI_SOURCE), or kUnknownSource.
// Checks, in order: length >= header, magic, version, type, sender in range and equal to
// source when known, secret tag, flags, declared length == received <= limit, and the
// body of the transport's own messages. Never reads past buf + received.
Result validate(const void *buf, size_t received, const Limits &limits, int source);

}  // namespace mw::transport
