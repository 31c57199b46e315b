#!/usr/bin/env bash
# Builds idlescope and runs every test: the README's test command, and what CI runs (.ci/run).
#   1. install missing dependencies (apt)
#   2. check formatting (clang-format, .clang-format at the root)
#   3. build with -Wall -Wextra -Werror and run the whole ctest suite (unit, integration on
#      simgpu, end-to-end, benchmarks that print their figures)
#   4. build again with AddressSanitizer + UBSan and run the unit tests
#   5. build the threaded tests with ThreadSanitizer and run them (label threaded: the recorder's
#      rings and tables across threads, the preload library's fork, thread and signal tests)
#   6. build the libFuzzer targets with clang and fuzz the reader and the analyzer for
#      IDLESCOPE_FUZZ_SECONDS (default 60) each (tests/fuzz)
# The CPython peer suite (tests/cpython) runs its quick selection in step 3 (label cpython, 14
# modules, under a minute); `scripts/test.sh --full` also runs the full selection (label
# cpython_full, 23 modules, 3398 tests: about 10 minutes on 2 cores). Label loaded_predictions
# (the whole prediction table beside two CPU hogs, tests/e2e/CMakeLists.txt) and label
# noise_pairs (idlescope diff's gate on 60 single-run pairs, tests/diff/diff_noise.py) are not
# run here.
# Build trees: build/, build-asan/, build-tsan/ and build-fuzz/ (reused when present).
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
ctest --test-dir build -j "$jobs" --output-on-failure --timeout 600 -LE "cpython_full|loaded_predictions|noise_pairs"
if [ "${1:-}" = "--full" ]; then
  echo "== CPython's regression tests, full selection, bare vs traced"
  ctest --test-dir build -L cpython_full --output-on-failure -V
fi

echo "== AddressSanitizer + UBSan: unit tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DIDLESCOPE_SANITIZE=ON \
  -DIDLESCOPE_WITH_NVCC=OFF >/dev/null
cmake --build build-asan -j "$jobs"
ctest --test-dir build-asan -j "$jobs" -L unit --output-on-failure --timeout 600

echo "== ThreadSanitizer: threaded tests"
# For every TSan-built program, those the build runs too (gtest's test discovery lists a test
# binary's tests after linking it): the writer thread is not joined at exit, by design
# (tests/tsan.supp); ctest gives the tests the same options (tests/CMakeLists.txt).
export TSAN_OPTIONS="die_after_fork=0 suppressions=$PWD/tests/tsan.supp"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIDLESCOPE_SANITIZE=thread \
  -DIDLESCOPE_WITH_NVCC=OFF >/dev/null
cmake --build build-tsan -j "$jobs" --target threaded_tests
ctest --test-dir build-tsan -j "$jobs" -L threaded --output-on-failure --timeout 900

echo "== fuzzing (clang, libFuzzer + ASan + UBSan): ${IDLESCOPE_FUZZ_SECONDS:-60} s per target"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DIDLESCOPE_SANITIZE=ON -DIDLESCOPE_FUZZ=ON \
  -DIDLESCOPE_WITH_CUDA=OFF -DIDLESCOPE_WITH_NVCC=OFF \
  -DIDLESCOPE_FUZZ_SECONDS="${IDLESCOPE_FUZZ_SECONDS:-60}" >/dev/null
cmake --build build-fuzz -j "$jobs" --target fuzz_targets
# Each target prints its executions and coverage (cov: edges, ft: features), and on a crash the
# input and how to replay it, on lines that start with its name.
ctest --test-dir build-fuzz -j "$jobs" -L fuzz -V | grep -E 'fuzz_[a-z_]+: |tests (passed|failed)'
