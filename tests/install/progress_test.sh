#!/bin/bash
# Progress of `idlescope report` on stderr: shown on a terminal for an analysis longer than a
# second (run under script(1), which gives the command a pseudo-terminal), erased at the end;
# never when stderr is a file, nor with --quiet. And `idlescope --version`.
#   progress_test.sh IDLESCOPE GEN_TRACE WORK_DIR
set -euo pipefail
idlescope=$1 gen_trace=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
"$gen_trace" --out "$work/trace" --ranks 16 --events 2000000 --causes pageable,dataload > /dev/null

"$idlescope" --version | tee "$work/version.txt"
grep -Eq '^idlescope [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]+(-dirty)?|unknown)\)$' \
  "$work/version.txt" || { echo "FAIL: --version lacks the version and git commit"; exit 1; }
grep -Eq 'trace format: reads v1-v4, the recorder .* writes v4' "$work/version.txt" ||
  { echo "FAIL: --version lacks the trace formats"; exit 1; }

# At once: the 2M-event job takes about half a second on an idle 2-core machine.
IDLESCOPE_PROGRESS_AFTER_MS=0 script -qec "'$idlescope' report '$work/trace' > /dev/null" /dev/null \
  > "$work/tty.txt"
lines=$(tr '\r' '\n' < "$work/tty.txt" | grep -c 'MiB read' || true)
echo "on a terminal: $lines progress updates; the last: $(tr '\r' '\n' < "$work/tty.txt" |
  grep 'MiB read' | tail -1 | tr -d '\033')"
[ "$lines" -ge 1 ] || { echo "FAIL: no progress on a terminal"; cat -v "$work/tty.txt"; exit 1; }
grep -q $'\r\033\\[K' "$work/tty.txt" || { echo "FAIL: the progress line is not erased"; exit 1; }

IDLESCOPE_PROGRESS_AFTER_MS=0 "$idlescope" report "$work/trace" > /dev/null 2> "$work/file.txt"
if grep -q 'MiB read' "$work/file.txt"; then echo "FAIL: progress into a file"; exit 1; fi
IDLESCOPE_PROGRESS_AFTER_MS=0 script -qec "'$idlescope' report --quiet '$work/trace' > /dev/null" \
  /dev/null > "$work/quiet.txt"
if grep -q 'MiB read' "$work/quiet.txt"; then echo "FAIL: progress with --quiet"; exit 1; fi
echo ok
