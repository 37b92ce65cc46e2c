#!/usr/bin/env python3
"""Fails when an #include points up the layer order of docs/architecture.md ("Layers").

hora's code is layered, each layer using only the ones below it:

    base < kernels < collectives < engine < runtime < api < adapters, launcher, tools

- base: core/base/ and the public vocabulary in include/hora/ (Status, DataType, ReduceOp,
  TensorView, Handle, ...), which every layer shares;
- kernels/, collectives/, core/engine/: math on buffers, moving bytes, the background engine;
- runtime: core/'s context, config and layout (the only code that reads the environment);
- api: hora.h's functions (core/api.cc, core/hora.cc) and the gradient reducer on top of them;
- adapters/: the C++ optimizer and the framework bindings, which use the public headers in
  include/hora/ only; launcher/, benchmarks/, examples/, tests/ may use any layer.

Every public header (include/hora/) includes only other public headers, so that an installed
hora needs nothing of the source tree. Each C/C++/CUDA file tracked by git is given a layer
by LAYER_OF below, and a file that none of its patterns matches fails the check too, so a new
folder is placed on purpose. Quoted includes are read; <system> includes are not.

Usage: .ci/check_layers.py [--list]   (--list: print each file's layer and exit)
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import subprocess
import sys
from pathlib import Path

ORDER = ["base", "kernels", "collectives", "engine", "runtime", "api", "top"]

# (glob, layer), first match wins.
LAYER_OF: list[tuple[str, str]] = [
    ("include/hora/hora.h", "api"),
    ("include/hora/elastic.h", "api"),
    ("include/hora/gradient_reducer.h", "api"),
    ("include/hora/distributed_optimizer.h", "top"),
    ("include/hora/grads_and_vars_optimizer.h", "top"),
    ("include/hora/optimizer.h", "top"),
    ("include/hora/broadcast.h", "top"),
    ("include/hora/*", "base"),
    ("core/base/*", "base"),
    ("kernels/*", "kernels"),
    ("collectives/*", "collectives"),
    ("core/engine/*", "engine"),
    ("core/api.cc", "api"),
    ("core/hora.cc", "api"),
    # The engine as hora.h's functions hold it: declared for core/api.cc, defined in core/hora.cc.
    ("core/engine_access.h", "api"),
    ("core/gradient_reducer.cc", "api"),
    ("core/process_sets.cc", "api"),
    ("core/process_sets.h", "api"),
    ("core/*", "runtime"),
    ("adapters/*", "top"),
    ("launcher/*", "top"),
    ("benchmarks/*", "top"),
    ("examples/*", "top"),
    ("tests/*", "top"),
]

# Folders whose files may include the public headers and their own folder only.
PUBLIC_ONLY = ["adapters/"]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = ["*.h", "*.cc", "*.cu", "*.cuh", "*.c", "*.cpp"]


def layer_of(path: str) -> str | None:
    for pattern, layer in LAYER_OF:
        if fnmatch.fnmatch(path, pattern):
            return layer
    return None


def resolve(include: str, includer: str, files: set[str]) -> str | None:
    """The tracked file an include names: from the includer's folder, include/ or the root."""
    here = str(Path(includer).parent / include)
    for candidate in (here, f"include/{include}", include):
        if candidate in files:
            return candidate
    return None


def check_file(path: str, files: set[str]) -> list[str]:
    errors = []
    mine = layer_of(path)
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), 1):
        match = INCLUDE.match(line)
        if not match:
            continue
        target = resolve(match.group(1), path, files)
        where = f'{path}:{number}: #include "{match.group(1)}"'
        if target is None:
            # A generated header or one of another project's: not hora's to place.
            continue
        theirs = layer_of(target)
        if path.startswith("include/hora/") and not target.startswith("include/hora/"):
            errors.append(f"{where}: a public header includes {target}, which is not installed")
        elif any(path.startswith(p) for p in PUBLIC_ONLY) and not (
            target.startswith(("include/hora/", path.split("/")[0] + "/"))
        ):
            errors.append(f"{where}: adapters use the public API only (include/hora/)")
        elif ORDER.index(theirs) > ORDER.index(mine):
            errors.append(f"{where}: {mine} ({path}) includes {theirs} ({target}), a layer above")
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print each file's layer")
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    listed = subprocess.run(
        ["git", "ls-files", *SOURCES], cwd=root, check=True, capture_output=True, text=True
    ).stdout.split()
    files = set(listed)
    os.chdir(root)
    unplaced = [f for f in listed if layer_of(f) is None]
    if args.list:
        for f in listed:
            print(f"{layer_of(f) or '?':12} {f}")
        return 0
    errors = [
        f"{f}: no layer (add its folder to LAYER_OF in .ci/check_layers.py)" for f in unplaced
    ]
    for f in listed:
        if f not in unplaced:
            errors.extend(check_file(f, files))
    for error in errors:
        print(error)
    print(f"check_layers: {len(errors)} include(s) against the layer order in {len(listed)} files")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
