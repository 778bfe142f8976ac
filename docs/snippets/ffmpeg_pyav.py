"""PyAV with FFmpeg's lines through pylogsink (docs/c-libraries.md): a
decode closed early, with 4 frame threads logging at DEBUG."""

import importlib.util
import sys
import tempfile
from pathlib import Path

if importlib.util.find_spec("av") is None:
    sys.exit(0)  # no PyAV wheel for this CPython

import av
import pylogsink.ffmpeg

av.logging.set_level(av.logging.DEBUG)
pylogsink.ffmpeg.install()  # after `import av` and after av.logging.set_level
pylogsink.ffmpeg.set_log_filter("info,ffmpeg=debug")  # pylogsink's filter decides, not PyAV's level


def grey_video(path: Path) -> None:
    """A small video to decode: 30 frames of grey."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("mpeg4", rate=30)
        stream.width, stream.height, stream.pix_fmt = 320, 240, "yuv420p"
        for i in range(30):
            frame = av.VideoFrame(320, 240, "yuv420p")
            for plane in frame.planes:
                plane.update(bytes([i * 8]) * plane.buffer_size)
            out.mux(stream.encode(frame))
        out.mux(stream.encode())


with tempfile.TemporaryDirectory() as folder:
    video = Path(folder) / "grey.mp4"
    grey_video(video)
    for _ in range(50):
        with av.open(str(video)) as container:
            stream = container.streams.video[0]
            stream.thread_type = "FRAME"
            stream.thread_count = 4
            for i, frame in enumerate(container.decode(stream)):
                if i == 4:
                    break
