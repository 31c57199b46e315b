#!/usr/bin/env bash
# Builds idlescope and runs every test: the README's test command, and what CI runs (.ci/run).
#   1. install missing dependencies (apt)
#   2. check formatting (clang-format, .clang-format at the root)
#   3. build with -Wall -Wextra -Werror and run the whole ctest suite (unit, integration on
#      simgpu, end-to-end, benchmarks that print their figures)
#   4. build again with AddressSanitizer + UBSan and run the unit tests
# Build trees: build/ and build-asan/ (reused when present).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${IDLESCOPE_JOBS:-$(nproc)}

scripts/install-deps.sh

echo "== clang-format"
mapfile -t sources < <(git ls-files '*.cc' '*.h' '*.cu' '*.c' | grep -v '^third_party/')
if [ ${#sources[@]} -gt 0 ]; then
  clang-format --dry-run --Werror "${sources[@]}"
fi
echo "formatting ok (${#sources[@]} files)"

echo "== build (-Werror) and test"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build -j "$jobs" --output-on-failure --timeout 600

echo "== AddressSanitizer + UBSan: unit tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DIDLESCOPE_SANITIZE=ON \
  -DIDLESCOPE_WITH_NVCC=OFF >/dev/null
cmake --build build-asan -j "$jobs"
ctest --test-dir build-asan -j "$jobs" -L unit --output-on-failure --timeout 600
