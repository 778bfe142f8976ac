"""The ``logging`` destination (destination.rs, logging.rs, pylevels.rs,
pending.rs): records become ``logging.LogRecord``s, handed to Python where
that is safe, with Python's levels deciding on the native side too.

Records come from the demo runtime (``pylogsink``) and from real crates in
the test extension (``pylogsink_testext``: ureq's requests to a real HTTP
server in a child process). Each extension links its own pylogsink, so each
has its own destination; the fixtures set it and put ``stderr`` back.
"""

from __future__ import annotations

import io
import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import pylogsink
import pylogsink_testext as testext
from conftest import ABORTED, child_pytest, logging_destination, python, read_line_within, records, wait_until

RUNTIME = Path(__file__).parent.parent / "crates" / "pylogsink-py" / "src" / "runtime.rs"
DEMO = "_pylogsink.runtime"

def source_line(text: str) -> int:
    """The line of the demo runtime's source that contains ``text``."""
    lines = RUNTIME.read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


@pytest.fixture
def demo() -> Iterator[None]:
    """The demo runtime with the ``logging`` destination."""
    with logging_destination(pylogsink.runtime):
        yield


@pytest.fixture
def ext() -> Iterator[None]:
    """The test extension with the ``logging`` destination."""
    with logging_destination(testext):
        yield


def of(caplog: pytest.LogCaptureFixture, name: str) -> list[logging.LogRecord]:
    """The records caplog got from logger ``name`` or those under it."""
    return [r for r in caplog.records if r.name == name or r.name.startswith(name + ".")]


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYLOGSINK_"))}
    env.update(extra)
    return env


# Choosing it.


def test_the_destination_is_stderr_until_chosen_and_bad_names_are_refused() -> None:
    assert pylogsink.runtime.log_destination() == "stderr"
    with pytest.raises(ValueError, match=r'unknown log destination "file": expected "logging" or "stderr"'):
        pylogsink.runtime.set_log_destination("file")  # type: ignore[arg-type]
    assert pylogsink.runtime.log_destination() == "stderr"


@pytest.mark.parametrize("prefix", ["", "native"])
def test_the_builder_chooses_it_and_records_from_module_init_arrive(prefix: str) -> None:
    done = python(
        """
        import logging, sys
        logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(name)s|%(levelname)s|%(message)s")
        import pylogsink_testext as t
        sys.stdout.write(t.log_destination() + "\\n")  # one write: the delivery thread writes too
        """,
        env=child_env(PYLOGSINK_TESTEXT_DESTINATION="logging", PYLOGSINK_TESTEXT_PREFIX=prefix),
    )
    assert done.returncode == 0, done.stderr
    # The record was logged outside any call: pylogsink's thread delivers it
    # while the main thread goes on, or the exit does.
    name = f"{prefix}.testext.init" if prefix else "testext.init"
    assert sorted(done.stdout.splitlines()) == ["logging", f"{name}|INFO|imported"], done.stdout
    assert done.stderr == ""


# Real records.


def test_caplog_gets_the_demo_runtimes_records_with_names_levels_lines_and_messages(
    caplog: pytest.LogCaptureFixture, demo: None
) -> None:
    caplog.set_level(5)
    pylogsink.runtime.log_lines(2, "debug", size=0)
    pylogsink.runtime.log_lines(1, "trace", size=0)
    pylogsink.runtime.log_lines(1, "warn", size=0)
    pylogsink.runtime.log_lines(1, "error", size=0)
    got = of(caplog, DEMO)
    assert [(r.name, r.levelno, r.levelname) for r in got] == [
        (DEMO, 10, "DEBUG"),
        (DEMO, 10, "DEBUG"),
        (DEMO, 5, "TRACE"),
        (DEMO, 30, "WARNING"),
        (DEMO, 40, "ERROR"),
    ]
    assert [r.getMessage() for r in got] == [
        "line 0000000 of 2",
        "line 0000001 of 2",
        "line 0000000 of 1",
        "line 0000000 of 1",
        "line 0000000 of 1",
    ]
    line = source_line("let (file, line) = (file!(), line!());")
    assert {(r.filename, r.lineno, r.pathname.endswith("runtime.rs")) for r in got} == {("runtime.rs", line, True)}
    assert all(r.args == () for r in got)


def test_messages_are_escaped_as_on_stderr_and_never_percent_formatted(
    caplog: pytest.LogCaptureFixture, demo: None
) -> None:
    caplog.set_level(logging.INFO)
    pylogsink.runtime.log_raw(b"100% sure %s %(name)s \xff\x1b[31m")
    (got,) = of(caplog, DEMO)
    assert got.getMessage() == r"100% sure %s %(name)s \xff\x1b[31m"


def test_caplog_gets_ureq_records_under_ureq_loggers(caplog: pytest.LogCaptureFixture, ext: None, url: str) -> None:
    caplog.set_level(logging.DEBUG)
    assert testext.http_get(url + "missing") == 404
    got = of(caplog, "ureq")
    assert len(got) >= 3, [r.getMessage() for r in got]
    assert {r.name for r in got} >= {"ureq.unit", "ureq.response"}
    assert {r.levelname for r in got} == {"DEBUG"}
    responses = [r.getMessage() for r in got if r.getMessage().startswith("response ")]
    assert responses == [f"response 404 to GET {url}missing"]
    assert all(r.filename.endswith(".rs") and r.lineno > 0 and "ureq" in r.pathname for r in got)


def test_created_is_when_it_was_logged_and_thread_is_who_logged_it(
    caplog: pytest.LogCaptureFixture, demo: None
) -> None:
    caplog.set_level(logging.INFO)
    before = time.time()
    pylogsink.runtime.log_then_hang(1, 0.3)  # logs, then holds the call for 0.3 s
    worker = threading.Thread(target=pylogsink.runtime.log_lines, args=(1,), name="worker-7")
    worker.start()
    worker.join()
    pylogsink.runtime.start_background_logger(1).join()
    # The background thread's record arrives without a call.
    wait_until(lambda: len(of(caplog, DEMO)) == 3, what="the native thread's record")
    hung, from_worker, native = of(caplog, DEMO)
    assert before <= hung.created < before + 0.25, "created at delivery, not when logged"
    assert hung.msecs == pytest.approx((hung.created % 1) * 1000, abs=1)
    assert (hung.thread, hung.threadName) == (threading.main_thread().ident, "MainThread")
    assert (from_worker.thread, from_worker.threadName) == (worker.ident, "worker-7")
    assert native.getMessage() == "background line 0"
    assert native.thread not in {t.ident for t in threading.enumerate()}
    # A native thread nobody named: not the interpreter's name.
    assert re.fullmatch(r"native-\d+", native.threadName), native.threadName


def test_a_named_native_thread_keeps_its_name(caplog: pytest.LogCaptureFixture, demo: None) -> None:
    caplog.set_level(logging.INFO)
    pylogsink.runtime.start_background_logger(1, name="loader-3").join()
    wait_until(lambda: len(of(caplog, DEMO)) == 1, what="the native thread's record")
    (record,) = of(caplog, DEMO)
    assert record.threadName == "loader-3"


def test_a_users_handler_filters_and_propagation_apply(demo: None) -> None:
    got: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            got.append(record)

    parent = logging.getLogger("_pylogsink")
    handler = Keep(logging.DEBUG)
    handler.addFilter(lambda r: "1 of" not in r.getMessage())
    parent.addHandler(handler)
    parent.setLevel(logging.DEBUG)
    try:
        pylogsink.runtime.log_lines(3, "debug", size=0)
    finally:
        parent.removeHandler(handler)
        parent.setLevel(logging.NOTSET)
    assert [r.getMessage() for r in got] == ["line 0000000 of 3", "line 0000002 of 3"]


def test_basic_config_gets_them_and_nothing_reaches_fd2() -> None:
    done = python(
        """
        import logging, sys
        logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format="%(name)s|%(levelname)s|%(message)s")
        import pylogsink
        pylogsink.runtime.set_log_destination("logging")
        pylogsink.runtime.log_lines(2, "debug", size=0)
        pylogsink.runtime.log_lines(1, "error", size=0)
        pylogsink.runtime.start_background_logger(1).join()
        """,
        env=child_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"{DEMO}|DEBUG|line 0000000 of 2",
        f"{DEMO}|DEBUG|line 0000001 of 2",
        f"{DEMO}|ERROR|line 0000000 of 1",
        f"{DEMO}|INFO|background line 0",
    ]
    assert done.stderr == ""


def test_pytest_log_level_debug_lets_caplog_see_debug_records(tmp_path: Path) -> None:
    test = tmp_path / "test_inner.py"
    test.write_text(
        textwrap.dedent(
            f"""
            import pylogsink

            def test_debug_records(caplog):
                pylogsink.runtime.set_log_destination("logging")
                pylogsink.runtime.log_lines(2, "debug", size=0)
                got = [(r.name, r.levelname) for r in caplog.records]
                assert got == [("{DEMO}", "DEBUG")] * 2
            """
        )
    )
    with_flag = child_pytest(test, "--log-level=DEBUG", env=child_env())
    assert with_flag.returncode == 0, with_flag.stdout + with_flag.stderr
    # Without it, the root logger's WARNING decides: the flag is what did it.
    without = child_pytest(test, env=child_env())
    assert without.returncode == 1 and "assert [] ==" in without.stdout, without.stdout


def test_fatal_lines_still_go_to_fd2_after_the_calls_waiting_records() -> None:
    done = python(
        """
        import logging, sys
        logging.basicConfig(level=logging.DEBUG, stream=sys.stdout)
        import pylogsink
        pylogsink.runtime.set_log_destination("logging")
        pylogsink.runtime.abort_with_fatal()
        """,
        env=child_env(),
    )
    assert done.returncode == ABORTED
    assert done.stdout == ""
    # The lines of its two rt_log! invocations.
    first = source_line("fn abort_with_fatal")
    lines = RUNTIME.read_text().splitlines()
    error, fatal = (n for n in range(first, first + 12) if "rt_log!(" in lines[n - 1])
    assert [re.sub(r"^\[\S+ ", "[", r) for r in records(done.stderr)] == [
        f"[ERROR _pylogsink::runtime runtime.rs:{error}] ETDump: debug buffer of 64 bytes is too small for event 3",
        f"[FATAL _pylogsink::runtime runtime.rs:{fatal}] In function write_event(), assert failed: buffer has room",
    ]


def test_a_fatal_line_outside_any_call_writes_the_records_waiting_for_logging_first() -> None:
    # A native thread logs an Error, then a Fatal line, then aborts. The
    # Error waits for pylogsink's delivery thread, which may not have run
    # yet (the Fatal line then writes it as text), or may be handing it to
    # logging (the Fatal line waits for that). Either way it is out, once.
    done = python(
        """
        import logging, sys
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="logging: %(levelname)s %(message)s")
        import pylogsink
        pylogsink.runtime.set_log_destination("logging")
        pylogsink.runtime.abort_with_fatal(on_native_thread=True)
        """,
        env=child_env(),
    )
    assert done.returncode == ABORTED
    lines = [re.sub(r"^\[\S+ (\w+) .*?\] ", r"\1 ", line) for line in done.stderr.splitlines()]
    error = "ERROR ETDump: debug buffer of 64 bytes is too small for event 3"
    assert lines in (
        [error, "FATAL In function write_event(), assert failed: buffer has room"],
        ["logging: " + error, "FATAL In function write_event(), assert failed: buffer has room"],
    ), done.stderr


def test_error_records_also_reach_the_calls_exception(caplog: pytest.LogCaptureFixture, demo: None) -> None:
    caplog.set_level(logging.INFO)
    with pytest.raises(RuntimeError) as info:
        pylogsink.runtime.load_program(b"\xff" * 128)
    assert str(info.value) == (
        "load_program: invalid program (error 0x23)\n"
        "Errors logged during the call:\n"
        "  Program identifier '\\xff\\xff\\xff\\xff' != expected 'ET12'"
    )
    assert [r.levelname for r in of(caplog, DEMO)] == ["ERROR"]


def test_an_interrupt_in_a_handler_follows_the_interrupt_rule_after_the_rest_are_delivered(demo: None) -> None:
    got: list[str] = []

    class Interrupted(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            got.append(record.getMessage())
            if len(got) == 1:
                raise KeyboardInterrupt

    logger = logging.getLogger(DEMO)
    handler = Interrupted()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        with pytest.raises(KeyboardInterrupt):
            pylogsink.runtime.log_lines(3, "info", size=0)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    assert got == ["line 0000000 of 3", "line 0000001 of 3", "line 0000002 of 3"]


# Levels.


def emitted(level: str) -> int:
    return pylogsink.runtime.log_stats()[level]


def test_a_level_change_is_seen_from_the_next_call(caplog: pytest.LogCaptureFixture, demo: None) -> None:
    caplog.set_level(logging.WARNING)
    pylogsink.runtime.log_lines(1, "info", size=0)
    assert of(caplog, DEMO) == []
    caplog.set_level(logging.DEBUG)
    pylogsink.runtime.log_lines(1, "debug", size=0)
    assert [r.levelname for r in of(caplog, DEMO)] == ["DEBUG"]


def test_a_record_pythons_levels_refuse_is_dropped_before_it_is_kept(
    caplog: pytest.LogCaptureFixture, demo: None
) -> None:
    caplog.set_level(logging.DEBUG)
    logging.disable(logging.INFO)
    try:
        before = emitted("info")
        pylogsink.runtime.log_lines(5, "info", size=0)
        assert emitted("info") == before, "logging.disable(INFO) drops INFO on the native side"
        pylogsink.runtime.log_lines(1, "warn", size=0)
    finally:
        logging.disable(logging.NOTSET)
    logging.getLogger(DEMO).setLevel(logging.ERROR)
    try:
        pylogsink.runtime.log_lines(1, "warn", size=0)  # learns the target's level
        before = emitted("warn")
        pylogsink.runtime.log_lines(5, "warn", size=0)
        assert emitted("warn") == before, "the target's level is cached natively"
    finally:
        logging.getLogger(DEMO).setLevel(logging.NOTSET)
    pylogsink.runtime.log_lines(1, "info", size=0)
    assert [(r.levelname, r.getMessage()) for r in of(caplog, DEMO)] == [
        ("WARNING", "line 0000000 of 1"),
        ("INFO", "line 0000000 of 1"),
    ]


def test_the_users_directives_apply_as_well_and_the_builders_default_does_not() -> None:
    done = python(
        """
        import logging, sys
        logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format="%(levelname)s|%(message)s")
        import pylogsink
        print(pylogsink.runtime.log_filter())  # the demo's default directive
        pylogsink.runtime.set_log_destination("logging")
        print(pylogsink.runtime.log_filter())
        pylogsink.runtime.log_lines(1, "debug", size=0)
        pylogsink.runtime.set_log_filter("warn")
        pylogsink.runtime.log_lines(1, "info", size=0)
        pylogsink.runtime.log_lines(1, "warn", size=0)
        """,
        env=child_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["info", "trace", "DEBUG|line 0000000 of 1", "WARNING|line 0000000 of 1"]


# When: the threads that log outside any call, and the exit.


def test_a_native_thread_outside_any_call_reaches_a_handler_within_100_ms() -> None:
    done = python(
        """
        import logging, time
        import pylogsink
        delays = []

        class Clock(logging.Handler):
            def emit(self, record):
                delays.append(time.time() - record.created)

        logging.getLogger().addHandler(Clock())
        logging.getLogger().setLevel(logging.INFO)
        pylogsink.runtime.set_log_destination("logging")
        pylogsink.runtime.noop_in_call()
        pylogsink.runtime.start_background_logger(20, 0.02)
        deadline = time.monotonic() + 10
        while len(delays) < 20 and time.monotonic() < deadline:
            time.sleep(0.01)  # no call is made meanwhile
        print(len(delays), max(delays))
        """,
        env=child_env(),
    )
    assert done.returncode == 0, done.stderr
    count, worst = done.stdout.split()
    assert int(count) == 20
    assert float(worst) < 0.1


def test_at_exit_no_record_is_lost() -> None:
    done = python(
        """
        import logging, sys, threading
        logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(threadName)s|%(message)s")
        import pylogsink
        pylogsink.runtime.set_log_destination("logging")
        # Still in a call at exit: its records wait in its own buffer.
        threading.Thread(target=pylogsink.runtime.log_then_block, args=(3,), daemon=True, name="blocked").start()
        # Outside any call, logged just before the exit.
        pylogsink.runtime.start_background_logger(300).join()
        """,
        env=child_env(),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert sorted(line for line in lines if line.startswith("blocked|")) == [
        f"blocked|blocked for good after line {i}" for i in range(3)
    ]
    background = [line.split("|")[1] for line in lines if "background" in line]
    assert background == [f"background line {i}" for i in range(300)]
    assert done.stderr == ""


# A crate that logs under its own mutex.

POOL = """
import logging, os, sys, threading
logging.basicConfig(level=logging.DEBUG, stream=open(os.devnull, "w"))
import pylogsink_testext as t
if os.environ.get("PYLOGSINK_TESTEXT_LOGGER") != "pyo3-log":
    t.set_log_destination("logging")
pulled = []

class Pool(logging.Handler):
    def emit(self, record):
        if record.getMessage().startswith("pulling stream from pool"):
            pulled.append(record)

logging.getLogger().addHandler(Pool())
for round in range({rounds}):
    # Half the threads hold the GIL during their requests, half release it.
    threads = [threading.Thread(target=t.pool_get, args=({url!r}, 25, i % 2 == 0)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("round", round, len(pulled), flush=True)
"""


def test_eight_threads_sharing_a_pool_that_logs_under_its_mutex_complete(url: str) -> None:
    done = python(POOL.format(url=url, rounds=10), timeout=90, env=child_env())
    assert done.returncode == 0, done.stderr
    rounds = done.stdout.splitlines()
    assert len(rounds) == 10
    assert int(rounds[-1].split()[-1]) > 0, "ureq logged under its pool's mutex"


@pytest.mark.naive
def test_the_same_workload_through_pyo3_log_hangs(url: str) -> None:
    # One thread holds the GIL and waits for the pool's mutex; another holds
    # the mutex and waits for the GIL, to log. The deadlock is a race, so the
    # workload repeats until it strikes; hung means no round ends for 10 s
    # (a round takes well under a second when it does not).
    script = textwrap.dedent(POOL.format(url=url, rounds=1000))
    env = child_env(PYLOGSINK_TESTEXT_LOGGER="pyo3-log")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    assert child.stdout is not None
    rounds = 0
    try:
        while read_line_within(child.stdout, 10):
            rounds += 1
    finally:
        child.kill()
        child.wait()
    assert rounds < 1000, "all 1000 rounds ended: no deadlock"
    # Killed: on Windows kill() is TerminateProcess, with status 1.
    assert child.returncode == (1 if sys.platform == "win32" else -signal.SIGKILL)


def test_hostile_targets_cannot_forge_a_record_through_the_logger_name() -> None:
    """A target is untrusted bytes too: ``%(name)s`` keeps it on one line
    with no control character, as stderr does; an empty target is the root
    logger."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.INFO)
    try:
        with logging_destination(testext):
            testext.log_at("warn", "rt\nCRITICAL forged.logger", "one")
            testext.log_at("warn", "\x1b[2J\x1b[H", "two")
            testext.log_at("warn", "", "three")
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    lines = stream.getvalue().splitlines()
    assert lines == [
        "WARNING rt\\x0aCRITICAL forged.logger: one",
        "WARNING \\x1b[2J\\x1b[H: two",
        "WARNING root: three",
    ]
    assert not any(c < " " for line in lines for c in line)


def test_a_chatty_call_delivers_every_record_within_the_budget(caplog: pytest.LogCaptureFixture) -> None:
    """One call of 5000 DEBUG records of 100 bytes: the budget (10,000
    records within 4 MiB) holds them all; no note."""
    caplog.set_level(logging.DEBUG)
    before = pylogsink.runtime.log_stats()["left_out"]
    with logging_destination(pylogsink.runtime):
        pylogsink.runtime.log_lines(5000, "debug")
    notes = [r.getMessage() for r in caplog.records if "left out here" in r.getMessage()]
    assert notes == []
    assert len(of(caplog, DEMO)) == 5000
    assert pylogsink.runtime.log_stats()["left_out"] == before


def test_records_left_out_are_counted_and_the_note_says_how_many(caplog: pytest.LogCaptureFixture, small_budget: None) -> None:
    """A call that logs more than its budget for ``logging``: the newest
    10,000 records are delivered, the note's count of records left out is
    what ``left_out`` grows by, and with the records delivered it adds up
    to what was logged."""
    caplog.set_level(logging.DEBUG)
    before = pylogsink.runtime.log_stats()["left_out"]
    with logging_destination(pylogsink.runtime):
        pylogsink.runtime.log_lines(12_000, "debug")
    after = pylogsink.runtime.log_stats()["left_out"]
    notes = [r.getMessage() for r in caplog.records if "left out here" in r.getMessage()]
    delivered = [r for r in of(caplog, DEMO)]
    assert len(notes) == 1, notes
    assert [r.levelname for r in of(caplog, "pylogsink")] == ["WARNING"]
    m = re.fullmatch(r"(\d+) records \((\d+) bytes\) left out here: more than 10000 records or 4 MiB waited at once", notes[0])
    assert m, notes[0]
    noted = int(m.group(1))
    assert noted == 2000
    # Its bytes on the budget's measure: message, target, file and 64 each.
    first = delivered[0]
    size = len(first.getMessage()) + len(first.name.replace(".", "::")) + len(first.pathname) + 64
    assert int(m.group(2)) == noted * size
    assert after - before == noted
    assert len(delivered) + noted == 12_000
    numbers = [int(r.getMessage().split()[1]) for r in delivered]
    assert numbers == list(range(2000, 12_000)), "the newest, in order"

def test_one_record_larger_than_the_budget_is_cut_with_a_note(caplog: pytest.LogCaptureFixture) -> None:
    # 100 MB in one record: logging gets at most the 16 MiB budget of it, and
    # the record says how much was cut, as a line longer than stderr's
    # buffer is cut with a note.
    caplog.set_level(logging.WARNING)
    with logging_destination(testext):
        testext.log_at("warn", "app", "y" * 100_000_000)
    (record,) = [r for r in caplog.records if r.name == "app"]
    message = record.getMessage()
    assert len(message) <= 16 << 20
    assert message.startswith("yyyy")
    assert re.search(r" \[pylogsink\] cut: \d+ bytes left out, more than the budget of 16777216 bytes$", message)
    cut = int(re.findall(r"cut: (\d+) bytes", message)[0])
    assert message.index(" [pylogsink]") + cut == 100_000_000


LEVEL_CACHE = """
import logging, os
import pylogsink_testext as t
if os.environ.get("PYLOGSINK_TESTEXT_LOGGER") != "pyo3-log":
    t.set_log_destination("logging")
got = []

class Keep(logging.Handler):
    def emit(self, record):
        got.append(record.getMessage())

logging.getLogger().addHandler(Keep())
logging.getLogger().setLevel(logging.WARNING)  # an earlier test's level
t.log_at("info", "app", "before")
logging.getLogger().setLevel(logging.INFO)  # what caplog.set_level does
t.log_at("info", "app", "after")
print(got)
"""


@pytest.mark.parametrize("logger", ["pylogsink", "pyo3-log"])
def test_a_level_lowered_later_lets_records_through_where_pyo3_log_keeps_its_cache(logger: str) -> None:
    # pyo3-log caches each logger's level at its first record and needs a
    # reset handle after a change: the record after setLevel never comes.
    env = child_env(PYLOGSINK_TESTEXT_LOGGER=logger) if logger == "pyo3-log" else child_env()
    done = python(LEVEL_CACHE, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("['after']" if logger == "pylogsink" else "[]")
