// Reusable blocks: the runtime's large transient buffers, taken and given back instead of
// allocated and freed for every message or flush: a rendezvous sender's staging copy of
// many short runs, a received message's head ‖ bulk when no placer says where it lands,
// and (through Vector) a flush's lists of runs.
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
// Sizes are powers of two from kMinBlock, and a request takes the smallest free block
// that holds it, so that buffers of nearby sizes (a flush's update messages differ by a
// few pages) share blocks; untouched pages of a block cost nothing. Free blocks are kept
// up to kKeepBytes and kKeepBlocks, the least recently given dropped first; a block
// larger than kKeepBytes is never kept (a one-off transfer of tens of MiB must not stay
// resident).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

namespace mw::blocks {

inline constexpr size_t kMinBlock = 64 << 10;
// What is kept bounds what a rank holds for nothing between messages. An update message
// carries at most updates::kMaxRunsPerMessage runs of at most a page (about 1 MiB, a 2 MiB
// block): 32 MiB is room for a few such messages to and from each of a handful of peers at
// once, and a small part of what such a rank's copies of shared data take anyway.
// A flush's lists (Vectors, a dozen at P = 2, more with more members) each hold a block
// too: kKeepBlocks leaves room for them besides the messages'.
inline constexpr size_t kKeepBytes = 32 << 20;
inline constexpr size_t kKeepBlocks = 64;

namespace detail {
std::byte *take_bytes(size_t len, const char *what, size_t *cap = nullptr);
void give_bytes(std::byte *p);
}  // namespace detail

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
  void reset() {
    if (p_) detail::give_bytes(std::exchange(p_, nullptr));
    cap_ = 0;
  }

 private:
  friend Block take(size_t len, const char *what);
  Block(std::byte *p, size_t cap) : p_(p), cap_(cap) {}
  std::byte *p_ = nullptr;
  size_t cap_ = 0;
};

// A block of at least `len` bytes: the smallest kept one that holds it, else a new
// mapping (`what` names the buffer in the error if memory runs out). Any thread.
inline Block take(size_t len, const char *what) {
  size_t cap;
  std::byte *p = detail::take_bytes(len, what, &cap);
  return Block(p, cap);
}

// For std::vector: storage of a page (kVectorBlock) or more is a block, smaller comes
// from operator new. For lists rebuilt at every flush or message (OCEAN lists hundreds
// of thousands of runs), whose pages glibc trimmed away in between.
inline constexpr size_t kVectorBlock = 4096;
template <class T>
struct Allocator {
  using value_type = T;
  Allocator() = default;
  template <class U>
  Allocator(const Allocator<U> &) noexcept {}
  T *allocate(size_t n) {
    const size_t len = n * sizeof(T);
    if (len < kVectorBlock) return static_cast<T *>(::operator new(len));
    return reinterpret_cast<T *>(detail::take_bytes(len, "a list of runs"));
  }
  void deallocate(T *p, size_t n) {
    const size_t len = n * sizeof(T);
    if (len < kVectorBlock) return ::operator delete(p);
    detail::give_bytes(reinterpret_cast<std::byte *>(p));
  }
  template <class U>
  bool operator==(const Allocator<U> &) const noexcept { return true; }
};
template <class T>
using Vector = std::vector<T, Allocator<T>>;

// For tests and statistics: bytes in free blocks kept now, and mappings made so far.
size_t kept_bytes();
uint64_t mappings();

}  // namespace mw::blocks
