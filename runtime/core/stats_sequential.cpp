// The statistics of a program built without the runtime (examples/mw_sequential.h, the
// paper's single-processor row): the midway.h functions of phases and statistics, and a
// start and a finish, over this layer's own stats module. So the sequential build times
// phases and writes its figures exactly as a rank does (one writer of the JSON, stats.cpp).
// Linked as lib/libmidway_sequential.a, with nothing else of the runtime.
#include "core/error.hpp"
#include "core/stats.hpp"
#include "midway.h"

#define MW_SEQ_EXPORT extern "C" __attribute__((visibility("default")))

MW_SEQ_EXPORT void mw_sequential_start(void) {
  mw::g_rank = 0;
  mw::stats::start();
}

MW_SEQ_EXPORT void mw_sequential_finish(void) { mw::stats::finish("mw_finalize"); }

MW_SEQ_EXPORT void mw_phase_begin(const char *name) { mw::stats::phase_begin("mw_phase_begin", name); }
MW_SEQ_EXPORT void mw_phase_end(const char *name) { mw::stats::phase_end("mw_phase_end", name); }
MW_SEQ_EXPORT double mw_phase_seconds(const char *name) {
  return mw::stats::phase_seconds("mw_phase_seconds", name);
}
MW_SEQ_EXPORT void mw_stats_get(mw_stats_t *out) {
  if (!out) mw::fatal("mw_stats_get", "out is NULL: pass the address of an mw_stats_t");
  *out = mw::stats::to_public(mw::stats::snapshot());
}
MW_SEQ_EXPORT void mw_stats_reset(void) { mw::stats::reset(); }
