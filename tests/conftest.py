"""Helpers shared by the tests: running Python snippets in a subprocess.

Scenarios that must show a hang, or that need the process's own
``sys.stderr`` (pytest replaces it inside a test), run in a subprocess of
the same interpreter, with a timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest


def python(code: str, timeout: float = 60, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh interpreter; raises TimeoutExpired on a hang."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def popen(code: str, **kwargs: Any) -> subprocess.Popen[bytes]:
    """Starts ``code`` in a fresh interpreter with stdout and stderr piped."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,
    )


def records(text: str) -> list[str]:
    """The records in ``text``: lines that start a pylogsink record."""
    return [line for line in text.splitlines() if line.startswith("[") and "Z " in line[:40]]


@pytest.fixture
def clean_env() -> dict[str, str]:
    """The environment without pytest's markers, for child processes."""
    env = dict(os.environ)
    env.pop("PYTEST_CURRENT_TEST", None)
    return env
