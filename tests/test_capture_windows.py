"""The output capture on Windows (core/capture_windows.rs): not available,
and it says so at once, leaving nothing on and the streams as they were."""

from __future__ import annotations

import errno
import logging
import sys

import pytest

import pylogsink

pytestmark = pytest.mark.skipif(sys.platform != "win32", reason="Windows only: test_capture.py has the capture elsewhere")

NOT_AVAILABLE = "capturing fd 1 and fd 2 is not available on Windows: each C runtime in the process keeps its own descriptors"


@pytest.mark.parametrize("to_logging", [False, True], ids=["streams", "logging"])
def test_capture_output_raises_a_clear_error(to_logging: bool) -> None:
    handlers = list(logging.getLogger().handlers)
    for _ in range(2):  # and again: the first left nothing behind
        with pytest.raises(OSError, match=NOT_AVAILABLE), pylogsink.capture_output(to_logging=to_logging):
            pytest.fail("the block ran")
        assert not pylogsink.output_capture_active()
    assert logging.getLogger().handlers == handlers


def test_start_output_capture_raises_it_too_and_stop_finds_nothing_on() -> None:
    with pytest.raises(OSError, match=NOT_AVAILABLE) as raised:
        pylogsink.start_output_capture()
    # As the system's would: an errno, and no path a wheel's user lacks.
    assert raised.value.errno == errno.ENOTSUP, raised.value.errno
    assert "docs/" not in str(raised.value) and "runs on Linux" in str(raised.value)
    pylogsink.flush_output_capture()
    pylogsink.stop_output_capture()
    assert not pylogsink.output_capture_active()
