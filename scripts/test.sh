#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test (googletest
# unit tests, the lit suites of the pass and of mwcc-built programs, the examples).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
