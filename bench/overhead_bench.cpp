// The cost of write detection: each kernel compiled with the midway-instrument pass
// (mwcc -O2) against the same source compiled with plain clang-19 -O2, run in one
// process, interleaved (--benchmark_enable_random_interleaving) and repeated.
// bench/overhead_ratio.py turns the JSON into the ratios docs/PERFORMANCE.md records.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "midway.h"

struct node;
#define DECLARE(v)                                         \
  extern "C" void mm_init_##v(void);                       \
  extern "C" float mm_##v(void);                           \
  extern "C" void jacobi_init_##v(void);                   \
  extern "C" float jacobi_##v(int sweeps);                 \
  extern "C" void chase_init_##v(const int *perm);         \
  extern "C" long chase_walk_##v(struct node *head);       \
  extern "C" struct node *chase_head_##v(const int *perm); \
  extern "C" void fft_init_##v(void);                      \
  extern "C" double fft_##v(void);
DECLARE(plain)
DECLARE(midway)

namespace {

constexpr int kChaseN = 1 << 18;
constexpr int kJacobiSweeps = 20;

const std::vector<int> &permutation() {
  static const std::vector<int> perm = [] {
    std::vector<int> p(kChaseN);
    std::iota(p.begin(), p.end(), 0);
    std::shuffle(p.begin(), p.end(), std::mt19937(42));
    return p;
  }();
  return perm;
}

template <void (*Init)(), float (*Kernel)()>
void BM_mm(benchmark::State &state) {
  Init();
  for (auto _ : state) benchmark::DoNotOptimize(Kernel());
}

template <void (*Init)(), float (*Kernel)(int)>
void BM_jacobi(benchmark::State &state) {
  for (auto _ : state) {
    state.PauseTiming();
    Init();
    state.ResumeTiming();
    benchmark::DoNotOptimize(Kernel(kJacobiSweeps));
  }
}

template <void (*Init)(const int *), long (*Walk)(struct node *), struct node *(*Head)(const int *)>
void BM_chase(benchmark::State &state) {
  Init(permutation().data());
  struct node *head = Head(permutation().data());
  for (auto _ : state) benchmark::DoNotOptimize(Walk(head));
}

// The butterflies change X in place, so each run starts from the same data.
template <void (*Init)(), double (*Kernel)()>
void BM_fft(benchmark::State &state) {
  for (auto _ : state) {
    state.PauseTiming();
    Init();
    state.ResumeTiming();
    benchmark::DoNotOptimize(Kernel());
  }
}

BENCHMARK(BM_mm<mm_init_plain, mm_plain>)->Name("mm/plain")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mm<mm_init_midway, mm_midway>)->Name("mm/midway")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_jacobi<jacobi_init_plain, jacobi_plain>)->Name("jacobi/plain")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_jacobi<jacobi_init_midway, jacobi_midway>)->Name("jacobi/midway")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_chase<chase_init_plain, chase_walk_plain, chase_head_plain>)->Name("chase/plain")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_chase<chase_init_midway, chase_walk_midway, chase_head_midway>)->Name("chase/midway")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fft<fft_init_plain, fft_plain>)->Name("fft/plain")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fft<fft_init_midway, fft_midway>)->Name("fft/midway")->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  mw_finalize();
  return 0;
}
