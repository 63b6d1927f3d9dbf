#!/usr/bin/env bash
# Installs Midway's build and test dependencies from Debian packages.
# Idempotent: asks apt only for what is missing, so a second run costs a dpkg query.
set -euo pipefail

packages=(
  cmake ninja-build python3
  clang-19 llvm-19-dev llvm-19-tools libclang-rt-19-dev   # the pass, mwcc, lit/FileCheck, libFuzzer
  libfabric-dev libfabric-bin                             # transport (fi_info, fi_pingpong)
  libpmix-dev openmpi-bin libopenmpi-dev                  # PMIx launch; MPI baseline
  libgtest-dev libgmock-dev libbenchmark-dev              # tests and benchmarks
  nlohmann-json3-dev                                      # mwrun reads the ranks' statistics
  iproute2                                                # netns multi-host tests
  slurmctld slurmd slurm-client                           # srun --mpi=pmix tests (test/slurm)
  m4                                                      # PARMACS programs (annotations/c.m4.midway)
  hyperfine                                               # launch start-up times (bench)
  go-md2man python3-markdown-it                           # man pages from docs/; the docs' sample test
  python3-matplotlib                                      # main job: the MM-ec vs MM-rc plot
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "midway setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
