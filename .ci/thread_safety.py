#!/usr/bin/env python3
"""Clang's thread-safety analysis over every translation unit of a clang build.

Usage: thread_safety.py BUILD_DIR [-j N] [--after-tidy]
Every .cc in BUILD_DIR/compile_commands.json (.ci/run uses build-asan, configured with clang,
-Wthread-safety and -Werror): the libraries, the launcher, the adapters, the benchmarks, the
examples and the tests. A translation unit whose object the build has compiled and holds up to
date (ninja has nothing to do for it) already passed these flags and is skipped; every other one
is compiled here with -fsyntax-only. With --after-tidy, the files clang_tidy.py checks are
skipped too: clang-tidy compiles them with the same flags and fails on any compiler warning
(.ci/run runs it first). Any -Wthread-safety finding (or other warning: -Werror) fails, naming
the file.
"""
import concurrent.futures
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clang_tidy import (  # noqa: E402  (SCOPE: the files clang-tidy covers)
    ROOT, SCOPE, build_and_jobs, compile_args, translation_units)


def object_of(entry):
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    return args[args.index("-o") + 1] if "-o" in args else None


def up_to_date(build, entries):
    """The entries whose object exists and which ninja would not rebuild."""
    objects = {object_of(e): e["file"] for e in entries}
    objects = {o: f for o, f in objects.items()
               if o and os.path.exists(os.path.join(build, o))}
    if not objects:
        return set()
    dry = subprocess.run(["ninja", "-C", build, "-n", "-v", "--"] + sorted(objects),
                         capture_output=True, text=True)
    if dry.returncode != 0:
        return set()
    stale = {o for o in objects if (" -o " + o + " ") in dry.stdout}
    return {f for o, f in objects.items() if o not in stale}


def syntax_only(entry):
    out = compile_args(entry)
    if "-Wthread-safety" not in out:
        out.append("-Wthread-safety")
    run = subprocess.run(out + ["-fsyntax-only"], cwd=entry["directory"], capture_output=True,
                         text=True)
    return entry["file"], run.returncode, run.stderr


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    build, jobs = build_and_jobs()
    after_tidy = "--after-tidy" in sys.argv
    # --after-tidy: only the files clang-tidy does not cover (it compiled those).
    entries = translation_units(build, lambda rel: not (after_tidy and rel.startswith(SCOPE)))
    built = up_to_date(build, entries)
    todo = [e for e in entries if e["file"] not in built]
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for path, rc, err in pool.map(syntax_only, todo):
            if rc != 0:
                failed.append(path)
                print(err)
    print("thread-safety: %d translation units (%d compiled by the build, %d checked here), "
          "%d failed" % (len(entries), len(built), len(todo), len(failed)))
    for p in failed:
        print("  " + p)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
