#include "transport/message.hpp"

#include <cstdio>
#include <cstring>

namespace mw::transport {

const char *describe(Result r) {
  switch (r) {
    case Result::kOk: return "valid";
    case Result::kShort: return "shorter than a message header";
    case Result::kBadMagic: return "bad magic (not a Midway message)";
    case Result::kBadVersion: return "protocol version does not match";
    case Result::kUnknownType: return "unknown message type";
    case Result::kBadSender: return "sender is not a rank of this job";
    case Result::kSenderMismatch: return "sender field differs from the rank it came from";
    case Result::kBadSecret: return "job secret does not match (a message of another job?)";
    case Result::kLengthMismatch: return "declared length differs from the bytes received";
    case Result::kTooLong: return "longer than the eager limit";
    case Result::kBadBody: return "inconsistent transport message body";
    case Result::kNoHandler: return "no handler registered for its type";
    case Result::kCount: break;
  }
  return "unknown reason";
}

std::string type_name(uint16_t type) {
  switch (static_cast<MsgType>(type)) {
    case MsgType::kDone: return "DONE";
    case MsgType::kChunk: return "CHUNK";
    case MsgType::kPing: return "PING";
    case MsgType::kPong: return "PONG";
    case MsgType::kData: return "DATA";
    case MsgType::kHello: return "HELLO";
    case MsgType::kLockRequest: return "LOCK_REQUEST";
    case MsgType::kLockForward: return "LOCK_FORWARD";
    case MsgType::kLockGrant: return "LOCK_GRANT";
    case MsgType::kGrantData: return "GRANT_DATA";
    case MsgType::kLockBindings: return "LOCK_BINDINGS";
    case MsgType::kLockRevoke: return "LOCK_REVOKE";
    case MsgType::kLockRevokeAck: return "LOCK_REVOKE_ACK";
    case MsgType::kBarrierArrive: return "BARRIER_ARRIVE";
    case MsgType::kBarrierData: return "BARRIER_DATA";
    case MsgType::kBarrierBindings: return "BARRIER_BINDINGS";
    case MsgType::kBarrierRelease: return "BARRIER_RELEASE";
    case MsgType::kFinalizing: return "FINALIZING";
    case MsgType::kPageRequest: return "PAGE_REQUEST";
    case MsgType::kPageData: return "PAGE_DATA";
    case MsgType::kCopysetJoin: return "COPYSET_JOIN";
    case MsgType::kCopysetAck: return "COPYSET_ACK";
    case MsgType::kCopysetLeave: return "COPYSET_LEAVE";
    case MsgType::kCopysetLeft: return "COPYSET_LEFT";
    case MsgType::kCopysetLeftAck: return "COPYSET_LEFT_ACK";
    case MsgType::kHomeOffer: return "HOME_OFFER";
    case MsgType::kHomeAnswer: return "HOME_ANSWER";
    case MsgType::kUnbound: return "UNBOUND";
    case MsgType::kUnboundAck: return "UNBOUND_ACK";
    case MsgType::kUpdate: return "UPDATE";
    case MsgType::kUpdateData: return "UPDATE_DATA";
    case MsgType::kUpdateAck: return "UPDATE_ACK";
    case MsgType::kAlive: return "ALIVE";
    case MsgType::kAliveAck: return "ALIVE_ACK";
    case MsgType::kForkStart: return "FORK_START";
    case MsgType::kForkJoined: return "FORK_JOINED";
    case MsgType::kForkData: return "FORK_DATA";
    case MsgType::kSemWait: return "SEM_WAIT";
    case MsgType::kSemPost: return "SEM_POST";
    case MsgType::kSemGrant: return "SEM_GRANT";
    case MsgType::kCondWait: return "COND_WAIT";
    case MsgType::kCondQueued: return "COND_QUEUED";
    case MsgType::kCondSignal: return "COND_SIGNAL";
    case MsgType::kCondWake: return "COND_WAKE";
    default: break;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "type %u", static_cast<unsigned>(type));
  return buf;
}

uint64_t secret_tag(uint64_t job_secret) {
  // splitmix64's finalizer over the secret and a constant naming the protocol.
  uint64_t z = job_secret ^ 0x4d69647761792131ULL;  // "Midway!1"
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

namespace {

// A rendezvous header's body: RtsBody, Segment[nseg], head. `p` points at the payload,
// which validate() has already checked holds payload_len bytes.
Result check_rendezvous(const Header &h, const unsigned char *p, const Limits &lim) {
  if (h.payload_len < sizeof(RtsBody)) return Result::kBadBody;
  RtsBody rts;
  std::memcpy(&rts, p, sizeof rts);
  if (rts.nseg > kMaxSegments) return Result::kBadBody;
  uint64_t segs_len = uint64_t{rts.nseg} * sizeof(Segment);
  if (h.payload_len - sizeof(RtsBody) < segs_len) return Result::kBadBody;
  // The head is what is left; it is delivered like an eager payload.
  if (h.payload_len - sizeof(RtsBody) - segs_len > lim.eager_limit) return Result::kTooLong;
  if (h.bulk_len == 0 || h.bulk_len > kMaxBulk) return Result::kBadBody;
  if (h.flags == kChunked) return rts.nseg == 0 ? Result::kOk : Result::kBadBody;
  // kRendezvous: the segments must add up to the bulk, none empty.
  if (rts.nseg == 0) return Result::kBadBody;
  uint64_t sum = 0;
  for (uint32_t i = 0; i < rts.nseg; ++i) {
    Segment s;
    std::memcpy(&s, p + sizeof(RtsBody) + i * sizeof(Segment), sizeof s);
    if (s.len == 0 || s.len > kMaxBulk - sum) return Result::kBadBody;
    sum += s.len;
  }
  return sum == h.bulk_len ? Result::kOk : Result::kBadBody;
}

}  // namespace

Result validate(const void *buf, size_t received, const Limits &lim, int source) {
  if (received < sizeof(Header)) return Result::kShort;
  Header h;
  std::memcpy(&h, buf, sizeof h);  // the receive buffer promises no alignment
  if (h.magic != kMagic) return Result::kBadMagic;
  if (h.version != kVersion) return Result::kBadVersion;
  bool internal = h.type == static_cast<uint16_t>(MsgType::kDone) ||
                  h.type == static_cast<uint16_t>(MsgType::kChunk);
  if (!internal && !is_protocol_type(h.type)) return Result::kUnknownType;
  if (h.sender < 0 || h.sender >= lim.nprocs) return Result::kBadSender;
  if (source != kUnknownSource && h.sender != source) return Result::kSenderMismatch;
  if (h.secret_tag != secret_tag(lim.job_secret)) return Result::kBadSecret;
  if ((h.flags & ~kKnownFlags) != 0 ||
      (h.flags != 0 && h.flags != kRendezvous && h.flags != kChunked && h.flags != kSplit))
    return Result::kBadBody;
  if (h.flags == kSplit) {
    // The header alone; payload_len bytes come next (and are checked against it then).
    if (received != sizeof(Header)) return Result::kLengthMismatch;
    if (h.payload_len > lim.eager_limit) return Result::kTooLong;
    if (internal || h.payload_len == 0 || h.bulk_len > h.payload_len) return Result::kBadBody;
    return Result::kOk;
  }
  if (h.payload_len != received - sizeof(Header)) return Result::kLengthMismatch;
  if (h.payload_len > lim.eager_limit) return Result::kTooLong;

  const unsigned char *p = static_cast<const unsigned char *>(buf) + sizeof(Header);
  if (internal) {
    if (h.flags != 0 || h.bulk_len != 0) return Result::kBadBody;
    if (h.type == static_cast<uint16_t>(MsgType::kDone))
      return h.payload_len == sizeof(DoneBody) ? Result::kOk : Result::kBadBody;
    return h.payload_len > sizeof(ChunkBody) ? Result::kOk : Result::kBadBody;  // kChunk
  }
  if (h.flags != 0) return check_rendezvous(h, p, lim);
  return h.bulk_len <= h.payload_len ? Result::kOk : Result::kBadBody;
}

}  // namespace mw::transport
