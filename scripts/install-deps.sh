#!/usr/bin/env bash
# Installs what idlescope needs to build and test on Debian 12 (bookworm). The CUDA 13 toolkit
# (headers, nvcc) is expected at /usr/local/cuda; no GPU is needed (tests run on simgpu).
# Installs only what is missing, so a second run costs a second or two.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config file
  libprotobuf-dev protobuf-compiler libabsl-dev libunwind-dev
  libgtest-dev libgmock-dev libbenchmark-dev clang-format
  python3 python3-torch strace ltrace sqlite3
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
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
