// The same address-space layout in every rank of a job, for the data the runtime does
// not place: the C library's own (stdout, stderr), other shared libraries', the brk heap.
//
// Shared data is at the same address everywhere by construction (the window). But a
// program written for threads may store into shared data a pointer to libc's data, as
// in `FILE *out = stdout;` set by one rank and used by all: that pointer is valid in
// another rank only if libc sits at the same address there, which address-space
// randomization (ASLR) prevents. So a process started as a rank of a job re-executes
// itself once, before main and before any constructor of the program, with
// randomization off for itself (personality(ADDR_NO_RANDOMIZE), which is inherited by
// exec and by its children). Every rank then loads the same executable and the same
// libraries at the same addresses, under mwrun, mpirun and srun alike, with no flag.
// mwrun starts its ranks with randomization off already, which spares them the second
// start (a start loads libfabric, whose libpsm2 and libinfinipath constructors sleep
// 100 ms each). MW_SAME_LAYOUT=0 keeps randomization (core/settings.def).
#pragma once

namespace mw::same_layout {

// From the runtime's first constructor, with the process's arguments and environment:
// re-executes the process with randomization off if it is a rank of a job (MW_RANK or
// PMIX_RANK is set) and randomization is on. Returns if nothing needs doing or the
// kernel refuses (a seccomp profile may forbid personality): then randomization stays,
// with a warning once.
void ensure(int argc, char **argv, char **envp);

}  // namespace mw::same_layout
