"""Escaping (format.rs) against CPython itself: pylogsink's decoding of
native bytes must equal ``bytes.decode("utf-8", "backslashreplace")`` on
every input. PYLOGSINK_DIFF_CASES sets how many random inputs (default one
million); ``make fuzz`` runs a much longer differential run."""

from __future__ import annotations

import itertools
import os
import random

import pylogsink

CASES = int(os.environ.get("PYLOGSINK_DIFF_CASES", "1000000"))

# Bytes that matter to a UTF-8 decoder: ASCII and NUL, continuation bytes,
# every kind of lead byte, and the bytes that make overlong forms and
# surrogates (E0 80, F0 80, ED A0, F4 90).
INTERESTING = sorted(
    {0x00, 0x0A, 0x1B, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
     0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF8, 0xFE, 0xFF}
)


def check(data: bytes) -> None:
    expected = data.decode("utf-8", "backslashreplace")
    got = pylogsink.runtime.backslashreplace(data)
    assert got == expected, (data, got, expected)


def test_every_one_and_two_byte_input() -> None:
    for n in (1, 2):
        for combo in itertools.product(range(256), repeat=n):
            check(bytes(combo))


def test_every_interesting_input_up_to_four_bytes() -> None:
    for n in (3, 4):
        for combo in itertools.product(INTERESTING, repeat=n):
            check(bytes(combo))


def test_random_inputs() -> None:
    rng = random.Random(20261202)
    valid = ["a", "\u00e9", "\u4e2d", "\U0001f600", "\u0085", "\ud7ff", "\ue000", "\U0010ffff"]
    for _ in range(CASES):
        parts = []
        for _ in range(rng.randrange(1, 6)):
            kind = rng.random()
            if kind < 0.4:
                parts.append(valid[rng.randrange(len(valid))].encode())
            elif kind < 0.6:
                # A valid character cut short: a sequence missing its tail.
                encoded = valid[rng.randrange(2, len(valid))].encode()
                parts.append(encoded[: rng.randrange(1, len(encoded))])
            elif kind < 0.8:
                parts.append(bytes([rng.choice(INTERESTING)]))
            else:
                parts.append(rng.randbytes(rng.randrange(1, 4)))
        check(b"".join(parts))
