"""Builds hora's framework extensions at first import, once per framework version and ABI.

A framework extension (hora.tensorflow's op library; later a JAX FFI library or a C++ torch
backend) is C++ compiled against the headers and library of the framework installed beside
hora. A wheel built without that framework (pip's isolated build) cannot contain it, so the
wheel ships the extension's sources instead (under hora/_ext_src/, with the folders of the
source tree) and `build` compiles them here with the system C++ compiler, as
torch.utils.cpp_extension.load does. The result is cached in

    ${HORA_EXTENSION_CACHE:-${XDG_CACHE_HOME:-~/.cache}/hora/extensions}/<name>-<key>/<name>.so

where <key> hashes everything the library depends on (`Extension.key_parts`, the flags, the
compiler's identity, the sources' contents, hora's version), so a new framework version or
ABI gets a new entry and an unchanged one is reused.

Several processes (the ranks of a job) may import at once: the first takes an exclusive
flock on the entry's `lock` file and builds into a temporary folder, then renames the library
into place (atomic); the others wait for the lock and find the library. A finished library is
used without taking the lock. Everything here raises ImportError, since it runs inside an
import that cannot succeed without the library.
"""

from __future__ import annotations

import concurrent.futures
import errno
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

# Raise when this file starts compiling differently (the flags below, the layout of an entry),
# so that existing cache entries are not reused.
_BUILDER_VERSION = 1
# The flags every extension is compiled with; Extension.cflags come after and may override.
_BASE_CFLAGS = ("-std=c++17", "-O2", "-DNDEBUG", "-fPIC")
# How long a build may take, and how long a process waits for another's build, by default.
_DEFAULT_TIMEOUT_S = 1800.0
_OUTPUT_TAIL_LINES = 40
_INSTALL_A_COMPILER = (
    "install one (Debian/Ubuntu: `apt-get install g++`; Fedora/RHEL: `dnf install gcc-c++`; "
    "conda: `conda install -c conda-forge cxx-compiler`) or point CXX at one"
)


@dataclass(frozen=True)
class Extension:
    """What to build. Paths are absolute; sources and include_dirs normally lie inside the
    installed package (`shipped_root`).

    name: the library's file name without ".so", and the prefix of its cache entry.
    what: says what is built, for messages ("the TensorFlow op library for tensorflow 2.21").
    sources: the .cc files, compiled (in parallel) and linked into one shared library.
    depends: further files whose contents the library depends on (the headers).
    key_parts: what identifies the framework the library is built against (its version);
      hashed into the key with the flags, which carry its ABI.
    """

    name: str
    what: str
    sources: Sequence[str]
    depends: Sequence[str] = ()
    include_dirs: Sequence[str] = ()
    cflags: Sequence[str] = ()
    ldflags: Sequence[str] = ()
    key_parts: Sequence[str] = ()


def shipped_root(package_paths: Sequence[str], marker: str) -> str | None:
    """The folder holding the shipped sources: the first `_ext_src` under one of hora's
    package paths (an installed wheel, the build tree's package; an editable install lists
    both the installed and the source folder) that holds `marker` (a path relative to it,
    "adapters/tensorflow/ops.cc"), else the source tree itself when hora is imported from
    adapters/python/hora. None when there is none."""
    for path in package_paths:
        for root in (
            os.path.join(path, "_ext_src"),
            os.path.normpath(os.path.join(path, "..", "..", "..")),
        ):
            if os.path.isfile(os.path.join(root, marker)):
                return root
    return None


def cache_root() -> str:
    """Where cache entries go: HORA_EXTENSION_CACHE, else $XDG_CACHE_HOME/hora/extensions,
    else ~/.cache/hora/extensions."""
    explicit = os.environ.get("HORA_EXTENSION_CACHE")
    if explicit:
        return os.path.abspath(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "hora", "extensions")


def cache_entry(ext: Extension) -> str:
    """The cache folder `build` uses for `ext` (raises ImportError without a compiler)."""
    return _entry(ext, _key(ext, _compiler()))


def _entry(ext: Extension, key: str) -> str:
    return os.path.join(cache_root(), f"{ext.name}-{key}")


def build(ext: Extension, timeout_s: float | None = None) -> str:
    """Returns the path of `ext`'s library, built unless the cache has it.

    Blocks while this process builds it (minutes for TensorFlow's headers) or while another
    process holds the entry's lock, at most `timeout_s` each (default HORA_EXTENSION_TIMEOUT_S,
    else 1800). Raises ImportError when there is no compiler, the build fails, or the wait
    passes the deadline; the message says which and what to do."""
    if timeout_s is None:
        timeout_s = float(os.environ.get("HORA_EXTENSION_TIMEOUT_S", _DEFAULT_TIMEOUT_S))
    cxx = _compiler()
    key = _key(ext, cxx)
    entry = _entry(ext, key)
    library = os.path.join(entry, ext.name + ".so")
    if os.path.isfile(library):  # renamed into place only once complete
        return library
    try:
        os.makedirs(entry, exist_ok=True)
    except OSError as e:
        raise ImportError(
            f"hora: cannot create {entry} to build {ext.what} in ({e}); set "
            "HORA_EXTENSION_CACHE to a writable folder"
        ) from None
    lock_path = os.path.join(entry, "lock")
    failed_path = os.path.join(entry, "failed.txt")
    with open(lock_path, "a") as lock:
        asked = time.time()
        _lock(lock, lock_path, ext, timeout_s)
        try:
            if os.path.isfile(library):  # another process built it while we waited
                return library
            _raise_if_failed_since(failed_path, asked)
            try:
                _compile_and_link(ext, cxx, entry, library, key, timeout_s)
            except ImportError as e:
                with open(failed_path, "w") as f:
                    f.write(str(e))
                raise
            if os.path.exists(failed_path):
                os.remove(failed_path)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return library


def _raise_if_failed_since(failed_path: str, since: float) -> None:
    """Raises the error of a build that failed while this process waited for the lock, so
    that the other ranks of a job report it rather than each compiling in turn to fail again
    (a later import, after the cause is fixed, builds again)."""
    try:
        if os.stat(failed_path).st_mtime < since:
            return
        with open(failed_path) as f:
            message = f.read()
    except OSError:
        return
    raise ImportError(f"{message}\n(built by another process while this one waited)")


def _compiler() -> list[str]:
    """The C++ compiler's command: CXX (split like a shell word list, so "ccache g++" works),
    else the first of c++, g++ and clang++ on PATH."""
    cxx = os.environ.get("CXX", "").strip()
    if cxx:
        argv = shlex.split(cxx)
        if shutil.which(argv[0]) is None:
            raise ImportError(
                f"hora: CXX={cxx} names no executable C++ compiler ({argv[0]} "
                f"not found); {_INSTALL_A_COMPILER}"
            )
        return argv
    for name in ("c++", "g++", "clang++"):
        if shutil.which(name):
            return [name]
    raise ImportError(
        "hora: no C++ compiler found (CXX is unset and none of c++, g++, clang++ "
        f"is on PATH); {_INSTALL_A_COMPILER}"
    )


@cache
def _compiler_identity(cxx: tuple[str, ...]) -> str:
    """The compiler's full path and `--version` output, for the cache key."""
    try:
        out = subprocess.run(
            [*cxx, "--version"], capture_output=True, text=True, timeout=60, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise ImportError(
            f"hora: the C++ compiler `{shlex.join(cxx)}` does not run "
            f"(`--version`: {e}); {_INSTALL_A_COMPILER}"
        ) from None
    return f"{shutil.which(cxx[0])}\n{out}"


def _hora_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("hora")
    except metadata.PackageNotFoundError:  # a build tree or source tree
        return "source"


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _files(ext: Extension) -> list[tuple[str, str]]:
    paths = [*ext.sources, *ext.depends]
    top = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
    return sorted((os.path.relpath(p, top), _digest(p)) for p in paths)


def _key(ext: Extension, cxx: list[str]) -> str:
    """16 hex digits of a hash over everything the library depends on."""
    material = {
        "builder": _BUILDER_VERSION,
        "hora": _hora_version(),
        "name": ext.name,
        "key_parts": list(ext.key_parts),
        "cflags": [*_BASE_CFLAGS, *ext.cflags],
        "ldflags": list(ext.ldflags),
        "compiler": _compiler_identity(tuple(cxx)),
        # Names relative to their common folder, and contents: hora's sources, wherever
        # installed, share an entry while they are the same, and any edit makes a new one.
        "files": _files(ext),
    }
    text = json.dumps(material, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _lock(lock, lock_path: str, ext: Extension, timeout_s: float) -> None:
    """Takes the exclusive lock on `lock`, waiting for another process's build at most
    timeout_s."""
    deadline = time.monotonic() + timeout_s
    said = False
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                raise ImportError(
                    f"hora: cannot lock {lock_path} ({e}); set "
                    "HORA_EXTENSION_CACHE to a local writable folder"
                ) from None
        if time.monotonic() >= deadline:
            raise ImportError(
                f"hora: waited {timeout_s:.0f} s for another process building {ext.what} "
                f"(it holds the lock {lock_path}); if none is, the file system may not "
                "support flock: set HORA_EXTENSION_CACHE to a local folder. "
                "HORA_EXTENSION_TIMEOUT_S sets the wait"
            )
        if not said:
            print(
                f"hora: waiting for another process building {ext.what} ({lock_path})",
                file=sys.stderr,
                flush=True,
            )
            said = True
        time.sleep(0.2)


def _compile_and_link(
    ext: Extension, cxx: list[str], entry: str, library: str, key: str, timeout_s: float
) -> None:
    """Builds into a temporary folder inside `entry`, then renames the library to `library`.
    REQUIRES: the entry's lock is held."""
    print(
        f"hora: building {ext.what} (once per version, into {entry}) ...",
        file=sys.stderr,
        flush=True,
    )
    deadline = time.monotonic() + timeout_s
    includes = [f"-I{d}" for d in ext.include_dirs]
    log_path = os.path.join(entry, "build.log")
    work = tempfile.mkdtemp(prefix="build-", dir=entry)
    try:
        with open(log_path, "w") as log:
            objects = [os.path.join(work, f"{i}.o") for i in range(len(ext.sources))]
            compiles = [
                [*cxx, *_BASE_CFLAGS, *ext.cflags, *includes, "-c", src, "-o", obj]
                for src, obj in zip(ext.sources, objects, strict=True)
            ]
            jobs = max(1, min(len(compiles), _cores()))
            with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
                for command in pool.map(lambda c: _run(c, deadline), compiles):
                    _check(command, ext, log, log_path)
            linked = os.path.join(work, ext.name + ".so")
            link = [*cxx, "-shared", *objects, "-o", linked, *ext.ldflags]
            _check(_run(link, deadline), ext, log, log_path)
        with open(os.path.join(entry, "key.json"), "w") as f:
            json.dump(
                {
                    "key": key,
                    "what": ext.what,
                    "key_parts": list(ext.key_parts),
                    "compile": compiles[0] if compiles else [],
                    "link": link,
                },
                f,
                indent=1,
            )
        os.replace(linked, library)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _run(command: list[str], deadline: float) -> tuple[list[str], int, str]:
    """Runs `command` until `deadline`: (command, exit status, stdout and stderr)."""
    try:
        done = subprocess.run(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=max(1.0, deadline - time.monotonic()),
            check=False,
        )
        return command, done.returncode, done.stdout
    except subprocess.TimeoutExpired as e:
        out = e.output.decode(errors="replace") if isinstance(e.output, bytes) else e.output
        return command, -1, (out or "") + "\n(timed out: HORA_EXTENSION_TIMEOUT_S)"
    except OSError as e:
        return command, -1, str(e)


def _check(result: tuple[list[str], int, str], ext: Extension, log, log_path: str) -> None:
    """Logs a command's output; raises ImportError, with its tail, when it failed."""
    command, status, output = result
    log.write(f"$ {shlex.join(command)}\n{output}\n")
    log.flush()
    if status == 0:
        return
    tail = "\n".join(output.rstrip().splitlines()[-_OUTPUT_TAIL_LINES:])
    raise ImportError(
        f"hora: building {ext.what} failed (exit status {status}):\n"
        f"  command: {shlex.join(command)}\n{tail}\n(full log: {log_path})"
    )
