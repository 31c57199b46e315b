#!/bin/bash
# The oldest systems the shipped binaries run on (README.md, "Supported systems"): fails when an
# ELF file asks its dynamic loader for a symbol version newer than the oldest supported system
# has, and lists the symbols that ask for it. The ceilings are CentOS 7's (x86_64):
#   GLIBC_2.17 (glibc 2.17), GLIBCXX_3.4.19 and CXXABI_1.3.7 (libstdc++ of GCC 4.8.5),
#   GCC_4.8.0 (libgcc_s);
# GLIBC_PRIVATE and named glibc ABI markers (GLIBC_ABI_DT_RELR, glibc 2.36) fail too. A statically
# linked file asks for nothing. cmake/glibc_floor.cmake keeps the libraries there; the CLI is
# static (cmake/static_cli.cmake).
#   version_ceiling_test.sh ELF_FILE...
set -euo pipefail
trap 'echo "FAIL: line $LINENO: $BASH_COMMAND exited $?"' ERR

# Prints "WORD major.minor.patch" for each version a file needs (readelf's .gnu.version_r).
version_needs() {
  readelf -V -W "$1" | awk '/\.gnu\.version_r/ { needs = 1 } needs && /Name:/ { print $3 }' |
    sort -u
}

# Whether version a.b.c > x.y.z.
newer_than() {
  [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -1)" = "$1" ]
}

status=0
for file in "$@"; do
  [ -e "$file" ] || { echo "FAIL: $file does not exist"; exit 1; }
  if ! readelf -lW "$file" | grep -E 'INTERP|DYNAMIC' > /dev/null; then
    echo "$file: statically linked, needs no symbol version"
    continue
  fi
  bad=() highest=""
  while read -r need; do
    case "$need" in
      GLIBC_[0-9]*) v=${need#GLIBC_} ceiling=2.17 ;;
      GLIBCXX_[0-9]*) v=${need#GLIBCXX_} ceiling=3.4.19 ;;
      CXXABI_[0-9]*) v=${need#CXXABI_} ceiling=1.3.7 ;;
      GCC_[0-9]*) v=${need#GCC_} ceiling=4.8.0 ;;
      GLIBC_*) bad+=("$need"); continue ;;  # GLIBC_PRIVATE, GLIBC_ABI_*
      *) continue ;;  # a version of another library (simgpu's libcudart.so.13)
    esac
    if newer_than "$v" "$ceiling"; then
      bad+=("$need")
    fi
    case "$need" in GLIBC_[0-9]*)
      if [ -z "$highest" ] || newer_than "$v" "$highest"; then highest=$v; fi ;;
    esac
  done < <(version_needs "$file")
  if [ ${#bad[@]} -eq 0 ]; then
    echo "$file: newest glibc version needed GLIBC_${highest:-none}, nothing above the ceilings"
    continue
  fi
  status=1
  echo "FAIL: $file needs ${bad[*]}, above what the oldest supported system has:"
  for need in "${bad[@]}"; do
    objdump -T "$file" | awk -v v="($need)" -v n="$need" '/\*UND\*/ && index($0, v) { print "  " $NF "@" n }'
  done
done
exit $status
