#!/usr/bin/env bash
# Builds idlescope and runs every test: the README's test command, and what CI runs (.ci/run).
#   1. install missing dependencies (apt)
#   2. check formatting (clang-format, .clang-format at the root)
#   3. build with -Wall -Wextra -Werror and run the whole ctest suite (unit, integration on
#      simgpu, end-to-end, benchmarks that print their figures)
#   4. build again with AddressSanitizer + UBSan and run the unit tests
#   5. build the threaded tests with ThreadSanitizer and run them (label threaded: the recorder's
#      rings and tables across threads, the preload library's fork, thread and signal tests)
# Build trees: build/, build-asan/ and build-tsan/ (reused when present).
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

echo "== ThreadSanitizer: threaded tests"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIDLESCOPE_SANITIZE=thread \
  -DIDLESCOPE_WITH_NVCC=OFF >/dev/null
cmake --build build-tsan -j "$jobs" --target threaded_tests
ctest --test-dir build-tsan -j "$jobs" -L threaded --output-on-failure --timeout 900
