"""Section 16: FFmpeg. A threaded decode at DEBUG (libavcodec's MPEG-4
decoder, 4 frame threads, `debug` = picture info and macroblock types:
about 6 lines a frame of 64x64, made of about 60 `av_log` calls) in the
test extension `av_rt` (tests/c_libraries, built by bench/build.sh where
pkg-config finds libavcodec), with three log callbacks in the same child,
interleaved, all to the same fd 2, a regular file: FFmpeg's default
callback, the recipe of examples/c-libraries (pylogsink), and the
per-line callback many wrappers have (take the GIL, call `logging`, with
the formatter of (5)). Wall time per decode (median of rounds) and the
lines each run left in the file (the per-line callback logs each part of
a macroblock line as a record of its own). Then, per callback, a child
that decodes 2,000 frames on one thread while another waits for the
frames with the GIL held: "completed", or "hung" after 15 s. Targets:
pylogsink <= 1.1x the default callback's time, >= 5x faster than the
per-line GIL callback, and no hang.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from types import ModuleType

from children import HERE, run_child
from figures import interleaved, median_ratio, medians, target
from records import line_formatter

BUDGET = {"rounds": (3, 9), "frames": (150, 300)}
# Where bench/build.sh builds the C library test extensions.
C_LIBRARIES = os.path.join(HERE, "target", "c_libraries")
CALLBACKS = {"default": "FFmpeg's default callback", "pylogsink": "pylogsink (the recipe)", "python": "per-line GIL callback"}
# The hang check: a decode on one thread while the main thread waits for
# its frames with the GIL held, through the callback named by argv[2].
FFMPEG_WAITER = """
import sys, threading
sys.path.insert(0, sys.argv[1])
import av_rt
av_rt.set_log_filter("ffmpeg=debug")
av_rt.set_level(48)
av_rt.use(sys.argv[2])
packets = av_rt.encode(2000, 64)
decoder = threading.Thread(target=av_rt.decode, args=(packets,), kwargs=dict(debug=1))
decoder.start()
av_rt.wait_frames(1500)  # the GIL held
decoder.join()
"""


def child(p: dict, b: ModuleType) -> dict:
    """FFmpeg's threaded decode at DEBUG through three log callbacks."""
    sys.path.insert(0, C_LIBRARIES)
    import av_rt

    av_rt.set_log_filter("ffmpeg=debug")
    av_rt.set_level(48)  # AV_LOG_DEBUG, for the default and the per-line callbacks
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(line_formatter())
    logging.getLogger("libav").addHandler(handler)
    logging.getLogger("libav").setLevel(logging.DEBUG)
    packets = av_rt.encode(p["frames"], 64)
    lines: dict[str, list[int]] = {}

    def decode(callback: str) -> float:
        av_rt.use(callback)
        t = time.perf_counter()
        assert av_rt.decode(packets, threads=4, debug=9) == p["frames"]
        elapsed = time.perf_counter() - t
        sys.stderr.flush()
        with open("/proc/self/fd/2", "rb") as written:  # fd 2 itself is write-only
            lines.setdefault(callback, []).append(written.read().count(b"\n"))
        return elapsed * 1e3

    ms = interleaved(p["rounds"], {c: lambda c=c: decode(c) for c in CALLBACKS})
    av_rt.use("pylogsink")
    waiter = {}
    for callback in CALLBACKS:
        try:
            done = subprocess.run(
                [sys.executable, "-c", FFMPEG_WAITER, C_LIBRARIES, callback],
                capture_output=True, timeout=15, env={**os.environ, "AV_RT_LOG": "ffmpeg=debug"},
            )  # fmt: skip
            waiter[callback] = "completed" if done.returncode == 0 else f"failed ({done.returncode})"
        except subprocess.TimeoutExpired:
            waiter[callback] = "hung"
    return {
        "frames": p["frames"],
        "ms": medians(ms),
        "lines": medians(lines),
        "vs_default": median_ratio(ms["pylogsink"], ms["default"]),
        "python_vs": median_ratio(ms["python"], ms["pylogsink"]),
        "waiter": waiter,
    }


CHILDREN = {"ffmpeg": child}


def unmeasured(quick: bool) -> str | None:
    return None if os.path.isdir(C_LIBRARIES) else "FFmpeg: not measured (bench/build.sh found no libavcodec)"


def measure(p: dict) -> dict:
    return run_child({"task": "ffmpeg", **p}, "file")


def targets(f: dict, figs: dict) -> list[dict]:
    return [
        target("FFmpeg decode, pylogsink / default callback", f["vs_default"], "<=", 1.1, "x"),
        target("FFmpeg decode, GIL callback / pylogsink", f["python_vs"], ">=", 5, "x"),
        target("FFmpeg decode, GIL-held waiter hangs", int(f["waiter"]["pylogsink"] != "completed"), "<=", 0),
    ]


def report(f: dict) -> list[str]:
    lines = [
        f"16. FFmpeg: MPEG-4 decode of {f['frames']} frames of 64x64, 4 frame threads, at DEBUG with picture",
        "  info and macroblock types, to fd 2 (a regular file), median of rounds; waiter: another thread",
        "  waits for the frames with the GIL held",
        f"  {'callback':<28}{'ms':>9}{'lines':>9}  waiter",
    ]
    for c, name in CALLBACKS.items():
        lines.append(f"  {name:<28}{f['ms'][c]:>9.1f}{f['lines'][c]:>9,.0f}  {f['waiter'][c]}")
    lines.append(
        f"  pylogsink / default {f['vs_default']:.2f}x; per-line GIL callback / pylogsink {f['python_vs']:.1f}x "
        "(it logs each part of a macroblock line as a line)"
    )
    return lines
