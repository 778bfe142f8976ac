"""pylogsink.sqlite: SQLite's error log, from the SQLite Python's sqlite3
uses, through pylogsink.

Each scenario runs in a child process with a timeout: whether SQLite takes
a log function depends on whether `import sqlite3` ran before, which only a
fresh process controls. The SQLite differs by CPython here: the system's
3.40 (pyenv's 3.11 to 3.13), Debian's 3.53 (3.14 and 3.15).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from conftest import child_pytest

# SQLite 3.42 takes a log function at any time; before, only before it
# initializes, which `import sqlite3` does.
ANYTIME = sqlite3.sqlite_version_info >= (3, 42)
VERSION = f"this Python's SQLite is {sqlite3.sqlite_version}"

INSTALLED = "import pylogsink.sqlite\npylogsink.sqlite.install()\nimport sqlite3"

# Counts what logging gets, and waits for it.
COUNT = """
import json, logging, threading, time
import pylogsink
pylogsink.set_log_destination("logging")

class Keep(logging.Handler):
    records = []
    def emit(self, record):
        Keep.records.append(record)
logging.getLogger().addHandler(Keep())

def wait_for(n):
    deadline = time.monotonic() + 10
    while len(Keep.records) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    return [(r.name, r.levelname, r.getMessage(), r.threadName) for r in Keep.records]

def fail(times=1):
    db = sqlite3.connect(":memory:")
    for _ in range(times):
        try:
            db.execute("select * from nope")
        except sqlite3.OperationalError:
            pass
"""


def run(*parts: str, timeout: float = 60) -> dict:
    """Runs the parts, each dedented, one after the other in a child; what
    its last line of output says."""
    code = "\n".join(textwrap.dedent(part) for part in parts)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_install_before_import_sqlite3_makes_a_failed_querys_message_a_record_in_caplog(tmp_path: Path) -> None:
    # As a user's test suite would: installed at the top of the test file,
    # before its `import sqlite3`, the record checked in caplog.
    test = tmp_path / "test_db.py"
    test.write_text(
        textwrap.dedent(
            """
            import time
            import pylogsink, pylogsink.sqlite
            pylogsink.sqlite.install()
            pylogsink.set_log_destination("logging")
            import sqlite3

            def test_a_failed_query(caplog):
                db = sqlite3.connect(":memory:")
                try:
                    db.execute("select * from nope")
                except sqlite3.OperationalError:
                    pass
                deadline = time.monotonic() + 10
                while not any(r.name == "sqlite" for r in caplog.records) and time.monotonic() < deadline:
                    time.sleep(0.01)
                [record] = [r for r in caplog.records if r.name == "sqlite"]
                assert record.levelname == "ERROR"
                assert record.getMessage() == 'no such table: nope in "select * from nope" (code 1)'
            """
        )
    )
    done = child_pytest(test, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 passed" in done.stdout


@pytest.mark.skipif(sys.platform == "darwin", reason="reads the loader's list as Linux and Windows give it")
def test_the_library_is_the_one_pythons_sqlite3_loads() -> None:
    # What the loader has for the SQLite that `import sqlite3` loaded: the
    # files mapped (Linux), the module named sqlite3.dll (Windows).
    got = run(
        """
        import json, os, sys, pylogsink.sqlite
        path = pylogsink.sqlite.install()
        import sqlite3
        sqlite3.connect(":memory:").execute("select 1")
        if sys.platform == "win32":
            import ctypes
            kernel32 = ctypes.WinDLL("kernel32")
            kernel32.GetModuleHandleW.restype = ctypes.c_void_p
            name = ctypes.create_unicode_buffer(32768)
            kernel32.GetModuleFileNameW(ctypes.c_void_p(kernel32.GetModuleHandleW("sqlite3.dll")), name, 32768)
            loaded = os.path.normcase(name.value) == os.path.normcase(path)
        else:
            loaded = os.path.realpath(path) in open("/proc/self/maps").read()
        print(json.dumps({"path": path, "loaded": loaded}))
        """
    )
    assert "sqlite" in Path(got["path"]).name, got
    assert got["loaded"], got


@pytest.mark.skipif(ANYTIME, reason=f"needs SQLite before 3.42, which refuses a log once initialized; {VERSION}")
def test_install_after_import_sqlite3_says_why_and_what_to_do() -> None:
    got = run(
        """
        import json, sqlite3, pylogsink.sqlite
        try:
            pylogsink.sqlite.install()
            print(json.dumps({"raised": None}))
        except RuntimeError as e:
            print(json.dumps({"raised": str(e)}))
        """
    )
    message = got["raised"]
    assert message is not None, "install() after import sqlite3 did not raise"
    assert f"SQLite {sqlite3.sqlite_version} is already initialized" in message
    assert "before the first `import sqlite3`" in message
    assert "IPython and Jupyter" in message and "a .pth file" in message


@pytest.mark.skipif(not ANYTIME, reason=f"needs SQLite 3.42 or later, which takes a log at any time; {VERSION}")
def test_install_after_import_sqlite3_and_a_connection_gets_the_record() -> None:
    got = run(
        "import sqlite3\nopen_before = sqlite3.connect(':memory:')",
        COUNT,
        """
        import pylogsink.sqlite
        pylogsink.sqlite.install()
        fail()
        print(json.dumps({"records": wait_for(1)}))
        """
    )
    assert [r[:3] for r in got["records"]] == [
        ["sqlite", "ERROR", 'no such table: nope in "select * from nope" (code 1)']
    ]


def test_thousands_of_messages_from_threads_that_released_the_gil_are_all_records() -> None:
    # sqlite3 releases the GIL around SQLite's prepare and step: the log
    # function runs on four threads at once, outside any pylogsink call.
    got = run(
        INSTALLED,
        COUNT,
        """
        threads = [threading.Thread(target=fail, args=(1000,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        records = wait_for(4000)
        print(json.dumps({"records": len(records), "sqlite": sum(r[0] == "sqlite" for r in records),
                          "left_out": pylogsink.log_stats()["left_out"]}))
        """,
        timeout=120,
    )
    assert got == {"records": 4000, "sqlite": 4000, "left_out": 0}


def test_a_record_from_a_python_thread_that_ended_has_the_threads_name() -> None:
    # Each thread ends before pylogsink's thread delivers its record (its
    # `Thread` still referenced, as joined threads and a pool's are); the
    # name is longer than the OS keeps (15 bytes on Linux), which Python
    # 3.14 and later also give the OS thread.
    got = run(
        INSTALLED,
        COUNT,
        """
        threads = [threading.Thread(target=fail, name=f"database-worker-{i}") for i in range(5)]
        for t in threads:
            t.start()
            t.join()
        fail()
        print(json.dumps({"names": [r[3] for r in wait_for(6)]}))
        """
    )
    assert got["names"] == [f"database-worker-{i}" for i in range(5)] + ["MainThread"]


def test_uninstall_takes_the_log_function_out() -> None:
    # The count of records is taken as each is logged: no waiting needed.
    got = run(
        """
        import json, pylogsink, pylogsink.sqlite
        pylogsink.sqlite.install()
        pylogsink.sqlite.uninstall()
        import sqlite3
        db = sqlite3.connect(":memory:")
        for _ in range(10):
            try:
                db.execute("select * from nope")
            except sqlite3.OperationalError:
                pass
        print(json.dumps({"errors": pylogsink.log_stats()["error"]}))
        """
    )
    assert got == {"errors": 0}


def test_a_second_install_is_a_no_op_that_says_so() -> None:
    # The .pth line's install() as Python starts, then the program's own
    # after `import sqlite3`: SQLite before 3.42 would refuse it (a
    # RuntimeError, and a "misuse" message to pylogsink's log function).
    got = run(
        INSTALLED,
        COUNT,
        """
        logging.getLogger().setLevel(logging.INFO)
        import pylogsink.sqlite
        path = pylogsink.sqlite.install()
        fail()
        deadline = time.monotonic() + 10
        while not any("nope" in r.getMessage() for r in Keep.records) and time.monotonic() < deadline:
            time.sleep(0.01)
        print(json.dumps({"path": path, "records": wait_for(2)}))
        """,
    )
    assert "sqlite" in Path(got["path"]).name, got
    [note, error] = [tuple(r[:3]) for r in got["records"]]
    assert note[:2] == ("pylogsink.sqlite", "INFO"), got["records"]
    assert "is pylogsink's already; nothing to do" in note[2] and got["path"] in note[2], note
    assert error == ("sqlite", "ERROR", 'no such table: nope in "select * from nope" (code 1)'), got["records"]


# Reports whether SQLite's log was taken, and SQLite's own counting of it:
# a failed query, then the errors pylogsink counted.
FAIL_AND_COUNT = (
    "import sqlite3, pylogsink\n"
    "try:\n"
    "    sqlite3.connect(':memory:').execute('select * from nope')\n"
    "except sqlite3.OperationalError:\n"
    "    pass\n"
    "print('errors', pylogsink.log_stats()['error'])\n"
)


@pytest.mark.skipif(sys.platform == "win32", reason="IPython is not installed in the Windows lane")
def test_in_ipython_a_startup_file_comes_too_late_and_a_pth_line_does_not(tmp_path: Path) -> None:
    pytest.importorskip("IPython")
    # IPython imports sqlite3 (its history) before it runs startup files.
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-pylogsink.py").write_text(
        "import pylogsink.sqlite\n"
        "try:\n"
        "    pylogsink.sqlite.install()\n"
        "except RuntimeError:\n"
        "    print('refused')\n"
    )
    env = {**os.environ, "IPYTHONDIR": str(tmp_path / "ipython")}
    done = subprocess.run(
        [sys.executable, "-m", "IPython", "-c", FAIL_AND_COUNT], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert ("refused" in done.stdout) is not ANYTIME, done.stdout
    assert ("errors 1" in done.stdout) is ANYTIME, done.stdout
    # An environment whose site-packages holds the .pth line: a venv of its
    # own, which sees this one's packages through a .pth of paths.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "000-these-tests.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (Path(purelib) / "pylogsink-sqlite.pth").write_text("import pylogsink.sqlite; pylogsink.sqlite.install()\n")
    env["IPYTHONDIR"] = str(tmp_path / "ipython-without-startup-files")
    done = subprocess.run(
        [str(python), "-m", "IPython", "-c", FAIL_AND_COUNT], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "errors 1" in done.stdout and "refused" not in done.stdout, done.stdout


def test_hostile_bytes_in_a_message_are_escaped_and_a_huge_one_arrives_as_sqlite_cut_it() -> None:
    # SQLite's own sqlite3_log, called as SQLite calls it for its messages:
    # invalid UTF-8 and a terminal's escape sequence, then 100 kB (SQLite
    # formats a log message into a small buffer of its own, and cuts it).
    got = run(
        """
        import ctypes, json, pylogsink.sqlite
        path = pylogsink.sqlite.install()
        import sqlite3
        """,
        COUNT,
        """
        sqlite = ctypes.CDLL(path)
        sqlite.sqlite3_log(1, b"%s", b"bad \\xff\\x1b[31m red\\n next")
        sqlite.sqlite3_log(28, b"%s", b"y" * 100_000)
        records = wait_for(2)
        print(json.dumps({"records": [r[:3] for r in records]}))
        """,
    )
    (name, level, message), (_, warn, huge) = got["records"]
    assert (name, level) == ("sqlite", "ERROR")
    assert message.startswith("bad \\xff\\x1b[31m red") and message.endswith(" (code 1)"), message
    assert "\x1b" not in message and "\ufffd" not in message, message
    assert warn == "WARNING" and huge.endswith(" (code 28)"), huge
    assert set(huge[: -len(" (code 28)")]) == {"y"}, huge
