#!/usr/bin/env python3
"""End-to-end: issue 24's identity classes on job shapes of their own (tests/e2e/identity_shapes.cu
on simgpu, under `idlescope run`; the program's header lists them). Each run plants idle time
between steps and measures it itself (planted_ms); the report must name it (docs/attribution.md,
"Identity"):
- the largest cause of the idle time between kernels (startup and tail aside) is the expected one;
- that cause holds at least half of the planted time;
- its evidence names the planted thing (an object: the file, the server, the tool's command; or
  a finding).
Prints how many shapes the report names right, then fails if any is missed.
"""
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
import time

from e2e_common import FreshWork, Parser, Report, SimgpuEnv, StackText

WORK_MS = 40
# mapped_dataset where the work directory's file system keeps every page in memory (tmpfs): its
# reads fault no page in from a disk, so nothing is planted.
NOT_HERE = "no page came from a disk (the file system keeps them in memory)"

# mode: (expected cause, evidence kind, evidence text: a substring, or a pattern to search for)
SHAPES = {
    "mmap_ckpt": ("checkpointing", "object", "optimizer.pt"),
    "copy_ckpt": ("checkpointing", "object", "best.pth"),
    "sendfile_ckpt": ("checkpointing", "object", "archive.ckpt"),
    "atomic_save": ("checkpointing", "object", re.compile(r"/tmp[A-Za-z0-9]{6}$")),
    "resume_state": ("checkpointing", "object", "resume.dat"),
    "dir_logs": ("intermediate_upload", "object", "ckpt-experiments/metrics.jsonl"),
    "tcp_ranks": ("communication", "finding", "peer_socket_transfers"),
    "http_fetch": ("external_download", "object", "127.0.0.1:"),
    "stdin_feed": ("data_loading", "finding", "stdin_pipe_waits"),
    "child_tool": ("data_loading", "object", "ffmpeg"),
    "system_tool": ("data_loading", "object", "ffmpeg"),
    "child_compiler": ("child_process", "object", "ptxas"),
    "signal_handler": ("signal_handler", "object", "on_checkpoint_signal"),
    # The thread sampler's classes: evidence is the thread's last traced call before the work.
    "cpu_augment": ("cpu_work", "stack", "main"),
    "crowded_cpu": ("cpu_starvation", "stack", "main"),
    # Page faults of a mapped data file: the sampler's blocked runs outside every call.
    "mapped_dataset": ("data_loading", "object", "train.bin"),
}


class SlowShardServer(http.server.BaseHTTPRequestHandler):
    """A data server outside the job: WORK_MS before it answers, then 2 MiB."""

    def do_GET(self):
        time.sleep(WORK_MS / 1000.0)
        body = b"x" * (2 << 20)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def Feed(pipe, records, size):
    """stdin_feed's producer: a record every WORK_MS."""
    try:
        for _ in range(records):
            time.sleep(WORK_MS / 1000.0)
            pipe.write(b"r" * size)
            pipe.flush()
    except BrokenPipeError:
        pass
    finally:
        pipe.close()


def RunShape(opts, mode, extra, env):
    cwd = os.path.join(opts.work, mode)
    os.makedirs(cwd)
    try:
        return RunShapeIn(opts, mode, extra, env, cwd)
    finally:
        # The job's own files (a 128 MiB dataset, checkpoints): not needed once it ran.
        shutil.rmtree(cwd, ignore_errors=True)


def RunShapeIn(opts, mode, extra, env, cwd):
    trace_dir = os.path.join(opts.work, mode + ".trace")
    if mode == "mapped_dataset":
        # The dataset, prepared before the job (nanoGPT's prepare.py): 2 shards of 64 MiB.
        with open(os.path.join(cwd, "train.bin"), "wb") as f:
            for _ in range(32):
                f.write(b"\x03" * (4 << 20))
            f.flush()
            os.fsync(f.fileno())
    cmd = [opts.idlescope, "run", "-o", trace_dir, "--", opts.program, mode,
           "--work-ms", str(WORK_MS)] + extra
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    feeder = None
    if mode == "stdin_feed":
        feeder = threading.Thread(target=Feed, args=(proc.stdin, 12, 64 << 10))
        feeder.start()
    else:
        proc.stdin.close()
    out = proc.stdout.read().decode(errors="replace")
    proc.wait(timeout=180)
    if feeder:
        feeder.join()
    print(out, end="")
    planted = [line for line in out.splitlines() if "planted_ms=" in line]
    if proc.returncode != 0 or not planted:
        return None, "exited with status %d" % proc.returncode
    # No signal from us (the sampler sends none), no descriptor of ours in the program's table.
    foreign = re.search(r"fds=(\d+) foreign_signals=(\d+)", out)
    if not foreign or foreign.group(2) != "0":
        return None, "the program received signals it did not ask for: %s" % (
            foreign.group(0) if foreign else out[-200:])
    faults = re.search(r"major_faults=(\d+)", out)
    if faults and faults.group(1) == "0":
        return None, NOT_HERE
    if mode in ("cpu_augment", "crowded_cpu"):
        untraced = subprocess.run([opts.program, mode, "--steps", "2", "--work-ms", "1"] + extra,
                                  cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=120)
        alone = re.search(r"fds=(\d+)", untraced.stdout)
        if not alone or alone.group(1) != foreign.group(1):
            return None, "traced it has %s descriptors open at its end, untraced %s" % (
                foreign.group(1), alone.group(1) if alone else "?")
    return float(planted[-1].split("planted_ms=")[1]), trace_dir


def Judge(report, planted_ms, expected):
    cause, kind, text = expected
    # The waits for a CPU on a loaded machine (the under_load tests) are the load's, named apart:
    # they are no shape's cause but crowded_cpu's.
    ignored = ("startup", "tail") + (("cpu_starvation",) if cause != "cpu_starvation" else ())
    causes = {c["cause"]: c for c in report["causes"] if c["cause"] not in ignored}
    summary = {k: round(v["idle_ns"] / 1e6, 1) for k, v in causes.items()}
    print("  causes (ms): %s; planted %.1f ms" % (summary, planted_ms))
    if not causes:
        return "no idle time between kernels"
    top = max(causes.values(), key=lambda c: c["idle_ns"])["cause"]
    if top != cause:
        return "top cause %s, not %s" % (top, cause)
    got = causes[cause]["idle_ns"] / 1e6
    if got < 0.5 * planted_ms:
        return "%s holds %.1f ms of %.1f ms planted" % (cause, got, planted_ms)
    if kind == "stack":
        stacks = [StackText(report, s["stack_id"]) for s in causes[cause].get("stacks", [])]
        print("  stacks: %s" % [s[:80] for s in stacks[:2]])
        if not any(text in s for s in stacks):
            return "no stack of %s has %s" % (cause, text)
    elif kind == "object":
        objects = [o.get("object") or "" for o in causes[cause].get("objects", [])]
        print("  objects: %s" % objects[:4])
        named = [o for o in objects if (text.search(o) if isinstance(text, re.Pattern) else
                                        text in o)]
        if not named:
            return "no object of %s names %s" % (cause, getattr(text, "pattern", text))
    else:
        findings = [f["kind"] for f in causes[cause].get("findings", [])]
        print("  findings: %s" % findings)
        if text not in findings:
            return "%s has no %s finding" % (cause, text)
    return None


def main():
    ap = Parser()
    ap.add_argument("--only", help="comma-separated modes (default: all)")
    opts = ap.parse_args()
    FreshWork(opts)
    env = SimgpuEnv(opts, SIMGPU_KERNEL_US="train_step=5000")
    tools = os.path.join(opts.work, "tools")
    os.makedirs(tools)
    sleep = "/bin/sleep" if os.path.exists("/bin/sleep") else "/usr/bin/sleep"
    for name in ("ffmpeg", "ptxas"):
        os.symlink(sleep, os.path.join(tools, name))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowShardServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    extras = {
        "http_fetch": ["--port", str(server.server_address[1])],
        "child_tool": ["--tool", os.path.join(tools, "ffmpeg")],
        "system_tool": ["--tool", os.path.join(tools, "ffmpeg")],
        "child_compiler": ["--tool", os.path.join(tools, "ptxas")],
        "tcp_ranks": ["--peer-ms", str(WORK_MS)],
    }
    modes = opts.only.split(",") if opts.only else list(SHAPES)
    misses, skipped = [], []
    for mode in modes:
        planted, trace_dir = RunShape(opts, mode, extras.get(mode, []), env)
        if trace_dir == NOT_HERE:
            print("%s: not run here: %s" % (mode, NOT_HERE), flush=True)
            skipped.append(mode)
            continue
        why = trace_dir if planted is None else Judge(Report(opts, trace_dir), planted,
                                                     SHAPES[mode])
        print("%s: %s" % (mode, "named" if why is None else "MISSED: " + why), flush=True)
        if why is not None:
            misses.append("%s: %s" % (mode, why))
    server.shutdown()
    run = len(modes) - len(skipped)
    print("identity shapes named right: %d of %d%s" % (
        run - len(misses), run, " (not run here: %s)" % ", ".join(skipped) if skipped else ""))
    for m in misses:
        print("FAIL: " + m)
    if misses:
        sys.exit(1)
    print("PASSED: identity_shapes")


if __name__ == "__main__":
    main()
