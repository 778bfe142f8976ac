"""What a filter costs to parse, and how many targets it may name.

A directive string of a megabyte is parsed (or refused) at once, whether
given to ``set_log_filter`` or found in ``PYLOGSINK_TESTEXT_LOG`` at import:
the parse holds the GIL. A filter names at most 1,000 distinct targets; one
that names more is refused whole, with a ValueError through the API and
with one Warn record at import, which it never breaks.

Each scenario runs in a child process with a timeout, so that a parse that
takes seconds fails the test instead of hanging it. The variable is set
inside the child, before the import: the kernel refuses a single variable of
a megabyte on exec.
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from typing import Any

import pytest

from conftest import python, records

ENV_VAR = "PYLOGSINK_TESTEXT_LOG"
LIMIT = 1000
MB = 1 << 20
# The child's own measure of the parse (or the import), in seconds.
QUICK = 1.0
# The child's whole run, the interpreter's start and the spec's making
# included; a parse that costs seconds, as one did, fails here.
TIMEOUT = 20

HEADER = re.compile(r"\[(\S+Z) (TRACE|DEBUG|INFO|WARN|ERROR) +(\S+)(?: (\S+:\d+))?\] (.*)")

# Python source, run in the child, that makes the spec: `directives(n)` is
# "target_0::module_0=debug,..." with n distinct targets; `bare(n)` is
# "x0,x1,...", n distinct bare targets, a megabyte for 150,000; `padded(n)`
# repeats n targets, each at "error" and then at "debug" and so on, up to
# a megabyte, and ends with each at "trace": the last directive for a target
# wins.
MAKE_SPEC = """
def directives(n):
    return ",".join(f"target_{i}::module_{i}=debug" for i in range(n))

def bare(n):
    return ",".join(f"x{i}" for i in range(n))

def padded(n):
    one = lambda level: ",".join(f"target_{i}::module_{i}={level}" for i in range(n))
    rounds = [one("error"), one("debug")] * (MB // (2 * len(one("debug"))) + 1)
    return "warn," + ",".join(rounds + [one("trace")])

MB = 1 << 20
"""


def child(body: str, log: str | None = None) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
    """Runs ``body`` in a child that has ``MAKE_SPEC``'s helpers and prints
    a JSON object as its last line; returns that object and the records on
    the child's stderr (level, target, message)."""
    env = dict(os.environ)
    env.pop("PYTEST_CURRENT_TEST", None)
    env.pop(ENV_VAR, None)
    env.pop("CLICOLOR_FORCE", None)
    code = "import json, os, time\n" + MAKE_SPEC + textwrap.dedent(body)
    done = python(code, timeout=TIMEOUT, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    parsed = []
    for line in records(done.stderr):
        match = HEADER.fullmatch(line)
        assert match, f"not a record header: {line[:300]!r}"
        parsed.append((match[2], match[3], match[5]))
    return json.loads(done.stdout.splitlines()[-1]), parsed


SET = """
import pylogsink_testext as t
spec = {spec}
start = time.perf_counter()
try:
    t.set_log_filter(spec)
    error = None
except ValueError as e:
    error = str(e)
seconds = time.perf_counter() - start
print(json.dumps({{
    "bytes": len(spec), "seconds": seconds, "error": error,
    "filter_is_spec": t.log_filter() == spec, "filter": t.log_filter()[:100],
    "debug_7": t.log_enabled("debug", "target_7::module_7::inner"),
    "trace_7": t.log_enabled("trace", "target_7::module_7"),
    "info_other": t.log_enabled("info", "other"),
}}))
"""

IMPORT = """
os.environ["{var}"] = spec = {spec}
start = time.perf_counter()
import pylogsink_testext as t
seconds = time.perf_counter() - start
print(json.dumps({{
    "bytes": len(spec), "seconds": seconds, "filter_is_spec": t.log_filter() == spec,
    "filter": t.log_filter()[:100], "trace_7": t.log_enabled("trace", "target_7::module_7"),
}}))
"""


def limit_named(message: str) -> bool:
    return "at most 1000 targets" in message


def test_a_megabyte_of_distinct_targets_is_refused_at_once() -> None:
    got, recs = child(SET.format(spec="bare(150_000)"))
    assert got["bytes"] > MB, got
    assert got["seconds"] < QUICK, got
    assert got["error"] is not None and limit_named(got["error"]), got
    assert got["filter"] == "warn", got
    assert recs == [], recs


def test_a_megabyte_of_repeated_targets_is_parsed_at_once_and_the_last_wins() -> None:
    got, recs = child(SET.format(spec=f"padded({LIMIT})"))
    assert got["bytes"] > MB, got
    assert got["seconds"] < QUICK, got
    assert got["error"] is None, got
    assert got["filter_is_spec"], got
    assert got["trace_7"] == [True, True], got
    assert got["info_other"] == [False, True], got
    assert recs == [], recs


def test_a_filter_names_at_most_1000_targets() -> None:
    got, _ = child(SET.format(spec=f"'warn,' + directives({LIMIT}) + ',' + directives({LIMIT})"))
    assert got["error"] is None and got["filter_is_spec"], got
    assert got["debug_7"] == [True, True], got

    got, _ = child(SET.format(spec=f"'warn,' + directives({LIMIT + 1})"))
    assert got["error"] is not None, got
    assert limit_named(got["error"]), got
    assert f"target_{LIMIT}::module_{LIMIT}=debug" in got["error"], got
    assert got["filter"] == "warn", got
    assert got["debug_7"] == [False, False], got


@pytest.mark.skipif(sys.platform == "win32", reason="Windows limits an environment variable to 32767 characters")
def test_a_megabyte_of_distinct_targets_in_the_variable_is_ignored_with_one_warning() -> None:
    got, recs = child(IMPORT.format(var=ENV_VAR, spec="bare(150_000)"))
    assert got["bytes"] > MB, got
    assert got["seconds"] < QUICK, got
    assert got["filter"] == "warn", got
    assert len(recs) == 1, recs
    level, target, message = recs[0]
    assert (level, target) == ("WARN", "pylogsink"), recs
    assert ENV_VAR in message and limit_named(message), recs
    assert len(message) < 1000, recs


@pytest.mark.skipif(sys.platform == "win32", reason="Windows limits an environment variable to 32767 characters")
def test_a_megabyte_of_repeated_targets_in_the_variable_is_parsed_at_once() -> None:
    got, recs = child(IMPORT.format(var=ENV_VAR, spec=f"padded({LIMIT})"))
    assert got["bytes"] > MB, got
    assert got["seconds"] < QUICK, got
    assert got["filter_is_spec"], got
    assert got["trace_7"] == [True, True], got
    assert recs == [], recs


def test_1001_targets_in_the_variable_are_ignored_with_one_warning() -> None:
    got, recs = child(IMPORT.format(var=ENV_VAR, spec=f"'debug,' + directives({LIMIT + 1})"))
    assert got["filter"] == "warn", got
    assert got["trace_7"] == [False, False], got
    assert len(recs) == 1 and recs[0][:2] == ("WARN", "pylogsink"), recs
    assert limit_named(recs[0][2]), recs
