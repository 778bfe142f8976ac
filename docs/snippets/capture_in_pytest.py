import ctypes
import os

import pylogsink

libc = ctypes.CDLL(None)  # stands for your C library


def test_what_my_c_library_prints_is_in_capsys(capsys):
    with pylogsink.capture_output():
        libc.printf(b"loaded %d layers\n", 12)
        os.write(2, b"warning: no GPU found\n")
    out, err = capsys.readouterr()
    assert out == "loaded 12 layers\n"
    assert err == "warning: no GPU found\n"
