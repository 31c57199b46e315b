#!/usr/bin/python3
"""Checks that no sentence is built outside the exporters (issue 11: the report is data).

The stages that read traces and analyze them (analyzer/read, analyzer/analysis, analyzer/shard)
and the diff's logic (analyzer/diff/diff.cc, step_census.cc) may not hold string literals that
read as words for people: a literal with a letter and a space, or with a letter and a printf directive
(separators such as ", " are no words). Two places are allowed to:
  - errors: a literal inside a statement that builds an absl::Status (`...Error(`), the one-line
    message a user gets for bad input, not part of any report;
  - compile-time checks: the message of a `static_assert(`, which only the compiler prints, to
    whoever edits the code;
  - nothing else. The model (analyzer/model) holds the taxonomy table and the labels things are
    shown by; the exporters (analyzer/report, analyzer/diff/diff_exporters.cc) and the CLI word
    everything.
Prints every offending literal with its file and line; exits 1 if there is one.
  no_prose.py SOURCE_ROOT
"""
import os
import re
import sys

CHECKED = [
    ("analyzer/read", None),
    ("analyzer/analysis", None),
    ("analyzer/shard", None),
    ("analyzer/diff", {"diff.cc", "diff.h", "step_census.cc", "step_census.h"}),
]

LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def strip_comments(text):
    """Removes // and /* */ comments, keeping string literals and line numbers."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif c == "'" :
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i)
            out.append("\n" * text.count("\n", i, n if j < 0 else j))
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def statements(code):
    """(first line, text) of each statement: the code between `;`, `{` and `}`."""
    line, start, start_line = 1, 0, 1
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == '"':
            j = i + 1
            while j < n and code[j] != '"':
                j += 2 if code[j] == "\\" else 1
            i = j + 1
            continue
        if c == "\n":
            line += 1
        if c in ";{}":
            yield start_line, code[start:i + 1]
            start, start_line = i + 1, line
        i += 1
    yield start_line, code[start:]


def main():
    root = sys.argv[1]
    found = []
    checked = 0
    for directory, only in CHECKED:
        for name in sorted(os.listdir(os.path.join(root, directory))):
            if not name.endswith((".cc", ".h")) or (only is not None and name not in only):
                continue
            path = os.path.join(directory, name)
            checked += 1
            code = strip_comments(open(os.path.join(root, path)).read())
            for line, statement in statements(code):
                if "Error(" in statement:
                    continue  # an absl::Status for bad input
                if "static_assert(" in statement:
                    continue  # a compile-time check's message
                for m in LITERAL.finditer(statement):
                    literal = m.group(1)
                    words = re.search(r"[A-Za-z]", re.sub(r"%[-+ #0-9.]*[a-zA-Z]", "", literal))
                    if words and (" " in literal or re.search(r"%[-+ #0-9.]*[a-zA-Z]", literal)):
                        at = line + statement.count("\n", 0, m.start()) - 1
                        found.append("%s:%d: \"%s\"" % (path, at, literal))
    for f in found:
        print(f)
    print("%d files checked, %d literals that read as words" % (checked, len(found)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
