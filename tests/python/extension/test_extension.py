"""hora._extension, the builder of framework extensions at first import: a one-function
library built into a temporary cache, reused, rebuilt when its source changes, built once when
two processes ask at the same time; a missing compiler, a compile error and a held lock each
raise ImportError saying what happened. Needs a C++ compiler (c++, g++ or clang++)."""

import ctypes
import fcntl
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from hora import _extension

SOURCE = 'extern "C" int hora_extension_test_answer() { return ANSWER; }\n'


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HORA_EXTENSION_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CXX", raising=False)
    if shutil.which("c++") is None and shutil.which("g++") is None:
        pytest.skip("no C++ compiler on PATH")
    return tmp_path / "cache"


def extension(tmp_path, answer=42, body=SOURCE):
    src = tmp_path / "src" / "answer.cc"
    src.parent.mkdir(exist_ok=True)
    src.write_text(body.replace("ANSWER", str(answer)))
    return _extension.Extension(
        name="answer", what="the test library", sources=[str(src)], key_parts=["test", "1"]
    )


def answer_of(path):
    lib = ctypes.CDLL(path)
    return lib.hora_extension_test_answer()


def test_builds_into_the_cache_then_reuses_it(tmp_path, cache, capfd):
    ext = extension(tmp_path)
    path = _extension.build(ext)
    assert path.startswith(str(cache) + os.sep)
    assert os.path.basename(os.path.dirname(path)).startswith("answer-")
    assert answer_of(path) == 42
    assert "hora: building the test library" in capfd.readouterr().err
    mtime = os.stat(path).st_mtime_ns

    assert _extension.build(ext) == path
    assert os.stat(path).st_mtime_ns == mtime
    assert "building" not in capfd.readouterr().err


def test_a_changed_source_builds_a_new_library(tmp_path, cache):
    first = _extension.build(extension(tmp_path, 1))
    second = _extension.build(extension(tmp_path, 2))
    assert first != second
    assert answer_of(second) == 2
    assert os.path.isfile(first)  # the old entry stays for whoever still uses it


def build_in_two_processes_at_once(tmp_path, body=SOURCE):
    """Builds extension(tmp_path, body=body) in two processes started together, through a
    compiler that counts its compiles and takes a second, so that both ask while the first
    builds. Returns [(stdout, stderr, exit status)] and the number of compiles."""
    count = tmp_path / "compiles"
    cxx = tmp_path / "counting-c++"
    cxx.write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        case " $* " in *" -c "*) echo compile >>"{count}"; sleep 1;; esac
        exec {shutil.which("c++") or shutil.which("g++")} "$@"
        """)
    )
    cxx.chmod(0o755)
    extension(tmp_path, body=body)  # writes the source
    script = textwrap.dedent(f"""\
        from hora import _extension
        ext = _extension.Extension(name="answer", what="the test library",
                                   sources=[{str(tmp_path / "src" / "answer.cc")!r}],
                                   key_parts=["test", "1"])
        print(_extension.build(ext))
        """)
    env = dict(os.environ, CXX=str(cxx))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [(*p.communicate(timeout=300), p.returncode) for p in procs]
    return results, len(count.read_text().splitlines())


def test_two_processes_at_once_build_once(tmp_path, cache):
    results, compiles = build_in_two_processes_at_once(tmp_path)
    for _out, err, rc in results:
        assert rc == 0, err
    paths = {out.strip() for out, _, _ in results}
    assert len(paths) == 1
    assert answer_of(paths.pop()) == 42
    assert compiles == 1
    assert sum("hora: building" in err for _, err, _ in results) == 1


def test_a_build_failing_while_another_process_waits_fails_both_once(tmp_path, cache):
    results, compiles = build_in_two_processes_at_once(tmp_path, "int broken( {}\n")
    assert compiles == 1
    for _, err, rc in results:
        assert rc != 0 and "ImportError: hora: building the test library failed" in err, err
    assert sum("built by another process" in err for _, err, _ in results) == 1


def test_a_missing_compiler_says_how_to_install_one(tmp_path, cache, monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    with pytest.raises(ImportError, match=r"CXX=/nonexistent/c\+\+.*apt-get install g\+\+"):
        _extension.build(extension(tmp_path))

    monkeypatch.delenv("CXX")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ImportError, match=r"no C\+\+ compiler found.*apt-get install g\+\+"):
        _extension.build(extension(tmp_path))


def test_a_compile_error_shows_the_command_and_the_output(tmp_path, cache):
    ext = extension(tmp_path, body="int broken( { return 0; }\n")
    with pytest.raises(ImportError) as raised:
        _extension.build(ext)
    message = str(raised.value)
    assert "building the test library failed" in message
    assert "command: " in message and "answer.cc" in message
    assert "error" in message  # the compiler's own words
    entry = _extension.cache_entry(ext)
    assert not os.path.exists(os.path.join(entry, "answer.so"))
    assert os.path.isfile(os.path.join(entry, "build.log"))


def test_a_lock_held_past_the_deadline_names_the_lock(tmp_path, cache):
    ext = extension(tmp_path)
    entry = _extension.cache_entry(ext)
    os.makedirs(entry)
    with open(os.path.join(entry, "lock"), "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(ImportError, match=f"waited 1 s .*{entry}/lock"):
            _extension.build(ext, timeout_s=1)
