"""The cap (kept.rs): a call keeps at most its newest 64 KiB, and one note
says, in place, how many lines and bytes were left out."""

from __future__ import annotations

import contextlib
import io
import re

import pylogsink
from conftest import records

CAP = 64 * 1024


def test_a_call_that_logs_1_mib_keeps_its_newest_64_kib_and_one_note(small_budget: None) -> None:
    count = 10486  # 100-byte lines: 1 MiB
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        logged = pylogsink.runtime.log_lines(count, size=100)
    assert logged == count * 100
    text = buf.getvalue()
    lines = text.splitlines(keepends=True)
    notes = [line for line in lines if line.startswith("[pylogsink]")]
    assert len(notes) == 1 and lines[0] is notes[0], "one note, where the lines were left out"
    m = re.match(r"\[pylogsink\] (\d+) lines \((\d+) bytes\) left out here", notes[0])
    assert m, notes[0]
    kept = lines[1:]
    kept_bytes = sum(len(line.encode()) for line in kept)
    assert kept_bytes <= CAP and kept_bytes > CAP - 100
    numbers = [int(r.split("] line ")[1].split()[0]) for r in records("".join(kept))]
    assert numbers == list(range(count - len(kept), count)), "the newest lines, in order"
    assert int(m.group(1)) == count - len(kept)
    assert int(m.group(2)) == (count - len(kept)) * 100


def test_a_line_larger_than_the_cap_is_cut_and_noted(small_budget: None) -> None:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        pylogsink.runtime.log_raw(b"x" * (200 * 1024))
    text = buf.getvalue()
    note, record = text.split("\n", 1)
    assert re.fullmatch(r"\[pylogsink\] 1 line longer than 64 KiB cut: \d+ bytes left out", note)
    assert record.endswith("x\n") and len(record.encode()) == CAP
    cut = int(note.split(": ")[1].split()[0])
    full = record.index("] ") + 2 + 200 * 1024 + 1  # the record before the cut
    assert cut == full - (CAP - 1)
