#!/usr/bin/env bash
# Installs what idlescope needs to build and test on Debian 12 (bookworm). The CUDA 13 toolkit
# (headers, nvcc) is expected at /usr/local/cuda; no GPU is needed (tests run on simgpu).
# Installs only what is missing, so a second run costs a second or two.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config file
  libprotobuf-dev protobuf-compiler libabsl-dev libunwind-dev libzstd-dev zstd
  # the report's source lines of native frames (analyzer/read/source_lines.h); the static CLI
  # links libdw.a and libelf.a, and the archives they need: bzip2, xz, zlib
  libdw-dev libelf-dev libbz2-dev liblzma-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev clang-format
  python3 python3-torch strace ltrace sqlite3
  chromium nodejs
  # the CPython peer suite (tests/cpython) and the fuzzers (tests/fuzz: clang's libFuzzer)
  libpython3.11-testsuite clang libclang-rt-dev
  # the Dask driver of a job analyzed in shards (tools/dask_report.py, tests/analyzer/shards.py)
  python3-distributed
  # the Debian 11 root of tests/portability (an older glibc than this system's)
  debootstrap
  # readers of `idlescope diff`'s CI outputs in tests/diff (JUnit XML, Markdown)
  python3-junitparser python3-markdown
)
# chromium renders the HTML report in its tests (tests/html/, through puppeteer-core from npm,
# which the tests' setup installs from tests/html/package-lock.json).

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm: Debian's package, unless the installed nodejs brings its own (NodeSource's does, and it
# conflicts with Debian's npm).
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "idlescope: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
