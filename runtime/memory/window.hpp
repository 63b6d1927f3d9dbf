// The shared window: one range of virtual addresses, identical in every process, that
// holds all shared data (see the shadow mapping in midway.h).
//
//   MW_WINDOW_BASE                                            MW_WINDOW_BASE+MW_WINDOW_SIZE
//   | static MW_SHARED data (mapped by exec) | mw_malloc heap (reserved here, committed on demand) |
//
// The whole window and its shadow are reserved PROT_NONE when the runtime library is
// loaded (before main and before any constructor of the program, because compiled code
// marks the shadow of every shared store it makes), and made accessible piece by piece.
#pragma once

#include <cstddef>
#include <cstdint>

#include "midway.h"

namespace mw::window {

constexpr uintptr_t kBase = MW_WINDOW_BASE;
constexpr uintptr_t kEnd = MW_WINDOW_BASE + MW_WINDOW_SIZE;

// [static_begin, static_end): the program's MW_SHARED data, initialized then
// zero-initialized (empty if it has none).
// [heap_begin, kEnd): room for the mw_malloc heap.
struct Layout {
  uintptr_t static_begin;
  uintptr_t static_end;
  uintptr_t heap_begin;
};

const Layout &layout();

inline bool contains(const void *p, size_t len) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  return a >= kBase && a <= kEnd && len <= kEnd - a;
}

// Is [p, p+len) wholly static shared data or wholly heap (whether committed here or not)?
inline bool is_shared(const void *p, size_t len) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  return contains(p, len) && (a + len <= layout().static_end || a >= layout().heap_begin);
}

// Makes [begin, end) of the heap, and its shadow, readable and writable.
void commit(uintptr_t begin, uintptr_t end);

// A copyset fetch of the heap page at `page`: commits it as commit() does and puts it
// and its dirty marks in memory, so that the data lands with no page fault. Done while
// the request travels; the home may yet answer that nobody allocated the page, and then
// uncommit_page() takes it back.
void commit_page(uintptr_t page);
void uncommit_page(uintptr_t page);

// Puts the data page at `page` (writable already) in memory, writable, without changing
// what it holds: the first write to it takes no page fault. Best effort (Linux 5.14).
void populate(uintptr_t page);
// The same for every page of [begin, end) (page-aligned) and of their dirty marks.
void populate(uintptr_t begin, uintptr_t end);

// Makes the dirty marks of heap data [begin, end) readable and writable, not the data.
void commit_marks(uintptr_t begin, uintptr_t end);

// Is [p, p+len) static shared data or committed heap, so that its data and its dirty
// marks may be touched?
bool accessible(const void *p, size_t len);

// Makes [p, p+len) accessible if it is shared memory: static data is, and heap pages are
// committed here on demand (data another rank allocated, which this rank binds or
// receives in an update). False if the range is not in static data or the heap.
bool make_accessible(const void *p, size_t len);
size_t page_size();

}  // namespace mw::window
