// The dirty map: one shadow byte per byte of the shared window (midway.h). Compiled code
// sets a byte's shadow to MW_DIRTY after storing to it; the runtime reads the marks to
// find what a rank has written since it last stamped a line, and clears them when it
// has stamped them (or when it has applied an update received from another rank).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "midway.h"

namespace mw::dirty {

inline unsigned char *shadow(uintptr_t p) { return mw_shadow(reinterpret_cast<void *>(p)); }

// Marks [addr, addr+len) ∩ window: what compiled code does for ranges whose length it
// only knows at run time. Addresses outside the window are private and ignored.
void mark(const void *addr, size_t len);

// Counts and clears marks in [addr, addr+len), which must lie inside the window.
size_t count(const void *addr, size_t len);
void clear(const void *addr, size_t len);

// Calls f(begin, length) for each maximal run of dirty bytes in [addr, addr+len), in
// address order, reading the shadow a word at a time so that clean stretches cost
// one load per eight bytes.
template <class F>
void for_each_run(uintptr_t addr, size_t len, F &&f) {
  const unsigned char *s = shadow(addr);
  size_t i = 0;
  while (i < len) {
    // Skip clean bytes: bytewise to an 8-byte boundary, then word-wise.
    while (i < len && s[i] == 0 && (reinterpret_cast<uintptr_t>(s + i) & 7) != 0) ++i;
    while (i + 8 <= len) {
      uint64_t w;
      std::memcpy(&w, s + i, 8);
      if (w != 0) break;
      i += 8;
    }
    while (i < len && s[i] == 0) ++i;
    if (i == len) break;
    size_t start = i;
    while (i < len && s[i] != 0 && (reinterpret_cast<uintptr_t>(s + i) & 7) != 0) ++i;
    while (i + 8 <= len) {
      uint64_t w;
      std::memcpy(&w, s + i, 8);
      // A word is all-dirty when every byte is non-zero; marks are MW_DIRTY (0x01).
      if (w != 0x0101010101010101ULL) break;
      i += 8;
    }
    while (i < len && s[i] != 0) ++i;
    f(addr + start, i - start);
  }
}

}  // namespace mw::dirty
