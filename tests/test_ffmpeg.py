"""pylogsink.ffmpeg: FFmpeg's lines through pylogsink for PyAV, with no C
compiler.

PyAV's own log callback takes the GIL on every line; PyAV closes a decoder
with the GIL held and waits for its frame threads, one of which waits for
the GIL in the callback. Each scenario decodes a small video PyAV made
(tmp_path), in a child process with a timeout: 50 times, open, 4 frame
threads, 5 frames, close.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import child_pytest, kernel_result

av = pytest.importorskip("av", reason="PyAV (av) has no wheel for this CPython here, or is not installed")

# The video each child decodes (written once per module).
NOISE_VIDEO = Path(__file__).parent / "scripts" / "noise_video.py"

# The early-close loop, and what the child ends with (the video is argv[1]).
DECODE = """
import json, logging, sys, time, av

def decode(times=50, close=True):
    for _ in range(times):
        container = av.open(sys.argv[1])
        stream = container.streams.video[0]
        stream.thread_type = "FRAME"
        stream.thread_count = 4
        stream.codec_context.options = {"debug": "pict"}
        for i, frame in enumerate(container.decode(stream)):
            if i == 4:
                break
        if close:
            container.close()
    return container
"""

# Counts the records logging gets from FFmpeg, by logger.
COUNT = """
class Count(logging.Handler):
    names = {}
    def emit(self, record):
        Count.names[record.name] = Count.names.get(record.name, 0) + 1
logging.getLogger().addHandler(Count())
logging.getLogger().setLevel(logging.DEBUG)

def wait_for_records():
    deadline = time.monotonic() + 10
    while not Count.names and time.monotonic() < deadline:
        time.sleep(0.01)
"""

INSTALLED_TO_LOGGING = (
    DECODE
    + COUNT
    + """
import pylogsink.ffmpeg
av.logging.set_level(av.logging.DEBUG)
paths = pylogsink.ffmpeg.install()
pylogsink.ffmpeg.set_log_destination("logging")
pylogsink.ffmpeg.set_log_filter("ffmpeg=debug")
decode()
wait_for_records()
print(json.dumps({"paths": paths, "names": Count.names}))
"""
)


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ffmpeg") / "noise.mp4"
    done = subprocess.run([sys.executable, str(NOISE_VIDEO), str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return path


def run(code: str, video: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), str(video)], capture_output=True, text=True, timeout=timeout
    )


def result(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.naive
def test_pyav_callback_hangs_closing_a_decoder_early(video: Path) -> None:
    # The negative control: PyAV's own callback, at DEBUG.
    # The hang needs a frame thread to log as the decoder closes: on Linux
    # the first of 50 rounds does it. Under wine 5 runs of 8 passed all 50
    # rounds (about 1 s each), so up to 20 runs are made: 0.6**20 < 1e-4.
    code = DECODE + "av.logging.set_level(av.logging.DEBUG)\ndecode()\n"
    for _ in range(20):
        try:
            done = run(code, video, timeout=20)
        except subprocess.TimeoutExpired:
            return
        assert done.returncode == 0, done.stderr[-2000:]
    pytest.fail("PyAV's callback did not hang in 20 runs of 50 rounds")


def test_installed_no_hang_and_the_records_reach_logging(video: Path) -> None:
    for _ in range(10):
        got = result(run(INSTALLED_TO_LOGGING, video))
        assert got["paths"] and all("avutil" in Path(p).name for p in got["paths"]), got["paths"]
        assert got["names"].get("ffmpeg.mpeg4", 0) > 0, got["names"]


def test_set_level_after_install_installs_again(video: Path) -> None:
    # av.logging.set_level puts PyAV's callback back; the wrapper that
    # install() puts around it installs pylogsink's again.
    code = INSTALLED_TO_LOGGING.replace("decode()\n", "av.logging.set_level(av.logging.VERBOSE)\ndecode()\n", 1)
    for _ in range(3):
        got = result(run(code, video))
        assert got["names"].get("ffmpeg.mpeg4", 0) > 0, got["names"]


def test_a_set_level_taken_before_install_installs_again_too(video: Path) -> None:
    # `from av.logging import set_level` before install(): the name in the
    # program's module is PyAV's own, which put PyAV's callback (and its
    # hang: 5 runs of 5) back; install() binds it to its wrapper too.
    code = INSTALLED_TO_LOGGING.replace(
        "import pylogsink.ffmpeg\n", "from av.logging import set_level as taken_before\nimport pylogsink.ffmpeg\n", 1
    ).replace("decode()\n", "taken_before(av.logging.DEBUG)\ndecode()\n", 1)
    assert "taken_before(av.logging.DEBUG)" in code
    for _ in range(3):
        got = result(run(code, video, timeout=30))
        assert got["names"].get("ffmpeg.mpeg4", 0) > 0, got["names"]


def test_a_second_install_says_so_and_pyavs_level_above_the_filter_is_noted_once() -> None:
    # PyAV's DEBUG went to `logging` as libav.*; with pylogsink's defaults,
    # FFmpeg's INFO and up go to sys.stderr as ffmpeg::*: install() says
    # so, once.
    code = """
    import av, pylogsink.ffmpeg
    av.logging.set_level(av.logging.DEBUG)
    for _ in range(3):
        pylogsink.ffmpeg.install()
    pylogsink.ffmpeg.set_log_filter("info,ffmpeg=debug")
    pylogsink.ffmpeg.install()
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    notes = [line for line in done.stderr.splitlines() if " pylogsink::ffmpeg] " in line]
    warnings = [line for line in notes if " WARN " in line]
    again = [line for line in notes if " INFO " in line]
    assert len(warnings) == 1, notes
    assert "PyAV's level is DEBUG" in warnings[0] and 'set_log_filter("info,ffmpeg=debug")' in warnings[0], warnings
    assert 'set_log_destination("logging")' in warnings[0] and "(PyAV's were libav.<item>)" in warnings[0], warnings
    assert len(again) == 3 and all("installed already" in line for line in again), notes


# The decode loop with pylogsink's callback in place of PyAV's, at DEBUG.
INSTALLED = (
    DECODE
    + """
import pylogsink.ffmpeg
av.logging.set_level(av.logging.DEBUG)
pylogsink.ffmpeg.install()
pylogsink.ffmpeg.set_log_filter("ffmpeg=debug")
"""
)


def test_lines_reach_a_replaced_stderr(video: Path) -> None:
    code = (
        INSTALLED
        + """
import io
sys.stderr = captured = io.StringIO()
decode(times=5)
deadline = time.monotonic() + 10
while "ffmpeg::mpeg4" not in captured.getvalue() and time.monotonic() < deadline:
    time.sleep(0.01)
sys.stderr = sys.__stderr__
print(json.dumps({"lines": captured.getvalue().splitlines()}))
"""
    )
    got = result(run(code, video))
    mpeg4 = [line for line in got["lines"] if " ffmpeg::mpeg4" in line]
    assert mpeg4, got["lines"][:20]
    # debug=pict: a line per frame, at DEBUG.
    assert any("DEBUG" in line for line in mpeg4), mpeg4[:5]


def test_exit_with_a_decoder_open(video: Path) -> None:
    code = (
        INSTALLED
        + """
kept = decode(times=1, close=False)
"""
    )
    for _ in range(20):
        done = run(code, video, timeout=30)
        assert done.returncode == 0, done.stderr[-2000:]
        assert " ffmpeg::mpeg4" in done.stderr


def test_uninstall_gives_ffmpegs_default_back(video: Path) -> None:
    code = (
        DECODE
        + """
import pylogsink.ffmpeg
pylogsink.ffmpeg.install()
pylogsink.ffmpeg.set_log_filter("ffmpeg=debug")
av.logging.set_libav_level(av.logging.DEBUG)
paths = pylogsink.ffmpeg.uninstall()
decode(times=1)
print(json.dumps({"paths": paths}))
"""
    )
    done = run(code, video)
    assert result(done)["paths"]
    # FFmpeg's own format: the context's address as %p prints it (0x...
    # with glibc, bare hex digits on Windows).
    assert re.search(r"\[mpeg4 @ (0x)?[0-9a-fA-F]+\]", done.stderr), done.stderr[-2000:]
    assert " ffmpeg::mpeg4" not in done.stderr


def test_install_before_import_av_says_to_import_it_first() -> None:
    code = """
import pylogsink.ffmpeg
try:
    pylogsink.ffmpeg.install()
except RuntimeError as err:
    print(err)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "no libavutil is loaded" in done.stdout and "import av" in done.stdout, done.stdout


def test_pyavs_exceptions_lose_ffmpegs_last_error_line(tmp_path: Path) -> None:
    # PyAV adds the last line FFmpeg logged at ERROR to its exceptions,
    # from its own callback: with pylogsink's, it sees no line.
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(bytes(range(256)) * 20)
    code = """
import sys, av, pylogsink.ffmpeg
av.logging.set_level(av.logging.ERROR)
def error():
    try:
        av.open(sys.argv[1], format="mp4")
    except av.error.InvalidDataError as err:
        return str(err)
print(error())
pylogsink.ffmpeg.install()
print(error())
"""
    done = run(code, bad)
    assert done.returncode == 0, done.stderr
    pyav, pylogsink = done.stdout.splitlines()
    assert "last error log: [mov,mp4,m4a,3gp,3g2,mj2] moov atom not found" in pyav
    assert "last error log" not in pylogsink
    assert "ERROR ffmpeg::mov,mp4,m4a,3gp,3g2,mj2] moov atom not found" in done.stderr


def test_capsys_and_caplog_get_ffmpegs_lines_in_a_test_suite(video: Path, tmp_path: Path) -> None:
    # As a user's suite would: installed where the test module starts; the
    # decode begins right after pytest replaced sys.stderr for the test.
    test = tmp_path / "test_decode.py"
    test.write_text(
        f"import logging, sys, time\nsys.argv[1:] = [{str(video)!r}]\n"
        + INSTALLED
        + """
def wait_for(found):
    deadline = time.monotonic() + 10
    while not found() and time.monotonic() < deadline:
        time.sleep(0.01)
    return found()

def test_capsys(capsys):
    decode(times=5)
    err = []
    assert wait_for(lambda: err.append(capsys.readouterr().err) or " ffmpeg::mpeg4" in "".join(err))

def test_caplog(caplog):
    caplog.set_level(logging.DEBUG)
    pylogsink.ffmpeg.set_log_destination("logging")
    decode(times=5)
    assert wait_for(lambda: any(r.name == "ffmpeg.mpeg4" for r in caplog.records))
"""
    )
    done = child_pytest(test, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout


@pytest.mark.timeout(300)
def test_a_kernels_cells_get_ffmpegs_lines_and_never_hang(video: Path, clean_env: dict[str, str]) -> None:
    # The early-close loop in a real Jupyter kernel, two cells of 10
    # rounds: each cell ends, with FFmpeg's lines in its own output.
    pytest.importorskip("nbclient")
    cells = [f"import sys\nsys.argv[1:] = [{str(video)!r}]\n" + INSTALLED, "decode(times=10)\n", "decode(times=10)\n"]
    done = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "scripts" / "capture_kernel.py"), "-", "60"],
        input="\0".join(cells),
        capture_output=True,
        text=True,
        timeout=240,
        env=clean_env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = kernel_result(done.stdout)
    assert got["timed_out"] is False and got["errors"] == [], got
    for cell in got["cells"][1:]:
        assert " ffmpeg::mpeg4" in cell.get("stderr", ""), cell
