"""Color (color.rs, fd.rs): the level name only, on a real terminal, never on
a pipe, a file or a replaced sys.stderr; NO_COLOR and CLICOLOR_FORCE."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import textwrap

import pytest

from conftest import records

if sys.platform != "win32":
    import pty

needs_pty = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

ESC = "\x1b"
WARN_COLORED = "\x1b[33mWARN\x1b[0m  "


def env_with(**changes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "CLICOLOR_FORCE", "PYTEST_CURRENT_TEST")}
    env["TERM"] = "xterm"
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def on_terminal(code: str, **env: str | None) -> str:
    """Runs ``code`` with fd 2 on a fresh pseudo-terminal; returns what the
    terminal showed."""
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=slave,
        env=env_with(**env),
    )
    os.close(slave)
    out = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 20)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        assert child.wait(timeout=20) == 0, out
    finally:
        child.kill()
        os.close(master)
    return out.decode().replace("\r\n", "\n")


def on_pipe(code: str, **env: str | None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env_with(**env),
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


LOG_THREE = """
    import pylogsink
    pylogsink.runtime.log_raw(b"plain \\x1b[31m text", "warn")
    pylogsink.runtime.log_lines(1, "error")
    pylogsink.runtime.log_lines(1, "info")
"""


@needs_pty
def test_a_terminal_gets_the_level_name_colored_and_nothing_else() -> None:
    text = on_terminal(LOG_THREE)
    lines = records(text)
    assert len(lines) == 3, text
    assert WARN_COLORED in lines[0]
    assert "\x1b[31mERROR\x1b[0m " in lines[1]
    assert "\x1b[32mINFO\x1b[0m  " in lines[2]
    # The message's own ESC is escaped; only the codes around the level remain.
    assert lines[0].endswith("] plain \\x1b[31m text"), lines[0]
    assert all(line.count(ESC) == 2 for line in lines), lines


@needs_pty
def test_no_color_turns_it_off_on_a_terminal() -> None:
    text = on_terminal(LOG_THREE, NO_COLOR="1")
    assert len(records(text)) == 3, text
    assert ESC not in text


@needs_pty
def test_term_dumb_gets_no_color() -> None:
    text = on_terminal(LOG_THREE, TERM="dumb")
    assert len(records(text)) == 3, text
    assert ESC not in text


def test_a_pipe_gets_no_color() -> None:
    text = on_pipe(LOG_THREE)
    assert len(records(text)) == 3, text
    assert ESC not in text


def test_clicolor_force_colors_a_pipe_unless_no_color() -> None:
    text = on_pipe(LOG_THREE, CLICOLOR_FORCE="1")
    assert WARN_COLORED in records(text)[0], text
    assert ESC not in on_pipe(LOG_THREE, CLICOLOR_FORCE="1", NO_COLOR="1")
    assert ESC not in on_pipe(LOG_THREE, CLICOLOR_FORCE="0")


@needs_pty
def test_a_replaced_stderr_never_gets_color_even_when_forced() -> None:
    code = """
        import contextlib, io, sys, pylogsink
        buf = io.StringIO()
        with contextlib.redirect_stderr(buf):
            pylogsink.runtime.log_lines(2, "warn")
        print(repr(buf.getvalue()), file=sys.__stderr__)
        pylogsink.runtime.log_lines(1, "warn")
    """
    text = on_terminal(code, CLICOLOR_FORCE="1")
    captured, direct = text.split("\n", 1)
    assert captured.count(" WARN  ") == 2, captured
    assert "\\x1b" not in captured
    # The same process colors what goes to the terminal.
    assert WARN_COLORED in direct, direct


@needs_pty
def test_a_terminal_swapped_for_a_pipe_gets_no_color() -> None:
    # wurlitzer points fd 2 at a pipe with dup2: the next line must see it.
    pytest.importorskip("wurlitzer")
    code = """
        import sys, pylogsink, wurlitzer
        pylogsink.runtime.log_lines(1, "warn")
        with wurlitzer.pipes() as (out, err):
            pylogsink.runtime.log_lines(3, "warn")
        print(repr(err.read()), file=sys.__stderr__)
        pylogsink.runtime.log_lines(2, "warn")
    """
    text = on_terminal(code)
    first, captured, _, last = text.strip("\n").split("\n")
    assert WARN_COLORED in first, first
    assert captured.count(" WARN  ") == 3, captured
    assert "\\x1b" not in captured, captured
    # Back on the terminal, color returns once a write has seen it (the
    # line before may be plain: never the other way round).
    assert WARN_COLORED in last, last
