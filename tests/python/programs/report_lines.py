# Prints what an `idlescope report --format json` (read from stdin) names Python lines with, one
# line each, for tests/python: "<where> <what>\t<file>:<line> in <function>" for every evidence
# stack, top gap and host activity item whose stack has a first user frame (docs/report-json.md,
# "Stacks"), <where> being "cause:<cause>", "gap:<cause>" or "activity:<kind>". Exits 1 when the
# report is not JSON of schema version 2.
import json
import sys

report = json.load(sys.stdin)
if report.get("schema_version") != 2:
    sys.exit(1)
stacks = {s["id"]: s for s in report["stacks"]}


def first_user(stack_id):
    stack = stacks.get(stack_id) if stack_id is not None else None
    if stack is None or stack["first_user"] is None:
        return None
    f = stack["first_user"]
    return "%s:%s in %s" % (f["file"], f["line"], f["function"])


for cause in report["causes"]:
    for item in cause["stacks"]:
        line = first_user(item["stack_id"])
        if line:
            print("cause:%s -\t%s" % (cause["cause"], line))
for gap in report["top_gaps"]:
    evidence = gap["evidence"]
    if evidence:
        line = first_user(evidence["stack_id"])
        if line:
            print("gap:%s %s\t%s" % (evidence["cause"], evidence["object"], line))
for group in report["host_activity"]["groups"]:
    for item in group["items"]:
        line = first_user(item["stack_id"])
        if line:
            print("activity:%s %s\t%s" % (group["kind"], item["what"], line))
