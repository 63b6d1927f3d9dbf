// Timestamps of shared data (Midway, section 4.3): the Lamport time at which this rank
// last knows each byte of lock-bound data to have changed.
//
// Midway keeps a timestamp per line and zeroes it on store; the owner of a lock stamps
// the zeroed lines with its clock when the lock is requested, and ships the lines
// stamped later than the acquirer last saw the lock. Here the compiled code sets dirty
// bits (memory/dirty.hpp) instead of zeroing, and the stamps are kept as an interval map,
// [begin, end) -> stamp: a run of lines written together (a matrix, a row) is one entry,
// however many lines it spans, and data never written has no entry at all (stamp 0).
//
// Line size is the granularity of stamping: a dirty byte stamps its whole line, clipped
// to the bound range, so that many scattered writes ship as few runs. It is safe because
// the owner of a lock holds the newest value of every byte bound to it.
//
// Called with protocol::mu() held.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mw::timestamps {

struct Run {
  uintptr_t addr;
  size_t len;
  uint64_t stamp;
};

// Stamps the dirty bytes of [addr, addr+len), each with its line (a power of two; the
// line is clipped to the range), with `stamp`, and clears their dirty marks. Returns
// whether anything was dirty.
bool stamp_dirty(uintptr_t addr, size_t len, size_t line, uint64_t stamp);

// Appends the runs of [addr, addr+len) stamped later than `since`, in address order;
// adjacent runs are merged (the merged run carries the later stamp: a receiver that
// records it may later ship a little more than it must, never less).
void collect(uintptr_t addr, size_t len, uint64_t since, std::vector<Run> &out);

// This rank now holds [addr, addr+len) as of `stamp` (an update received).
void record(uintptr_t addr, size_t len, uint64_t stamp);

}  // namespace mw::timestamps
