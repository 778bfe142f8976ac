"""The C ABI (pylogsink.h, pylogsink.hpp, the static library in the wheel),
through real extensions built from the installed package only: a C
extension (Python C API, setuptools) and a C++ one (pybind11), both over
the backend in tests/c_abi/backend.h, which logs under its own lock through
ExecuTorch's platform log hook."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import pylogsink
from conftest import NO_C_COMPILER_ON_WINDOWS, build_extension, lines_while_running, records

SOURCES = Path(__file__).parent / "c_abi"
EXTENSIONS = ["c_rt", "cpp_rt"]
ERROR, WARN, INFO, DEBUG = 4, 3, 2, 1

# A replaced sys.stderr whose write hands the GIL away, as a real stream
# does around its write(2); time.sleep makes the hand-off certain.
SLOW_STDERR = """
import time
class SlowStderr:
    def __init__(self, delay=0.001):
        self.delay, self.parts = delay, []
    def write(self, text):
        time.sleep(self.delay)
        self.parts.append(text)
        return len(text)
    def flush(self):
        pass
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both extensions, built once: the test's own sources, and pylogsink's
    headers and library from the installed package (see setup.py)."""
    if sys.platform == "win32":
        pytest.skip(NO_C_COMPILER_ON_WINDOWS)
    return build_extension(SOURCES, tmp_path_factory.mktemp("c_abi"))


@pytest.fixture
def env(built: Path, clean_env: dict[str, str]) -> dict[str, str]:
    """The environment for a child that imports the extensions."""
    clean_env.pop("RT_LOG", None)
    return {**clean_env, "PYTHONPATH": str(built)}


@pytest.fixture(params=EXTENSIONS)
def rt(request: pytest.FixtureRequest, built: Path):  # type: ignore[no-untyped-def]
    """The extension, imported in this process."""
    sys.path.insert(0, str(built))
    try:
        return __import__(request.param)
    finally:
        sys.path.remove(str(built))


def run(code: str, env: dict[str, str], timeout: float = 60, sigint: str = "default") -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh interpreter; with ``sigint="ignored"`` it
    starts with SIGINT ignored, as under ``nohup`` or ``cmd &`` in a
    script (Python then installs no SIGINT handler)."""
    disposition = signal.SIG_IGN if sigint == "ignored" else signal.SIG_DFL
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, disposition),
    )


def two_threads(ext: str, sink: str, load: str, env: dict[str, str], timeout: float) -> str:
    """Thread A loads a method 100 times, whose backend logs an Error under
    the backend lock; thread B executes until A is done, taking that lock
    with the GIL held. Returns the
    child's stdout (the lines delivered), or "hung"."""
    code = SLOW_STDERR + textwrap.dedent(
        f"""
        import sys, threading
        import {ext} as rt
        rt.set_sink("{sink}")
        loaded = threading.Event()
        def loader():
            for _ in range(100):
                try:
                    rt.{load}()
                except RuntimeError:
                    pass
            loaded.set()
        def executor():
            # For as long as A runs, so that the two always meet.
            while not loaded.is_set():
                rt.execute()
        stderr = sys.stderr = SlowStderr()
        threads = [threading.Thread(target=f) for f in (loader, executor)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        sys.stderr = sys.__stderr__
        print("".join(stderr.parts).count("XNNPACK backend: failed to create workspace"))
        """
    )
    try:
        done = run(code, env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hung"
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def loads(ext: str) -> list[str]:
    """The bindings that log under the backend lock: with the GIL held,
    released inside the body, and (pybind11) released by the call guard."""
    return ["load_method", "load_method_detached"] + (["load_method_released"] if ext == "cpp_rt" else [])


def test_build_inputs_come_from_the_installed_package() -> None:
    package = Path(pylogsink.__file__).parent
    sources = Path(__file__).resolve().parents[1] / "python"
    include, library = Path(pylogsink.get_include()), Path(pylogsink.get_library())
    headers = ["pylogsink.h", "pylogsink.hpp", "pylogsink_emit.h", "pylogsink_spdlog.hpp", "pylogsink_glog.hpp"]
    assert sorted(p.name for p in include.iterdir()) == sorted(headers)
    assert library.is_file() and library.name == "libpylogsink.a"
    for path in (include, library, Path(pylogsink.get_cmake_dir())):
        assert path.is_relative_to(package) and not path.is_relative_to(sources)
    args = pylogsink.get_link_args()
    # The system libraries rustc names for the target: MinGW's on Windows.
    assert args[0] == str(library) and ("-lkernel32" if sys.platform == "win32" else "-lpthread") in args
    assert not any(a.startswith("-lpython") for a in args)
    assert (Path(pylogsink.get_cmake_dir()) / "pylogsinkConfig.cmake").is_file()


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_two_threads_complete_with_the_gil_held_and_released(ext: str, env: dict[str, str]) -> None:
    for load in loads(ext):
        assert two_threads(ext, "pylogsink", load, env, timeout=60) == "100", load


@pytest.mark.naive
@pytest.mark.parametrize("ext", EXTENSIONS)
def test_the_same_extension_writing_through_sys_stderr_hangs(ext: str, env: dict[str, str]) -> None:
    # Proves the scenario real: pybind11's stream redirect does this.
    with ThreadPoolExecutor(3) as pool:
        outcomes = list(pool.map(lambda load: two_threads(ext, "naive", load, env, timeout=8), loads(ext)))
    assert outcomes == ["hung"] * len(loads(ext))


def test_a_replaced_stderr_captures_the_lines(rt, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    rt.log_lines(3)
    rt.log(WARN, b"a warning \x1b[31m", "rt::loader")
    lines = records(capsys.readouterr().err)
    source = "c_rt.c" if rt.__name__ == "c_rt" else "cpp_rt.cpp"
    # Through ExecuTorch's hook: its target, the file and line of ET_LOG.
    for i, line in enumerate(lines[:3]):
        assert re.search(rf"Z INFO  executorch {re.escape(source)}:\d+\] line {i}$", line), line
    # Control characters from the message are escaped.
    assert re.search(rf"Z WARN  rt::loader {re.escape(source)}:\d+\] a warning \\x1b\[31m$", lines[3]), lines[3]
    assert len(lines) == 4


def test_a_target_given_by_its_length_needs_no_nul(rt, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    # pylogsink_emit_n from C, pylogsink::emit with a std::string target
    # from C++: slices of one buffer, none followed by a NUL.
    buffer = b"rt::loader::cache, then more bytes"
    rt.log_n(WARN, buffer, 0, 10, b"one")
    rt.log_n(WARN, buffer, 4, 13, b"two")
    rt.log_n(WARN, buffer, 0, 0, b"three")
    source = re.escape("c_rt.c" if rt.__name__ == "c_rt" else "cpp_rt.cpp")
    lines = records(capsys.readouterr().err)
    assert len(lines) == 3
    assert re.fullmatch(rf"\[\S+Z WARN  rt::loader {source}:\d+\] one", lines[0]), lines[0]
    assert re.fullmatch(rf"\[\S+Z WARN  loader::cache {source}:\d+\] two", lines[1]), lines[1]
    assert re.fullmatch(rf"\[\S+Z WARN  {source}:\d+\] three", lines[2]), lines[2]


@pytest.mark.parametrize("target", ["rt\nCRITICAL forged::target", "\x1b[2J\x1b[H", "rt\x7f\x9b\tend"])
def test_a_hostile_target_given_by_its_length_is_escaped_as_any_target(  # type: ignore[no-untyped-def]
    rt, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rt.log_n(WARN, b"<" + target.encode() + b">", 1, len(target.encode()), b"message")
    by_length = capsys.readouterr().err
    rt.log(WARN, b"message", target)
    with_nul = capsys.readouterr().err

    def same(text: str) -> str:  # the time and the line number left out
        return re.sub(r":\d+\]", ":N]", re.sub(r"^\[\S+Z", "[T", text, flags=re.M))

    assert same(by_length) == same(with_nul)
    assert len(records(by_length)) == 1 and "\x1b" not in by_length and "\x9b" not in by_length
    assert by_length.count("\n") == 1 + target.count("\n")  # a newline continues the record, indented
    assert not any(line.startswith("[") for line in by_length.splitlines()[1:])  # nothing forged


@pytest.mark.skipif(sys.platform == "win32", reason=NO_C_COMPILER_ON_WINDOWS)
def test_the_emit_header_compiles_without_python(tmp_path: Path) -> None:
    # A runtime's platform layer includes pylogsink_emit.h alone, with
    # pylogsink's include directory and no Python one.
    env = {k: v for k, v in os.environ.items() if k not in ("CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH")}
    (tmp_path / "platform.c").write_text(
        textwrap.dedent(
            """
            #include <pylogsink_emit.h>
            #include <string.h>
            void platform_log(int level, const char *tag, size_t tag_len, const char *text) {
                pylogsink_emit_n(level < PYLOGSINK_TRACE ? PYLOGSINK_TRACE : level, tag, tag_len,
                                 __FILE__, __LINE__, text, strlen(text));
                pylogsink_emit(PYLOGSINK_WARN, "platform", NULL, 0, text, strlen(text));
            }
            """
        )
    )
    (tmp_path / "binding.c").write_text("#include <pylogsink.h>\n")
    include = f"-I{pylogsink.get_include()}"
    for compiler, std in (("gcc", "-std=c99"), ("g++", "-std=c++11")):
        language = ["-x", "c++"] if compiler == "g++" else []
        done = subprocess.run(
            [compiler, std, "-Wall", "-Wextra", "-Werror", "-pedantic", include, *language, "-c", "platform.c"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        # pylogsink.h itself needs Python's headers: this compiler has none.
        done = subprocess.run(
            [compiler, std, include, *language, "-fsyntax-only", "binding.c"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode != 0 and "Python.h" in done.stderr, done.stderr


@pytest.fixture
def c_rt(built: Path):  # type: ignore[no-untyped-def]
    """The C extension, imported into this process."""
    sys.path.insert(0, str(built))
    try:
        import c_rt  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(built))
    return c_rt


def test_a_c_extension_that_logs_and_printfs_inside_a_capture_reaches_capsys_once(
    c_rt, capsys: pytest.CaptureFixture[str]  # type: ignore[no-untyped-def]
) -> None:
    # Two pylogsinks in one process: the C extension's own (linked in) and
    # the package's capture, which knows nothing of the other's lines.
    with pylogsink.capture_output():
        c_rt.log_and_printf("both")
    out, err = capsys.readouterr()
    assert out == "printed: both\n"
    assert [line.split("] ", 1)[1] for line in records(err)] == ["logged: both"]


def test_the_same_on_the_processs_own_streams_comes_once_each(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import c_rt, pylogsink\nwith pylogsink.capture_output():\n    c_rt.log_and_printf('both')"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "printed: both\n"
    assert [line.split("] ", 1)[1] for line in records(done.stderr)] == ["logged: both"]


def test_worker_threads_attached_through_the_c_abi_join_the_call(
    c_rt, capsys: pytest.CaptureFixture[str]  # type: ignore[no-untyped-def]
) -> None:
    c_rt.fan_out(4, 50)
    found: dict[int, list[int]] = {}
    for line in records(capsys.readouterr().err):
        worker, _, number = line.split("] worker ", 1)[1].split()
        found.setdefault(int(worker), []).append(int(number))
    assert found == {worker: list(range(50)) for worker in range(4)}


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_own_stderr_lines_are_on_fd2_before_the_call_returns(ext: str, env: dict[str, str]) -> None:
    got = lines_while_running(f"import {ext}; {ext}.log_then_hang(3, 60)", 3, env=env)
    assert [g.split("] ")[1].strip() for g in got] == [f"about to hang: line {i}" for i in range(3)]


def test_error_lines_reach_the_exception_with_invalid_utf8_escaped(rt) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RuntimeError) as raised:
        rt.load_method()
    assert str(raised.value) == (
        "load_method failed (error 0x23)\nErrors logged during the call:\n  XNNPACK backend: failed to create workspace"
    )
    with pytest.raises(RuntimeError) as raised:
        rt.load_program(b"\xff" * 4)
    # The text is cut inside a three-byte character; the identifier is not UTF-8.
    assert str(raised.value) == (
        "load_program: invalid program /data/\u4e2d\\xe4\\xb8\n"
        "Errors logged during the call:\n  Program identifier '\\xff\\xff\\xff\\xff' != expected 'ET12'"
    )


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_a_fatal_line_follows_its_context_then_the_process_aborts(ext: str, env: dict[str, str]) -> None:
    # sys.stderr is replaced, so the context line is kept; the Fatal line
    # writes it to fd 2 first.
    done = run(f"import io, sys, {ext}; sys.stderr = io.StringIO(); {ext}.fatal()", env)
    assert done.returncode == -signal.SIGABRT
    assert [r.split("] ")[1] for r in records(done.stderr)] == [
        "context: loading model.pte, 3 of 4 delegates ready",
        "out of memory in delegate 4",
    ]
    assert " FATAL executorch backend.h:" in records(done.stderr)[1]


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_the_filter_comes_from_the_variable_the_extension_names(ext: str, env: dict[str, str]) -> None:
    code = f"import {ext}; {ext}.log({DEBUG}, b'a debug line'); {ext}.log({INFO}, b'an info line'); print({ext}.log_filter())"
    default, debug, bad = (run(code, {**env, **extra}) for extra in ({}, {"RT_LOG": "debug"}, {"RT_LOG": "rt=loud"}))
    assert [r.split("] ")[1] for r in records(default.stderr)] == ["an info line"]
    assert default.stdout.strip() == "info"
    assert [r.split("] ")[1] for r in records(debug.stderr)] == ["a debug line", "an info line"]
    # A bad value never breaks the import: the default applies, and one Warn says why.
    assert bad.returncode == 0 and bad.stdout.strip() == "info"
    assert 'RT_LOG: ignored "rt=loud"' in records(bad.stderr)[0]


def test_set_filter_changes_the_filter_and_refuses_a_bad_directive(rt, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    try:
        rt.set_filter("error")
        rt.log(WARN, b"dropped")
        rt.log(ERROR, b"kept")
        assert [r.split("] ")[1] for r in records(capsys.readouterr().err)] == ["kept"]
        with pytest.raises(ValueError, match='"rt=loud"'):
            rt.set_filter("warn,rt=loud")
        assert rt.log_filter() == "error"
        # NULL: back to the default the runtime gave pylogsink_init.
        rt.set_filter(None)
        assert rt.log_filter() == "info"
        rt.log(WARN, b"kept again")
        assert [r.split("] ")[1] for r in records(capsys.readouterr().err)] == ["kept again"]
    finally:
        rt.set_filter("info")


RUNS = 10


@pytest.mark.timeout(300)
@pytest.mark.parametrize("ext", EXTENSIONS)
def test_daemon_threads_logging_at_exit_never_crash_or_hang(ext: str, env: dict[str, str]) -> None:
    code = SLOW_STDERR + textwrap.dedent(
        f"""
        import sys, threading, time, {ext}
        sys.stderr = SlowStderr(0.0001)
        def worker():
            while True:
                {ext}.log_lines(10)
        for _ in range(4):
            threading.Thread(target=worker, daemon=True).start()
        time.sleep(0.05)
        """
    )

    def once(_: int) -> str:
        try:
            done = run(code, env, timeout=30)
        except subprocess.TimeoutExpired:
            return "hung"
        if done.returncode == 0:
            return "ok"
        said = [line for line in done.stderr.splitlines() if not line.startswith("[")]
        return f"exit {done.returncode}: {said[-3:]}"

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(once, range(RUNS)))
    assert [o for o in outcomes if o != "ok"] == []


@pytest.mark.parametrize("sigint", ["default", "ignored"])
@pytest.mark.parametrize(
    "ext, binding",
    [
        ("c_rt", "log_lines(2)"),  # pylogsink_call_exit returns -1
        ("cpp_rt", "log_lines(2)"),  # pylogsink::scope: a pending call
        ("cpp_rt", "load_program(b'x')"),  # pylogsink::call: error_already_set
    ],
)
def test_an_interrupt_while_the_lines_are_written_reaches_the_caller(
    ext: str, binding: str, sigint: str, env: dict[str, str]
) -> None:
    # The caller gets the very exception object the write raised, whether
    # or not Python handles SIGINT (a replayed Ctrl-C is dropped where
    # SIGINT was ignored at start).
    done = run(
        f"""
        import sys, {ext}
        class Interrupted:
            def write(self, text):
                raise KeyboardInterrupt("raised by write")
            def flush(self):
                pass
        sys.stderr = Interrupted()
        try:
            try:
                {ext}.{binding}
            except RuntimeError:
                pass
            for _ in range(1000):  # where a pending call runs
                pass
            print("returned")
        except KeyboardInterrupt as interrupt:
            print("interrupted", interrupt.args)
        """,
        env,
        sigint=sigint,
    )
    assert done.stdout.strip() == "interrupted ('raised by write',)", done.stderr
    # The write failed, so the lines went to fd 2 as well.
    assert len(records(done.stderr)) >= 1


def test_cmake_builds_an_extension_with_the_shipped_config(tmp_path: Path, env: dict[str, str]) -> None:
    # cmake from PyPI (tests/requirements.txt), next to this interpreter.
    cmake = shutil.which("cmake", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    assert cmake is not None, "cmake is in tests/requirements.txt"
    for source in SOURCES.iterdir():
        shutil.copy(source, tmp_path)
    build = tmp_path / "build"
    for step in (
        [cmake, "-S", str(tmp_path), "-B", str(build), f"-DPython_EXECUTABLE={sys.executable}"],
        [cmake, "--build", str(build)],
    ):
        done = subprocess.run(step, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    env = {**env, "PYTHONPATH": str(build)}
    done = run("import c_rt; print(c_rt.__file__)\ntry: c_rt.load_method()\nexcept RuntimeError as e: print(e)", env)
    assert done.stdout.splitlines()[0].startswith(str(build))
    assert done.stdout.splitlines()[-1] == "  XNNPACK backend: failed to create workspace"
    assert two_threads("c_rt", "pylogsink", "load_method_detached", env, timeout=60) == "100"


@pytest.mark.parametrize("ext", ["c_rt", "cpp_rt"])
@pytest.mark.parametrize("flush", [True, False], ids=["flush", "no flush"])
def test_a_loop_holding_the_gil_shows_its_progress_at_each_pylogsink_flush(
    flush: bool, ext: str, env: dict[str, str]
) -> None:
    # progress: 60 steps of 20 ms with the GIL held, pylogsink_flush (C) or
    # pylogsink::flush() (pybind11) after each step or not.
    done = run(
        f"""
        import json, sys, time, {ext}
        arrived = []
        class Timed:
            def write(self, text):
                arrived.extend((time.monotonic(), line) for line in text.splitlines())
            def flush(self):
                pass
        sys.stderr = Timed()
        {ext}.progress(60, 20, {flush})
        returned = time.monotonic()
        sys.stderr = sys.__stderr__
        lines = [line.split("] ", 1)[-1] for _, line in arrived]
        print(json.dumps({{"lines": lines, "first_before_return": returned - arrived[0][0]}}))
        """,
        env,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["lines"] == [f"step {i}" for i in range(60)]
    if flush:
        assert got["first_before_return"] >= 0.5, got["first_before_return"]
    else:
        assert got["first_before_return"] < 0.1, got["first_before_return"]


def test_printf_style_messages_are_formatted_only_when_logged_and_cut_safely(env: dict[str, str]) -> None:
    # pylogsink_emitf (and pylogsink_vemit, for a library's va_list
    # callback): the newline a library ends its message with is dropped; a
    # 1 MB expansion is cut at 64 KiB with a note; hostile bytes are
    # escaped; a record the filter drops is never formatted (its argument,
    # the address 1, would crash vsnprintf).
    done = run("import c_rt; c_rt.set_filter('info'); c_rt.emitf_cases(); print('returned')", env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "returned"
    messages = [r.split("] ", 1)[1] for r in records(done.stderr)]
    assert len(messages) == 3, messages
    assert messages[0] == "fits: 3 items"
    big = messages[1]
    assert big.startswith(" " * 1000)
    assert len(big) <= 64 * 1024 + 64
    assert big.endswith(f" [pylogsink] cut: {1_000_004 - 64 * 1024} bytes left out")
    assert messages[2] == "bytes: \\xff\\xfe\\x1b[2J"


@pytest.mark.skipif(sys.platform == "win32", reason=NO_C_COMPILER_ON_WINDOWS)
def test_vemit_formats_within_its_buffers_under_the_sanitizers(tmp_path: Path) -> None:
    # pylogsink_vemit's formatting alone (tests/c_abi/vemit_check.c, with
    # stand-ins for the two functions it calls), built with AddressSanitizer
    # and UBSan: the stack buffer's edges, the largest message kept whole,
    # a 1 MB expansion cut with its note, a filtered record never
    # formatted.
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc: the sanitizer build is skipped")
    exe = tmp_path / "vemit_check"
    build = subprocess.run(
        [gcc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
         "-g", "-I", pylogsink.get_include(), str(SOURCES / "vemit_check.c"), "-o", str(exe)],
        capture_output=True, text=True, timeout=120,
    )
    assert build.returncode == 0, build.stderr
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr


@pytest.fixture(scope="module")
def ctypes_rt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/c_abi/ctypes_rt.c as a shared library, linked with the
    installed pylogsink's static library and no Python header or library.
    On Windows, the DLL that scripts/test_windows.sh builds with MinGW
    (PYLOGSINK_TEST_CTYPES_RT): this Windows CPython has no C compiler."""
    if sys.platform == "win32":
        dll = os.environ.get("PYLOGSINK_TEST_CTYPES_RT")
        if not dll:
            pytest.skip("ctypes_rt.dll is built by scripts/test_windows.sh (MinGW), and PYLOGSINK_TEST_CTYPES_RT is unset")
        return Path(dll)
    out = tmp_path_factory.mktemp("ctypes_rt") / "ctypes_rt.so"
    done = subprocess.run(
        ["gcc", "-std=c99", "-Wall", "-Werror", "-shared", "-fPIC", "-o", str(out), str(SOURCES / "ctypes_rt.c"),
         f"-I{pylogsink.get_include()}", *pylogsink.get_link_args()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return out


CTYPES_CHILD = """
import contextlib, ctypes, io, sys
binding, work = ctypes.PyDLL(sys.argv[1]), ctypes.CDLL(sys.argv[1])
binding.rt_init(b"CTYPES_RT_LOG")
caught = io.StringIO()
with contextlib.redirect_stderr(caught):
    binding.rt_enter()
    binding.rt_log(b"held", 3)        # the GIL held
    binding.rt_exit()
    binding.rt_enter()
    work.rt_log_threads(4, 100)       # the GIL released, four native threads
    binding.rt_exit()
binding.rt_log(b"outside", 2)         # outside any call, sys.stderr back
sys.stdout.write(caught.getvalue())
"""


def test_a_runtime_driven_by_ctypes_logs_through_the_static_library(
    ctypes_rt: Path, clean_env: dict[str, str]
) -> None:
    # A C runtime with no Python header, its bindings in Python (ctypes):
    # the lines of a call, with the GIL held and released, reach the
    # replaced sys.stderr by the call's return, each thread's in order.
    clean_env.pop("CTYPES_RT_LOG", None)
    done = subprocess.run(
        [sys.executable, "-c", CTYPES_CHILD, str(ctypes_rt)], capture_output=True, text=True, env=clean_env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    caught = records(done.stdout)
    assert all(re.search(r"Z INFO  ctypes_rt ctypes_rt\.c:\d+\] ", line) for line in caught), caught[:3]
    messages = [line.rsplit("] ", 1)[1] for line in caught]
    assert messages[:3] == ["held 0", "held 1", "held 2"]
    for t in range(4):
        assert [m for m in messages if m.startswith(f"worker {t} ")] == [f"worker {t} {i}" for i in range(100)]
    assert len(messages) == 403 and "dropped" not in done.stdout + done.stderr
    assert [line.rsplit("] ", 1)[1] for line in records(done.stderr)] == ["outside 0", "outside 1"]


def test_a_ctypes_runtime_takes_its_filter_from_the_variable_it_names(
    ctypes_rt: Path, clean_env: dict[str, str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CTYPES_CHILD, str(ctypes_rt)],
        capture_output=True,
        text=True,
        env={**clean_env, "CTYPES_RT_LOG": "debug"},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    # One Debug line in the call (caught), one outside it (fd 2).
    for stream in (done.stdout, done.stderr):
        assert [line.rsplit("] ", 1)[1] for line in records(stream)].count("dropped") == 1, stream
