#!/usr/bin/env bash
# The overhead table: every figure of idlescope's cost, each against a baseline measured in the
# same run, with the machine and its load in the head (docs/architecture.md, "Overhead").
#   tests/bench/run.sh [--quick] [--events-100m] [--sql-events N] [--export-events N] [--tmp DIR]
#                      [--only SECTIONS] [--before EARLIER_BUILD_DIR] [BUILD_DIR]
# BUILD_DIR defaults to ./build; nothing is built here (the script says what to build when a
# program is missing). --quick: few repetitions and small sizes (the ctest test bench_table, so
# the script cannot rot; its figures are noisy). --events-100m: also the analyzer and the exports
# at 100M events (about 1 GB of trace, under --tmp, deleted afterwards; the exports write to
# /dev/null). --sql-events: the size of the SQLite comparison's trace (default 200k).
# --export-events: the exports' trace (default 10M: about 30 s for perfetto and 55 s for chrome
# on 2 cores, 0.9 and 3 GB written under --tmp and deleted; --quick: 200k). --only: some of
#   calls     per intercepted call (call_loop: bare, traced, strace, ltrace), the pinned-copy and
#             all-reduce loops whole process traced/bare, in-process cudaMemcpyAsync and
#             ncclAllReduce with and without a 24-frame stack (cuda_memcpy_bench)
#   start     start_bench; /bin/true, python3 -c pass (/usr/bin/python3 and the one on PATH) and
#             make -j2 of a generated project, bare vs LD_PRELOAD vs `idlescope run`
#   examples  examples/cuda bare vs traced, and bytes per event of their traces and of the CPU
#             PyTorch examples (examples/pytorch with /usr/bin/python3 --device cpu)
#   sampler   the thread sampler's CPU
#   analyzer  `idlescope report` at 1M/10M (100M) events; default (map/merge) vs --single-process
#             on the 2-rank trace at 10M (and 100M); the SQLite comparison
#   export    `idlescope export` perfetto and chrome of the 10M-event trace
# --before: an earlier build's lib/libidlescope.so also runs in the per-call and end-to-end
# repetitions (`cmake --build DIR --target idlescope_preload` of an older checkout); rows
# "vs before" give this tracer's cost over it, paired run by run.
# (analyzer and export need only bin/idlescope and bin/gen_trace). Needs strace, ltrace, sqlite3
# (scripts/install-deps.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec python3 "$here/table.py" --source "$(cd "$here/../.." && pwd)" "$@"
