#!/usr/bin/env python3
"""clang-tidy over hora's sources with .clang-tidy's checks; any finding fails.

Usage: clang_tidy.py BUILD_DIR [-j N]
BUILD_DIR is a clang build directory (its compile_commands.json; .ci/run uses build-asan).
Checked: every .cc of the library, the launcher, the adapters, the benchmarks and the examples
that the build compiles (tests are left out: GoogleTest's macros expand into code the
bugprone checks flag by the hundred). A translation unit that was clean is remembered by the
hash of its preprocessed text, its flags, .clang-tidy and clang-tidy's version
(in $HORA_TIDY_CACHE, default ~/.cache/hora/clang-tidy; the checkout's path is not part of the
key), so a rerun, in this checkout or a fresh clone, checks only what changed.
"""
import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCOPE = ("core/", "collectives/", "kernels/", "launcher/", "adapters/", "benchmarks/",
         "examples/")


def compile_args(entry):
    """A compile_commands.json entry's compiler and flags, without ccache, -c, the output and the
    dependency-file options: the caller adds what it runs the compiler for."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    if args and os.path.basename(args[0]) == "ccache":
        args = args[1:]
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD"):
            continue
        out.append(a)
    return out


def preprocess_command(entry):
    return compile_args(entry) + ["-E", "-P", "-o", "-"]


def key_of(entry, salt):
    pp = subprocess.run(preprocess_command(entry), cwd=entry["directory"], capture_output=True)
    # The checkout's path is left out, so a clone elsewhere finds the same keys.
    root = ROOT.encode()
    h = hashlib.sha256(salt)
    h.update(entry.get("command", " ".join(entry.get("arguments", []))).encode().replace(
        root, b"<root>"))
    h.update(pp.stdout.replace(root, b"<root>") if pp.returncode == 0 else os.urandom(16))
    return h.hexdigest()


def check(entry, build, cache, salt):
    path = os.path.relpath(entry["file"], ROOT)
    key = key_of(entry, salt)
    marker = os.path.join(cache, key)
    if os.path.exists(marker):
        return path, True, "", True
    run = subprocess.run(["clang-tidy", "-p", build, "--quiet", entry["file"]], cwd=ROOT,
                         capture_output=True, text=True)
    text = "\n".join(line for line in (run.stdout + run.stderr).splitlines()
                     if "warnings generated" not in line and "Suppressed" not in line
                     and "Use -header-filter" not in line and line.strip())
    clean = run.returncode == 0 and "warning:" not in text and "error:" not in text
    if clean:
        open(marker, "w").close()
    return path, clean, text, False


def build_and_jobs():
    """The build folder (argv[1], absolute) and -j N (default: the CPU count)."""
    build = os.path.abspath(sys.argv[1])
    jobs = int(sys.argv[sys.argv.index("-j") + 1]) if "-j" in sys.argv else os.cpu_count() or 2
    return build, jobs


def translation_units(build, keep):
    """The compile database's .cc entries, each file once, whose path relative to ROOT
    passes keep(rel)."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        db = json.load(f)
    seen, entries = set(), []
    for e in db:
        rel = os.path.relpath(e["file"], ROOT)
        if rel.endswith(".cc") and rel not in seen and keep(rel):
            seen.add(rel)
            entries.append(e)
    return entries


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    build, jobs = build_and_jobs()
    cache = os.environ.get("HORA_TIDY_CACHE", os.path.expanduser("~/.cache/hora/clang-tidy"))
    os.makedirs(cache, exist_ok=True)
    version = subprocess.run(["clang-tidy", "--version"], capture_output=True).stdout
    with open(os.path.join(ROOT, ".clang-tidy"), "rb") as f:
        salt = version + f.read()
    entries = translation_units(build, lambda rel: rel.startswith(SCOPE))
    failed, cached = [], 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for path, clean, text, hit in pool.map(lambda e: check(e, build, cache, salt), entries):
            cached += hit
            if not clean:
                failed.append(path)
                print(text)
    print("clang-tidy: %d files, %d unchanged since a clean run, %d with findings"
          % (len(entries), cached, len(failed)))
    for p in failed:
        print("  " + p)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
