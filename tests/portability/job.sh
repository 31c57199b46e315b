#!/bin/sh
# The shell job of old_glibc_test.sh: writes a file and fsyncs it (coreutils' `sync FILE` is
# fsync(2) on that file), then reads it back.
set -e
head -c 8388608 /dev/urandom > "$1"
sync "$1"
cat "$1" > /dev/null
echo "job.sh: wrote and synced $1"
