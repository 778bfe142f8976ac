"""Runtime errors in exceptions (errors.rs): the Error lines of a call join
the exception it raises, and every message built from native bytes is
decoded with Python's backslashreplace rule."""

from __future__ import annotations

import contextlib
import io

import pytest

import pylogsink


def quiet() -> contextlib.AbstractContextManager[io.StringIO]:
    return contextlib.redirect_stderr(io.StringIO())


def test_a_corrupt_identifier_raises_runtime_error_with_escapes() -> None:
    with quiet(), pytest.raises(RuntimeError) as info:
        pylogsink.runtime.load_program(b"\xff" * 128)
    assert str(info.value) == (
        "load_program: invalid program (error 0x23)\n"
        "Errors logged during the call:\n"
        "  Program identifier '\\xff\\xff\\xff\\xff' != expected 'ET12'"
    )


def test_a_valid_program_loads() -> None:
    assert pylogsink.runtime.load_program(b"ET12" + bytes(60)) == 64


def test_a_path_cut_inside_a_character_raises_runtime_error() -> None:
    path = "/no/such/dir/" + "\u4e2d" * 60  # 3 bytes each: cut at 128 bytes
    with quiet(), pytest.raises(RuntimeError) as info:
        pylogsink.runtime.load_file(path)
    message = str(info.value)
    first = message.split("\n")[0]
    full = f"Failed to open {path}: ".encode()
    cut = full[:128]
    assert first == cut.decode("utf-8", "backslashreplace")
    assert first.endswith(("\\xe4", "\\xe4\\xb8")), first[-12:]


@pytest.mark.parametrize("kind", [RuntimeError, IndexError, ValueError])
def test_any_exception_type_carries_the_errors(kind: type[Exception]) -> None:
    with quiet(), pytest.raises(kind) as info:
        pylogsink.runtime.fail(2, kind.__name__)  # type: ignore[arg-type]
    assert str(info.value) == "fail: 2 errors\nErrors logged during the call:\n  cause 0\n  cause 1"


def test_errors_keep_the_first_kilobyte() -> None:
    with quiet(), pytest.raises(RuntimeError) as info:
        pylogsink.runtime.fail(500)
    lines = str(info.value).split("\n")[2:]
    assert lines[0] == "  cause 0"
    body = "\n".join(line[2:] for line in lines)
    kept, left_out = body.rsplit(" [", 1)
    assert len(kept.encode()) == 1024
    logged = "\n".join(f"cause {i}" for i in range(500))
    assert logged.startswith(kept)
    assert left_out == f"{len(logged) - 1024} more bytes left out]"


@pytest.mark.parametrize("first", ["raises", "returns"])
def test_a_full_call_leaves_no_count_to_the_next(first: str) -> None:
    # More than 1 KiB of Error text: later lines are only counted. Whether
    # that call built its exception or returned, the next starts at zero.
    with quiet():
        if first == "raises":
            with pytest.raises(RuntimeError):
                pylogsink.runtime.fail(500)
        else:
            pylogsink.runtime.log_lines(200, "error")
    with quiet(), pytest.raises(RuntimeError) as info:
        pylogsink.runtime.fail(1)
    assert str(info.value) == "fail: 1 errors\nErrors logged during the call:\n  cause 0"


def test_each_call_starts_with_no_errors() -> None:
    with quiet(), pytest.raises(RuntimeError):
        pylogsink.runtime.fail(3)
    with quiet(), pytest.raises(RuntimeError) as info:
        pylogsink.runtime.fail(1)
    assert "cause 1" not in str(info.value) and "cause 0" in str(info.value)


def test_error_lines_are_also_logged() -> None:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf), pytest.raises(RuntimeError):
        pylogsink.runtime.load_program(b"\x1b[2J")
    assert "ERROR" in buf.getvalue()
    assert "Program identifier '\\x1b[2J' != expected 'ET12'" in buf.getvalue()
