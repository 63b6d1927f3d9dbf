// The pass assumes that a function it cannot see, which is not a C library function,
// is compiled by mwcc too and marks its own stores. Once the program is linked the
// runtime can check that assumption: every call the pass recorded (MW_CALLS_SECTION)
// must name a function some mwcc-compiled object defines (MW_DEFINED_SECTION).
#pragma once

namespace mw::unmarked_calls {

// Warns, once per callee, about each function that is called with shared memory it
// may write but was not compiled by mwcc (so its writes are not marked dirty).
// Returns the number of such functions.
int check();

// Stops mw_init if the executable was linked with mwcc's flags (it has midway_exe.o's
// section) but none of its own code was compiled by the pass (no MW_DEFINED_SECTION):
// every store to shared data would go unmarked and each rank compute alone.
void require_pass();

}  // namespace mw::unmarked_calls
