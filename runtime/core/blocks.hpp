// Reusable blocks: the runtime's large transient buffers, taken and given back instead of
// allocated and freed for every message (a rendezvous sender's staging copy of many short
// runs, a received message's head ‖ bulk when no placer says where it lands).
//
// Why: on paravirtualized hosts a page's first use costs 20-40 µs (bench/first_touch.c),
// a thousand times a page in use. glibc gives a large freed buffer back to the kernel
// (munmap above its mmap threshold, a trim at the heap's top), so every flush met fresh
// pages again: about a tenth of the faults in a Splash-3 timed region at two ranks, each
// paid on the application's critical path (docs/PERFORMANCE.md, "First touches"). A block
// keeps its pages: after its first use, filling it costs only the copy.
//
// Blocks are mapped by the runtime itself, not taken from malloc: the application's heap
// and its malloc settings (mallopt, GLIBC_TUNABLES) are its own, and neither our reuse nor
// its trimming depends on the other.
//
// Sizes are powers of two from kMinBlock, and a request takes the smallest free block that
// holds it, so that messages of nearby sizes (a flush's update messages differ by a few
// pages) share one block; untouched pages of a block cost nothing. Free blocks are kept up
// to kKeepBytes and kKeepBlocks, the least recently given dropped first; a block larger
// than kKeepBytes is never kept (a one-off transfer of tens of MiB must not stay resident).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

namespace mw::blocks {

inline constexpr size_t kMinBlock = 64 << 10;
// What is kept bounds what a rank holds for nothing between messages. An update message
// carries at most updates::kMaxRunsPerMessage runs of at most a page (about 1 MiB, a 2 MiB
// block): 32 MiB is room for a few such messages to and from each of a handful of peers at
// once, and a small part of what such a rank's copies of shared data take anyway.
inline constexpr size_t kKeepBytes = 32 << 20;
inline constexpr size_t kKeepBlocks = 16;

// A block of bytes, owned; given back for reuse when destroyed or reset.
class Block {
 public:
  Block() = default;
  Block(Block &&o) noexcept : p_(std::exchange(o.p_, nullptr)), cap_(std::exchange(o.cap_, 0)) {}
  Block &operator=(Block &&o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      cap_ = std::exchange(o.cap_, 0);
    }
    return *this;
  }
  Block(const Block &) = delete;
  Block &operator=(const Block &) = delete;
  ~Block() { reset(); }

  std::byte *data() const { return p_; }
  size_t capacity() const { return cap_; }
  explicit operator bool() const { return p_ != nullptr; }
  void reset();

 private:
  friend Block take(size_t len, const char *what);
  Block(std::byte *p, size_t cap) : p_(p), cap_(cap) {}
  std::byte *p_ = nullptr;
  size_t cap_ = 0;
};

// A block of at least `len` bytes: a kept one if one is large enough, else a new mapping
// (`what` names the buffer in the error if memory runs out). Any thread.
Block take(size_t len, const char *what);

// For tests and statistics: bytes in free blocks kept now, and mappings made so far.
size_t kept_bytes();
uint64_t mappings();

}  // namespace mw::blocks
