/* A Midway program whose ranks behave as a launch test asks (see launch_test.cpp):
 *
 *   probe [--pids DIR] [--job-id FILE] [--grandchild] [--ignore-term] ACTION [ARGS]
 *
 *   hello               print "rank R of N", leave
 *   env                 print what mwrun told the rank (MW_MODEL, MW_JOB_DIR, ...), leave
 *   exit R CODE         rank R exits with CODE after mw_init; the others wait in mw_finalize
 *   signal R SIG        rank R kills itself with SIG; the others wait in mw_finalize
 *   signal-sleep R SIG  as signal, while the others sleep instead
 *   sleep               every rank sleeps after mw_init (to be stopped from outside)
 *   late R SECONDS      rank R sleeps before mw_init
 *   provider R PROV     rank R asks for provider PROV (MW_PROVIDER): its endpoint cannot
 *                       reach the others', and the job stops in mw_init
 *   no-finalize R       rank R returns from main without mw_finalize
 *   barriers N MS       cross N barriers, sleeping MS ms before each (a job that waits on
 *                       its peers all along, for the liveness tests); rank 0 prints "crossed N"
 *   phases              mark the phases input, compute and output (sleeping 10, 30
 *                       and 10 ms in them), then print the rank's mw_stats_get figures
 *
 *   --pids DIR     each rank writes its pid to DIR/rank.<R> (and its child's to
 *                  DIR/child.<R>), so that a test can check that none survives
 *   --job-id FILE  rank 0 writes the job's id (MW_JOB_ID, which names its doorbell
 *                  page) to FILE
 *   --grandchild   each rank first starts a child process that sleeps
 *   --ignore-term  ranks ignore SIGTERM, so that only SIGKILL stops them
 *
 * Built with -DPROBE_SHARED_BYTES=N (shared data of another size) or -DPROBE_VARIANT
 * (other code, same data) for the tests of ranks that run different binaries. */
#include <midway.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* The probe is linked as mwcc links but compiled by plain clang (the launch tests build
 * without the pass too, MIDWAY_ONLY_RUNTIME): it marks no stores, and needs none, as
 * no rank reads what another wrote. mw_init refuses a program linked by mwcc whose code
 * the pass never saw; the probe says, as the pass would, which of its functions are
 * Midway's. */
__attribute__((section(MW_DEFINED_SECTION), used)) static const char probe_defined[] = "main\n";

#ifndef PROBE_SHARED_BYTES
#define PROBE_SHARED_BYTES 4096
#endif

MW_SHARED char shared_data[PROBE_SHARED_BYTES] __attribute__((aligned(16)));
/* The barrier of "barriers": the last bytes of shared_data, so that the layout the launch
 * tests compare is the data's alone. */
#define probe_barrier (*(mw_barrier_t *)(shared_data + PROBE_SHARED_BYTES - sizeof(mw_barrier_t)))

static void write_pid(const char *dir, const char *what, int rank, pid_t pid) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.%d", dir, what, rank);
  FILE *f = fopen(path, "w");
  if (!f || fprintf(f, "%d\n", (int)pid) < 0 || fclose(f) != 0) {
    perror(path);
    exit(2);
  }
}

static int arg_int(int argc, char **argv, int i) {
  if (i >= argc) {
    fprintf(stderr, "probe: %s needs more arguments\n", argv[0]);
    exit(2);
  }
  return atoi(argv[i]);
}

int main(int argc, char **argv) {
  const char *pids = NULL, *secret = NULL;
  int grandchild = 0, i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    if (!strcmp(argv[i], "--pids") && i + 1 < argc)
      pids = argv[++i];
    else if (!strcmp(argv[i], "--job-id") && i + 1 < argc)
      secret = argv[++i];
    else if (!strcmp(argv[i], "--grandchild"))
      grandchild = 1;
    else if (!strcmp(argv[i], "--ignore-term"))
      signal(SIGTERM, SIG_IGN);
  }
  const char *action = i < argc ? argv[i] : "hello";
  pid_t child = 0;
  if (grandchild && (child = fork()) == 0) {
    /* Not holding the job's output open: a test reading it to the end would wait for
     * this process when it outlives the job (a killed mwrun). */
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(1);
    sleep(60);
    _exit(0);
  }

  /* The rank the launcher gave, before mw_init: a rank must have recorded its pid
   * before any other can get past mw_init and fail. */
  const char *launcher_rank = getenv("MW_RANK") ? getenv("MW_RANK") : getenv("PMIX_RANK");
  int early_rank = launcher_rank ? atoi(launcher_rank) : 0;
  if (pids) {
    write_pid(pids, "rank", early_rank, getpid());
    if (child) write_pid(pids, "child", early_rank, child);
  }
  if (secret && early_rank == 0 && getenv("MW_JOB_ID")) {
    FILE *f = fopen(secret, "w");
    if (!f || fprintf(f, "%s\n", getenv("MW_JOB_ID")) < 0 || fclose(f) != 0) {
      perror(secret);
      exit(2);
    }
  }
  if (!strcmp(action, "late") && early_rank == arg_int(argc, argv, i + 1))
    sleep((unsigned)arg_int(argc, argv, i + 2));
  if (!strcmp(action, "provider") && early_rank == arg_int(argc, argv, i + 1)) {
    if (i + 2 >= argc) {
      fprintf(stderr, "probe: provider needs a rank and a provider\n");
      exit(2);
    }
    setenv("MW_PROVIDER", argv[i + 2], 1);
  }

  mw_init(&argc, &argv);
  int rank = mw_rank(), nprocs = mw_nprocs();
  /* A store to shared data, where it costs no message: rank 0 homes the first page (any
   * other rank's first touch would fetch the page from it, which tests of the
   * statistics would count). */
  if (rank == 0) shared_data[0] = 1;

  if (!strcmp(action, "env")) {
    const char *vars[] = {"MW_MODEL", "MW_PROVIDER", "MW_STATS", "MW_JOB_ID", "MW_JOB_DIR"};
    for (size_t v = 0; v < sizeof vars / sizeof *vars; v++)
      printf("rank %d %s=%s\n", rank, vars[v], getenv(vars[v]) ? getenv(vars[v]) : "");
  } else if (!strcmp(action, "exit") && rank == arg_int(argc, argv, i + 1)) {
    exit(arg_int(argc, argv, i + 2));
  } else if (!strncmp(action, "signal", 6)) {
    if (rank == arg_int(argc, argv, i + 1)) {
      struct rlimit none = {0, 0};
      setrlimit(RLIMIT_CORE, &none); /* a crash test leaves no core file behind */
      raise(arg_int(argc, argv, i + 2));
    } else if (!strcmp(action, "signal-sleep")) {
      sleep(60);
    }
  } else if (!strcmp(action, "barriers")) {
    const int n = arg_int(argc, argv, i + 1), ms = arg_int(argc, argv, i + 2);
    for (int k = 0; k < n; k++) {
      usleep((useconds_t)ms * 1000);
      mw_barrier(&probe_barrier);
    }
    if (rank == 0) printf("crossed %d\n", n);
  } else if (!strcmp(action, "sleep")) {
    sleep(60);
  } else if (!strcmp(action, "no-finalize") && rank == arg_int(argc, argv, i + 1)) {
    return 0;
  } else if (!strcmp(action, "phases")) {
    const char *phases[] = {"input", "compute", "output"};
    const useconds_t naps[] = {10000, 30000, 10000};
    for (int p = 0; p < 3; p++) {
      mw_phase_begin(phases[p]);
      usleep(naps[p]);
      mw_phase_end(phases[p]);
    }
    mw_stats_t s;
    mw_stats_get(&s);
    printf("rank %d msgs_sent=%llu acquires=%llu elapsed>=compute:%d\n", rank,
           (unsigned long long)s.msgs_sent,
           (unsigned long long)(s.lock_acquires_local + s.lock_acquires_remote),
           s.elapsed_seconds >= mw_phase_seconds("compute"));
  }
#ifdef PROBE_VARIANT
  printf("variant ");
#endif
  printf("rank %d of %d\n", rank, nprocs);
  fflush(stdout);
  mw_finalize();
  return 0;
}
