"""Native frames as people read them (issue 27): the demo job (examples/cuda/mixed) traced on
simgpu, and its report must show the source line of its frames (`mixed.cu:43 in
(anonymous namespace)::load_batch_pageable`, the line `addr2line -i` gives for the frame's
address), no line of evidence over 160 columns, and in JSON the full frames with file and line.

Four ways the debug info is found or not (analyzer/read/source_lines.h):
  full      the binary as built, with its DWARF;
  stripped  a copy stripped of its DWARF (objcopy --strip-debug) whose .gnu_debuglink names
            .debug/mixed.debug beside it (objcopy --only-keep-debug): the same lines; without
            that file, none;
  build-id  the same stripped binary, its debug file only under IDLESCOPE_DEBUG_DIRS in GDB's
            .build-id/xx/yyyy.debug layout: the same lines;
  replaced  the traced binary replaced on disk by another program (another build id): no line at
            all, never a wrong one.

  source_lines.py --idlescope BIN --program examples/cuda/mixed --simgpu-lib DIR --work DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

import e2e_common

# What the text report prints at most per line of evidence (analyzer/report/text_exporter.cc).
MAX_COLUMNS = 160
LOAD_BATCH = "load_batch_pageable"


def Run(cmd, env=None):
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         timeout=120)
    if out.returncode != 0:
        sys.exit("FAIL: %s: %s" % (" ".join(cmd), out.stderr.strip()))
    return out.stdout


def BuildId(path):
    m = re.search(r"Build ID: ([0-9a-f]+)", Run(["readelf", "-n", path]))
    return m.group(1) if m else ""


def HasDebugInfo(path):
    return ".debug_info" in Run(["readelf", "-S", "-W", path])


def Reports(opts, trace_dir, env=None):
    """The text report and the JSON report of trace_dir."""
    text = Run([opts.idlescope, "report", trace_dir], env)
    data = json.loads(Run([opts.idlescope, "report", "--json", trace_dir], env))
    return text, data


def EvidenceLines(text):
    """The report's lines of evidence: a cause's stack, object and dir lines, a top gap's event
    and where a host call was made."""
    lines, in_gaps = [], False
    for line in text.splitlines():
        if line and not line.startswith(" "):
            in_gaps = line.startswith("Longest idle gaps")
        if re.match(r"    (stack|object|dir) ", line) or line.startswith("      at ") or (
                in_gaps and line.startswith("    ")):
            lines.append(line)
    return lines


def LoadBatchFrames(data):
    """Every native frame of the JSON report's stacks in load_batch_pageable."""
    return [f for s in data["stacks"] for f in s["frames"]
            if f["kind"] == "native" and LOAD_BATCH in (f.get("function") or "")]


def Addr2Line(binary, rel_pc):
    """The line of rel_pc in the function the symbol names: addr2line -i's last line (the call
    site of the outermost inlined code, or the address's own line)."""
    out = Run(["addr2line", "-i", "-e", binary, "0x%x" % rel_pc]).strip().splitlines()
    m = re.match(r"(.*):(\d+)", out[-1]) if out else None
    return (os.path.basename(m.group(1)), int(m.group(2))) if m else ("", 0)


def CheckLines(name, text, data, reference, failures):
    """The report of a trace whose binary's debug info is found: the text's evidence shows
    mixed.cu:LINE in load_batch_pageable as addr2line reads `reference` (the binary as built),
    short names and no common tail, no line over MAX_COLUMNS; JSON has full names, file, line."""
    frames = LoadBatchFrames(data)
    if not frames:
        failures.append("%s: no JSON frame in %s" % (name, LOAD_BATCH))
        return
    for f in frames:
        want_file, want_line = Addr2Line(reference, f["rel_pc"])
        if want_file != "mixed.cu" or want_line == 0:
            failures.append("%s: addr2line gives %s:%d for 0x%x" %
                            (name, want_file, want_line, f["rel_pc"]))
            continue
        if not (f.get("file") or "").endswith("/mixed.cu") or f.get("line") != want_line:
            failures.append("%s: JSON frame %s at %s:%s, addr2line says mixed.cu:%d" %
                            (name, f["function"], f.get("file"), f.get("line"), want_line))
        if "(float*" not in f["function"]:
            failures.append("%s: JSON function not in full: %s" % (name, f["function"]))
        shown = "mixed.cu:%d in (anonymous namespace)::%s" % (want_line, LOAD_BATCH)
        if not any(shown in line for line in EvidenceLines(text)):
            failures.append("%s: no evidence line shows %r" % (name, shown))
    evidence = EvidenceLines(text)
    longest = max(evidence, key=len) if evidence else ""
    print("%s: %d evidence lines, the longest %d columns" % (name, len(evidence), len(longest)))
    if len(longest) > MAX_COLUMNS:
        failures.append("%s: an evidence line of %d columns: %s" % (name, len(longest), longest))
    for unwanted in ("std::__cxx11::basic_string", "__libc_start_main", "(float*"):
        if any(unwanted in line for line in evidence):
            failures.append("%s: %r in the text's evidence" % (name, unwanted))


def CheckNoLines(name, text, data, failures):
    """A trace whose binary's debug info is not found (or is not the one that ran): no line."""
    if "mixed.cu:" in text or "checkpoint_io.h:" in text:
        failures.append("%s: a source line in the text report" % name)
    for f in LoadBatchFrames(data):
        if f.get("file") is not None or f.get("line") is not None:
            failures.append("%s: JSON frame at %s:%s" % (name, f.get("file"), f.get("line")))
    if not LoadBatchFrames(data):
        failures.append("%s: no JSON frame in %s" % (name, LOAD_BATCH))


def Trace(opts, binary, trace_dir, env):
    run = subprocess.run([opts.idlescope, "run", "-o", trace_dir, "--", binary], cwd=opts.work,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=180)
    if run.returncode != 0:
        sys.exit("FAIL: %s under idlescope run: %s" % (binary, run.stdout))


def main():
    opts = e2e_common.Parser().parse_args()
    e2e_common.FreshWork(opts)
    env = e2e_common.SimgpuEnv(opts)
    # No debug directory of the machine's (IDLESCOPE_DEBUG_DIRS) may change what is found.
    env.pop("IDLESCOPE_DEBUG_DIRS", None)
    env.pop("IDLESCOPE_SOURCE_LINES", None)
    failures = []

    # full: a copy of the binary as built (the test replaces it later).
    full_dir = os.path.join(opts.work, "full")
    os.makedirs(full_dir)
    full = os.path.join(full_dir, "mixed")
    shutil.copy2(opts.program, full)
    Trace(opts, full, os.path.join(opts.work, "trace-full"), env)
    text, data = Reports(opts, os.path.join(opts.work, "trace-full"), env)
    CheckLines("full", text, data, opts.program, failures)

    # stripped: the DWARF in .debug/mixed.debug, found by the binary's .gnu_debuglink.
    stripped_dir = os.path.join(opts.work, "stripped")
    os.makedirs(os.path.join(stripped_dir, ".debug"))
    stripped = os.path.join(stripped_dir, "mixed")
    debug = os.path.join(stripped_dir, ".debug", "mixed.debug")
    Run(["objcopy", "--only-keep-debug", opts.program, debug])
    Run(["objcopy", "--strip-debug", "--add-gnu-debuglink=" + debug, opts.program, stripped])
    if HasDebugInfo(stripped) or not HasDebugInfo(debug):
        sys.exit("FAIL: objcopy: the stripped binary has DWARF, or its debug file none")
    if not BuildId(opts.program) or BuildId(stripped) != BuildId(opts.program) or \
            BuildId(debug) != BuildId(opts.program):
        sys.exit("FAIL: the stripped binary or its debug file lost the build id")
    trace_stripped = os.path.join(opts.work, "trace-stripped")
    Trace(opts, stripped, trace_stripped, env)
    text, data = Reports(opts, trace_stripped, env)
    CheckLines("stripped", text, data, opts.program, failures)

    # Without the debug file: nothing to read the lines from.
    hidden = os.path.join(opts.work, "mixed.debug.hidden")
    os.rename(debug, hidden)
    text, data = Reports(opts, trace_stripped, env)
    CheckNoLines("stripped without its debug file", text, data, failures)

    # build-id: the same file in a debug directory, by build id only.
    build_id = BuildId(opts.program)
    debug_dirs = os.path.join(opts.work, "debug-dirs")
    by_id = os.path.join(debug_dirs, ".build-id", build_id[:2], build_id[2:] + ".debug")
    os.makedirs(os.path.dirname(by_id))
    shutil.copy2(hidden, by_id)
    with_dirs = dict(env, IDLESCOPE_DEBUG_DIRS=debug_dirs)
    text, data = Reports(opts, trace_stripped, with_dirs)
    CheckLines("build-id", text, data, opts.program, failures)
    # IDLESCOPE_SOURCE_LINES=0: no lookup.
    text, data = Reports(opts, trace_stripped, dict(with_dirs, IDLESCOPE_SOURCE_LINES="0"))
    CheckNoLines("IDLESCOPE_SOURCE_LINES=0", text, data, failures)

    # replaced: another program at the traced path (another build id): no line, not a wrong one.
    other = os.path.join(os.path.dirname(opts.program), "host_transfer")
    if BuildId(other) == build_id:
        sys.exit("FAIL: %s has the build id of %s" % (other, opts.program))
    shutil.copy2(other, full)
    text, data = Reports(opts, os.path.join(opts.work, "trace-full"), env)
    CheckNoLines("replaced", text, data, failures)

    e2e_common.Finish(failures, "source lines of native frames (full, stripped, build-id, "
                      "replaced)")


if __name__ == "__main__":
    main()
