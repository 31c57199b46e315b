#!/bin/bash
# The cpack tarball on an older system: a real Debian 11 (bullseye: glibc 2.31, as Ubuntu 20.04)
# root made with debootstrap, /proc and /dev mounted into it, the tarball unpacked there and run
# inside the chroot (README.md, "Supported systems"):
#   1. LD_PRELOAD=libidlescope.so /bin/echo hello: prints hello, exits 0, writes a trace;
#   2. idlescope run + report on a shell job that writes and fsyncs a file;
#   3. on Debian 11's own python3 (a loop of simgpu copies through ctypes, and checkpoints);
#   4. on a CUDA job of our own (cuda_job.c) on simgpu.
# 3 and 4 use simgpu built with the same glibc floor as the library (tests/portability/
# CMakeLists.txt); without the CUDA parts, 3 does its file I/O only and 4 is left out.
#   old_glibc_test.sh BUILD_DIR SOURCE_DIR WORK_DIR [PORTABLE_SIMGPU_DIR CUDA_JOB]
# Environment: IDLESCOPE_BULLSEYE_ROOT, the root, made when missing and kept (default
# ${XDG_CACHE_HOME:-~/.cache}/idlescope/bullseye); IDLESCOPE_DEBIAN_MIRROR, the archive
# (default: the Debian archive apt uses here). Needs root (chroot, mount) and debootstrap: exit 77
# (skipped) without them.
set -euo pipefail
trap 'echo "FAIL: line $LINENO: $BASH_COMMAND exited $?"' ERR
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) work=$3 simgpu=${4:-} cuda_job=${5:-}
rm -rf "$work" && mkdir -p "$work" && work=$(cd "$work" && pwd)

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (chroot, mount)"; exit 77; fi
if ! command -v debootstrap > /dev/null; then
  echo "SKIP: needs debootstrap (scripts/install-deps.sh installs it)"; exit 77
fi
root=${IDLESCOPE_BULLSEYE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/idlescope/bullseye}
mkdir -p "$(dirname "$root")"
# One user of the root at a time: its mounts and the unpacked tarball are per run.
exec 9> "$root.lock"
flock 9

# The Debian archive apt uses here (deb822 .sources or one-line .list), not -security.
debian_mirror() {
  {
    cat /etc/apt/sources.list.d/*.sources 2> /dev/null | awk '$1 == "URIs:" { print $2 }'
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2> /dev/null |
      awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; break } }'
  } | grep -v -- '-security' | head -1 || true
}

if [ ! -e "$root/.idlescope-complete" ]; then
  mirror=${IDLESCOPE_DEBIAN_MIRROR:-$(debian_mirror)}
  mirror=${mirror:-http://deb.debian.org/debian}
  echo "$ debootstrap --variant=minbase --include=python3 bullseye $root $mirror"
  rm -rf "$root" "$root.partial"
  start=$(date +%s)
  if ! debootstrap --variant=minbase --include=python3 bullseye "$root.partial" "$mirror" \
      > "$work/debootstrap.log" 2>&1; then
    tail -20 "$work/debootstrap.log"
    echo "FAIL: debootstrap could not make the Debian 11 root"; exit 1
  fi
  touch "$root.partial/.idlescope-complete"
  mv "$root.partial" "$root"
  echo "made in $(($(date +%s) - start)) s"
fi

tree=/opt/idlescope-test  # inside the root
mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2> /dev/null || umount -l "${mounted[i]}" || true
  done
  rm -rf "${root:?}$tree"
}
trap cleanup EXIT
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
mount --bind /dev "$root/dev" && mounted+=("$root/dev")

# The tarball, as a user gets it.
cpack -G TGZ --config "$build/CPackConfig.cmake" -B "$work/package" > "$work/cpack.log"
tarball=$(ls "$work"/package/idlescope-*.tar.gz)
rm -rf "${root:?}$tree" && mkdir -p "$root$tree"
tar -xzf "$tarball" -C "$root$tree" --strip-components=1
cp "$src/tests/portability/job.sh" "$src/tests/portability/job.py" "$root$tree/"
if [ -n "$simgpu" ]; then
  mkdir -p "$root$tree/simgpu" && cp -a "$simgpu"/lib* "$root$tree/simgpu/"
  cp "$cuda_job" "$root$tree/cuda_job"
fi
rm -rf "$root"/tmp/idlescope-test-* && mkdir -p "$root/tmp/idlescope-test-out"
out=/tmp/idlescope-test-out  # inside the root

# A command inside the root, with a clean environment; shown with its output.
in_root() {
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 "$@"
}
shown() {
  echo "(debian11)\$ $*"
  in_root sh -c "$*" 2>&1 | tee "$work/last.txt"
  return "${PIPESTATUS[0]}"
}
# The causes a JSON report names.
causes_of() {
  in_root "$tree/bin/idlescope" report --quiet --format json "$1" 2> /dev/null |
    grep -oE '"cause": "[a-z_]+"' | sort -u | cut -d'"' -f4 | tr '\n' ' '
}

glibc=$(in_root ldd --version | sed -n 1p)
echo "root: $root ($glibc)"
grep -q ' 2\.31$' <<< "$glibc" || { echo "FAIL: the root's glibc is not 2.31"; exit 1; }

echo "== 1. the library preloaded into /bin/echo"
shown "LD_PRELOAD=$tree/lib/libidlescope.so IDLESCOPE_OUT=$out/echo /bin/echo hello; echo \"exit \$?\""
[ "$(cat "$work/last.txt")" = $'hello\nexit 0' ] || { echo "FAIL: not hello, exit 0"; exit 1; }
shown "ls $out/echo"
ls "$root$out"/echo/*.idlescope > /dev/null || { echo "FAIL: no trace from /bin/echo"; exit 1; }

echo "== 2. idlescope run + report: a shell job that writes and fsyncs a file"
shown "$tree/bin/idlescope run -o $out/sh -- /bin/sh $tree/job.sh $out/data"
shown "$tree/bin/idlescope report $out/sh | head -12"
for f in "$root$out"/sh/*.idlescope; do in_root "$tree/bin/idlescope" dump "${f#"$root"}"; done \
  > "$work/sh.dump"
grep -q '"fsync"' "$work/sh.dump" || { echo "FAIL: the job's fsync is not in its trace"; exit 1; }
grep -q 'FILE_WRITE.*path="'"$out"'/data"' "$work/sh.dump" ||
  { echo "FAIL: the job's writes are not in its trace"; exit 1; }
causes=$(causes_of "$out/sh")
echo "causes: $causes"
grep -qw no_gpu_work <<< "$causes" || { echo "FAIL: the shell job's report is wrong"; exit 1; }

# simgpu's libraries, and the kernel's time (2 ms: the copies, 6.4 ms, dominate the idle time).
cuda_env="LD_LIBRARY_PATH=$tree/simgpu SIMGPU_KERNEL_US=train_step=2000"

echo "== 3. Debian 11's python3"
env=""
expect="no_gpu_work"
if [ -n "$simgpu" ]; then env="$cuda_env JOB_CUDA=1" expect="host_gpu_transfer checkpointing"; fi
shown "$env $tree/bin/idlescope run -o $out/py -- python3 $tree/job.py $out/py-model.pt"
grep -q '^job.py: 8 steps on Python 3\.9' "$work/last.txt" ||
  { echo "FAIL: the Python job did not run to its end"; exit 1; }
shown "$tree/bin/idlescope report $out/py | head -20"
causes=$(causes_of "$out/py")
echo "causes: $causes"
for cause in $expect; do
  grep -qw "$cause" <<< "$causes" || { echo "FAIL: the Python job's report lacks $cause"; exit 1; }
done

if [ -n "$simgpu" ]; then
  echo "== 4. a CUDA job of our own on simgpu"
  shown "$cuda_env $tree/bin/idlescope run -o $out/cuda -- $tree/cuda_job $out/cuda-model.pt"
  grep -q '^cuda_job: 8 steps' "$work/last.txt" || { echo "FAIL: the CUDA job failed"; exit 1; }
  shown "$tree/bin/idlescope report $out/cuda | head -20"
  causes=$(causes_of "$out/cuda")
  echo "causes: $causes"
  for cause in host_gpu_transfer checkpointing; do
    grep -qw "$cause" <<< "$causes" || { echo "FAIL: the CUDA job's report lacks $cause"; exit 1; }
  done
fi
echo ok
