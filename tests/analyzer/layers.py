#!/usr/bin/python3
"""Checks that each analyzer folder includes only the folders below it (docs/architecture.md,
"Analyzer and CLI"): the exporters (report/, diff/) read the report model and nothing of the
analysis, so an output is added without touching the analysis, and the analysis without any
output. A folder's allowed includes besides itself:

  model     nothing (plain data and the interfaces between stages)
  trace     model
  read      trace, model
  analysis  model
  shard     read, analysis, trace, model
  report    model, trace (TailProblem: the reader's names and words for a cut file)
  diff      report, model
  cli       anything

Prints every include that breaks the rule with its file and line; exits 1 if there is one.
  layers.py SOURCE_ROOT
"""
import os
import re
import sys

ALLOWED = {
    "model": set(),
    "trace": {"model"},
    "read": {"trace", "model"},
    "analysis": {"model"},
    "shard": {"read", "analysis", "trace", "model"},
    "report": {"model", "trace"},
    "diff": {"report", "model"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"analyzer/([a-z_]+)/')


def main():
    root = sys.argv[1]
    found = []
    checked = 0
    for folder, allowed in sorted(ALLOWED.items()):
        directory = os.path.join(root, "analyzer", folder)
        for dirpath, _, names in os.walk(directory):
            for name in sorted(names):
                if not name.endswith((".cc", ".h", ".def")):
                    continue
                path = os.path.join(dirpath, name)
                checked += 1
                with open(path) as f:
                    for line_number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) != folder and m.group(1) not in allowed:
                            found.append("%s:%d: %s includes analyzer/%s/" %
                                         (os.path.relpath(path, root), line_number, folder,
                                          m.group(1)))
    for f in found:
        print(f)
    print("%d files checked, %d includes across the layers" % (checked, len(found)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
