"""The recipes of docs/c-libraries.md (examples/c-libraries): FFmpeg's,
libcurl's and SQLite's log callbacks through pylogsink, in small
extensions built as their authors build them (tests/c_libraries/setup.py:
setuptools, pkg-config, Debian's development packages), against the real
libraries: under pytest's capsys and caplog, on the process's own stderr
to its exit, in a real Jupyter kernel; and FFmpeg's decoder with a Python
thread that holds the GIL, where the per-line GIL callback many wrappers
have hangs."""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pytest

from conftest import NO_C_COMPILER_ON_WINDOWS, build_extension, import_built, kernel_result

HERE = Path(__file__).parent
PACKAGES = ["libavcodec", "libavutil", "libcurl", "sqlite3"]
FRAMES = 200  # each logs one "qp:" line at AV_LOG_DEBUG with debug=1 (FF_DEBUG_PICT_INFO)
AV_LOG_WARNING, AV_LOG_INFO, AV_LOG_SKIP_REPEATED = 24, 32, 1


def have(package: str) -> bool:
    return shutil.which("pkg-config") is not None and subprocess.run(["pkg-config", "--exists", package]).returncode == 0


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test extensions with the recipes copied beside them, built once."""
    if sys.platform == "win32":
        pytest.skip(f"the libraries are Debian's, and {NO_C_COMPILER_ON_WINDOWS}")
    missing = [p for p in PACKAGES if not have(p)]
    if missing:
        pytest.skip(f"no development package for {', '.join(missing)} (.ci/run installs them)")
    out = tmp_path_factory.mktemp("c_libraries")
    for recipe in (HERE.parent / "examples" / "c-libraries").iterdir():
        shutil.copy(recipe, out)
    return build_extension(HERE / "c_libraries", out)


@pytest.fixture
def env(built: Path, clean_env: dict[str, str]) -> dict[str, str]:
    return {**clean_env, "PYTHONPATH": str(built)}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An HTTP server in a child process on 127.0.0.1; its file's URL."""
    root = tmp_path_factory.mktemp("www")
    (root / "file").write_bytes(b"x" * 10_000)
    code = textwrap.dedent(
        """
        import functools, http.server, sys
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
        handler.func.log_message = lambda *args: None
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """
    )
    child = subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    port = child.stdout.readline().strip()
    yield f"http://127.0.0.1:{port}/file"
    child.kill()
    child.wait()


def wait_for(read: Callable[[], str], done: Callable[[str], bool], seconds: float = 20) -> str:
    """What ``read`` gave, gathered until ``done`` holds or time is up:
    lines from threads outside a call arrive on pylogsink's own thread."""
    text = read()
    deadline = time.monotonic() + seconds
    while not done(text) and time.monotonic() < deadline:
        time.sleep(0.05)
        text += read()
    return text


def run(code: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout, env=env)


# What each recipe's workload logs, and how to tell it is all there.
WORKLOADS: dict[str, tuple[str, str, Callable[[str], dict[str, int]], dict[str, int]]] = {
    "ffmpeg": (
        "av_rt",
        "ffmpeg=debug",
        lambda text: {"qp": len(re.findall(r"mpeg4\] qp:\d+", text))},
        {"qp": FRAMES},
    ),
    "curl": (
        "curl_rt",
        "curl=debug",
        lambda text: {
            "sent": len(re.findall(r"> GET /file HTTP/1.1", text)),
            "received": len(re.findall(r"< HTTP/1.0 200 OK", text)),
            # A header block is one record per line.
            "host": len(re.findall(r"header\] > Host: 127\.0\.0\.1:\d+$", text, re.M)),
        },
        {"sent": 20, "received": 20, "host": 20},
    ),
    "sqlite": (
        "sqlite_rt",
        "info",
        lambda text: {
            "error": len(re.findall(r"no such table: nope .*\(code 1\)", text)),
            "warn": len(re.findall(r"automatic index on b\(y\) \(code 284\)", text)),
        },
        {"error": 8, "warn": 8},
    ),
}

SQL = "create table a(x); create table b(y); insert into a values (1), (2); select * from a, b where a.x = b.y; select * from nope;"


def workload(library: str, module: ModuleType, server: str) -> None:
    """The recipe's library at work on native threads, the GIL released."""
    if library == "ffmpeg":
        packets = module.encode(FRAMES, 64)
        assert module.decode(packets, threads=4, debug=1) == FRAMES
    elif library == "curl":
        assert module.get(server, times=5, threads=4) == 20 * 10_000
    else:
        assert module.run(SQL, threads=8) == ["no such table: nope"] * 8


def workload_code(library: str, server: str) -> str:
    name, spec, _, _ = WORKLOADS[library]
    return textwrap.dedent(
        f"""
        import {name} as module
        module.set_log_filter({spec!r})
        from test_c_libraries import workload
        workload({library!r}, module, {server!r})
        """
    )


@pytest.mark.parametrize("library", WORKLOADS)
def test_every_line_reaches_capsys(library: str, built: Path, server: str, capsys: pytest.CaptureFixture[str]) -> None:
    name, spec, count, expected = WORKLOADS[library]
    module = import_built(built, name)
    module.set_log_filter(spec)
    try:
        workload(library, module, server)
        err = wait_for(lambda: capsys.readouterr().err, lambda text: count(text) == expected)
    finally:
        module.set_log_filter("warn")
    assert count(err) == expected, err[-2000:]


@pytest.mark.parametrize("library", WORKLOADS)
def test_every_record_reaches_caplog(
    library: str, built: Path, server: str, caplog: pytest.LogCaptureFixture
) -> None:
    name, spec, count, expected = WORKLOADS[library]
    module = import_built(built, name)
    module.set_log_filter(spec)
    module.set_log_destination("logging")
    caplog.set_level(logging.DEBUG)

    def text() -> str:
        return "".join(f"{r.name}] {r.getMessage()}\n" for r in caplog.records)

    try:
        workload(library, module, server)
        wait_for(lambda: "", lambda _: count(text()) == expected)
    finally:
        module.set_log_destination("stderr")
        module.set_log_filter("warn")
    assert count(text()) == expected, text()[-2000:]
    assert {r.name.split(".")[0] for r in caplog.records} == {library}  # "ffmpeg::mpeg4" is ffmpeg.mpeg4


@pytest.mark.parametrize("library", WORKLOADS)
def test_every_line_reaches_the_processs_stderr_before_a_clean_exit(library: str, env: dict[str, str], server: str) -> None:
    _, _, count, expected = WORKLOADS[library]
    done = run(workload_code(library, server), {**env, "PYTHONPATH": env["PYTHONPATH"] + os.pathsep + str(HERE)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert count(done.stderr) == expected, done.stderr[-2000:]


@pytest.mark.timeout(300)
def test_every_line_reaches_the_cell_in_a_real_kernel(built: Path, clean_env: dict[str, str], server: str) -> None:
    """All three recipes in one kernel (the kernel has IPython's history
    database open in SQLite: the private copy's log is still installed)."""
    cells = [f"import sys\nsys.path[:0] = [{str(built)!r}, {str(HERE)!r}]\n"]
    cells += [workload_code(library, server) for library in WORKLOADS]
    cells.append("import time\ntime.sleep(2)\n")  # the last lines of threads outside a call
    done = subprocess.run(
        [sys.executable, str(HERE / "scripts" / "capture_kernel.py"), "-"],
        input="\0".join(cells),
        capture_output=True,
        text=True,
        timeout=240,
        env=clean_env,
    )
    assert done.returncode == 0, done.stderr
    result = kernel_result(done.stdout)
    assert result["timed_out"] is False and result["errors"] == [], result
    err = "".join(cell.get("stderr", "") for cell in result["cells"])
    for library, (_, _, count, expected) in WORKLOADS.items():
        assert count(err) == expected, (library, err[-2000:])


# FFmpeg: the decoder and a Python thread that holds the GIL.

WAIT_HOLDING_THE_GIL = """
import threading, av_rt
av_rt.set_log_filter("ffmpeg=debug")
av_rt.set_level(48)  # AV_LOG_DEBUG, for the python callback's own level check
av_rt.use({callback!r})
packets = av_rt.encode(2000, 64)
if {shape!r} == "waiter":
    # A decode with the GIL released; this thread waits for its frames
    # with the GIL held (a binding that forgot to release it).
    decoder = threading.Thread(target=av_rt.decode, args=(packets,), kwargs=dict(debug=1))
    decoder.start()
    seen = av_rt.wait_frames(1500)
    decoder.join()
else:
    # The decode itself with the GIL held (PyAV's codec.open and decode
    # with frame threads).
    seen = av_rt.decode(packets, debug=1, gil=True)
print("done", seen)
"""


@pytest.mark.parametrize("shape", ["waiter", "gil_held"])
def test_a_decode_that_a_thread_holding_the_gil_waits_for_completes(shape: str, env: dict[str, str]) -> None:
    done = run(WAIT_HOLDING_THE_GIL.format(callback="pylogsink", shape=shape), env, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("done"), done.stdout
    assert len(re.findall(r"qp:\d+", done.stderr)) == 2000


@pytest.mark.naive
@pytest.mark.parametrize("shape", ["waiter", "gil_held"])
def test_the_same_decode_through_a_per_line_gil_callback_hangs(shape: str, env: dict[str, str]) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run(WAIT_HOLDING_THE_GIL.format(callback="python", shape=shape), env, timeout=15)


EXIT_WHILE_DECODING = """
import threading, time, av_rt
av_rt.set_log_filter("ffmpeg=debug")
packets = av_rt.encode(300, 64)
def decode_forever():
    while True:
        av_rt.decode(packets, threads=8, debug=9)
threading.Thread(target=decode_forever, daemon=True).start()
time.sleep({delay})
"""


@pytest.mark.timeout(300)
def test_the_interpreter_exits_while_frame_threads_log(env: dict[str, str]) -> None:
    def once(i: int) -> tuple[str, int]:
        try:
            done = run(EXIT_WHILE_DECODING.format(delay=0.05 + 0.01 * (i % 10)), env, timeout=30)
        except subprocess.TimeoutExpired:
            return "hung", 0
        return str(done.returncode), done.stderr.count("ffmpeg::mpeg4]")

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(once, range(30)))
    assert [code for code, _ in results] == ["0"] * 30, results
    assert all(lines > 0 for _, lines in results), results


# FFmpeg: the recipe's own cases, through av_log.


@pytest.fixture
def av(built: Path) -> Any:
    av_rt = import_built(built, "av_rt")
    av_rt.set_log_filter("ffmpeg=info")
    yield av_rt
    av_rt.set_flags(0)
    av_rt.set_log_filter("warn")


def lines(err: str) -> list[str]:
    return [line.split("] ", 1)[1] for line in err.splitlines()]


def test_repeats_become_one_line_with_skip_repeated(av: Any, capsys: pytest.CaptureFixture[str]) -> None:
    av.set_flags(AV_LOG_SKIP_REPEATED)
    av.log(AV_LOG_INFO, b"same\n", 5)
    av.log(AV_LOG_INFO, b"other\n")
    assert lines(capsys.readouterr().err) == ["same", "Last message repeated 4 times", "other"]
    av.set_flags(0)
    av.log(AV_LOG_INFO, b"same\n", 3)
    assert lines(capsys.readouterr().err) == ["same"] * 3


def test_a_line_made_in_several_calls_is_one_record(av: Any, capsys: pytest.CaptureFixture[str]) -> None:
    av.log(AV_LOG_INFO, b"part one, ")
    av.log(AV_LOG_INFO, b"part two\n")
    assert lines(capsys.readouterr().err) == ["part one, part two"]


def test_a_part_whose_line_never_ends_is_a_record_at_its_own_level(av: Any, capsys: pytest.CaptureFixture[str]) -> None:
    # A part without its newline, then a message of another level: two
    # records, each at its own level, none merged into the other.
    av.log(AV_LOG_INFO, b"a part, ")
    av.log(AV_LOG_WARNING, b"a warning\n")
    found = re.findall(r" (\w+) +ffmpeg\] (.*)", capsys.readouterr().err)
    assert found == [("INFO", "a part, "), ("WARN", "a warning")]
    # A thread whose last message has no newline: logged when it ends
    # (outside any call: pylogsink's thread writes it to capsys's stream).
    av.log_in_thread(AV_LOG_INFO, b"the thread's last part")
    err, give_up = "", time.monotonic() + 5
    while "last part" not in err and time.monotonic() < give_up:
        time.sleep(0.02)
        err += capsys.readouterr().err
    found = re.findall(r" (\w+) +ffmpeg\] (.*)", err)
    assert found == [("INFO", "the thread's last part")]


def test_hostile_and_huge_messages_are_escaped_and_cut(av: Any, capsys: pytest.CaptureFixture[str]) -> None:
    av.log(AV_LOG_INFO, b"\x1b[2J\xff\xfe bell\x07 %n %s\n")
    av.log(AV_LOG_INFO, b"x" * 1_000_000 + b"\n")
    hostile, huge = capsys.readouterr().err.splitlines()
    assert hostile.endswith(r"ffmpeg] \x1b[2J\xff\xfe bell\x07 %n %s"), hostile
    # Cut to 64 KiB by the recipe (PYLOGSINK_FORMAT_MAX), which says so.
    m = re.fullmatch(r"(x+) \[pylogsink\] cut: (\d+) bytes left out", huge.split("ffmpeg] ", 1)[1])
    assert m and 60_000 < len(m.group(1)) < 66_000, huge[-200:]
    # The bytes cut count the message's newline too, cut with its end.
    assert len(m.group(1)) + int(m.group(2)) == 1_000_001


def test_ffmpeg_levels_map_to_pylogsinks(av: Any, capsys: pytest.CaptureFixture[str]) -> None:
    av.set_log_filter("trace")
    for level in (0, 8, 16, 24, 32, 40, 48, 56):  # PANIC ... TRACE
        av.log(level, b"at %d\n" % level)
    av.log(-8, b"quiet\n")
    found = re.findall(r" (\w+) +ffmpeg\] at (\d+)", capsys.readouterr().err)
    assert found == [
        ("ERROR", "0"), ("ERROR", "8"), ("ERROR", "16"), ("WARN", "24"),
        ("INFO", "32"), ("DEBUG", "40"), ("DEBUG", "48"), ("TRACE", "56"),
    ]  # fmt: skip


# SQLite: SQLITE_CONFIG_LOG is set before the library initializes.

SHARED_OR_PRIVATE = """
import sqlite3
sqlite3.connect(":memory:").execute("select 1")  # Python's sqlite3 initialized its SQLite
import sqlite_rt, sqlite_rt_shared
maps = open("/proc/self/maps").read()
copies = {line.split()[-1] for line in maps.splitlines() if "libsqlite3" in line}
print(sqlite_rt.installed, sqlite_rt_shared.installed, len(copies), sqlite_rt_shared.sqlite_version)
"""


def test_a_private_sqlite_takes_the_log_after_pythons_sqlite3_started(env: dict[str, str]) -> None:
    done = run(SHARED_OR_PRIVATE, env)
    assert done.returncode == 0, done.stderr
    private, shared, copies, version = done.stdout.split()
    assert private == "0"
    if copies != "1":
        pytest.skip(f"Python's sqlite3 and the extension load {copies} copies of libsqlite3 here")
    # The copy Python initialized: SQLite 3.42 and later take the log at any
    # time; before, it is SQLITE_MISUSE (21).
    late = tuple(map(int, version.split("."))) >= (3, 42)
    assert shared == ("0" if late else "21"), version
