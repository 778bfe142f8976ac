"""tracing through pylogsink's layer (the ``tracing`` feature, tracing.rs
and fields.rs), and ``log``'s key-values: events become records with their
span context and fields, the filter applies to them, nothing deadlocks,
and no field value can forge a record. Through the test extension
(tests/ext), whose ``Builder::init`` installs the global subscriber: our
own instrumented code, and h2, a real crate that logs through tracing on
its own, against an HTTP/2 server in a child process.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import pylogsink_testext as testext
from conftest import logging_destination, python, read_line_within, records, wait_until
from test_filter import Record, parse, run, show

EXT = Path(__file__).parent / "ext" / "src" / "lib.rs"


def source_line(text: str, after: str = "") -> int:
    """The line of the test extension's source that contains ``text``
    (the first one after the line that contains ``after``)."""
    lines = EXT.read_text().splitlines()
    start = next(n for n, line in enumerate(lines) if after in line)
    return next(n for n, line in enumerate(lines[start:], start + 1) if text in line)


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYLOGSINK_"))}
    env.update(extra)
    return env


LOAD = 'load{path="model.pte"}'
INIT = f"{LOAD}:init{{rows=42}}"
WARNING = Record("WARN", "testext::model", f"{LOAD}: deprecated format path=model.pte")
READY = Record("INFO", "testext::model", f'{INIT}: model ready rows=42 ratio=0.5 ok=true name="a b"')
DETAILS = Record("DEBUG", "testext::model", f"{INIT}: details")


@pytest.fixture
def filter_restored() -> Iterator[None]:
    before = testext.log_filter()
    yield
    testext.set_log_filter(before)


# Instrumented code, on stderr.


def test_instrumented_code_reaches_stderr_with_its_spans_and_fields() -> None:
    out, recs = run("print(t.traced_load('model.pte', 42))", log="warn,testext::model=info")
    assert out.split() == ["42"]
    assert recs == [WARNING, READY], show(recs)


def test_records_name_the_events_file_and_line() -> None:
    code = "import pylogsink_testext as t; t.traced_load('model.pte', 42)"
    done = python(code, env=child_env(PYLOGSINK_TESTEXT_LOG="testext::model=debug"))
    assert done.returncode == 0, done.stderr
    lines = records(done.stderr)
    assert f"testext::model lib.rs:{source_line('tracing::warn!(', after='fn load(')}]" in lines[0], lines
    assert f"testext::model lib.rs:{source_line('tracing::info!(', after='fn init(')}]" in lines[1], lines
    assert f"testext::model lib.rs:{source_line('tracing::debug!(', after='fn init(')}]" in lines[2], lines
    assert [r.message for r in parse(done.stderr)] == [WARNING.message, READY.message, DETAILS.message]


def test_entering_and_leaving_spans_makes_no_record() -> None:
    _, recs = run("t.traced_load('model.pte', 42); t.tracing_work('x')", log="trace")
    assert all(r.target in {"testext::model", "testext::work"} for r in recs), show(recs)
    assert len(recs) == 3 + 4, show(recs)


def test_capsys_gets_the_events(capsys: pytest.CaptureFixture[str], filter_restored: None) -> None:
    testext.set_log_filter("warn,testext::model=debug")
    assert testext.traced_load("model.pte", 42) == 42
    recs = parse(capsys.readouterr().err)
    assert recs == [WARNING, READY, DETAILS], show(recs)


def test_redirect_stderr_gets_the_events(filter_restored: None) -> None:
    testext.set_log_filter("warn,testext::model=info")
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer):
        testext.traced_load("model.pte", 42)
    recs = parse(buffer.getvalue())
    assert recs == [WARNING, READY], show(recs)


# The filter.


def test_the_default_filter_shows_warnings_only_without_the_info_spans() -> None:
    _, recs = run("t.traced_load('model.pte', 42)", log=None)
    # The spans are at INFO: dropped, as tracing-subscriber's EnvFilter drops them.
    assert recs == [Record("WARN", "testext::model", "deprecated format path=model.pte")], show(recs)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("testext::model=debug", [WARNING, READY, DETAILS]),
        ("info,testext::model=warn", [Record("WARN", "testext::model", "deprecated format path=model.pte")]),
        ("trace,testext=off", []),
        ("trace,testext::model=off,testext=trace", []),
        ("error", []),
    ],
)
def test_per_target_directives_apply_to_events_and_spans(spec: str, expected: list[Record]) -> None:
    _, recs = run("t.traced_load('model.pte', 42)", log=spec)
    assert recs == expected, show(recs)


def test_set_log_filter_changes_which_events_pass_at_run_time(
    capsys: pytest.CaptureFixture[str], filter_restored: None
) -> None:
    # Each callsite's interest is cached by tracing: the change must reach it.
    for spec, expected in [
        ("error", []),
        ("warn,testext::model=debug", [WARNING, READY, DETAILS]),
        ("warn", [Record("WARN", "testext::model", "deprecated format path=model.pte")]),
        ("warn,testext::model=info", [WARNING, READY]),
        ("off", []),
    ]:
        testext.set_log_filter(spec)
        testext.traced_load("model.pte", 42)
        recs = parse(capsys.readouterr().err)
        assert recs == expected, f"{spec}: {show(recs)}"


def test_filtered_events_are_not_counted(filter_restored: None, capsys: pytest.CaptureFixture[str]) -> None:
    testext.set_log_filter("error")
    before = testext.log_stats()["emitted"]
    testext.traced_load("model.pte", 42)
    assert testext.log_stats()["emitted"] == before
    testext.set_log_filter("testext::model=info")
    testext.traced_load("model.pte", 42)
    assert testext.log_stats()["emitted"] == before + 2
    capsys.readouterr()


# No deadlock.


@pytest.mark.parametrize("detach", [False, True], ids=["gil-held", "gil-released"])
@pytest.mark.parametrize("stderr", ["own", "replaced"])
def test_threads_logging_under_a_lock_the_caller_takes_never_deadlock(detach: bool, stderr: str) -> None:
    # 500 records of about 90 bytes: within the 64 KiB a call keeps.
    code = f"""
    import contextlib, io, sys
    import pylogsink_testext as t
    buffer = io.StringIO()
    target = buffer if {stderr == "replaced"!r} else sys.stderr
    with contextlib.redirect_stderr(target):
        n = t.tracing_threads(4, 100, {detach!r})
    print(n, buffer.getvalue().count("testext::pool"))
    """
    done = python(code, timeout=60, env=child_env(PYLOGSINK_TESTEXT_LOG="warn,testext::pool=info"))
    assert done.returncode == 0, done.stderr
    n, captured = map(int, done.stdout.split())
    assert n == 500
    on_fd2 = [r for r in parse(done.stderr) if r.target == "testext::pool"]
    if stderr == "replaced":
        assert (captured, len(on_fd2)) == (500, 0)
    else:
        assert (captured, len(on_fd2)) == (0, 500)
        workers = [r for r in on_fd2 if r.message.startswith("worker{t=")]
        assert len(workers) == 400
        for t in range(4):
            mine = [r.message for r in workers if r.message.startswith(f"worker{{t={t}}}: ")]
            assert mine == [f"worker{{t={t}}}: worker event i={i}" for i in range(100)]


# Untrusted values.

FORGED = "[2026-01-01T00:00:00.000000Z ERROR x.rs:1] forged"


def test_values_with_newlines_esc_invalid_utf8_and_quotes_cannot_forge_a_record(
    capsys: pytest.CaptureFixture[str], filter_restored: None
) -> None:
    testext.set_log_filter("warn,testext::fields=info")
    testext.tracing_event("warn", f"m\n{FORGED}", f'a "b"\n\x1b[31m=\r\n{FORGED}', b"\xff\n\x1b" + FORGED.encode())
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\r" not in err
    lines = err.splitlines()
    assert len(records(err)) == 1, lines
    assert all(line.startswith("    ") for line in lines[1:]), lines
    assert lines[0].endswith(f"WARN  testext::fields lib.rs:{source_line('Level::Warn => event!')}] req{{id=7}}: m")
    assert err.endswith(
        '" count=3 lineno=1 msg=clash\n'
    ), err
    body = "\n".join(line.removeprefix("    ") for line in lines[1:])
    assert body == (
        f'{FORGED} text="a \\"b\\"\n\\x1b[31m=\n{FORGED}" raw="\\xff\n\\x1b{FORGED}" count=3 lineno=1 msg=clash'
    ), body


def test_log_key_values_render_as_fields(capsys: pytest.CaptureFixture[str], filter_restored: None) -> None:
    testext.set_log_filter("warn")
    testext.log_kv("plain")
    testext.log_kv('two words "quoted"\n\x1b')
    recs = parse(capsys.readouterr().err.replace("\n    ", "|"))
    assert recs == [
        Record("WARN", "testext::kv", 'table loaded rows=42 ratio=0.25 ok=false text=plain shape="(2, 3)"'),
        Record(
            "WARN",
            "testext::kv",
            'table loaded rows=42 ratio=0.25 ok=false text="two words \\"quoted\\"|\\x1b" shape="(2, 3)"',
        ),
    ], show(recs)


def test_a_record_logged_while_another_is_formatted_is_whole(
    capsys: pytest.CaptureFixture[str], filter_restored: None
) -> None:
    # The outer record's message is formatted straight into the thread's
    # line buffer; the inner one, logged from inside that formatting, must
    # get a buffer of its own and leave the outer line intact.
    testext.set_log_filter("warn")
    testext.log_nested("plain")
    testext.log_nested("esc \x1b[2J")
    recs = parse(capsys.readouterr().err)
    assert recs == [
        Record("WARN", "testext::nested", "inner plain"),
        Record("WARN", "testext::nested", "outer plain"),
        Record("WARN", "testext::nested", "inner esc \\x1b[2J"),
        Record("WARN", "testext::nested", "outer esc \\x1b[2J"),
    ], show(recs)


# The logging destination: fields as attributes.


@pytest.fixture
def ext() -> Iterator[None]:
    with logging_destination(testext):
        yield


def of(caplog: pytest.LogCaptureFixture, name: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == name]


def test_fields_reach_a_handler_as_typed_attributes(caplog: pytest.LogCaptureFixture, ext: None) -> None:
    caplog.set_level(logging.DEBUG)
    testext.traced_load("model.pte", 42)
    warning, ready, details = of(caplog, "testext.model")
    assert (ready.levelname, ready.getMessage()) == ("INFO", READY.message)
    assert (ready.rows, ready.ratio, ready.ok, ready.field_name) == (42, 0.5, True, "a b")  # type: ignore[attr-defined]
    assert [type(v) for v in (ready.rows, ready.ratio, ready.ok, ready.field_name)] == [int, float, bool, str]  # type: ignore[attr-defined]
    # `name` is the logger's name; the field is prefixed, not dropped.
    assert ready.name == "testext.model"
    assert ready.span == INIT  # type: ignore[attr-defined]
    assert (warning.path, warning.span) == ("model.pte", LOAD)  # type: ignore[attr-defined]
    assert not hasattr(details, "rows") and details.span == INIT  # type: ignore[attr-defined]


def test_clashing_field_names_are_prefixed_and_values_escaped(caplog: pytest.LogCaptureFixture, ext: None) -> None:
    caplog.set_level(logging.INFO)
    testext.tracing_event("info", "m", "a\n\x1b", b"\xff")
    (got,) = of(caplog, "testext.fields")
    line = source_line("Level::Info => event!")
    assert (got.lineno, got.msg, got.field_lineno, got.field_msg) == (line, got.getMessage(), 1, "clash")  # type: ignore[attr-defined]
    assert (got.text, got.raw, got.count, got.span) == ("a\n    \\x1b", "\\xff", 3, "req{id=7}")  # type: ignore[attr-defined]
    assert got.getMessage() == 'req{id=7}: m text="a\n    \\x1b" raw=\\xff count=3 lineno=1 msg=clash'


def test_a_formatter_can_use_the_attributes(ext: None) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(name)s %(rows)d %(ratio).2f %(span)s"))
    logger = logging.getLogger("testext.model")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        testext.traced_load("model.pte", 42)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    assert stream.getvalue().splitlines()[-1] == f"testext.model 42 0.50 {INIT}"


def test_log_key_values_reach_a_handler_as_typed_attributes(caplog: pytest.LogCaptureFixture, ext: None) -> None:
    caplog.set_level(logging.INFO)
    testext.log_kv("plain")
    (got,) = of(caplog, "testext.kv")
    assert (got.rows, got.ratio, got.ok, got.text, got.shape) == (42, 0.25, False, "plain", "(2, 3)")  # type: ignore[attr-defined]
    assert not hasattr(got, "span")


def test_a_plain_record_gets_no_field_attributes(caplog: pytest.LogCaptureFixture, ext: None) -> None:
    caplog.set_level(logging.INFO)
    testext.log_at("warn", "app", "plain")
    (got,) = of(caplog, "app")
    assert not any(hasattr(got, name) for name in ("span", "rows", "text", "field_name"))


def test_tracing_in_a_child_with_the_logging_destination_from_the_builder() -> None:
    code = textwrap.dedent(
        """
        import logging, sys
        logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(name)s|%(levelname)s|%(message)s|%(span)s")
        logging.root.handlers[0].addFilter(lambda r: r.__dict__.setdefault("span", "-") is not None)
        import pylogsink_testext as t
        t.traced_load("model.pte", 42)
        """
    )
    done = python(code, env=child_env(PYLOGSINK_TESTEXT_DESTINATION="logging"))
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("testext.model")]
    assert lines == [
        f"testext.model|WARNING|{WARNING.message}|{LOAD}",
        f"testext.model|INFO|{READY.message}|{INIT}",
    ]
    assert re.sub(r"\s", "", done.stderr) == ""


# h2, which logs through tracing on its own: each frame sent and received
# at DEBUG (field `frame`, written by Debug), inside its `Connection{peer=..}`
# span, under h2's module targets.

H2_HEADERS = Record(
    "DEBUG",
    "h2::codec::framed_write",
    'Connection{peer=Client}: send frame="Headers { stream_id: StreamId(1), flags: (0x5: END_HEADERS | END_STREAM) }"',
)
H2_DATA = Record(
    "DEBUG",
    "h2::codec::framed_read",
    'Connection{peer=Client}: received frame="Data { stream_id: StreamId(1), flags: (0x1: END_STREAM) }"',
)


@pytest.fixture(scope="module")
def h2_port() -> Iterator[int]:
    """The port of an HTTP/2 server (h2, in the test extension) running in a
    child process on 127.0.0.1."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import pylogsink_testext as t; t.h2_serve()"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=child_env(PYLOGSINK_TESTEXT_LOG="off"),
    )
    try:
        assert child.stdout is not None
        port = read_line_within(child.stdout, 30)
        assert port, "the HTTP/2 server printed no port within 30 s"
        yield int(port)
    finally:
        child.terminate()
        child.wait(timeout=10)


def test_h2_logs_nothing_by_default(h2_port: int) -> None:
    out, recs = run(f"print(*t.h2_get({h2_port}, '/', False))", log=None)
    assert out.split() == ["200", "3"]
    assert recs == [], show(recs)


@pytest.mark.parametrize("detach", [False, True], ids=["gil-held", "gil-released"])
def test_h2_debug_records_carry_its_spans_and_fields(h2_port: int, detach: bool) -> None:
    out, recs = run(f"print(*t.h2_get({h2_port}, '/', {detach!r}))", log="h2=debug")
    assert out.split() == ["200", "3"]
    assert len(recs) >= 8, show(recs)
    assert all(r.level == "DEBUG" and r.target.startswith("h2::") for r in recs), show(recs)
    assert H2_HEADERS in recs and H2_DATA in recs, show(recs)
    assert len([r for r in recs if r.message.startswith("Connection{peer=Client}: ")]) >= 6, show(recs)


def test_h2_per_target_directives(h2_port: int) -> None:
    _, recs = run(f"t.h2_get({h2_port}, '/', False)", log="warn,h2::codec::framed_read=debug")
    assert len(recs) >= 3, show(recs)
    assert {r.target for r in recs} == {"h2::codec::framed_read"}, show(recs)
    _, recs = run(f"t.h2_get({h2_port}, '/', False)", log="h2=debug,h2::codec=off")
    assert recs and not [r for r in recs if r.target.startswith("h2::codec")], show(recs)


def test_h2_records_in_capsys_follow_set_log_filter(
    h2_port: int, capsys: pytest.CaptureFixture[str], filter_restored: None
) -> None:
    testext.set_log_filter("warn,h2=debug")
    assert testext.h2_get(h2_port, "/missing", False) == (404, 3)
    recs = parse(capsys.readouterr().err)
    assert H2_HEADERS in recs, show(recs)
    assert all(r.target.startswith("h2::") for r in recs), show(recs)
    testext.set_log_filter("warn")
    assert testext.h2_get(h2_port, "/", True) == (200, 3)
    recs = parse(capsys.readouterr().err)
    assert recs == [], show(recs)


@pytest.mark.parametrize("capture", ["capsys", "redirect_stderr"])
def test_a_global_runtime_nobody_attaches_reaches_a_replaced_stderr(
    h2_port: int, capsys: pytest.CaptureFixture[str], capture: str, filter_restored: None
) -> None:
    # h2 logs from the worker threads of a long-lived tokio runtime, outside
    # any call: pylogsink's thread writes their lines to the replaced
    # stream, each once, while the call waits and after it returns.
    testext.set_log_filter("warn,h2=debug")
    capsys.readouterr()
    before = testext.log_stats()["emitted"]
    buf = io.StringIO()
    got: list[str] = []

    def h2_lines() -> int:
        if capture == "capsys":
            got.append(capsys.readouterr().err)
        text = buf.getvalue() if capture == "redirect_stderr" else "".join(got)
        return len([r for r in parse(text) if r.target.startswith("h2::")])

    with contextlib.redirect_stderr(buf) if capture == "redirect_stderr" else contextlib.nullcontext():
        assert testext.h2_on_global_runtime(h2_port, 4, 10) == 40
        # Connections close after the call returned: those lines follow.
        wait_until(lambda: h2_lines() == testext.log_stats()["emitted"] - before, 10, "every h2 line, once")
    assert h2_lines() >= 100


def test_a_global_runtime_nobody_attaches_reaches_caplog(
    h2_port: int, caplog: pytest.LogCaptureFixture, ext: None, filter_restored: None
) -> None:
    testext.set_log_filter("warn,h2=debug")
    caplog.set_level(logging.DEBUG, logger="h2")
    before = testext.log_stats()["emitted"]
    assert testext.h2_on_global_runtime(h2_port, 4, 10) == 40
    wait_until(
        lambda: len([r for r in caplog.records if r.name.startswith("h2")]) == testext.log_stats()["emitted"] - before,
        10,
        "every h2 record in caplog",
    )
    assert len([r for r in caplog.records if r.name.startswith("h2")]) >= 100
    assert {r.threadName for r in caplog.records if r.name.startswith("h2")} >= {"global-tokio"}


def test_h2_fields_reach_logging_as_attributes(h2_port: int, caplog: pytest.LogCaptureFixture, ext: None) -> None:
    caplog.set_level(logging.DEBUG, logger="h2")
    testext.h2_get(h2_port, "/", False)
    sent = of(caplog, "h2.codec.framed_write")
    headers = [r for r in sent if r.frame.startswith("Headers")]  # type: ignore[attr-defined]
    assert len(headers) == 1, [r.getMessage() for r in sent]
    (got,) = headers
    assert got.frame == "Headers { stream_id: StreamId(1), flags: (0x5: END_HEADERS | END_STREAM) }"  # type: ignore[attr-defined]
    assert got.span == "Connection{peer=Client}"  # type: ignore[attr-defined]
    assert got.getMessage() == H2_HEADERS.message


@pytest.mark.timeout(120)
def test_an_http2_workload_at_debug_with_attached_workers_delivers_every_record(
    h2_port: int, caplog: pytest.LogCaptureFixture, ext: None
) -> None:
    """8 connections x 50 requests through h2 on a tokio pool attached to
    the call, h2 at DEBUG, to logging: every record emitted is handed to
    the handler (live while the call runs, the rest at its return), none
    left out."""
    caplog.set_level(logging.DEBUG)
    testext.set_log_filter("warn,h2=debug")
    before = testext.log_stats()
    assert testext.h2_fan_out(h2_port, 8, 50) == 400
    after = testext.log_stats()
    emitted = after["emitted"] - before["emitted"]
    got = [r for r in caplog.records if r.name.startswith("h2.")]
    assert emitted > 400, "h2 logs several records a request"
    assert after["left_out"] == before["left_out"]
    assert len(got) == emitted


def test_an_exception_carries_an_error_events_span_and_fields(
    capsys: pytest.CaptureFixture[str], filter_restored: None
) -> None:
    testext.set_log_filter("warn")
    with pytest.raises(RuntimeError) as raised:
        testext.tracing_error("model.pte")
    assert str(raised.value) == (
        "open failed\nErrors logged during the call:\n" '  open{path="model.pte"}: invalid program code=35'
    )
    capsys.readouterr()
