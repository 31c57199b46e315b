#!/usr/bin/env python3
"""End-to-end: a rank that dies (docs/attribution.md, "A rank that died"). Runs the allreduce
example (examples/cuda/allreduce.cu) with 2 ranks on simgpu; its launcher, like torchrun's agent,
notices a failed rank --monitor-ms (2 s) late and only then stops the other, which meanwhile waits
for the dead rank in the all-reduce:
- segv: rank 1 crashes at step 150 (a null pointer read in decode_batch: SIGSEGV). The report
  names rank_died as the top cause with the death's evidence (rank 1, its pid, SIGSEGV, the
  stack where the signal landed: decode_batch <- run_rank), a process_died finding (rank 1,
  SIGSEGV, when), tail under 5% of the idle time, no "missing ranks" guess; the text report says
  "rank 1 (pid N) died of SIGSEGV at +"; --single-process gives the same causes;
- kill: rank 1 is killed with SIGKILL from outside, 1 s after its first GPU work reached its
  trace (no handler runs, no footer): the
  finding says "no trace end" and rank_died is still the top cause;
- whole: the same job without a death has no rank_died.
Both deaths are also in the JSON files[] (`end`: how, clean false) and in the text report's list
of processes that did not exit cleanly.
"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

from e2e_common import FreshWork, Parser, SimgpuEnv, StackText, Finish


def Env(opts):
    env = SimgpuEnv(opts, SIMGPU_DEVICES="2", SIMGPU_NCCL_GBPS="0.5")
    for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        env.pop(var, None)
    return env


def RankPid(launcher_pid, rank):
    """The pid of the example's process with RANK=rank under launcher_pid's tree, or None."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"RANK=%d" % rank in env and b"allreduce" in cmd:
            return int(pid)
    return None


def Training(trace_dir, pid):
    """Whether rank `pid` has flushed GPU work: its trace files hold more than their start."""
    size = 0
    for f in os.listdir(trace_dir) if os.path.isdir(trace_dir) else []:
        if re.search(r"-%d[-.]" % pid, f):
            try:
                size += os.path.getsize(os.path.join(trace_dir, f))
            except OSError:
                pass
    return size > 16384


def RunJob(opts, name, args, kill_after=None):
    trace_dir = os.path.join(opts.work, name + ".trace")
    cmd = [opts.idlescope, "run", "-o", trace_dir, "--", opts.program, "--ranks", "2",
           "--grad-mb", "1", "--monitor-ms", "2000"] + args
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, cwd=opts.work, env=Env(opts), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    killed = []
    if kill_after is not None:
        def Kill():
            # Once rank 1 trains (its GPU work flushed: on a busy machine startup takes long),
            # and kill_after seconds later.
            deadline = time.time() + 120
            pid = None
            while time.time() < deadline and proc.poll() is None:
                pid = pid or RankPid(proc.pid, 1)
                if pid is not None and Training(trace_dir, pid):
                    break
                time.sleep(0.05)
            time.sleep(kill_after)
            if pid is not None and proc.poll() is None:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        threading.Thread(target=Kill, daemon=True).start()
    out, _ = proc.communicate(timeout=240)
    print(out, end="")
    return trace_dir, proc.returncode, killed


def Reports(opts, trace_dir):
    out = {}
    for mode, extra in (("default", []), ("single", ["--single-process"])):
        rep = subprocess.run([opts.idlescope, "report", "--json"] + extra + [trace_dir],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=120)
        if rep.returncode != 0:
            sys.exit("FAIL: idlescope report: %s" % rep.stderr.strip())
        out[mode] = json.loads(rep.stdout)
    text = subprocess.run([opts.idlescope, "report", trace_dir], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120).stdout
    return out, text


def Cause(report, name):
    for c in report["causes"]:
        if c["cause"] == name:
            return c
    return None


def CheckDeath(name, reports, text, how, failures, stack_functions=()):
    report = reports["default"]
    idle = sum(c["idle_ns"] for c in report["causes"])
    causes = [(c["cause"], round(c["idle_ns"] / 1e9, 3)) for c in report["causes"]][:4]
    print("%s: causes %s" % (name, causes))
    died = Cause(report, "rank_died")
    if died is None or report["causes"][0]["cause"] != "rank_died":
        failures.append("%s: rank_died is not the top cause: %s" % (name, causes))
        return
    tail = Cause(report, "tail")
    tail_ns = tail["idle_ns"] if tail else 0
    print("%s: rank_died %.3f s, tail %.3f s of %.3f s idle" %
          (name, died["idle_ns"] / 1e9, tail_ns / 1e9, idle / 1e9))
    if tail_ns > 0.05 * idle:
        failures.append("%s: tail %.3f s is over 5%% of the idle time" % (name, tail_ns / 1e9))
    findings = [f for f in died["findings"] if f["kind"] == "process_died"]
    print("%s: findings %s" % (name, findings))
    if not findings or findings[0]["rank"] != 1 or findings[0]["how"] != how:
        failures.append("%s: no process_died finding for rank 1 (%s)" % (name, how))
        return
    pid = findings[0]["pid"]
    label = "rank 1 (pid %d)" % pid
    if not any(label in (o.get("object") or "") for o in died.get("objects", [])):
        failures.append("%s: the evidence does not name %s: %s" % (name, label, died.get("objects")))
    if stack_functions:
        stacks = [StackText(report, s["stack_id"]) for s in died.get("stacks", [])]
        print("%s: stacks %s" % (name, stacks))
        if not any(all(f in s for f in stack_functions) for s in stacks):
            failures.append("%s: no stack with %s" % (name, " and ".join(stack_functions)))
    ends = [f["end"] for f in report["files"] if f["pid"] == pid and not f["end"]["clean"]]
    if not ends or ends[-1]["how"] != how:
        failures.append("%s: files[] says %s of pid %d, expected %s" % (name, ends, pid, how))
    if "Processes that did not exit cleanly" not in text or ("%d " % pid) not in text:
        failures.append("%s: the text report does not list pid %d's end" % (name, pid))
    if "trace files of some ranks not given" in text:
        failures.append("%s: the text report still guesses at missing trace files" % name)
    single = [(c["cause"], c["idle_ns"]) for c in reports["single"]["causes"]]
    default = [(c["cause"], c["idle_ns"]) for c in report["causes"]]
    if single != default:
        failures.append("%s: --single-process gives other causes: %s vs %s" %
                        (name, single[:4], default[:4]))
    return pid


def main():
    opts = Parser().parse_args()
    FreshWork(opts)
    failures = []

    trace, rc, _ = RunJob(opts, "segv", ["--steps", "400", "--crash-rank", "1",
                                         "--crash-step", "150"])
    if rc == 0:
        failures.append("segv: the job exited 0 though a rank crashed")
    reports, text = Reports(opts, trace)
    pid = CheckDeath("segv", reports, text, "SIGSEGV", failures,
                     stack_functions=("decode_batch", "run_rank"))
    if pid is not None:
        line = "rank 1 (pid %d) died of SIGSEGV at +" % pid
        if line not in text:
            failures.append("segv: the text report lacks %r" % line)

    trace, rc, killed = RunJob(opts, "kill", ["--steps", "2000"], kill_after=1.0)
    if not killed:
        failures.append("kill: rank 1 was not found to kill")
    else:
        reports, text = Reports(opts, trace)
        CheckDeath("kill", reports, text, "no trace end", failures)

    trace, rc, _ = RunJob(opts, "whole", ["--steps", "300"])
    if rc != 0:
        failures.append("whole: the job exited %d" % rc)
    reports, _ = Reports(opts, trace)
    if Cause(reports["default"], "rank_died") is not None:
        failures.append("whole: rank_died in a job where no rank died")
    Finish(failures, "rank_died")


if __name__ == "__main__":
    main()
