#!/usr/bin/env bash
# The installed Midway, as a user meets it: `cmake --install` into a prefix, the prefix
# moved elsewhere, and one example (MM-ec, which checks its product against a sequential
# one: a store the pass did not mark makes it fail) built three ways from the moved
# tree, each run under the installed mwrun:
#   1. the installed mwcc;
#   2. a CMake project: find_package(Midway) and Midway::Midway (and midway_add_executable);
#   3. plain clang with pkg-config's flags.
# Also: nothing installed names the build tree or the first prefix, and the CMake
# package refuses a compiler other than clang 19, saying what to do.
#
# usage: install_test.sh BUILD_DIR SOURCE_DIR C_COMPILER
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
cc=$3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mw-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

echo "== cmake --install into P, then P moved to Q"
cmake --install "$build" --prefix "$tmp/P" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "install"; }
mv "$tmp/P" "$tmp/Q"
q=$tmp/Q
for f in bin/mwcc bin/mwrun include/midway.h lib/libmidway.so lib/MidwayInstrument.so \
         lib/midway_exe.o lib/midway.ld lib/cmake/Midway/MidwayConfig.cmake \
         lib/cmake/Midway/MidwayConfigVersion.cmake lib/pkgconfig/midway.pc; do
  [ -e "$q/$f" ] || fail "$f was not installed"
done

echo "== nothing installed names the build tree or the first prefix"
for f in "$q"/bin/mwrun "$q"/lib/*.so*; do
  if readelf -d "$f" | grep -E "RPATH|RUNPATH" | grep -qE "$build|$tmp/P"; then
    readelf -d "$f" | grep -E "RPATH|RUNPATH"
    fail "$f looks for libraries in the build tree or in P"
  fi
done
for f in bin/mwcc lib/cmake/Midway/MidwayConfig.cmake lib/pkgconfig/midway.pc; do
  ! grep -qE "$build|$tmp/P" "$q/$f" || fail "$f names the build tree or P"
done

example=$src/examples/mm_ec.c
run() {  # run NAME BINARY: under the installed mwrun, 2 ranks
  echo "== $1: mwrun -n 2"
  out=$("$q/bin/mwrun" -n 2 --timeout 60 "$2" -n 64 2>&1) || { echo "$out"; fail "$1 did not run"; }
  echo "$out"
  grep -q "result ok" <<<"$out" || fail "$1 did not compute the right product"
}

echo "== 1. mwcc"
"$q/bin/mwcc" -O2 "$example" -o "$tmp/mm_mwcc" -lm
run mwcc "$tmp/mm_mwcc"

echo "== 2. CMake: find_package(Midway)"
mkdir "$tmp/project"
cat > "$tmp/project/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.20)
project(mm_app C)
find_package(Midway 0.1 REQUIRED)
add_executable(mm_target "$example")
target_compile_options(mm_target PRIVATE -O2)
target_link_libraries(mm_target PRIVATE Midway::Midway m)
midway_add_executable(mm_function "$example")
target_link_libraries(mm_function PRIVATE m)
EOF
cmake -S "$tmp/project" -B "$tmp/project/build" -G Ninja -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_PREFIX_PATH="$q" > "$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "configure"; }
cmake --build "$tmp/project/build" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "build"; }
run "CMake (Midway::Midway)" "$tmp/project/build/mm_target"
run "CMake (midway_add_executable)" "$tmp/project/build/mm_function"

echo "== 3. clang with pkg-config"
export PKG_CONFIG_PATH=$q/lib/pkgconfig
pc_cc=$(pkg-config --variable=cc midway)
# shellcheck disable=SC2046  # the flags are words
"$pc_cc" -O2 $(pkg-config --cflags midway) "$example" $(pkg-config --libs midway) -lm \
  -o "$tmp/mm_pkgconfig"
run pkg-config "$tmp/mm_pkgconfig"

echo "== the CMake package refuses another compiler"
if other=$(command -v gcc); then
  if cmake -S "$tmp/project" -B "$tmp/project/build-gcc" -G Ninja -DCMAKE_C_COMPILER="$other" \
       -DCMAKE_PREFIX_PATH="$q" > "$tmp/gcc.log" 2>&1; then
    cat "$tmp/gcc.log"
    fail "find_package(Midway) accepted $other"
  fi
  grep -A12 "Reason given by package" "$tmp/gcc.log"
  tr -s ' \n' ' ' < "$tmp/gcc.log" | grep -q "only clang 19 can load.*compiler is GNU.*CC=clang-19" \
    || fail "the message does not say what is wrong and what to do"
else
  echo "(no gcc here to try)"
fi
echo "PASS"
