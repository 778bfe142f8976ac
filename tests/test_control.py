"""Settings never strand each other (SPEC.md, Control and Destinations): in
any order of filter, destination and Python level changes, ``log::max_level``
and tracing's callsite interest stay what the settings say, so the
crates' own macros (``log::info!``, ``tracing::debug!``...), which drop a
record before pylogsink sees it, log exactly what the settings let through.

A table of scenarios, each run in a child process of its own (the filter
read at start-up cannot be put back in a running process): a start-up,
with ``PYLOGSINK_TESTEXT_LOG=info`` or without it (the builder's default,
``warn``), then one order of the five steps in ``STEPS``:

- ``set_log_filter("debug")`` (the users' filter, from Python),
- ``set_log_destination("logging")`` and ``set_log_destination("stderr")``,
- ``logging.getLogger("testext").setLevel(logging.DEBUG)``,
- ``logging.disable(logging.DEBUG)``.

Every order of the five (5! = 120) for each start-up: 240 children, two
at a time. After each step the child calls ``log_levels`` in a call (a
call between steps, which is what reads Python's levels on the ``logging``
destination), so every prefix of every order is checked as well; after the
last step, once more outside any call. Each call emits a ``log::info!``, a
``log::debug!``, a ``tracing::info!`` and a ``tracing::debug!`` (target
``testext::control``) tagged with the step's number. The child's stderr is
captured, and a handler on the root logger keeps what reaches ``logging``
(printed at exit, after pylogsink's own exit delivery, for the records
logged outside any call).

The expected answer comes from the settings alone (``expected``, a small
pure model, itself checked against hand-written cases): the filter is the
users' last one (``debug`` once set, else the variable's ``info``); without
one it is ``warn`` on stderr, and on ``logging`` everything passes to
Python, where the logger's effective level and ``logging.disable`` decide.
Each record must appear exactly once where the settings send it and
nowhere else, or not at all.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import pytest

from conftest import python, records

ENV_VAR = "PYLOGSINK_TESTEXT_LOG"
TARGET = "testext::control"
LOGGER = "testext.control"

LEVELNO = {"trace": 5, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}

# The records each `log_levels(tag, ...)` emits: (front end, level).
PROBES = [("log", "info"), ("log", "debug"), ("tracing", "info"), ("tracing", "debug")]


@dataclass(frozen=True)
class Settings:
    """What the users and Python have set."""

    users_filter: str | None  # a bare level; None while they set none
    destination: str = "stderr"
    testext_level: int = logging.NOTSET  # logging.getLogger("testext")'s own level
    disable: int = logging.NOTSET  # logging.disable's level

    def __str__(self) -> str:
        return (
            f"filter={self.users_filter or 'default'} destination={self.destination} "
            f"testext={logging.getLevelName(self.testext_level)} disable={logging.getLevelName(self.disable)}"
        )


def expected(settings: Settings, level: str) -> str | None:
    """Where a record of ``level`` under ``testext::control`` goes with
    ``settings``: "stderr", "logging", or None (not logged)."""
    if settings.users_filter is not None:
        threshold = settings.users_filter
    elif settings.destination == "logging":
        threshold = "trace"  # Python's levels decide
    else:
        threshold = "warn"  # the builder's default
    n = LEVELNO[level]
    if n < LEVELNO[threshold]:
        return None
    if settings.destination == "stderr":
        return "stderr"
    # The root logger's level is WARNING; "testext.control" inherits from
    # "testext" when that one has a level. isEnabledFor: n > disable and
    # n >= the effective level.
    effective = settings.testext_level or logging.WARNING
    return "logging" if n > settings.disable and n >= effective else None


@dataclass(frozen=True)
class Step:
    """One setting change: its name, the code the child runs (with ``t``
    the extension and ``logging`` imported), and what it changes."""

    name: str
    code: str
    apply: Callable[[Settings], Settings]


STEPS = [
    Step('set_log_filter("debug")', 't.set_log_filter("debug")', lambda s: replace(s, users_filter="debug")),
    Step('to "logging"', 't.set_log_destination("logging")', lambda s: replace(s, destination="logging")),
    Step('to "stderr"', 't.set_log_destination("stderr")', lambda s: replace(s, destination="stderr")),
    Step(
        "testext level DEBUG",
        'logging.getLogger("testext").setLevel(logging.DEBUG)',
        lambda s: replace(s, testext_level=logging.DEBUG),
    ),
    Step("logging.disable(DEBUG)", "logging.disable(logging.DEBUG)", lambda s: replace(s, disable=logging.DEBUG)),
]

# The start-ups: the variable's value, None for unset.
STARTUPS = {"builder default": None, f"{ENV_VAR}=info": "info"}

ORDERS = list(itertools.permutations(STEPS))

CHILD = """\
import atexit, json, logging

got = []

class Keep(logging.Handler):
    def emit(self, record):
        got.append([record.name, record.levelname, record.getMessage()])

logging.getLogger().addHandler(Keep())
# Registered before pylogsink registers its exit delivery, so it runs after
# it (atexit runs last in, first out) and sees the records it delivers.
atexit.register(lambda: print(json.dumps(got)))
import pylogsink_testext as t
"""


def child_code(order: tuple[Step, ...]) -> str:
    lines = [CHILD]
    for i, step in enumerate(order):
        lines.append(f"{step.code}\nt.log_levels({str(i)!r}, True)\n")
    lines.append('t.log_levels("out", False)\n')
    return "".join(lines)


def child_env(log: str | None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "PYLOGSINK_")) and k not in ("CLICOLOR_FORCE", "NO_COLOR")
    }
    if log is not None:
        env[ENV_VAR] = log
    return env


HEADER = re.compile(r"\[\S+Z (TRACE|DEBUG|INFO|WARN|ERROR) +(\S+)(?: \S+:\d+)?\] (.*)")
LEVELNAME = {"info": "INFO", "debug": "DEBUG"}


def got_records(stdout: str, stderr: str) -> Counter[tuple[str, str, str]]:
    """(destination, level name, message) of each testext::control record
    on stderr and in the child's handler, counted."""
    got: Counter[tuple[str, str, str]] = Counter()
    for line in records(stderr):
        match = HEADER.fullmatch(line)
        if match and match[2] == TARGET:
            got["stderr", match[1], match[3]] += 1
    lines = stdout.strip().splitlines()
    for name, levelname, message in json.loads(lines[-1]) if lines else []:
        if name == LOGGER:
            got["logging", levelname, message] += 1
    return got


def check(startup: str, order: tuple[Step, ...], stdout: str, stderr: str) -> tuple[list[str], int, int]:
    """The mismatches between what the child logged and what the model
    says, each naming the order and the record; and how many records
    had to appear and not to."""
    what = f"[{startup}] order {' -> '.join(s.name for s in order)}"
    settings = Settings(users_filter=STARTUPS[startup])
    got = got_records(stdout, stderr)
    checked: set[tuple[str, str, str]] = set()
    failures = []
    positives = negatives = 0
    probes = []
    for i, step in enumerate(order):
        settings = step.apply(settings)
        probes.append((str(i), f"after step {i + 1} ({step.name}), in a call", settings))
    probes.append(("out", "after the last step, outside any call", settings))
    for tag, when, settings in probes:
        for front, level in PROBES:
            message = f"{front} {level} {tag}"
            where = expected(settings, level)
            for destination in ("stderr", "logging"):
                key = (destination, LEVELNAME[level], message)
                want = int(where == destination)
                checked.add(key)
                if want:
                    positives += 1
                if want != got[key]:
                    failures.append(
                        f"{what}: {when} [{settings}]: {front}::{level}! {message!r} "
                        f"on {destination}: expected {want}, got {got[key]}"
                    )
            if where is None:
                negatives += 1
    for key, count in got.items():
        if key not in checked:
            failures.append(f"{what}: unexpected record {key[2]!r} ({key[1]}) on {key[0]} x{count}")
    return failures, positives, negatives


def run(startup: str, order: tuple[Step, ...]) -> tuple[list[str], int, int]:
    done = python(child_code(order), timeout=60, env=child_env(STARTUPS[startup]))
    if done.returncode != 0:
        what = f"[{startup}] order {' -> '.join(s.name for s in order)}"
        return [f"{what}: the child failed ({done.returncode}):\n{done.stderr[-2000:]}"], 0, 0
    return check(startup, order, done.stdout, done.stderr)


# The model, against cases worked out by hand.


@pytest.mark.parametrize(
    ("settings", "level", "where"),
    [
        (Settings(None), "info", None),
        (Settings("info"), "info", "stderr"),
        (Settings("info"), "debug", None),
        (Settings("debug"), "debug", "stderr"),
        (Settings(None, "logging"), "info", None),  # root's WARNING
        (Settings(None, "logging", logging.DEBUG), "debug", "logging"),
        (Settings(None, "logging", logging.DEBUG, logging.DEBUG), "debug", None),
        (Settings(None, "logging", logging.DEBUG, logging.DEBUG), "info", "logging"),
        (Settings("info", "logging", logging.DEBUG), "debug", None),  # the users' filter
        (Settings("info", "logging", logging.DEBUG), "info", "logging"),
        (Settings("debug", "stderr", logging.NOTSET, logging.DEBUG), "debug", "stderr"),  # Python's are not asked
    ],
)
def test_the_model(settings: Settings, level: str, where: str | None) -> None:
    assert expected(settings, level) == where


@pytest.mark.parametrize("startup", list(STARTUPS))
def test_every_order_of_settings_logs_what_the_settings_say(startup: str) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda order: run(startup, order), ORDERS))
    failures = [f for fs, _, _ in results for f in fs]
    positives = sum(p for _, p, _ in results)
    negatives = sum(n for _, _, n in results)
    # Not a table of "nothing is logged": records must appear, and others not.
    assert positives > 1000 and negatives > 1000, (positives, negatives)
    assert not failures, f"{len(failures)} mismatches in {len(ORDERS)} orders:\n" + "\n".join(failures)
