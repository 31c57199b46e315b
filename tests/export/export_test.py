#!/usr/bin/python3
"""Checks `idlescope export` (issue 14, "Done when" 2) on one job's traces.

perfetto: the file must decode with `protoc --decode=perfetto.protos.Trace` against
proto/perfetto_trace.proto (Perfetto's own field numbers), and hold what a Perfetto trace
processor needs and what the export promises (docs/timeline-export.md):
  - the first packet clears the sequence's incremental state and carries a clock snapshot with
    CLOCK_MONOTONIC as the primary trace clock; every packet is on one trusted sequence;
  - a process track per trace file (pids unique), thread tracks, device tracks (compute /
    communication / transfer) and a "GPU idle by cause" group with a track per device; every
    track's parent is declared before it;
  - every track event names a declared track; every interned name, category and annotation name
    is defined on the sequence before (or in) the packet that uses it; the packets are in time
    order, and each track's begins and ends pair up and nest;
  - idle slices are named by cause, carry a `cause` annotation (and `explained_by` evidence), and
    their seconds per cause equal `idlescope report --json`'s for every cause that is placed in
    time (all but the short-gap causes and whole devices);
  - flows: every flow id leaves exactly one CUDA call and ends on exactly one GPU slice, and
    with --expect-flows there is at least one.
chrome: the JSON must pass the Trace Event Format rules checked here (required fields per
phase, known phases, durations, matched B/E, nesting X slices per thread, flow ids that start
before they finish, metadata names) and hold the same slices as the Perfetto file.
(Perfetto's trace_processor is not installed here: these are the structural checks of its
documented schema.) Only the Python standard library is used.
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys

# Causes whose idle time the analysis credits slice by slice (the others are counted per device).
UNPLACED = {"small_batch", "insufficient_memory", "launch_bound", "unused_gpus", "no_gpu_work"}

failures = []


def Fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def ParseText(text):
    """protoc's text format as nested dicts: field -> list of values (str or dict)."""
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"|[{}]|[A-Za-z_][A-Za-z0-9_]*:?|-?[0-9][0-9.e+-]*', text)
    pos = 0

    def block():
        nonlocal pos
        out = collections.defaultdict(list)
        while pos < len(tokens):
            t = tokens[pos]
            if t == "}":
                pos += 1
                return out
            pos += 1
            if t.endswith(":"):
                v = tokens[pos]
                pos += 1
                out[t[:-1]].append(json.loads(v) if v.startswith('"') else v)
            else:  # a message field: NAME {
                assert tokens[pos] == "{", tokens[pos]
                pos += 1
                out[t].append(block())
        return out

    return block()


def One(msg, field, default=None):
    values = msg.get(field, [])
    return values[0] if values else default


def DecodePerfetto(opts, path):
    """One Perfetto file decoded and checked on its own (each part of a split export is a trace
    of its own): its tracks and slices, or None when it does not decode."""
    with open(path, "rb") as f:
        proc = subprocess.run([opts.protoc, "--decode=perfetto.protos.Trace",
                               "--proto_path=" + os.path.dirname(opts.proto), opts.proto],
                              stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        Fail("protoc --decode failed: " + proc.stderr.decode())
        return None
    trace = ParseText(proc.stdout.decode())
    packets = trace["packet"]
    print("perfetto: %d bytes, %d packets" % (os.path.getsize(path), len(packets)))

    first = packets[0]
    if int(One(first, "sequence_flags", 0)) & 1 == 0:
        Fail("the first packet does not clear the incremental state")
    snap = One(first, "clock_snapshot")
    if not snap or One(snap, "primary_trace_clock") != "BUILTIN_CLOCK_MONOTONIC":
        Fail("the first packet has no clock snapshot with CLOCK_MONOTONIC as the trace clock")
    else:
        clocks = {One(c, "clock_id") for c in snap["clocks"]}
        print("clock snapshot: clocks %s" % sorted(clocks))
    sequences = {One(p, "trusted_packet_sequence_id") for p in packets}
    if sequences != {"1"}:
        Fail("packets on sequences %s, expected one" % sequences)

    tracks = {}
    processes, threads = {}, 0
    thread_tracks = {}  # tid -> track name
    names, categories, annotations = {}, {}, {}
    open_slices = collections.defaultdict(list)  # track -> stack of (name, begin ts)
    slices = []  # (track, name, category, begin, end, annotations, flow_ids, terminating)
    last_ts = 0
    for i, p in enumerate(packets):
        interned = One(p, "interned_data")
        if interned:
            for e in interned.get("event_names", []):
                names[One(e, "iid")] = One(e, "name")
            for e in interned.get("event_categories", []):
                categories[One(e, "iid")] = One(e, "name")
            for e in interned.get("debug_annotation_names", []):
                annotations[One(e, "iid")] = One(e, "name")
        td = One(p, "track_descriptor")
        if td:
            uuid = One(td, "uuid")
            parent = One(td, "parent_uuid")
            if parent is not None and parent not in tracks:
                Fail("track %s declared before its parent %s" % (uuid, parent))
            tracks[uuid] = td
            if One(td, "process"):
                pid = One(One(td, "process"), "pid")
                if pid in processes:
                    Fail("two process tracks with pid %s" % pid)
                processes[pid] = One(td, "name")
            if One(td, "thread"):
                threads += 1
                thread_tracks[One(One(td, "thread"), "tid")] = One(td, "name")
        ev = One(p, "track_event")
        if not ev:
            continue
        ts = int(One(p, "timestamp"))
        if ts < last_ts:
            Fail("packet %d at %d is before the previous one at %d" % (i, ts, last_ts))
        last_ts = ts
        if One(p, "timestamp_clock_id") != "3":
            Fail("packet %d is not on CLOCK_MONOTONIC" % i)
        if int(One(p, "sequence_flags", 0)) & 2 == 0:
            Fail("packet %d does not say it needs the incremental state" % i)
        track = One(ev, "track_uuid")
        if track not in tracks:
            Fail("event on undeclared track %s" % track)
        kind = One(ev, "type")
        if kind == "TYPE_SLICE_BEGIN":
            iid = One(ev, "name_iid")
            if iid not in names:
                Fail("name iid %s used before it is interned" % iid)
            cats = [categories.get(c) for c in ev.get("category_iids", [])]
            if None in cats:
                Fail("category iid used before it is interned")
            args = {}
            for a in ev.get("debug_annotations", []):
                n = annotations.get(One(a, "name_iid"))
                if n is None:
                    Fail("annotation name used before it is interned")
                args[n] = One(a, "string_value", One(a, "int_value"))
            open_slices[track].append(len(slices))
            slices.append([track, names.get(iid), cats[0] if cats else None, ts, None, args,
                           ev.get("flow_ids", []), ev.get("terminating_flow_ids", [])])
        elif kind == "TYPE_SLICE_END":
            if not open_slices[track]:
                Fail("an end without a begin on track %s" % track)
                continue
            slices[open_slices[track].pop()][4] = ts
        else:
            Fail("unexpected event type %s" % kind)
    for track, stack in open_slices.items():
        if stack:
            Fail("%d slices never end on track %s" % (len(stack), track))
    CheckFlows(slices)
    return {"start": int(One(first, "timestamp")), "tracks": tracks, "processes": processes,
            "threads": threads,
            "thread_tracks": thread_tracks, "slices": slices}


def CheckFlows(slices):
    """Every flow leaves one CUDA call and ends on one GPU slice of the same file."""
    outs = collections.Counter(f for s in slices for f in s[6])
    ins = collections.Counter(f for s in slices for f in s[7])
    for f, n in outs.items():
        if n != 1 or ins.get(f) != 1:
            Fail("flow %s leaves %d slices and ends on %d" % (f, n, ins.get(f, 0)))
    for f in ins:
        if f not in outs:
            Fail("flow %s ends without a start" % f)
    flow_sources = {s[2] for s in slices if s[6]}
    flow_sinks = {s[2] for s in slices if s[7]}
    if outs and (flow_sources != {"cuda"} or flow_sinks != {"gpu"}):
        Fail("flows must go from CUDA calls to GPU slices")
    return outs, flow_sources, flow_sinks


def CheckIdle(opts, report, slices, what):
    """The idle slices of each cause add up to the report's nanoseconds."""
    idle_by_cause = collections.Counter()
    for track, name, cat, begin, end, args, _, _ in slices:
        if cat != "idle":
            continue
        if args.get("cause") != name:
            Fail("idle slice %s without its cause annotation" % name)
        if "explained_by" not in args:
            Fail("idle slice %s without evidence" % name)
        idle_by_cause[name] += end - begin
    expected = {c["cause"]: int(c["idle_ns"]) for c in report["causes"]
                if c["cause"] not in UNPLACED}
    for cause in sorted(set(expected) | set(idle_by_cause)):
        got, want = idle_by_cause.get(cause, 0), expected.get(cause, 0)
        print("  %s idle slices %-22s %14d ns (report %d ns)" % (what, cause, got, want))
        if got != want:
            Fail("%s: idle slices of %s add up to %d ns, the report says %d ns" %
                 (what, cause, got, want))
    if opts.expect_cause and idle_by_cause.get(opts.expect_cause, 0) == 0:
        Fail("%s: no idle slice of %s" % (what, opts.expect_cause))


def CheckPerfetto(opts, report):
    path = os.path.join(opts.work, "job.pftrace")
    Run([opts.idlescope, "export", "--format", "perfetto", "-o", path, opts.trace])
    decoded = DecodePerfetto(opts, path)
    if decoded is None:
        return None
    tracks, processes = decoded["tracks"], decoded["processes"]
    threads, thread_tracks = decoded["threads"], decoded["thread_tracks"]
    slices = decoded["slices"]

    def Named(pattern):
        return [t for t in tracks.values() if re.search(pattern, One(t, "name", ""))]

    files = len(report["files"])
    print("tracks: %d processes (%d files), %d threads, %d device tracks, %d idle tracks, %d "
          "slices" % (len(processes), files, threads, len(Named(r"^GPU \d+ ")),
                      len(Named(r"^GPU idle")) and len(
                          [t for t in tracks.values()
                           if One(t, "parent_uuid") == One(Named(r"^GPU idle")[0], "uuid")]),
                      len(slices)))
    if len(processes) != files:
        Fail("%d process tracks for %d trace files" % (len(processes), files))
    if threads == 0:
        Fail("no thread track")
    # A thread makes one call at a time: its calls need a second lane only when one is made inside
    # another (a signal handler's), which these jobs never do (clock noise between two calls of
    # a thread is no overlap).
    lanes = sorted({td.get("name", ["?"])[0] for td in tracks.values()
                    if re.search(r"^CUDA #\d+$", One(td, "name", ""))})
    if lanes:
        Fail("calls of one thread on extra lanes: %s" % lanes)
    CheckThreadNames(opts, thread_tracks)
    if not Named(r"^GPU \d+ compute"):
        Fail("no device compute track")
    if opts.expect_transfer and not Named(r"^GPU \d+ transfer"):
        Fail("no device transfer track")
    if not Named(r"^GPU idle by cause"):
        Fail("no GPU idle group")

    CheckIdle(opts, report, slices, "perfetto")
    outs, flow_sources, flow_sinks = CheckFlows(slices)
    print("flows: %d (from %s to %s)" % (len(outs), sorted(flow_sources), sorted(flow_sinks)))
    if opts.expect_flows and not outs:
        Fail("no flow from a CUDA call to its GPU record")
    return slices


def CheckChrome(opts, perfetto_slices):
    path = os.path.join(opts.work, "job.json")
    Run([opts.idlescope, "export", "--format", "chrome", "-o", path, opts.trace])
    slices = CheckChromeFile(path)
    if slices != len(perfetto_slices):
        Fail("%d slices in the Chrome JSON, %d in the Perfetto file" %
             (slices, len(perfetto_slices)))


def CheckChromeFile(path):
    """One Chrome JSON file checked on its own; returns its number of X slices."""
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    print("chrome: %d bytes, %d events" % (os.path.getsize(path), len(events)))
    required = {"X": ["name", "ts", "dur", "pid", "tid"], "B": ["name", "ts", "pid", "tid"],
                "E": ["ts", "pid", "tid"], "M": ["name", "pid", "args"],
                "s": ["name", "id", "ts", "pid", "tid"], "t": ["name", "id", "ts", "pid", "tid"],
                "f": ["name", "id", "ts", "pid", "tid"], "i": ["name", "ts", "pid"],
                "C": ["name", "ts", "pid", "args"]}
    stacks = collections.defaultdict(list)  # B/E per thread
    per_thread = collections.defaultdict(list)  # X slices per thread
    flow_start = {}
    flows_done = 0
    named_threads = set()
    for e in sorted(events, key=lambda e: (e.get("ts", -1), -e.get("dur", 0))):
        ph = e.get("ph")
        if ph not in required:
            Fail("unknown phase %r" % ph)
            continue
        missing = [k for k in required[ph] if k not in e]
        if missing:
            Fail("%s event without %s: %s" % (ph, missing, e))
            continue
        if ph != "M" and not isinstance(e["ts"], (int, float)):
            Fail("ts is not a number: %s" % e)
        key = (e["pid"], e.get("tid"))
        if ph == "X":
            if e["dur"] < 0:
                Fail("negative duration: %s" % e)
            per_thread[key].append((e["ts"], e["ts"] + e["dur"]))
        elif ph == "B":
            stacks[key].append(e)
        elif ph == "E":
            if not stacks[key]:
                Fail("E without B on %s" % (key,))
            else:
                stacks[key].pop()
        elif ph == "M":
            if e["name"] in ("process_name", "thread_name") and "name" not in e["args"]:
                Fail("metadata without a name: %s" % e)
            if e["name"] == "thread_name":
                named_threads.add(key)
        elif ph == "s":
            if (e.get("cat"), e["id"]) in flow_start:
                Fail("flow id %s started twice" % e["id"])
            flow_start[(e.get("cat"), e["id"])] = e["ts"]
        elif ph == "f":
            start = flow_start.get((e.get("cat"), e["id"]))
            if start is None or start > e["ts"]:
                Fail("flow %s finishes before it starts" % e["id"])
            flows_done += 1
    for key, stack in stacks.items():
        if stack:
            Fail("%d B events without E on %s" % (len(stack), key))
    # X slices of one thread must nest (a partial overlap is drawn wrongly by every viewer).
    eps = 1.5e-3  # 1.5 ns: the microsecond doubles round at the nanosecond
    for key, spans in per_thread.items():
        if key not in named_threads:
            Fail("thread %s has slices but no thread_name" % (key,))
        open_ends = []
        for begin, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while open_ends and open_ends[-1] <= begin + eps:
                open_ends.pop()
            if open_ends and end > open_ends[-1] + eps:
                Fail("slices overlap without nesting on %s at %s" % (key, begin))
                break
            open_ends.append(end)
    slices = sum(len(v) for v in per_thread.values())
    print("chrome: %d slices on %d threads, %d flows" % (slices, len(per_thread), flows_done))
    if flows_done != len(flow_start):
        Fail("%d flows started, %d finished" % (len(flow_start), flows_done))
    return slices


def CheckSplit(opts, report, perfetto_slices):
    """`--max-bytes`: a job written as several files, each at most that size and a trace of its
    own that passes every check of one file (tracks, order, nesting, complete flows), which
    together hold every slice, and whose idle slices still add up to the report's figures."""
    for fmt, ext in (("perfetto", "pftrace"), ("chrome", "json")):
        whole = os.path.join(opts.work, "job." + ext)
        # About four parts, never under the smallest size the command takes.
        limit = max(64 << 10, os.path.getsize(whole) // 4)
        path = os.path.join(opts.work, "split." + ext)
        for old in os.listdir(opts.work):
            if old.startswith("split."):
                os.unlink(os.path.join(opts.work, old))
        out = Run([opts.idlescope, "export", "-q", "--format", fmt, "--max-bytes", str(limit),
                   "-o", path, opts.trace])
        m = re.search(r"wrote (\d+) files? of at most (\d+) bytes: (.*)", out)
        if not m or int(m.group(2)) != limit:
            Fail("%s: no line saying which files --max-bytes wrote: %r" % (fmt, out))
            continue
        parts = [path] + [os.path.join(opts.work, "split.%d.%s" % (i, ext))
                          for i in range(1, int(m.group(1)))]
        on_disk = sorted(f for f in os.listdir(opts.work) if f.startswith("split."))
        if sorted(os.path.basename(p) for p in parts) != on_disk:
            Fail("%s: --max-bytes wrote %s, the line says %d files" % (fmt, on_disk, len(parts)))
            continue
        sizes = [os.path.getsize(p) for p in parts]
        print("%s split at %d bytes: %d files of %s bytes" % (fmt, limit, len(parts), sizes))
        if len(parts) < 2 and os.path.getsize(whole) > limit:
            Fail("%s: %d bytes in one file of at most %d" % (fmt, os.path.getsize(whole), limit))
        for p, size in zip(parts, sizes):
            if size > limit:
                Fail("%s is %d bytes, more than --max-bytes %d" % (p, size, limit))
        if fmt == "perfetto":
            slices = []
            for p in parts:
                decoded = DecodePerfetto(opts, p)
                if decoded is None:
                    break
                if len(decoded["processes"]) != len(report["files"]):
                    Fail("%s: %d process tracks for %d trace files" %
                         (p, len(decoded["processes"]), len(report["files"])))
                slices += decoded["slices"]
            CheckIdle(opts, report, slices, "split perfetto")
            total = len(slices)
        else:
            total = sum(CheckChromeFile(p) for p in parts)
        if total != len(perfetto_slices):
            Fail("%s: %d slices in the split files, %d in one file" %
                 (fmt, total, len(perfetto_slices)))


def CheckBadInput(opts):
    """Bad input gets one line on stderr and a usage (2) or input (1) exit status."""
    missing_dir = os.path.join(opts.work, "no-such-dir", "out")
    cases = [
        (["export", "--format", "perfetto", opts.trace], 2, "usage"),  # no -o
        (["export", "--format", "svg", "-o", "x", opts.trace], 2, "unknown format 'svg'"),
        (["export", "--format", "perfetto", "-o", missing_dir, opts.trace], 1, "cannot write"),
        (["export", "--format", "chrome", "-o", os.path.join(opts.work, "x.json"),
          os.path.join(opts.work, "no-such-trace")], 1, ""),
        (["report", "--format", "html", "-o", missing_dir, opts.trace], 1, "cannot write"),
        # A merge has summaries, not the records and slices a timeline watches.
        (["merge", "--format", "perfetto", "plan", "summary"], 2, "reads the trace files"),
    ]
    for args, status, words in cases:
        proc = subprocess.run([opts.idlescope] + args, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        first = proc.stderr.strip().splitlines()[:1]
        print("idlescope %s -> %d: %s" % (" ".join(args[:4]), proc.returncode,
                                          first[0] if first else ""))
        if proc.returncode != status or words not in proc.stderr:
            Fail("idlescope %s exited %d (expected %d) with %r" %
                 (" ".join(args), proc.returncode, status, proc.stderr))
    if os.path.exists(os.path.dirname(missing_dir)):
        Fail("a failed write left files behind")


def CheckSelection(opts, report):
    """`--ranks R --from A --to B`: the processes of the job's first rank R (and its workers) only,
    and the slices that overlap [A, B) seconds of the job (a job without ranks: the time only)."""
    path = os.path.join(opts.work, "selected.pftrace")
    span_s = int(report["job"]["span_ns"]) / 1e9
    a, b = round(span_s * 0.25, 3), round(span_s * 0.5, 3)
    ranks = sorted({int(f["rank"]) for f in report["files"] if int(f.get("rank", -1)) >= 0})
    flags = ["--from", str(a), "--to", str(b)] + (["--ranks", str(ranks[0])] if ranks else [])
    Run([opts.idlescope, "export", "-q", "--format", "perfetto"] + flags + ["-o", path,
                                                                             opts.trace])
    decoded = DecodePerfetto(opts, path)
    if decoded is None:
        return
    names = sorted(decoded["processes"].values())
    print("selected (%s): %d processes %s, %d slices" % (
        " ".join(flags), len(names), names, len(decoded["slices"])))
    if ranks:
        if not any(n.startswith("rank %d:" % ranks[0]) for n in names):
            Fail("--ranks %d: no process of rank %d" % (ranks[0], ranks[0]))
        others = [n for n in names if n.startswith("rank ") and
                  not n.startswith("rank %d:" % ranks[0])]
        if others:
            Fail("--ranks %d: processes of other ranks: %s" % (ranks[0], others))
    elif len(names) != len(report["files"]):
        Fail("without --ranks: %d process tracks for %d files" % (len(names), len(report["files"])))
    if not decoded["slices"]:
        Fail("--from %s --to %s: no slice" % (a, b))
    start = decoded["start"]
    for track, name, cat, begin, end, args, _, _ in decoded["slices"]:
        if not (begin < start + b * 1e9 and (end > start + a * 1e9 or begin >= start + a * 1e9)):
            Fail("slice %s [%d, %d) outside --from %s --to %s" % (name, begin, end, a, b))
            break


def CheckSummary(opts, report):
    """`--level summary`: idle slices (still the report's seconds per cause), NCCL calls and busy
    slices of at most a second per device track; no other call, no GPU record of its own."""
    path = os.path.join(opts.work, "summary.pftrace")
    Run([opts.idlescope, "export", "-q", "--format", "perfetto", "--level", "summary", "-o",
         path, opts.trace])
    decoded = DecodePerfetto(opts, path)
    if decoded is None:
        return
    slices = decoded["slices"]
    categories = collections.Counter(s[2] for s in slices)
    print("summary: %d bytes (full: %d), slices by category %s" % (
        os.path.getsize(path), os.path.getsize(os.path.join(opts.work, "job.pftrace")),
        dict(categories)))
    if set(categories) - {"idle", "nccl", "gpu"}:
        Fail("summary: slices of %s" % sorted(set(categories) - {"idle", "nccl", "gpu"}))
    busy = [s for s in slices if s[2] == "gpu"]
    if not busy or any(s[1] != "busy" or s[4] - s[3] > 2e9 or "records" not in s[5]
                       for s in busy):
        Fail("summary: GPU slices must be busy slices with their records, of about a second")
    CheckIdle(opts, report, slices, "summary")
    CheckChromeFile(ExportChrome(opts, "summary.json", ["--level", "summary"]))


def ExportChrome(opts, name, flags):
    path = os.path.join(opts.work, name)
    Run([opts.idlescope, "export", "-q", "--format", "chrome"] + flags + ["-o", path, opts.trace])
    return path


def CheckReportIsExport(opts):
    """`export` is `report` with -o required: the same exporter, the same bytes."""
    for fmt in ("perfetto", "chrome"):
        paths = []
        for command in ("report", "export"):
            paths.append(os.path.join(opts.work, "%s.%s" % (command, fmt)))
            Run([opts.idlescope, command, "-q", "--format", fmt, "-o", paths[-1], opts.trace])
        same = open(paths[0], "rb").read() == open(paths[1], "rb").read()
        print("report --format %s vs export --format %s: %s" %
              (fmt, fmt, "same bytes" if same else "DIFFER"))
        if not same:
            Fail("report --format %s and export --format %s wrote different files" % (fmt, fmt))


def Run(cmd):
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout.splitlines():
        print("  | " + line)
    if proc.returncode != 0:
        sys.exit("FAIL: %s exited with %d" % (" ".join(cmd), proc.returncode))
    return proc.stdout


def RecordedThreadNames(opts):
    """tid -> the thread's name as the recorder last wrote it (`idlescope dump` of each file)."""
    names = {}
    for f in sorted(os.listdir(opts.trace)):
        if not f.endswith(".idlescope"):
            continue
        out = subprocess.run([opts.idlescope, "dump", os.path.join(opts.trace, f)],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             errors="replace").stdout
        for m in re.finditer(r'^  thread (\d+) = "(.*)"$', out, re.M):
            names[m.group(1)] = m.group(2)
    return names


def CheckThreadNames(opts, thread_tracks):
    """Every thread track of a thread the recorder named carries that name (and its tid)."""
    recorded = RecordedThreadNames(opts)
    named = 0
    for tid, track in thread_tracks.items():
        name = recorded.get(tid)
        if name is None:
            continue
        named += 1
        if not track.startswith(name + " (") or tid not in track:
            Fail("thread %s is named %r in the trace, its track %r" % (tid, name, track))
    print("thread names: %d of %d thread tracks named as recorded" % (named, len(thread_tracks)))
    if recorded and named == 0:
        Fail("no thread track of a recorded thread name")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--idlescope", required=True)
    p.add_argument("--protoc", required=True)
    p.add_argument("--proto", required=True, help="proto/perfetto_trace.proto")
    p.add_argument("--work", required=True)
    p.add_argument("--trace", help="a job's trace directory (else --run traces one)")
    p.add_argument("--run", nargs=argparse.REMAINDER,
                   help="a command to trace with `idlescope run` (with --simgpu-lib)")
    p.add_argument("--simgpu-lib")
    p.add_argument("--gen-trace", help="tools/gen_trace: export a generated job of --gen-seconds "
                   "(long enough that the export keeps its older idle slices in a file)")
    p.add_argument("--gen-seconds", type=int, default=120)
    p.add_argument("--expect-cause")
    p.add_argument("--expect-flows", action="store_true")
    p.add_argument("--expect-transfer", action="store_true")
    opts = p.parse_args()
    os.makedirs(opts.work, exist_ok=True)
    if opts.gen_trace:
        opts.trace = os.path.join(opts.work, "trace")
        subprocess.run(["rm", "-rf", opts.trace], check=True)
        Run([opts.gen_trace, "--out", opts.trace, "--ranks", "2", "--duration-s",
             str(opts.gen_seconds), "--kernel-us", "5000", "--causes",
             "pageable,checkpoint,upload,dataload,straggler,sync,tail", "--seed", "3"])
    if opts.run:
        opts.trace = os.path.join(opts.work, "trace")
        subprocess.run(["rm", "-rf", opts.trace], check=True)
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = opts.simgpu_lib + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        cwd = os.path.join(opts.work, "cwd")
        os.makedirs(cwd, exist_ok=True)
        cmd = [opts.idlescope, "run", "-o", opts.trace, "--"] + opts.run
        print("$ " + " ".join(cmd), flush=True)
        subprocess.run(cmd, cwd=cwd, env=env, check=True, timeout=240,
                       stdout=subprocess.DEVNULL)
    report = json.loads(subprocess.run([opts.idlescope, "report", "--json", opts.trace],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       text=True, check=True).stdout)
    slices = CheckPerfetto(opts, report)
    if slices is not None:
        CheckChrome(opts, slices)
        CheckSplit(opts, report, slices)
        CheckSelection(opts, report)
        CheckSummary(opts, report)
    CheckReportIsExport(opts)
    CheckBadInput(opts)
    if failures:
        sys.exit("%d failures" % len(failures))
    print("ok")


if __name__ == "__main__":
    main()
