/* big_static.c — a program with a large zero-initialized MW_SHARED array starts, and its
 * release-consistent data moves, at any rank count (issue 16: 512 MiB at 2 ranks failed
 * mw_init when the static pages' homes alternated page by page and each page homed
 * elsewhere took a memory mapping of its own, past vm.max_map_count).
 *
 *   big_static [MIB]     MIB of the array to use (at most its 512; default 512)
 *
 * Zero-initialized, so the executable stays small (the section is NOBITS). Each rank
 * writes a word into a sample of pages spread over the array (one page in STRIDE, round
 * the ranks); after a barrier every rank reads every sample and the untouched bytes
 * around it, which fetches the pages homed elsewhere. */
#include "rc_test.h"

#define MAX_MIB 512
#define STRIDE 256 /* one sample page per MiB */

MW_SHARED _Alignas(4096) unsigned char big[(size_t)MAX_MIB << 20];
MW_SHARED mw_barrier_t bar;

static uint64_t tag(size_t page) { return 0x7b000000000000ull | page; }

int main(int argc, char **argv) {
  rc_start("big_static", &argc, &argv);
  rc_test = "big-static";
  const size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : MAX_MIB;
  if (mib == 0 || mib > MAX_MIB) rc_fail("usage: big_static [MIB], 1 to %d", MAX_MIB);
  const size_t pages = (mib << 20) / RC_PAGE;
  const int me = rc_rank, P = rc_nprocs;
  int homes_seen = 0;
  for (int r = 0; r < P; r++)
    for (size_t k = 0; k < pages; k += STRIDE)
      if (rc_home(&big[k * RC_PAGE]) == r) {
        homes_seen++;
        break;
      }
  RC_CHECK(homes_seen == P || pages < (size_t)P * STRIDE, "the array's sample pages are homed at %d of %d ranks",
           homes_seen, P);
  size_t n = 0;
  for (size_t k = 0; k < pages; k += STRIDE, n++)
    if ((int)(n % (size_t)P) == me) wr(&big[k * RC_PAGE + 8 * (n % 512)], tag(k));
  mw_barrier(&bar);
  n = 0;
  for (size_t k = 0; k < pages; k += STRIDE, n++) {
    const unsigned char *pg = &big[k * RC_PAGE];
    RC_CHECK(rd(pg + 8 * (n % 512)) == tag(k), "page %zu (%p, home %d, written by rank %d): 0x%llx",
             k, (const void *)pg, rc_home(pg), (int)(n % (size_t)P),
             (unsigned long long)rd(pg + 8 * (n % 512)));
    RC_CHECK(rd(pg + 8 * ((n + 1) % 512)) == 0, "page %zu: a word nobody wrote is not zero", k);
  }
  mw_barrier(&bar);
  rc_ok("big-static");
  mw_finalize();
  return 0;
}
