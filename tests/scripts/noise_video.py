"""Writes the video the PyAV tests and benchmark decode: 30 frames of noise,
320x240, mpeg4, enough for 4 frame threads to be busy.

Usage: python noise_video.py PATH
"""

from __future__ import annotations

import random
import sys

import av


def write(path: str, frames: int = 30) -> None:
    """Writes `frames` frames of seeded noise to `path`."""
    with av.open(path, "w") as out:
        stream = out.add_stream("mpeg4", rate=30)
        stream.width, stream.height, stream.pix_fmt = 320, 240, "yuv420p"
        for i in range(frames):
            frame = av.VideoFrame(320, 240, "yuv420p")
            for plane in frame.planes:
                plane.update(random.Random(i).randbytes(plane.buffer_size))
            out.mux(stream.encode(frame))
        out.mux(stream.encode())


if __name__ == "__main__":
    write(sys.argv[1])
