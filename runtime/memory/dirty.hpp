// The dirty map: one bit per byte of the shared window (midway.h). Compiled code sets a
// byte's bit after storing to it; the runtime reads the bits to find what a rank has
// written since it last stamped a line, and clears them when it has stamped them (or
// when it has applied an update received from another rank).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <vector>

#include "core/bindings.hpp"
#include "midway.h"

namespace mw::dirty {

// The shadow byte holding the bit of data byte p; the bit is p & 7.
inline unsigned char *shadow_byte(uintptr_t p) {
  return mw_shadow(reinterpret_cast<const void *>(p));
}

// Marks [addr, addr+len) ∩ window: what compiled code calls for ranges whose length it
// only knows at run time. Addresses outside the window are private and ignored.
void mark(const void *addr, size_t len);
// Marks `rows` ranges of `len` bytes, the first at addr and each `stride` bytes after the
// last (__mw_mark_rows: the rows of a block a loop nest wrote).
void mark_rows(const void *addr, size_t len, ptrdiff_t stride, size_t rows);

// Whether any byte of [addr, addr+len) is marked; addr and len whole shadow words (64
// data bytes): the question "is this page clean" of the page layer. Reads every mark: a
// flush asks it of every page it shares (pending_updates' marked_pages, before each lock
// that moves at two ranks), so it is built for the widest vectors the CPU has.
bool any(uintptr_t addr, size_t len);

// Counts and clears marks in [addr, addr+len), which must be shared memory.
size_t count(const void *addr, size_t len);
void clear(const void *addr, size_t len);

// Takes the marks of [addr, addr+len) (64-byte aligned, shared memory): clears them, and
// appends the maximal runs of bytes that were marked to `out`, in address order. Marks of
// bytes inside `keep` (sorted, disjoint) are neither taken nor cleared. Each 64-byte
// group is read and cleared with one atomic exchange, so a mark the application sets
// meanwhile (on another thread) is either taken with its data or left for next time
// (and a mark it did not store because it was set: see fence_application).
// `exclusive`: the caller is the application thread, which alone sets marks, so whole
// shadow lines (512 data bytes) with no kept byte, all marked or none, are read and
// cleared with plain loads and stores (a release's flush: FFT's 3586 pages a flush took
// 3.0-3.6 ms, one atomic a group).
void take(uintptr_t addr, size_t len, const std::vector<Range> &keep, std::vector<Range> &out,
          bool exclusive = false);

// Compiled code stores a store's mark (any mark of a known size up to 128 bytes) only if
// its bits are not all set already (pass/MidwayInstrument.cpp, -midway-conditional-marks):
// a load and a branch instead of a write when data is written again before its marks are
// taken (RADIX's permutation at one rank). But x86 lets that load pass the data's store, still in the store buffer: a
// take on another thread between the two finds the mark set, clears it and reads the
// old data, and the new data is never sent. So a thread other than the application's
// that has taken marks calls fence_application() before it reads their data: the
// application thread passes a full barrier, after which its load either saw the mark
// cleared (and stores it again) or its store is in memory. A membarrier(2) (an IPI to
// the application's core if it runs: up to 10-20 µs on a virtual machine), so it is made
// only when a take found marks. start_fences registers for it (mw_init, when the job has other ranks) and
// says whether it could; if not, or asked not to (a test), the fences are TLB shootdowns.
bool start_fences(bool membarrier = true);
void fence_application();

// The first address in [p, end) whose mark is `dirty`, or end. Looks at a whole shadow
// cache line (the marks of 512 data bytes) at a time while it finds nothing, then one
// 8-byte word (64 data bytes) at a time: every grant of a lock bound to a large range scans
// it, mostly clean (docs/PERFORMANCE.md, "Figures behind the code").
inline uintptr_t next(uintptr_t p, uintptr_t end, bool dirty) {
  constexpr uintptr_t kBlock = 512;  // data bytes whose marks fill one 64-byte shadow line
  const uint64_t flip = dirty ? 0 : ~uint64_t{0};
  while (p < end) {
    if ((p & (kBlock - 1)) == 0) {
      while (end - p >= kBlock) {
        uint64_t s[kBlock / 64];
        std::memcpy(s, shadow_byte(p), sizeof s);
        uint64_t any = 0;
        for (uint64_t w : s) any |= w ^ flip;  // vectorized: a few instructions per line
        if (any != 0) break;
        p += kBlock;
      }
      if (p >= end) return end;
    }
    uintptr_t group = p & ~uintptr_t{63};  // 64 data bytes: one aligned shadow word
    uint64_t w;
    std::memcpy(&w, shadow_byte(group), sizeof w);  // bit k: byte group + k
    w ^= flip;
    w &= ~uint64_t{0} << (p - group);
    if (w != 0) {
      uintptr_t hit = group + static_cast<uintptr_t>(__builtin_ctzll(w));
      return hit < end ? hit : end;
    }
    p = group + 64;
  }
  return end;
}

// Calls f(begin, length) for each maximal run of dirty bytes in [addr, addr+len), in
// address order.
template <class F>
void for_each_run(uintptr_t addr, size_t len, F &&f) {
  const uintptr_t end = addr + len;
  for (uintptr_t p = next(addr, end, true); p < end; p = next(p, end, true)) {
    uintptr_t q = next(p, end, false);
    f(p, static_cast<size_t>(q - p));
    p = q;
  }
}

}  // namespace mw::dirty
