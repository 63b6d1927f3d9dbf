// libFuzzer target for the transport's one validation point, transport::validate()
// (runtime/transport/message.hpp): whatever bytes arrive, it must not read past them, and what it
// accepts must be what the transport's receive path relies on.
//
// Built with clang++-19 -fsanitize=fuzzer,address; ctest runs a short, seeded session
// (test "message_fuzzer": -runs=200000). A longer run, from the build directory:
//
//   mkdir -p fuzz-corpus && bin/message_fuzzer -max_total_time=3600 -jobs=2 -workers=2 fuzz-corpus
//
// Half the inputs are taken as raw bytes; the other half (first byte odd) build a header
// that passes the cheap checks (magic, version, secret, length) from the input's fields,
// so the fuzzer spends its time in the deeper checks: types, flags, rendezvous bodies.
// Now and then that header's secret tag has one bit flipped, anywhere in its 64: an
// accepted message must carry the job's tag exactly, so a check that compared only part
// of it is caught.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "transport/message.hpp"

using namespace mw::transport;

namespace {

constexpr Limits kLimits{/*rank=*/1, /*nprocs=*/4, /*job_secret=*/0x1234abcdULL, /*eager_limit=*/16384};

#define REQUIRE(cond) \
  do {                \
    if (!(cond)) __builtin_trap(); \
  } while (0)

// What the receive path assumes of an accepted message.
void check_accepted(const uint8_t *buf, size_t len, int source) {
  Header h;
  REQUIRE(len >= sizeof h);
  std::memcpy(&h, buf, sizeof h);
  REQUIRE(h.magic == kMagic && h.version == kVersion);
  REQUIRE(h.secret_tag == secret_tag(kLimits.job_secret));
  REQUIRE(h.sender >= 0 && h.sender < kLimits.nprocs);
  REQUIRE(source == kUnknownSource || h.sender == source);
  REQUIRE(h.payload_len <= kLimits.eager_limit);
  if (h.flags == kSplit) {  // a header alone; its payload is the next message
    REQUIRE(len == sizeof h && is_protocol_type(h.type));
    REQUIRE(h.payload_len > 0 && h.bulk_len <= h.payload_len);
    return;
  }
  REQUIRE(h.payload_len == len - sizeof h);
  const uint8_t *p = buf + sizeof h;
  if (h.type == static_cast<uint16_t>(MsgType::kDone)) {
    REQUIRE(h.payload_len == sizeof(DoneBody));
  } else if (h.type == static_cast<uint16_t>(MsgType::kChunk)) {
    REQUIRE(h.payload_len > sizeof(ChunkBody));
  } else {
    REQUIRE(is_protocol_type(h.type));
    if (h.flags == 0) {
      REQUIRE(h.bulk_len <= h.payload_len);
    } else {
      RtsBody rts;
      REQUIRE(h.payload_len >= sizeof rts);
      std::memcpy(&rts, p, sizeof rts);
      REQUIRE(rts.nseg <= kMaxSegments);
      REQUIRE(sizeof rts + uint64_t{rts.nseg} * sizeof(Segment) <= h.payload_len);
      REQUIRE(h.bulk_len > 0 && h.bulk_len <= kMaxBulk);
      uint64_t sum = 0;
      for (uint32_t i = 0; i < rts.nseg; ++i) {
        Segment s;
        std::memcpy(&s, p + sizeof rts + i * sizeof s, sizeof s);
        sum += s.len;
      }
      REQUIRE(h.flags == kChunked ? rts.nseg == 0 : sum == h.bulk_len);
    }
  }
}

void run(const uint8_t *bytes, size_t len, int source) {
  // An exact-size copy, so that AddressSanitizer sees any read past the end.
  auto buf = std::make_unique<uint8_t[]>(len ? len : 1);
  if (len) std::memcpy(buf.get(), bytes, len);
  if (validate(buf.get(), len, kLimits, source) == Result::kOk) check_accepted(buf.get(), len, source);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  int source = (data[0] >> 1) % 6 - 1;  // -1 (unknown) .. 4 (out of range)
  if (!(data[0] & 1)) {
    run(data + 1, size - 1, source);
    return 0;
  }
  // Structured: a plausible header from the next bytes, then the rest as payload.
  data += 1;
  size -= 1;
  Header h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.secret_tag = secret_tag(kLimits.job_secret);
  uint8_t f[9] = {};
  std::memcpy(f, data, size < sizeof f ? size : sizeof f);
  size_t used = size < sizeof f ? size : sizeof f;
  h.type = static_cast<uint16_t>(f[0] % 24);
  h.sender = static_cast<int32_t>(f[1] % 5);
  h.flags = f[2] % 8;
  uint64_t bulk;
  std::memcpy(&bulk, f + 3, 4);
  h.bulk_len = f[7] & 1 ? bulk : bulk % 64;
  size_t payload = size - used;
  h.payload_len = payload;
  if (f[7] & 2) h.payload_len += f[7] >> 2;  // now and then, a wrong length
  if (f[8] & 1) h.secret_tag ^= uint64_t{1} << (f[8] >> 1) % 64;  // and a tag one bit off
  auto msg = std::make_unique<uint8_t[]>(sizeof h + payload);
  std::memcpy(msg.get(), &h, sizeof h);
  std::memcpy(msg.get() + sizeof h, data + used, payload);
  run(msg.get(), sizeof h + payload, source);
  return 0;
}
