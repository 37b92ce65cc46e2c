#!/usr/bin/env python3
"""docs/configuration.md's table of HORA_* variables against the variables the code reads.

Every "HORA_NAME" string literal in the library's sources (C, C++, CUDA and Python files of
every top-level folder but tests, benchmarks, examples, docs, scripts and build output) is a
variable the code reads or sets for its ranks. The test fails naming each one missing from the
table, each table row no source names, and each row listed twice. Sources are found by walking
the tree, so moving headers (include/hora/...) needs no change here. No build needed:

    python3 tests/docs/configuration_check.py [REPO_ROOT]
"""

import os
import re
import sys

SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh", ".py")
# Folders that are not the library: their HORA_* names are test or benchmark settings.
NOT_LIBRARY = {"tests", "benchmarks", "examples", "docs", "scripts", "cmake", "site"}
# A whole string literal that is one variable name: "HORA_TIMEOUT_S" or 'HORA_TIMEOUT_S'.
LITERAL = re.compile(r"""(["'])(HORA_[A-Z0-9_]+)\1""")
# A table row whose first cell is one variable: | `HORA_TIMEOUT_S` | ... |
ROW = re.compile(r"^\|\s*`?(HORA_[A-Z0-9_]+)`?\s*\|")


def library_sources(root):
    for top in sorted(os.listdir(root)):
        path = os.path.join(root, top)
        if not os.path.isdir(path) or top in NOT_LIBRARY or top.startswith((".", "build")):
            continue
        for folder, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.join(folder, name)


def variables_in_code(root):
    """{variable: first file naming it} over the library's sources."""
    found = {}
    for path in library_sources(root):
        with open(path, encoding="utf-8", errors="replace") as f:
            for match in LITERAL.finditer(f.read()):
                found.setdefault(match.group(2), os.path.relpath(path, root))
    return found


def table_rows(doc):
    with open(doc, encoding="utf-8") as f:
        return [m.group(1) for m in (ROW.match(line) for line in f) if m]


def main(argv):
    root = os.path.abspath(
        argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    )
    doc = os.path.join(root, "docs", "configuration.md")
    code = variables_in_code(root)
    rows = table_rows(doc)
    problems = []
    for name in sorted(set(code) - set(rows)):
        problems.append(f"{name} is read by the code ({code[name]}) but has no row in {doc}")
    for name in sorted(set(rows) - set(code)):
        problems.append(f"{name} has a row in {doc} but no library source names it")
    for name in sorted({r for r in rows if rows.count(r) > 1}):
        problems.append(f"{name} has {rows.count(name)} rows in {doc}")
    if not code:
        problems.append(f"no HORA_* variable found in the sources under {root}")
    for p in problems:
        print(f"configuration_check: {p}")
    if problems:
        return 1
    print(
        f"configuration_check: the {len(rows)} variables of docs/configuration.md are the "
        f"ones the code reads"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
