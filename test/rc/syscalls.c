/* syscalls.c — shared data handed to the kernel: a system call meets a page this rank holds
 * no copy of with EFAULT, not with a fault the runtime could serve, so the pass has the
 * runtime fetch the buffer of read, write, fread and fwrite first (__mw_before_syscall).
 * Without that every call below fails with "Bad address" (or comes up short).
 *
 * Each rank r fills its band of `out` (homed at r) and crosses a barrier; then, touching
 * nothing of it first, writes the next rank's band to a file with write(2) and with
 * fwrite (larger than stdio's buffer, so it goes straight from the band), and checks the
 * file. It reads that file back with read(2) and fread into its slots of `in`, which
 * another rank homes, and into a block another rank allocated with mw_malloc. After a
 * barrier every rank checks every slot: the bytes the kernel wrote were marked and
 * published, as a store's would be. Then write(2) from a non-shared page of the window
 * (unallocated heap) fails with EFAULT, as it would have without Midway. */
#include <errno.h>
#include <fcntl.h>

#include "rc_test.h"

#define BAND (16 * RC_PAGE) /* more than stdio's buffer: fwrite writes straight from it */
#define MAXP 8
MW_SHARED _Alignas(RC_PAGE) unsigned char out[MAXP][BAND];
MW_SHARED _Alignas(RC_PAGE) unsigned char in[MAXP][2][BAND];
MW_SHARED unsigned char *blocks[MAXP];
MW_SHARED mw_barrier_t barrier;

/* Rank r's band: the one homed at r (static homes go by object and block, rank 0's first). */
static int band(int r) { return r * (MAXP / rc_nprocs); }

static unsigned char pattern(int band, size_t i) { return (unsigned char)(band * 37 + i * 13 + i / 4096 + 1); }

static void check_band(const unsigned char *b, int band, const char *what) {
  for (size_t i = 0; i < BAND; ++i)
    RC_CHECK(b[i] == pattern(band, i), "%s: byte %zu is %u, expected %u", what, i, b[i], pattern(band, i));
}

static void write_all(int fd, const void *p, size_t n, const char *what) {
  ssize_t w = write(fd, p, n);
  RC_CHECK(w == (ssize_t)n, "%s: write returned %zd (%s), expected %zu", what, w, w < 0 ? strerror(errno) : "short", n);
}

int main(int argc, char **argv) {
  rc_start("syscalls", &argc, &argv);
  const int me = rc_rank, np = rc_nprocs, next = (rc_rank + 1) % rc_nprocs;
  RC_CHECK(np >= 2 && MAXP % np == 0, "run with 2, 4 or 8 ranks, not %d", np);
  char path[256];
  const char *dir = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/midway-syscalls-%d-%d", dir && *dir ? dir : "/tmp", (int)getppid(), me);

  rc_test = "fill";
  unsigned char *mine = out[band(me)], *theirs = out[band(next)];
  RC_CHECK(rc_home(mine) == me && rc_home(theirs) == next, "this rank's band is homed at %d, the next's at %d",
           rc_home(mine), rc_home(theirs));
  for (size_t i = 0; i < BAND; ++i) mine[i] = pattern(me, i);
  blocks[me] = mw_malloc_lines(BAND, RC_PAGE); /* left untouched: the next rank fills it */
  RC_CHECK(blocks[me] != NULL, "mw_malloc_lines(%d) failed", BAND);
  mw_barrier(&barrier);

  /* The kernel reads another rank's band, which this rank has never touched. */
  rc_test = "write";
  const uint64_t faults = rc_faults();
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  RC_CHECK(fd >= 0, "cannot create %s: %s", path, strerror(errno));
  write_all(fd, theirs, BAND / 2, "write(2) of half the next band");
  FILE *f = fdopen(fd, "w+");
  RC_CHECK(f != NULL, "fdopen: %s", strerror(errno));
  size_t items = fwrite(theirs + BAND / 2, 1, BAND / 2, f);
  RC_CHECK(items == BAND / 2, "fwrite of the other half wrote %zu bytes (%s), expected %d", items,
           strerror(errno), BAND / 2);
  RC_CHECK(fflush(f) == 0, "fflush: %s", strerror(errno));
  RC_CHECK(rc_faults() > faults, "the next rank's band came with no fetch: was it here already?");
  unsigned char *copy = malloc(BAND);
  RC_CHECK(copy && pread(fd, copy, BAND, 0) == BAND, "cannot read %s back", path);
  check_band(copy, next, "the file written from the next rank's band");

  /* The kernel writes pages other ranks home: a static band, and a heap block. */
  rc_test = "read";
  unsigned char *slot0 = in[band(next)][0], *slot1 = in[band(next)][1], *block = blocks[next];
  RC_CHECK(rc_home(slot0) != me && rc_home(block) != me, "slots homed at %d and %d, this rank", rc_home(slot0),
           rc_home(block));
  RC_CHECK(lseek(fd, 0, SEEK_SET) == 0, "lseek: %s", strerror(errno));
  ssize_t r = read(fd, slot0, BAND);
  RC_CHECK(r == BAND, "read(2) into rank %d's slot returned %zd (%s)", next, r, r < 0 ? strerror(errno) : "short");
  rewind(f);
  items = fread(slot1, BAND, 1, f);
  RC_CHECK(items == 1, "fread into rank %d's second slot read %zu items (%s)", next, items, strerror(errno));
  RC_CHECK(pread(fd, block, BAND, 0) == BAND, "pread into the block rank %d allocated: %s", next, strerror(errno));
  fclose(f);
  unlink(path);
  mw_barrier(&barrier);

  rc_test = "published";
  for (int q = 0; q < np; ++q) {
    char what[64];
    snprintf(what, sizeof what, "rank %d's slot, read(2) by rank %d", q, (q + np - 1) % np);
    check_band(in[band(q)][0], q, what);
    snprintf(what, sizeof what, "rank %d's second slot, fread by rank %d", q, (q + np - 1) % np);
    check_band(in[band(q)][1], q, what);
    snprintf(what, sizeof what, "rank %d's block, pread by rank %d", q, (q + np - 1) % np);
    check_band(blocks[q], q, what);
  }

  /* Not shared memory: the call fails as it would have (the page is not fetched). */
  rc_test = "not-shared";
  unsigned char *past = blocks[next] + (64ul << 20); /* the next rank's heap, never allocated */
  int fds[2];
  RC_CHECK(pipe(fds) == 0, "pipe: %s", strerror(errno)); /* a pipe reads the buffer; /dev/null does not */
  errno = 0;
  r = write(fds[1], past, 16);
  RC_CHECK(r == -1 && errno == EFAULT, "write(2) from unallocated heap returned %zd (%s), expected EFAULT", r,
           strerror(errno));
  close(fds[0]);
  close(fds[1]);
  mw_barrier(&barrier);
  rc_ok("write, fwrite, read, fread and pread with shared buffers this rank does not hold");
  mw_finalize();
  return 0;
}
