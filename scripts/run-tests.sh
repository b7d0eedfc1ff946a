#!/usr/bin/env bash
# Every test: the Release build's suite (unit, kernel conformance, PyTorch oracle replay,
# distributed under mpirun); a clang build without MPI under AddressSanitizer +
# UndefinedBehaviorSanitizer that runs the unit tests and fuzzes the file parsers; then, against
# the installed library, every C++ block of the documentation (scripts/check-doc-snippets.sh)
# and a consumer project found with find_package and with pkg-config, each built with g++ and
# clang++ under -Wall -Wextra -Werror.
# FUZZ_SECONDS (default 60) bounds each fuzz target's run.
set -euo pipefail
cd "$(dirname "$0")/.."
# CI (CI=true, as scripts/fresh-debian.sh sets) also installs Slurm for its one-machine cluster test;
# elsewhere that test is skipped, saying so, unless `scripts/install-deps.sh --slurm` was run.
if [ "${CI:-}" = true ]; then scripts/install-deps.sh --slurm; else scripts/install-deps.sh; fi
jobs=2
fuzz_seconds=${FUZZ_SECONDS:-60}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none

echo "== Release build and tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j$jobs
ctest --test-dir build -j$jobs --output-on-failure

echo "== clang ASan + UBSan build without MPI: unit tests, then each fuzz target for ${fuzz_seconds} s"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" -DSTRIDER_SANITIZE=ON -DSTRIDER_BUILD_FUZZERS=ON -DSTRIDER_WITH_MPI=OFF -DSTRIDER_NATIVE=ON \
  -DSTRIDER_BUILD_BENCHMARKS=OFF > /dev/null
cmake --build build-asan -j$jobs
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -j$jobs --output-on-failure -L unit
scripts/run-fuzzers.sh build-asan "$fuzz_seconds"

echo "== Installed package: documentation snippets, then consumers (find_package and pkg-config) built"
echo "   with g++ and clang++ under -Wall -Wextra -Werror, each run alone and under mpirun -np 2"
prefix="$PWD/build/_install"
rm -rf "$prefix" build/_consumer
cmake --install build --prefix "$prefix" > /dev/null
scripts/check-doc-snippets.sh --build build --prefix "$prefix" -j $jobs
pcdir=$(dirname "$(find "$prefix" -name strider.pc | head -n 1)")
warnings="-Wall -Wextra -Werror"
consumers=()
for cxx in g++ clang++; do
  # find_package: the installed headers come in as system headers.
  cmake -S examples/consumer -B "build/_consumer/cmake-$cxx" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="$warnings" > /dev/null
  cmake --build "build/_consumer/cmake-$cxx"
  consumers+=("build/_consumer/cmake-$cxx/consumer")
  # pkg-config: plain -I, so a warning in any header the program includes fails the build.
  # shellcheck disable=SC2046,SC2086
  "$cxx" -O2 $warnings examples/consumer/main.cpp $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs strider) \
    -o "build/_consumer/consumer-pkgconfig-$cxx"
  consumers+=("build/_consumer/consumer-pkgconfig-$cxx")
done
for exe in "${consumers[@]}"; do
  echo "-- $exe"
  "$exe"
  mpirun --oversubscribe --bind-to none -np 2 "$exe"
done
echo "all test stages passed"
