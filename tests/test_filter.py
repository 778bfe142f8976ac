"""The filter, checked with real crates that log on their own: ureq's
requests to a real HTTP server, and tracing's events and spans through
pylogsink's tracing layer (the test extension, tests/ext).

The filter is read from ``PYLOGSINK_TESTEXT_LOG`` at import, so most
scenarios run in a child process with the variable set or unset there.
"""

from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Iterator
from typing import NamedTuple

import pytest

import pylogsink_testext as testext
from conftest import python, records

ENV_VAR = "PYLOGSINK_TESTEXT_LOG"

# The module targets ureq 2 logs a plain-HTTP request under.
UREQ_TARGETS = {"ureq::stream", "ureq::unit", "ureq::response", "ureq::pool"}

HEADER = re.compile(r"\[(\S+Z) (TRACE|DEBUG|INFO|WARN|ERROR) +(\S+)(?: (\S+:\d+))?\] (.*)")


class Record(NamedTuple):
    level: str
    target: str
    message: str


def parse(text: str) -> list[Record]:
    """The records in ``text``, each header parsed: ``[ts LEVEL target file:line]``."""
    parsed = []
    for line in records(text):
        match = HEADER.fullmatch(line)
        assert match, f"not a record header: {line!r}"
        parsed.append(Record(match[2], match[3], match[5]))
    return parsed


def show(recs: list[Record]) -> str:
    """``recs`` for an assertion message: the count, then each record."""
    return f"{len(recs)} records:\n" + "\n".join(f"  {r.level} {r.target}: {r.message}" for r in recs)


def under(recs: list[Record], prefix: str) -> list[Record]:
    """The records whose target is ``prefix`` or starts with ``prefix::``."""
    return [r for r in recs if r.target == prefix or r.target.startswith(prefix + "::")]


def run(code: str, log: str | None) -> tuple[str, list[Record]]:
    """Runs ``code`` in a child with ``PYLOGSINK_TESTEXT_LOG`` set to ``log``
    (unset for None); returns its stdout and the records on its stderr."""
    env = dict(os.environ)
    env.pop("PYTEST_CURRENT_TEST", None)
    env.pop(ENV_VAR, None)
    env.pop("CLICOLOR_FORCE", None)
    if log is not None:
        env[ENV_VAR] = log
    code = "import pylogsink_testext as t\n" + textwrap.dedent(code)
    done = python(code, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout, parse(done.stderr)


# ureq, which logs each request at DEBUG under its module targets.


def test_by_default_no_ureq_record_reaches_stderr(url: str) -> None:
    out, recs = run(f"print(t.http_get({url!r})); t.log_at('warn', 'app', 'visible')", log=None)
    assert out.split() == ["200"]
    assert len([r for r in recs if r.target.startswith("ureq")]) == 0, show(recs)
    assert recs == [Record("WARN", "app", "visible")], show(recs)


def test_debug_shows_ureq_records_each_under_a_ureq_target(url: str) -> None:
    out, recs = run(
        f"""
        print(t.http_get({url!r}), t.http_get({url + "missing"!r}))
        t.log_at('debug', 'app', 'shown')
        t.log_at('trace', 'app', 'hidden')
        """,
        log="debug",
    )
    assert out.split() == ["200", "404"]
    ureq = [r for r in recs if r.target.startswith("ureq")]
    assert len(ureq) >= 8, show(recs)
    assert all(r.level == "DEBUG" and r.target.startswith("ureq::") for r in ureq), show(ureq)
    # ureq::pool shows only when the body came with the headers.
    targets = {r.target for r in ureq}
    assert {"ureq::stream", "ureq::unit", "ureq::response"} <= targets <= UREQ_TARGETS, show(ureq)
    assert len([r for r in ureq if r.message == f"response 404 to GET {url}missing"]) == 1, show(ureq)
    assert [r for r in recs if r.target == "app"] == [Record("DEBUG", "app", "shown")], show(recs)
    assert len(recs) == len(ureq) + 1, show(recs)


def test_a_per_target_directive_shows_ureq_only(url: str) -> None:
    _, recs = run(
        f"""
        t.http_get({url!r})
        t.log_at('info', 'app', 'hidden')
        t.log_at('warn', 'app', 'shown')
        """,
        log="warn,ureq=trace",
    )
    assert len(under(recs, "ureq")) >= 4, show(recs)
    assert [r for r in recs if r.target == "app"] == [Record("WARN", "app", "shown")], show(recs)
    assert len(recs) == len(under(recs, "ureq")) + 1, show(recs)


@pytest.mark.parametrize(
    ("spec", "stream_shown", "others_shown"),
    [
        ("warn,ureq=debug,ureq::stream=off", False, True),
        ("warn,ureq::stream=off,ureq=debug", False, True),
        ("warn,ureq::stream=debug", True, False),
        ("ureq::stream=off,debug", False, True),
    ],
)
def test_the_longest_matching_directive_decides(
    url: str, spec: str, stream_shown: bool, others_shown: bool
) -> None:
    _, recs = run(f"t.http_get({url!r})", log=spec)
    stream = under(recs, "ureq::stream")
    others = [r for r in under(recs, "ureq") if r not in stream]
    assert (len(stream) >= 2) if stream_shown else (len(stream) == 0), show(recs)
    assert (len(others) >= 2) if others_shown else (len(others) == 0), show(recs)
    assert len(recs) == len(stream) + len(others), show(recs)


# Levels, and the filter set at run time.


def test_trace_records_say_trace() -> None:
    _, recs = run("t.log_at('trace', 'app', 'fine detail'); t.log_at('debug', 'app', 'detail')", log="trace")
    assert recs == [Record("TRACE", "app", "fine detail"), Record("DEBUG", "app", "detail")], show(recs)


@pytest.fixture
def filter_restored() -> Iterator[None]:
    """Puts the in-process filter back as it was after the test."""
    before = testext.log_filter()
    yield
    testext.set_log_filter(before)


def test_set_log_filter_changes_what_appears(
    url: str, capsys: pytest.CaptureFixture[str], filter_restored: None
) -> None:
    testext.set_log_filter("warn")
    assert testext.log_filter() == "warn"
    testext.http_get(url)
    testext.log_at("info", "app", "hidden")
    recs = parse(capsys.readouterr().err)
    assert recs == [], show(recs)

    testext.set_log_filter("warn,ureq=debug,app=info")
    assert testext.log_filter() == "warn,ureq=debug,app=info"
    testext.http_get(url)
    testext.log_at("info", "app", "shown")
    testext.log_at("info", "other", "hidden")
    recs = parse(capsys.readouterr().err)
    assert len(under(recs, "ureq")) >= 4, show(recs)
    assert [r for r in recs if r.target != "app"] == under(recs, "ureq"), show(recs)
    assert [r for r in recs if r.target == "app"] == [Record("INFO", "app", "shown")], show(recs)

    testext.set_log_filter("error")
    assert testext.log_filter() == "error"
    testext.http_get(url)
    testext.log_at("warn", "app", "hidden")
    recs = parse(capsys.readouterr().err)
    assert recs == [], show(recs)


def test_none_goes_back_to_the_authors_default(capsys: pytest.CaptureFixture[str], filter_restored: None) -> None:
    testext.set_log_filter("error")
    testext.log_at("warn", "app", "hidden")
    testext.set_log_filter(None)
    # The test extension's default: Builder::default_filter("warn").
    assert testext.log_filter() == "warn"
    testext.log_at("warn", "app", "shown")
    testext.log_at("info", "app", "hidden")
    recs = parse(capsys.readouterr().err)
    assert recs == [Record("WARN", "app", "shown")], show(recs)


def test_a_bad_directive_raises_and_leaves_the_filter(
    capsys: pytest.CaptureFixture[str], filter_restored: None
) -> None:
    testext.set_log_filter("warn,app=info")
    with pytest.raises(ValueError, match="ureq=loud") as raised:
        testext.set_log_filter("warn,ureq=loud")
    assert "ureq=loud" in str(raised.value)
    assert testext.log_filter() == "warn,app=info"
    testext.log_at("info", "app", "still shown")
    testext.log_at("info", "other", "still hidden")
    recs = parse(capsys.readouterr().err)
    assert recs == [Record("INFO", "app", "still shown")], show(recs)


@pytest.mark.parametrize(
    "spec",
    ["warn,\x1b[2J=loud", "a=\x1b[2J\x07", "a=" + "y" * 1_000_000, "z" * 1_000_000 + "=loud"],
    ids=["escape-target", "escape-level", "long-level", "long-target"],
)
def test_a_bad_filters_message_holds_no_control_character_and_stays_short(spec: str, filter_restored: None) -> None:
    # A traceback on a terminal would run the escapes; a megabyte of
    # input makes no megabyte of message.
    with pytest.raises(ValueError) as raised:
        testext.set_log_filter(spec)
    message = str(raised.value)
    assert not any(c < " " or c == "\x7f" for c in message), repr(message)
    assert len(message) < 600, len(message)


def test_a_bad_env_value_is_ignored_with_one_warning() -> None:
    out, recs = run("print(t.log_filter()); t.log_at('info', 'app', 'hidden')", log="ureq=loud")
    assert out.split() == ["warn"]
    assert len(recs) == 1, show(recs)
    (warning,) = recs
    assert (warning.level, warning.target) == ("WARN", "pylogsink"), show(recs)
    assert "ureq=loud" in warning.message, show(recs)


def test_a_partly_bad_env_value_applies_the_valid_part() -> None:
    out, recs = run("print(t.log_filter()); t.log_at('debug', 'app', 'shown')", log="debug,x=loud")
    assert out.split() == ["debug"]
    warnings = [r for r in recs if r.target == "pylogsink"]
    assert len(warnings) == 1 and warnings[0].level == "WARN", show(recs)
    assert "x=loud" in warnings[0].message, show(recs)
    assert [r for r in recs if r.target == "app"] == [Record("DEBUG", "app", "shown")], show(recs)
    assert len(recs) == 2, show(recs)


# tracing, through pylogsink's layer (the global subscriber the test
# extension's Builder::init sets): events under their own target, each with
# the span context it is in (the span `load`, at INFO under the module path
# `_testext`), when the filter lets that span through; entering, leaving
# and closing spans make no records. (test_tracing.py tests the layer.)

EVENTS = [
    Record("TRACE", "testext::work", "opening model.pte"),
    Record("DEBUG", "testext::work", "read model.pte bytes=9"),
    Record("INFO", "testext::work", "loaded model.pte"),
    Record("WARN", "testext::work", "model.pte is deprecated"),
]


def in_span(recs: list[Record], span: str = 'load{path="model.pte"}') -> list[Record]:
    return [Record(r.level, r.target, f"{span}: {r.message}") for r in recs]


def test_tracing_by_default_only_the_warning_event() -> None:
    _, recs = run("t.tracing_work('model.pte')", log=None)
    assert recs == EVENTS[3:], show(recs)


def test_tracing_at_trace_shows_events_in_their_span_and_no_span_records() -> None:
    _, recs = run("t.tracing_work('model.pte')", log="trace")
    assert recs == in_span(EVENTS), show(recs)
    assert tracing_span_records(recs) == [], show(recs)


def tracing_span_records(recs: list[Record]) -> list[Record]:
    return under(recs, "tracing::span") + under(recs, "_testext")


def test_tracing_a_span_the_filter_drops_leaves_the_events_without_context() -> None:
    _, recs = run("t.tracing_work('model.pte')", log="trace,_testext=off")
    assert recs == EVENTS, show(recs)
    _, recs = run("t.tracing_work('model.pte')", log="warn,_testext=info,testext::work=debug")
    assert recs == in_span(EVENTS[1:]), show(recs)


def test_log_enabled_follows_the_directives_per_target() -> None:
    code = """
    print(*t.log_enabled('trace', 'tracing::span::active'))
    print(*t.log_enabled('debug', 'ureq'))
    print(*t.log_enabled('debug', 'ureq::unit'))
    print(*t.log_enabled('debug', 'other'))
    """
    out, _ = run(code, log=None)
    assert out.splitlines() == ["False False", "False False", "False False", "False False"]
    out, _ = run(code, log="warn,ureq=debug")
    assert out.splitlines() == ["False False", "True True", "True True", "False True"]
