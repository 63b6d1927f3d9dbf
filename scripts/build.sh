#!/usr/bin/env bash
# Installs the dependencies (idempotent) and builds Midway into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -Wno-dev > build.log 2>&1 || { cat build.log; exit 1; }
cmake --build build -j"$(nproc)"
