/*
 * midway.h — the public interface of Midway, a distributed shared memory for C.
 *
 * One header serves three readers:
 *   1. application code (the API below, from DESIGN.md; names are fixed);
 *   2. the compiler pass (pass/MidwayInstrument.cpp), which includes this file for
 *      the shadow mapping so that the code it emits and the runtime agree on
 *      "where is the dirty mark for address p" (as AddressSanitizer's pass and
 *      runtime share one ShadowMapping);
 *   3. the runtime (runtime/), which implements every function declared here.
 *
 * Valid C11 and C++17.
 */
#ifndef MIDWAY_H
#define MIDWAY_H

#include <stddef.h>
#include <stdint.h>

#include "midway_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------
 * The shadow mapping (the contract between compiled code and the runtime)
 *
 * All shared data, static (MW_SHARED) and dynamic (mw_malloc), lives in one window of
 * virtual addresses, [MW_WINDOW_BASE, MW_WINDOW_BASE + MW_WINDOW_SIZE), at the same
 * address in every process of a job. `mwcc` links the section MW_SHARED_SECTION at
 * MW_WINDOW_BASE and MW_SHARED_BSS_SECTION right after it (lib/midway.ld); the runtime
 * maps the mw_malloc heap above them. The pass moves zero-initialized shared variables
 * into MW_SHARED_BSS_SECTION, which is NOBITS like .bss: it takes no room in the
 * executable file. The static shared data is both sections, from MW_WINDOW_BASE to the
 * end of the second.
 *
 * Every byte p of the window has one dirty *bit*: bit (p & 7) of the shadow byte at
 * (p >> 3) + MW_SHADOW_OFFSET. Compiled code sets the bits of the bytes it stores to,
 * right after the store; the runtime clears them when it has stamped the bytes' line
 * with a timestamp (Midway's "zero the timestamp on store", section 4.3, inverted so
 * that fresh zero pages read as clean).
 *
 * Why one bit per byte: the mark is exact (no byte is ever marked that was not
 * written, which barrier coalescing depends on), and the dirty map is an eighth of the
 * data, so marking a streamed row or a random node costs little memory traffic (one
 * shadow *byte* per data byte cost a Jacobi sweep 1.6x; see docs/PERFORMANCE.md).
 *
 * How marks are written (the concurrency contract):
 *   - a mark covering whole shadow bytes is a plain store of 0xFF to them;
 *   - a mark covering part of a shadow byte (or of a word of them) is a plain,
 *     non-atomic read-modify-write OR, which may rewrite neighbouring bits unchanged;
 *   - compiled code may touch up to 8 shadow bytes past the last byte it marks (a
 *     word-wide OR), so the runtime keeps that much of the dirty map committed;
 *   - a mark of a known size up to 128 bytes (a store's) may be skipped when its bits
 *     are all set already (a conditional mark: a load and a branch);
 *   - the runtime clears partial shadow bytes with an atomic AND.
 * A clear that races with the application's OR on the same shadow byte can therefore
 * leave a cleared neighbour bit set again (a spurious mark), but can never lose the
 * application's mark. A conditional mark's load may pass the data's store (x86), so a
 * thread other than the application's that takes marks fences the application thread
 * (membarrier) before it reads their data. Midway's service thread clears the bits of
 * entry-consistent data only when it collects their lock, which the application may
 * not be writing at that moment.
 *
 * The window sits below 2 GiB so that small-code-model code reaches static shared data
 * with 32-bit displacements; the dirty map sits far above it, at an offset no
 * relocation or displacement can hold.
 * ---------------------------------------------------------------------------------- */
#define MW_WINDOW_BASE 0x40000000ULL      /* 1 GiB                                     */
#define MW_WINDOW_SIZE 0x10000000000ULL   /* 1 TiB of address space, reserved lazily   */
#define MW_SHADOW_OFFSET 0x100000000000ULL /* 16 TiB: shadow(p) = (p >> 3) + offset     */
#define MW_SHARED_SECTION "mw_shared"     /* static shared data with initial values      */
#define MW_SHARED_BSS_SECTION "mw_shared_bss" /* zero-initialized static shared data     */

/* What mwcc-compiled objects tell the runtime about themselves, so that it can check
 * at start-up that every function they call and pass shared memory to was compiled
 * by mwcc too (otherwise that function's stores are not marked): newline-terminated
 * lines, concatenated by the linker. */
#define MW_DEFINED_SECTION "mw_defined"   /* "name": external functions an object defines */
#define MW_CALLS_SECTION "mw_calls"       /* "callee\targument\tfile:line:col": calls to
                                             functions it did not define, with a pointer
                                             argument that may be shared and written   */

/* Is p inside the shared window? The pass emits exactly this test (as one subtract and
 * one unsigned compare) for stores through pointers it cannot classify. */
static inline int mw_in_window(const void *p) {
  return (uintptr_t)p - (uintptr_t)MW_WINDOW_BASE < (uintptr_t)MW_WINDOW_SIZE;
}

/* The shadow byte holding the dirty bit of window address p; the bit is p & 7. */
static inline unsigned char *mw_shadow(const void *p) {
  return (unsigned char *)(((uintptr_t)p >> 3) + (uintptr_t)MW_SHADOW_OFFSET);
}

/* Runtime entry points called by compiled code (never by hand). */
void __mw_mark_range(const void *addr, size_t len); /* marks [addr, addr+len) ∩ window */
/* marks rows r < rows of [addr + r*stride, +len) ∩ window (a block written column by column) */
void __mw_mark_rows(const void *addr, size_t len, ptrdiff_t stride, size_t rows);
/* before a C library call hands [addr, addr+len) to the kernel (read, write, fread, fwrite):
 * fetches the pages this rank holds no copy of, which the kernel would fail with EFAULT */
void __mw_before_syscall(const void *addr, size_t len, int kernel_writes);

/* ------------------------------------------------------------------------------------
 * The check build (mwcc -fmidway-check): the contract between the pass and the runtime
 *
 * Besides its marks, a check build calls the runtime before every access that may reach
 * shared data, loads included:
 *
 *     if (mw_in_window(p))                        <- inline; omitted for MW_SHARED data
 *       __mw_check_load(p, size, &site);           (or __mw_check_store)
 *
 * so that private memory pays one compare and branch, and shared memory a call that
 * tests the access against this rank's own state (locks held, bindings) with no
 * message. Which accesses: loads and stores (atomic ones too), the source (a load) and
 * destination (a store) of memcpy, memmove and memset, masked and gathered/scattered
 * vector lanes (each enabled lane), and the range a modelled C library call wrote
 * (checked after the call, when its length is known). Accesses the pass proves private
 * (the omission rules: stack, non-shared globals, constants, the C library's heap) are
 * not checked. A loop whose stores are marked once after the loop still checks each
 * access in it. Reads made by C library functions are not checked.
 *
 * Each check names a site: a constant struct mw_site the pass emits once per source
 * location, access size and kind, into section MW_SITES_SECTION, so that the runtime
 * can also enumerate every site of the program (__start_mw_sites, __stop_mw_sites: an
 * array of struct mw_site). Locations come from the debug line tables (mwcc adds
 * -gline-tables-only unless the user gave -g); without them a site has only its
 * function.
 * ---------------------------------------------------------------------------------- */
#define MW_SITES_SECTION "mw_sites"       /* every struct mw_site of the program      */
#define MW_OBJECT_MAX_DIMS 4

/* A source location, one frame of an access's inlined-at chain. */
struct mw_location {
  const char *file;                     /* as the compiler was given it; NULL: unknown */
  const char *function;                 /* the function the code of this frame is in */
  uint32_t line, column;                /* 0: unknown                                */
  const struct mw_location *inlined_at; /* the call this frame was inlined into, or NULL */
};

/* A global variable accesses fall in, as the pass saw it: enough to print an access as
 * `A[3][17]` from its address. One per variable and object file (several objects may
 * describe one variable). Every build (not only check builds) also describes each
 * shared global it defines in section MW_OBJECTS_SECTION, so that errors, warnings and
 * mwrun's tables name shared data, locks and barriers as the source writes them
 * (`cells[3]`, `locks[1]`, `A[2][5]`, a field as `s+8`). */
#define MW_OBJECTS_SECTION "mw_objects"   /* an array of struct mw_object              */
struct mw_object {
  const char *name;                     /* its name in the source (a function's static:
                                           "function.name"; C++: demangled)          */
  const void *base;                     /* its address                               */
  uint64_t size;                        /* bytes                                     */
  uint64_t element_size;                /* bytes of one element of the innermost array
                                           dimension (the whole size if rank is 0)   */
  uint32_t rank;                        /* array dimensions described, 0 to 4        */
  uint32_t reserved;
  uint64_t dims[MW_OBJECT_MAX_DIMS];    /* their extents, outermost first            */
};

/* Bits of mw_site.access. */
#define MW_ACCESS_LOAD 1u
#define MW_ACCESS_STORE 2u
#define MW_ACCESS_ATOMIC 4u             /* atomic instruction or libatomic call       */
#define MW_ACCESS_RANGE 8u              /* memcpy, memmove, memset or a C library call:
                                           the size is given at each check           */

/* One access in the program's code. */
struct mw_site {
  struct mw_location where;             /* innermost frame, with the inlined-at chain */
  const struct mw_object *object;       /* the global it falls in, NULL if unknown (the
                                           heap, a pointer the pass cannot follow)   */
  uint32_t size;                        /* bytes accessed; 0 if given at run time    */
  uint8_t access;                       /* MW_ACCESS_* bits                          */
  uint8_t reserved[3];
};

#ifdef __cplusplus
static_assert(sizeof(struct mw_location) == 32 && sizeof(struct mw_object) == 72 &&
                  sizeof(struct mw_site) == 48,
              "the pass emits these structs with this layout");
#else
_Static_assert(sizeof(struct mw_location) == 32 && sizeof(struct mw_object) == 72 &&
                   sizeof(struct mw_site) == 48,
               "the pass emits these structs with this layout");
#endif

/* Checks of a check build (cold on the fast path: the runtime answers from this rank's
 * own state). `size` is the access's size in bytes (at run time for ranges). A rank
 * that reported a violation exits with status 66; MW_CHECK=abort stops it at the
 * first (docs/CHECKER.md). */
void __mw_check_load(const void *addr, size_t size, const struct mw_site *site);
void __mw_check_store(const void *addr, size_t size, const struct mw_site *site);

/* ------------------------------------------------------------------------------------
 * Polls: the contract between the pass and the runtime (mwcc compiles them in by
 * default; -fno-midway-polls, or the pass's -mllvm -midway-polls=false, leaves them out)
 *
 * So that a rank busy computing answers its peers within microseconds, the pass puts a
 * poll on loop back-edges (pass/Polls.cpp says which loops):
 *
 *     if (__builtin_expect(__atomic_load_n((const uint64_t *)MW_POLL_WORD,
 *                                          __ATOMIC_RELAXED) != 0, 0))
 *       __mw_poll();
 *
 * one load from a constant address (no relocation, no GOT, no thread pointer) and a
 * branch predicted not taken. The runtime:
 *   - maps a readable page at MW_POLL_WORD (the page just below the window) in every
 *     process, before any code built with polls runs (as it reserves the window, when
 *     libmidway is loaded), and keeps the 64-bit word there non-zero exactly while
 *     messages posted to this rank wait to be served (for instance by mapping there the
 *     page of the job's shared segment that holds this rank's doorbell);
 *   - serves them in __mw_poll on the calling thread. A poll may run anywhere a loop
 *     can: between a store and its dirty mark (the marks of a loop's stores may come
 *     after the loop), in a signal handler, on any thread, before mw_init or after
 *     mw_finalize, or while the runtime itself is on the stack. __mw_poll must then do
 *     nothing harmful, and return at once wherever serving is unsafe.
 * ---------------------------------------------------------------------------------- */
#define MW_POLL_WORD 0x3FFFF000ULL        /* MW_WINDOW_BASE - 4096                     */
void __mw_poll(void);

/* ------------------------------------------------------------------------------------
 * MW_SHARED: file-scope (static storage) shared data
 *
 *     MW_SHARED float A[512][512];
 *
 * Misuse is a compile-time error. If you are reading this line in a compiler
 * note: MW_SHARED applies only to file-scope or static variables, never to local
 * (automatic) variables, parameters or functions; use mw_malloc for dynamic data.
 *
 * Two other ways make static data shared, for code that cannot be annotated one
 * variable at a time:
 *   - `#pragma clang section data="mw_shared"` ... `#pragma clang section data=""`:
 *     every variable defined in between, zero-initialized ones included (clang
 *     forbids naming mw_shared in both a data and a bss pragma of one file;
 *     `bss="mw_shared"` alone shares only the zero-initialized ones). Constants and
 *     thread-locals stay where they are.
 *   - `mwcc -fmidway-shared-globals`: every global and static variable defined in
 *     the files compiled with it, as threads share them (the flag is for programs
 *     written for threads, such as PARMACS/Splash codes). Thread-locals, constants
 *     and string literals, variables given another section, and the counters of
 *     profiling or sanitizer instrumentation stay private. Stack memory is never
 *     shared. A variable is shared where it is defined: compile every file with it.
 * Whichever way, the pass links zero-initialized shared variables into
 * MW_SHARED_BSS_SECTION, so they take no room in the executable file.
 * ---------------------------------------------------------------------------------- */
#ifdef __cplusplus
/* A function placed in the same section as this anchor is a "section type conflict". */
inline int __mw_section_anchor __attribute__((section(MW_SHARED_SECTION))) = 0;
#define MW_SHARED __attribute__((section(MW_SHARED_SECTION), nocommon)) /* MW_SHARED: file-scope or static variables only */
#else
/* `section` rejects locals and parameters; `_Alignas(0)` (no effect on alignment) rejects functions and parameters. */
#define MW_SHARED __attribute__((section(MW_SHARED_SECTION))) _Alignas(0) /* MW_SHARED: file-scope or static variables only */
#endif

/* ------------------------------------------------------------------------------------
 * Synchronization objects: mw_lock_t, mw_barrier_t, mw_mode_t (MW_EXCLUSIVE,
 * MW_NONEXCLUSIVE), mw_sem_t and mw_cond_t, defined in midway_types.h (included above).
 * They live in shared memory; their identity is their address and a zero-initialized
 * object is ready to use. The bytes are the runtime's.
 * ---------------------------------------------------------------------------------- */

/* ------------------------------------------------------------------------------------
 * The job
 * ---------------------------------------------------------------------------------- */

/* Join the job (collective). Returns 0 on success. */
int mw_init(int *argc, char ***argv);
/* Leave the job (collective). */
void mw_finalize(void);
/* This process's rank, 0 .. mw_nprocs()-1. */
int mw_rank(void);
/* Number of processes in the job. */
int mw_nprocs(void);

/* ------------------------------------------------------------------------------------
 * Fork/join: the start of a program written for threads
 *
 * One thread (rank 0, the creator) reads the input and builds the shared state, then
 * starts the others on a function and waits for them:
 *
 *     mw_init(&argc, &argv);
 *     mw_fork_serve();            // ranks other than 0 never return from here
 *     ...read input into shared data, mw_malloc...
 *     mw_fork(work);              // every other rank runs work()
 *     work();                     // and so does the creator, if it takes part
 *     mw_join();                  // every other rank has returned from work()
 *     ...print results...
 *     mw_finalize();              // or exit: the workers finalize and exit 0 too
 *
 * mw_fork is a release by the creator: what it wrote to shared memory is there when the
 * function starts on the others. The end of the function is a release by each worker:
 * what it wrote is there when mw_join returns. The workers sleep while they wait. The
 * function must be in the executable (its address is sent). Only rank 0 forks, one fork
 * at a time (mw_join before the next).
 * ---------------------------------------------------------------------------------- */

/* Collective, right after mw_init. Rank 0 returns at once; every other rank runs each
 * function rank 0 forks, then, when rank 0 reaches mw_finalize or exits, finalizes and
 * exits with status 0 without returning. With it, rank 0's exit() finalizes the job. */
void mw_fork_serve(void);
/* Rank 0: starts fn on every other rank and returns at once. */
void mw_fork(void (*fn)(void));
/* Rank 0: returns when fn has returned on every other rank. */
void mw_join(void);

/* ------------------------------------------------------------------------------------
 * Shared heap
 * ---------------------------------------------------------------------------------- */

/* Shared memory valid at the same address on every rank, default line size. */
void *mw_malloc(size_t size);
/* As mw_malloc, with `line` bytes per timestamp: a power of two from 1 to the page. */
void *mw_malloc_lines(size_t size, size_t line);
/* Free memory from mw_malloc; anything else is reported as an error. */
void mw_free(void *p);

/* ------------------------------------------------------------------------------------
 * Entry consistency: locks and bindings
 * ---------------------------------------------------------------------------------- */

/* Data bound to l is consistent at the caller when this returns. */
void mw_acquire(mw_lock_t *l, mw_mode_t mode);
void mw_release(mw_lock_t *l);
/* Associate [addr, addr+len) with l (dynamic; travels with the lock).
 * Overlaps: each byte of shared data has at most one guard. Binding bytes to the lock
 * they are bound to already is allowed (the ranges merge); binding bytes already bound
 * to another lock, or to a barrier (mw_barrier_bind, likewise for a barrier's bytes
 * bound to a lock or another barrier), stops the program with an error naming both
 * objects: unbind them from the first one before binding them to the second. */
void mw_bind(mw_lock_t *l, const void *addr, size_t len);
void mw_unbind(mw_lock_t *l, const void *addr, size_t len);

/* ------------------------------------------------------------------------------------
 * Barriers
 * ---------------------------------------------------------------------------------- */

/* All ranks; carries the updates to data bound to b. */
void mw_barrier(mw_barrier_t *b);
void mw_barrier_bind(mw_barrier_t *b, const void *addr, size_t len);
/* Terminating barrier: updates are coalesced at the manager only. */
void mw_barrier_final(mw_barrier_t *b);

/* ------------------------------------------------------------------------------------
 * Semaphores and condition variables. Waiters sleep until a message wakes them; a post
 * or a signal is a release (what the poster wrote is there when the waiter wakes). The
 * objects live in shared memory and a zero-initialized one is ready.
 * ---------------------------------------------------------------------------------- */
/* One more for the semaphore; wakes one waiter, if any. */
void mw_sem_post(mw_sem_t *s);
/* Takes one, sleeping until a post if the count is 0. */
void mw_sem_wait(mw_sem_t *s);
/* With l held (MW_EXCLUSIVE): releases l, sleeps until signalled, re-acquires l. As
 * with pthreads, wait in a loop that tests the condition: a signal wakes only a rank
 * already waiting. */
void mw_cond_wait(mw_cond_t *c, mw_lock_t *l);
/* Wakes one waiter of c (none if nobody waits). */
void mw_cond_signal(mw_cond_t *c);
/* Wakes every waiter of c. */
void mw_cond_broadcast(mw_cond_t *c);

/* ------------------------------------------------------------------------------------
 * Writes the pass did not see
 *
 * Code not compiled by mwcc (a library, assembly, a system call's buffer) writes shared
 * memory without marking it, and the other ranks never see such a write. After it, mark
 * the range as written, as compiled stores would have:
 *
 *     lib_fill(x, n);  mw_written(x, n * sizeof x[0]);
 *
 * The range must lie in shared memory. (mwcc marks the C library functions it knows,
 * memcpy, read, fread, the scanf family with a constant format, ...; its warnings say
 * which calls it could not.)
 * ---------------------------------------------------------------------------------- */
void mw_written(const void *addr, size_t len);

/* ------------------------------------------------------------------------------------
 * Release and processor consistency
 *
 * Shared data bound to no lock or barrier is release consistent: a rank's writes reach
 * every rank holding a copy of the page when it releases a lock or crosses a barrier. A
 * rank gets its copy of a page at its first touch (a page fault fetches it from the
 * page's home). Call these alike on every rank, like start-up bindings.
 * ---------------------------------------------------------------------------------- */
/* A release without a lock: this rank's writes to release-consistent data reach every
 * rank holding a copy before this returns (a C11 release fence, across ranks). A rank
 * that reads a flag so published sees it without any call of its own. */
void mw_fence(void);
/* [addr, addr+len) is processor consistent: also pushed every flush_interval_us (> 0). */
void mw_processor_consistent(const void *addr, size_t len, unsigned flush_interval_us);

/* ------------------------------------------------------------------------------------
 * Discarding cached copies (Midway 4.3)
 * ---------------------------------------------------------------------------------- */
/* This rank drops its copies of shared data in [addr, addr+len), to free memory or to
 * stop receiving updates. Release- and processor-consistent pages another rank homes
 * leave their copysets: no more updates come, and the next touch fetches the page
 * again. Data bound to a lock this rank neither owns nor holds is dropped (whole pages
 * of it are returned to the system), and the next acquire of such a lock is served as
 * if this rank had never held it, so the data comes back whole. Data this rank is the
 * only keeper of stays: its own home pages, data bound to a lock it owns (the last to
 * have held it) and barrier-bound data. Bound to a lock this rank holds: an error. */
void mw_discard(const void *addr, size_t len);

/* ------------------------------------------------------------------------------------
 * Introspection of the dirty map (additions to the fixed API, for tests and tools)
 * ---------------------------------------------------------------------------------- */

/* Number of bytes of [addr, addr+len) marked dirty; the range must lie in the window. */
size_t mw_dirty_count(const void *addr, size_t len);
/* Mark [addr, addr+len) clean; the range must lie in the window. Clearing marks of bound
 * or release-consistent data means those writes never reach the other ranks. */
void mw_dirty_clear(const void *addr, size_t len);

/* ------------------------------------------------------------------------------------
 * Statistics (additions to the fixed API): what this rank sent, received, acquired and
 * waited for, and how long the program's phases took (Midway's Table 1: input transfer,
 * compute, output transfer, megabytes moved, messages).
 *
 * Counting is always on and costs an atomic increment. Reporting is chosen at launch:
 *   mwrun --stats              a table of every rank and the totals, on standard error
 *   mwrun --stats=json:FILE    every rank's figures and the totals, as JSON, in FILE
 *   MW_STATS=json:PATH         under mpirun or srun (mpirun -x MW_STATS=json:PATH) or
 *                              with no launcher: each rank writes PATH.<rank>.json
 * at mw_finalize. Figures count from mw_init (once every rank has joined) or from the
 * last mw_stats_reset. Bytes are "payload" (shared data carried) or "protocol" (headers
 * and bookkeeping); sent and received count every kind of message.
 * ---------------------------------------------------------------------------------- */
typedef struct mw_stats {
  uint64_t msgs_sent, msgs_received;
  uint64_t payload_bytes_sent, payload_bytes_received;
  uint64_t protocol_bytes_sent, protocol_bytes_received;
  uint64_t lock_acquires_local;  /* the lock was cached here: no message          */
  uint64_t lock_acquires_remote; /* the lock came from another rank               */
  uint64_t barrier_crossings;
  uint64_t page_faults;          /* RC/PC pages fetched on first touch            */
  uint64_t rejected_messages;    /* malformed or unauthenticated, dropped         */
  double elapsed_seconds;        /* since mw_init or the last mw_stats_reset      */
  double acquire_wait_seconds;   /* blocked in mw_acquire                         */
  double barrier_wait_seconds;   /* blocked in mw_barrier                         */
  double fault_wait_seconds;     /* blocked while a page fault was serviced       */
  uint64_t polls_served;         /* messages served at the program's loop polls   */
} mw_stats_t;

/* This rank's figures so far, totals over every kind of message. */
void mw_stats_get(mw_stats_t *out);
/* Set this rank's figures to zero and restart its elapsed time, e.g. after start-up
 * work that the figures should leave out. Running phases go on, from zero. */
void mw_stats_reset(void);

/* Phases: named intervals of the program, reported as phase.<name>.seconds.
 *
 *     mw_phase_begin("input");   ...fetch the matrices...   mw_phase_end("input");
 *     mw_phase_begin("compute"); ...multiply...             mw_phase_end("compute");
 *
 * A name is 1 to 63 letters, digits, '_' or '-'; a program names at most 32 phases.
 * Phases of different names may overlap or nest; a phase run again adds to its time.
 * Beginning a running phase, ending one that is not running, or reaching mw_finalize
 * with a phase still running stops the program with an error naming the phase. */
void mw_phase_begin(const char *name);
void mw_phase_end(const char *name);
/* Seconds spent in the phase so far, a running phase up to now; an error if no phase
 * of that name has begun. */
double mw_phase_seconds(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* MIDWAY_H */
