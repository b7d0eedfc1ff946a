#!/usr/bin/env bash
# Every test: the Release build's suite (unit, kernel conformance, PyTorch oracle replay), the
# same unit tests under AddressSanitizer + UndefinedBehaviorSanitizer, and a consumer project
# that finds the installed library with find_package and with pkg-config.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=2

echo "== Release build and tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j$jobs
ctest --test-dir build -j$jobs --output-on-failure

echo "== ASan + UBSan build and unit tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DSTRIDER_SANITIZE=ON \
  -DSTRIDER_BUILD_BENCHMARKS=OFF > /dev/null
cmake --build build-asan -j$jobs
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -j$jobs --output-on-failure -L unit

echo "== Installed-package consumers (find_package and pkg-config)"
prefix="$PWD/build/_install"
rm -rf "$prefix" build/_consumer
cmake --install build --prefix "$prefix" > /dev/null
cmake -S examples/consumer -B build/_consumer -G Ninja -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
cmake --build build/_consumer
build/_consumer/consumer
pcdir=$(dirname "$(find "$prefix" -name strider.pc | head -n 1)")
g++ -O2 examples/consumer/main.cpp $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs strider) \
  -o build/_consumer/consumer_pkgconfig
build/_consumer/consumer_pkgconfig
echo "all test stages passed"
