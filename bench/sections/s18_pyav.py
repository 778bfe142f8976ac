"""Section 18: PyAV. A decode of 2,000 frames of 64x64 (MPEG-4, made by
PyAV in the child, one decoder thread) at DEBUG with picture info and
macroblock types, fd 2 /dev/null, with three log callbacks in the same
child, interleaved: FFmpeg's default callback, PyAV's own (the GIL and
`logging` per `av_log` call, a StreamHandler to stderr with the formatter
of (5)), and `pylogsink.ffmpeg.install()`. Wall time per decode, median of
rounds, and the ratios. Then, per callback (PyAV's, pylogsink's), a child
that closes decoders early (50 rounds, 4 frame threads, at DEBUG) while a
Python thread spins on the GIL: "completed", or "hung" after 20 s.
Targets: pylogsink.ffmpeg <= 1.1x the default callback's time, PyAV's >=
1.5x pylogsink's, and no hang. Measured where `av` is installed
(bench/build.sh installs it where PyPI has a wheel).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import time
from types import ModuleType

from children import HERE, run_child
from figures import interleaved, median_ratio, medians, target
from records import line_formatter

BUDGET = {"rounds": (3, 7), "frames": 2_000}
NOISE_VIDEO = os.path.join(HERE, "..", "tests", "scripts", "noise_video.py")
CALLBACKS = {"default": "FFmpeg's default callback", "pyav": "PyAV's callback", "pylogsink": "pylogsink.ffmpeg"}
# The hang check: PyAV's early close (50 rounds: open, 4 frame threads,
# 5 frames, close with the GIL held) at DEBUG, while a Python thread spins
# on the GIL, through the callback named by argv[1], on the video argv[2].
PYAV_SPINNER = """
import sys, threading, av, pylogsink.ffmpeg
video = sys.argv[2]
sys.setswitchinterval(0.005)
stop = False
def spin():
    n = 0
    while not stop:
        n += 1
threading.Thread(target=spin, daemon=True).start()
av.logging.set_level(av.logging.DEBUG)
if sys.argv[1] == "pylogsink":
    pylogsink.ffmpeg.set_log_filter("ffmpeg=debug")
    pylogsink.ffmpeg.install()
for _ in range(50):
    container = av.open(video)
    stream = container.streams.video[0]
    stream.thread_type = "FRAME"
    stream.thread_count = 4
    stream.codec_context.options = {"debug": "pict"}
    for i, frame in enumerate(container.decode(stream)):
        if i == 4:
            break
    container.close()
stop = True
"""


def child(p: dict, b: ModuleType) -> dict:
    """PyAV's decode at DEBUG through three log callbacks."""
    import tempfile

    import av
    import pylogsink.ffmpeg

    video = os.path.join(tempfile.mkdtemp(), "grey.mp4")
    with av.open(video, "w") as out:
        stream = out.add_stream("mpeg4", rate=30)
        stream.width, stream.height, stream.pix_fmt = 64, 64, "yuv420p"
        for i in range(p["frames"]):
            frame = av.VideoFrame(64, 64, "yuv420p")
            for plane in frame.planes:
                plane.update(bytes((i + j) % 256 for j in range(plane.buffer_size)))
            out.mux(stream.encode(frame))
        out.mux(stream.encode())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(line_formatter())
    logging.getLogger("libav").addHandler(handler)
    logging.getLogger("libav").setLevel(logging.DEBUG)
    av.logging.set_libav_level(av.logging.DEBUG)  # the default callback's own level
    pylogsink.ffmpeg.set_log_filter("ffmpeg=debug")

    def use(callback: str) -> None:
        pylogsink.ffmpeg.uninstall()  # FFmpeg's default, and av.logging.set_level unwrapped
        if callback == "pyav":
            av.logging.set_level(av.logging.DEBUG)
        elif callback == "pylogsink":
            pylogsink.ffmpeg.install()

    def decode(callback: str) -> float:
        use(callback)
        t = time.perf_counter()
        with av.open(video) as container:
            stream = container.streams.video[0]
            stream.codec_context.options = {"debug": "pict+mb_type"}
            assert sum(1 for _ in container.decode(stream)) == p["frames"]
        elapsed = time.perf_counter() - t
        use("default")
        return elapsed * 1e3

    ms = interleaved(p["rounds"], {c: lambda c=c: decode(c) for c in CALLBACKS})
    spinner = {}
    noise = os.path.join(os.path.dirname(video), "noise.mp4")
    subprocess.run([sys.executable, NOISE_VIDEO, noise], check=True, timeout=60)
    for callback in ("pyav", "pylogsink"):
        try:
            done = subprocess.run([sys.executable, "-c", PYAV_SPINNER, callback, noise], capture_output=True, timeout=20)
            spinner[callback] = "completed" if done.returncode == 0 else f"failed ({done.returncode})"
        except subprocess.TimeoutExpired:
            spinner[callback] = "hung"
    shutil.rmtree(os.path.dirname(video), ignore_errors=True)
    return {
        "frames": p["frames"],
        "av": av.__version__,
        "ms": medians(ms),
        "vs_default": median_ratio(ms["pylogsink"], ms["default"]),
        "pyav_vs": median_ratio(ms["pyav"], ms["pylogsink"]),
        "spinner": spinner,
    }


CHILDREN = {"pyav": child}


def unmeasured(quick: bool) -> str | None:
    return None if importlib.util.find_spec("av") is not None else "PyAV: not measured (av is not installed)"


def measure(p: dict) -> dict:
    return run_child({"task": "pyav", **p}, "null")


def targets(f: dict, figs: dict) -> list[dict]:
    return [
        target("PyAV decode, pylogsink.ffmpeg / default", f["vs_default"], "<=", 1.1, "x"),
        target("PyAV decode, PyAV's callback / pylogsink", f["pyav_vs"], ">=", 1.5, "x"),
        target("PyAV early close, GIL spinning, hangs", int(f["spinner"]["pylogsink"] != "completed"), "<=", 0),
    ]


def report(f: dict) -> list[str]:
    lines = [
        f"18. PyAV {f['av']}: MPEG-4 decode of {f['frames']} frames of 64x64, one decoder thread, at DEBUG with",
        "  picture info and macroblock types, fd 2 /dev/null, median of rounds",
        f"  {'callback':<28}{'ms':>9}",
    ]
    for c, name in CALLBACKS.items():
        lines.append(f"  {name:<28}{f['ms'][c]:>9.1f}")
    lines.append(f"  pylogsink.ffmpeg / default {f['vs_default']:.2f}x; PyAV's callback / pylogsink.ffmpeg {f['pyav_vs']:.1f}x")
    lines.append("  early close (50 x open, 4 frame threads, 5 frames, close) at DEBUG while a Python thread spins")
    lines.append(
        f"  on the GIL: PyAV's callback {f['spinner']['pyav']}, pylogsink.ffmpeg {f['spinner']['pylogsink']} (20 s each)"
    )
    return lines
