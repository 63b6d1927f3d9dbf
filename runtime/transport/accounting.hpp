// What each message counts as in the statistics (mwrun --stats): the transport counts
// every message it sends and receives by its type's kind. Kept apart from the wire
// format (message.hpp), which knows nothing of statistics.
#pragma once

#include <cstdint>

#include "core/stats.hpp"
#include "transport/message.hpp"

namespace mw::transport {

// What each type is for, in the statistics (mwrun --stats): every protocol type maps to
// one stats::Kind here.
constexpr stats::Kind kind_of(uint16_t type) {
  switch (static_cast<MsgType>(type)) {
    case MsgType::kLockRequest:
    case MsgType::kLockForward:
    case MsgType::kLockRevoke:
    case MsgType::kLockRevokeAck:
    case MsgType::kSemWait:
    case MsgType::kSemPost:
    case MsgType::kSemGrant:
    case MsgType::kCondWait:
    case MsgType::kCondQueued:
    case MsgType::kCondSignal:
    case MsgType::kCondWake:
      return stats::Kind::Lock;
    case MsgType::kLockGrant:
    case MsgType::kGrantData:
    case MsgType::kLockBindings:
      return stats::Kind::Grant;
    case MsgType::kBarrierArrive:
    case MsgType::kBarrierData:
    case MsgType::kBarrierRelease:
      return stats::Kind::Barrier;
    case MsgType::kPageRequest:
    case MsgType::kPageData:
    case MsgType::kCopysetJoin:
    case MsgType::kCopysetAck:
    case MsgType::kCopysetLeave:
    case MsgType::kCopysetLeft:
    case MsgType::kCopysetLeftAck:
    case MsgType::kHomeOffer:
    case MsgType::kHomeAnswer:
    case MsgType::kUnbound:
    case MsgType::kUnboundAck:
      return stats::Kind::Page;
    case MsgType::kUpdate:
    case MsgType::kUpdateData:
    case MsgType::kUpdateAck:
      return stats::Kind::Update;
    case MsgType::kPing:
    case MsgType::kPong:
    case MsgType::kData:
    case MsgType::kDone:
    case MsgType::kChunk:
    default:
      return stats::Kind::Control;
  }
}

}  // namespace mw::transport
