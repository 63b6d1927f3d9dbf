// The shared heap behind mw_malloc. The heap part of the window is split into one
// partition per rank, so any rank allocates without talking to the others and the
// address it returns is valid on every rank. Each block records its line size: the
// granularity of its timestamps (Midway, section 4.3).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mw::heap {

// Line size of static shared data and of mw_malloc blocks.
constexpr size_t kDefaultLine = 64;

// Gives this rank its partition of the heap. Called by mw_init.
void init(int rank, int nprocs);

// The checks and errors of mw_malloc_lines, reported as `call`; `caller` is the code
// address that called mw_malloc, so that reports can name a block by where it was made.
void *allocate(size_t size, size_t line, const char *call, const void *caller = nullptr);
// mw_free's checks and errors. With `reuse` false the block's addresses are retired,
// never allocated again (its bytes are bound to a lock or a barrier: a new block there
// would be bound too, on every rank that made or saw the binding).
void release(void *p, bool reuse = true);

// The rank whose partition holds heap address a (it allocated the block there), or -1 if
// a is not in the heap part of the window.
int owner_of(uintptr_t a);

// Line size of the block holding p (kDefaultLine for static data); 0 if p is not in a
// live block of this rank's partition nor in static shared data.
size_t line_of(const void *p);

// The live block of this rank's partition that holds a: its start, size and the
// caller of mw_malloc that made it. False if there is none.
bool block_of(uintptr_t a, uintptr_t *base, size_t *size, uintptr_t *caller);

}  // namespace mw::heap
