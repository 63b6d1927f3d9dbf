/* accounting.c — what the MM-ec pattern costs in messages and bytes, checked exactly.
 *
 *   mwrun -n P [--stats=json:FILE] accounting [--n N]
 *
 * Midway's matrix multiply with entry consistency (the paper's MM-ec, Table 1): rank 0,
 * the manager, fills A and B holding their locks exclusively; each worker r (1..P-1)
 * acquires lock_B and lock_A[r] non-exclusively, computes its rows of C, and crosses the
 * terminating barrier `done`, to which C is bound, so that its rows reach rank 0 and
 * nothing comes back. Then (outside what MM-ec needs) every rank crosses `gather`, a
 * barrier bound to an array of per-rank statistics, so that rank 0 sees everyone's
 * figures and no message of the pattern is still in flight when the ranks finish.
 *
 * What each rank checks about its own figures over the workers' phase (mw_stats_get,
 * taken between two crossings of the start barrier and after `done`; mw_stats_reset is
 * not collective, so no reset is used):
 *   worker r   payload received == bytes of B + bytes of A's rows r   (data sent once,
 *                                                                    only what was written)
 *              payload sent     == bytes of C's rows r
 *              2 acquires, both remote; 1 barrier crossing
 *   rank 0     payload sent     == (P-1) x bytes of B + bytes of A
 *              payload received == bytes of C; no acquires
 * and rank 0, with everyone's figures gathered: payload sent == payload received over the
 * job, and at most 3 messages per remote acquire (request, forward, grant) plus 2 per
 * barrier arrival (arrival, release) plus transport acknowledgements.
 *
 * check_accounting.py runs this under mwrun --stats=json:FILE and checks the per-kind
 * counts (lock, grant, barrier) of every rank over the whole run.
 *
 * The result is checked too: C must equal the product computed sequentially by rank 0.
 * Exits 1 naming the rank and the figure on any mismatch.
 */
#include <inttypes.h>
#include <midway.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 128
#define MAXP 64

/* n x n matrices, row-major with stride n (rows contiguous, whatever n is) */
MW_SHARED _Alignas(4096) float A[MAXN * MAXN];
MW_SHARED _Alignas(4096) float B[MAXN * MAXN];
MW_SHARED _Alignas(4096) float C[MAXN * MAXN];
MW_SHARED mw_lock_t lock_B;
MW_SHARED mw_lock_t lock_A[MAXP];
MW_SHARED mw_barrier_t start; /* nothing bound */
MW_SHARED mw_barrier_t done;  /* C             */
MW_SHARED mw_barrier_t gather;
/* Bound to gather, on pages of their own: a page that holds bound data and unbound data
 * (here, barrier objects) is also a release-consistent page, fetched at its first touch,
 * and that fetch would show in the figures. */
#define PAGE 4096
MW_SHARED _Alignas(PAGE) union {
  mw_stats_t slot[MAXP];
  char whole_pages[(sizeof(mw_stats_t) * MAXP + PAGE - 1) / PAGE * PAGE];
} phase;
#define phase_stats phase.slot

static float ref[MAXN * MAXN];
static int n = 64, rank, nprocs, workers, failures;

static int row_lo(int r) { return (r - 1) * n / workers; } /* worker r's rows of A and C */
static int row_hi(int r) { return r * n / workers; }

static void multiply_rows(float *dst, int lo, int hi) {
  for (int i = lo; i < hi; i++)
    for (int j = 0; j < n; j++) {
      float s = 0;
      for (int k = 0; k < n; k++) s += A[i * n + k] * B[k * n + j];
      dst[i * n + j] = s;
    }
}

static void expect(const char *what, int who, uint64_t got, uint64_t want) {
  if (got == want) {
    printf("accounting: rank %d: ok   %-34s %" PRIu64 "\n", who, what, got);
    return;
  }
  printf("accounting: rank %d: FAIL %-34s %" PRIu64 ", expected %" PRIu64 "\n", who, what, got, want);
  failures++;
}

static void expect_le(const char *what, uint64_t got, uint64_t bound) {
  if (got <= bound) {
    printf("accounting: job:    ok   %-34s %" PRIu64 " <= %" PRIu64 "\n", what, got, bound);
    return;
  }
  printf("accounting: job:    FAIL %-34s %" PRIu64 ", more than %" PRIu64 "\n", what, got, bound);
  failures++;
}

static mw_stats_t minus(const mw_stats_t *a, const mw_stats_t *b) {
  mw_stats_t d = *a;
  d.msgs_sent -= b->msgs_sent;
  d.msgs_received -= b->msgs_received;
  d.payload_bytes_sent -= b->payload_bytes_sent;
  d.payload_bytes_received -= b->payload_bytes_received;
  d.protocol_bytes_sent -= b->protocol_bytes_sent;
  d.protocol_bytes_received -= b->protocol_bytes_received;
  d.lock_acquires_local -= b->lock_acquires_local;
  d.lock_acquires_remote -= b->lock_acquires_remote;
  d.barrier_crossings -= b->barrier_crossings;
  d.page_faults -= b->page_faults;
  d.rejected_messages -= b->rejected_messages;
  d.elapsed_seconds -= b->elapsed_seconds;
  d.acquire_wait_seconds -= b->acquire_wait_seconds;
  d.barrier_wait_seconds -= b->barrier_wait_seconds;
  d.fault_wait_seconds -= b->fault_wait_seconds;
  return d;
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  rank = mw_rank();
  nprocs = mw_nprocs();
  for (int i = 1; i + 1 < argc; i += 2)
    if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
  workers = nprocs - 1;
  if (nprocs < 2 || nprocs > MAXP || n < workers || n > MAXN) {
    fprintf(stderr, "usage: mwrun -n P (2..%d) accounting [--n N (P-1..%d)]\n", MAXP, MAXN);
    return 2;
  }
  const uint64_t row_bytes = (uint64_t)n * sizeof(float);
  const uint64_t b_bytes = (uint64_t)n * row_bytes, a_bytes = b_bytes, c_bytes = b_bytes;

  /* The start-up pattern: the same bindings on every rank, before anyone acquires. */
  mw_bind(&lock_B, B, (size_t)b_bytes);
  for (int r = 1; r <= workers; r++)
    for (int i = row_lo(r); i < row_hi(r); i++) mw_bind(&lock_A[r], &A[i * n], row_bytes);
  for (int i = 0; i < n; i++) mw_barrier_bind(&done, &C[i * n], row_bytes);
  mw_barrier_bind(&gather, &phase, sizeof phase);

  if (rank == 0) { /* the input: written under the locks, exclusively */
    mw_acquire(&lock_B, MW_EXCLUSIVE);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) B[i * n + j] = (float)((i * 7 + j * 3) % 11) - 5.0f;
    mw_release(&lock_B);
    for (int r = 1; r <= workers; r++) {
      mw_acquire(&lock_A[r], MW_EXCLUSIVE);
      for (int i = row_lo(r); i < row_hi(r); i++)
        for (int j = 0; j < n; j++) A[i * n + j] = (float)((i * 5 + j * 13) % 17) * 0.25f;
      mw_release(&lock_A[r]);
    }
  }

  /* Crossing `start` twice: after the first, the input is written and every message of
   * the set-up has arrived; the figures count from there, and the second crossing keeps
   * any worker's request from reaching rank 0 before rank 0 has read its own. */
  mw_stats_t before, after;
  mw_barrier(&start);
  mw_stats_get(&before);
  mw_barrier(&start);
  if (rank > 0) {
    mw_acquire(&lock_B, MW_NONEXCLUSIVE);
    mw_acquire(&lock_A[rank], MW_NONEXCLUSIVE);
    multiply_rows(C, row_lo(rank), row_hi(rank));
    mw_release(&lock_A[rank]);
    mw_release(&lock_B);
  }
  mw_barrier_final(&done);
  mw_stats_t d;
  if (rank > 0) { /* a worker's part ends here */
    mw_stats_get(&after);
    d = minus(&after, &before);
    /* Its figures to rank 0, through a barrier bound to them. Rank 0 writes no figures
     * of its own there: a worker's release carries the other workers' figures only. */
    phase_stats[rank] = d;
  }
  mw_barrier(&gather);
  if (rank == 0) { /* rank 0's phase ends once the workers' figures are in */
    mw_stats_get(&after);
    d = minus(&after, &before);
  }
  const uint64_t slot = sizeof phase_stats[0];

  printf("accounting: rank %d: msgs sent %" PRIu64 " received %" PRIu64 ", payload bytes sent %" PRIu64
         " received %" PRIu64 ", protocol bytes sent %" PRIu64 " received %" PRIu64
         ", acquires %" PRIu64 " remote %" PRIu64 " local, barriers %" PRIu64 "\n",
         rank, d.msgs_sent, d.msgs_received, d.payload_bytes_sent, d.payload_bytes_received,
         d.protocol_bytes_sent, d.protocol_bytes_received, d.lock_acquires_remote,
         d.lock_acquires_local, d.barrier_crossings);
  if (rank > 0) {
    uint64_t mine = (uint64_t)(row_hi(rank) - row_lo(rank)) * row_bytes;
    expect("payload bytes received (B + A rows)", rank, d.payload_bytes_received, b_bytes + mine);
    expect("payload bytes sent (C rows)", rank, d.payload_bytes_sent, mine);
    expect("remote acquires", rank, d.lock_acquires_remote, 2);
    expect("local acquires", rank, d.lock_acquires_local, 0);
    expect("barrier crossings (start, done)", rank, d.barrier_crossings, 2);
  } else {
    /* the grants; then the workers' figures in, and each release with the others' */
    expect("payload sent ((P-1) B + A + figures)", rank, d.payload_bytes_sent,
           (uint64_t)workers * b_bytes + a_bytes + (uint64_t)workers * (uint64_t)(workers - 1) * slot);
    expect("payload received (C + figures)", rank, d.payload_bytes_received,
           c_bytes + (uint64_t)workers * slot);
    expect("acquires", rank, d.lock_acquires_remote + d.lock_acquires_local, 0);
    expect("barrier crossings (start, done, gather)", rank, d.barrier_crossings, 3);
  }

  if (rank == 0) { /* the result, against a sequential product */
    multiply_rows(ref, 0, n);
    int bad = 0;
    for (int i = 0; i < n && !bad; i++)
      for (int j = 0; j < n; j++)
        if (C[i * n + j] != ref[i * n + j]) {
          int w = 1;
          while (row_hi(w) <= i) w++;
          printf("accounting: rank 0: FAIL C[%d][%d] = %g, expected %g (a row of worker %d)\n", i, j,
                 (double)C[i * n + j], (double)ref[i * n + j], w);
          bad = 1;
          failures++;
          break;
        }
    if (!bad) printf("accounting: rank 0: ok   C = A x B (%dx%d)\n", n, n);
    /* For check_accounting.py, which checks the whole run's figures per kind. */
    printf("accounting: shape n=%d ranks=%d row_bytes=%" PRIu64 " slot=%" PRIu64 "\n", n, nprocs,
           row_bytes, slot);

    /* The workers' figures, as the gather barrier brought them. */
    mw_stats_t t;
    memset(&t, 0, sizeof t);
    for (int r = 1; r < nprocs; r++) {
      t.msgs_sent += phase_stats[r].msgs_sent;
      t.payload_bytes_sent += phase_stats[r].payload_bytes_sent;
      t.payload_bytes_received += phase_stats[r].payload_bytes_received;
      t.lock_acquires_remote += phase_stats[r].lock_acquires_remote;
    }
    printf("accounting: job: workers sent %" PRIu64 " messages, rank 0 %" PRIu64 "; %" PRIu64
           " payload bytes moved (matrices A+B+C: %" PRIu64 ")\n",
           t.msgs_sent, d.msgs_sent, t.payload_bytes_received + t.payload_bytes_sent,
           a_bytes + b_bytes + c_bytes);
    expect("workers' payload received (P-1) B + A", 0, t.payload_bytes_received, (uint64_t)workers * b_bytes + a_bytes);
    expect("workers' payload sent (C)", 0, t.payload_bytes_sent, c_bytes);
    expect("workers' remote acquires", 0, t.lock_acquires_remote, 2 * (uint64_t)workers);
    /* Per remote acquire: request, forward, grant. Per worker: start's arrival and
     * release, done's arrival, gather's arrival and release (at most: on shm a crossing
     * with nothing to move goes through the ranks' shared page instead). A rendezvous
     * acknowledgement for each message over the eager limit: at most one per grant and
     * per arrival at `done`. */
    uint64_t msgs = 3 * t.lock_acquires_remote + 5 * (uint64_t)workers;
    uint64_t acks = t.lock_acquires_remote + (uint64_t)workers;
    expect_le("messages sent, all ranks", t.msgs_sent + d.msgs_sent, msgs + acks);
  }
  mw_finalize();
  if (failures) {
    printf("accounting: rank %d: %d FAILURES\n", rank, failures);
    return 1;
  }
  return 0;
}
