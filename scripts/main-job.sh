#!/usr/bin/env bash
# The main job: builds Midway, compiles the examples with mwcc, and runs one
# instrumented example, printing what the pass did and what the dirty map saw.
# (It becomes the MM-ec vs MM-rc comparison once the runtime can run several ranks.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
mwcc=build/bin/mwcc
out=build/main-job
mkdir -p "$out"

echo
echo "== mwcc --showme: the compiler command behind 'mwcc -O2 examples/jacobi.c'"
"$mwcc" --showme -O2 examples/jacobi.c -o "$out/jacobi" -lm

echo
echo "== what the midway-instrument pass did to examples/*.c (-O2, -mllvm -stats)"
for src in examples/*.c; do
  echo "-- $src"
  "$mwcc" -O2 -mllvm -stats "$src" -o "$out/$(basename "$src" .c)" -lm 2>&1 |
    grep -E 'midway-instrument' || echo "   (no statistics printed)"
done

echo
echo "== running the instrumented jacobi: what the dirty map saw"
"$out/jacobi" 512 10
