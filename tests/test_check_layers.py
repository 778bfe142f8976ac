"""The layer check (scripts/check_layers.py), on small fake crates: a clean
layered tree passes; an upward import, an import between sibling folders,
a cycle inside a folder and a file or folder outside the layers fail, with
the file and line named; comments and strings are not imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "check_layers.py"

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="the layer check is a tool of make lint, run on Linux: it names files by POSIX paths"
)

CLEAN = {
    "lib.rs": """
        mod core;
        mod call;
        mod builder;
        pub use crate::builder::Builder;
    """,
    "builder.rs": """
        use crate::core::emit::emit;
        use crate::{call::enter, front::log::Log};
        pub struct Builder;
    """,
    "python.rs": "use crate::control::settings::Settings;\n",
    "record/mod.rs": "pub mod level;\npub mod format;\n",
    "record/level.rs": """
        pub enum Level { Warn }
        #[cfg(test)]
        mod tests {
            use super::*;
            use self::helpers::x;
        }
    """,
    "record/format.rs": """
        use super::level::Level as L;
        pub fn format<'a>(line: &'a str) -> &'a str { crate::record::level::Level::Warn; line }
    """,
    "control/settings.rs": "use crate::record::level::Level;\n",
    "control/filter.rs": "pub(in crate::control) fn enabled() {}\n",
    "dest/fd.rs": "use crate::record::format::format;\n",
    "core/mod.rs": """
        pub mod emit;
        pub mod thread;
        pub use self::emit::emit;
        #[cfg(test)]
        mod tests {
            use super::*;
        }
    """,
    "core/thread.rs": "use crate::record::level::Level;\nuse crate::dest::fd;\n",
    "core/emit.rs": """
        use super::thread::State;
        use crate::control::filter::enabled;
        pub fn emit() {}
        #[cfg(test)]
        mod tests {
            use super::*;
        }
    """,
    "front/log.rs": """
        use crate::core::emit::emit;
        use crate::{record::level::Level, control::{filter::enabled, settings}};
    """,
    "call/mod.rs": """
        use crate::core::thread::State;
        pub fn enter() { crate::core::emit::emit(); }
    """,
}


def fake_crate(tmp_path: Path, changes: dict[str, str]) -> Path:
    """The clean tree with `changes` (file -> text, appended to that file)."""
    src = tmp_path / "src"
    for name in CLEAN.keys() | changes.keys():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(textwrap.dedent(t.get(name, "")).lstrip("\n") for t in (CLEAN, changes)))
    return src


def check(tmp_path: Path, **changes: str) -> subprocess.CompletedProcess[str]:
    """Runs the check on the clean tree with `changes` (keys: paths with
    `__` for `/` and no `.rs`, such as core__thread)."""
    files = {name.replace("__", "/") + ".rs": text for name, text in changes.items()}
    src = fake_crate(tmp_path, files)
    return run(src)


def run(src: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(src)], capture_output=True, text=True, timeout=60)


def violations(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The violation lines of a failed check (its last line is the summary)."""
    assert result.returncode == 1, result.stdout + result.stderr
    *found, summary = result.stdout.splitlines()
    assert summary.startswith("layers: ") and summary.endswith(f" files, {len(found)} violations")
    return found


def test_clean_tree_passes(tmp_path: Path) -> None:
    result = check(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == f"layers: {len(CLEAN)} files, 0 violations\n"


def test_core_importing_front_fails_naming_file_and_line(tmp_path: Path) -> None:
    # core/thread.rs has two lines already: the import is on line 3.
    (line,) = violations(check(tmp_path, core__thread="use crate::front::log::Log;\n"))
    assert "src/core/thread.rs:3: crate::front::log::Log: upward import" in line
    assert "core/ (layer 3) from front/ (layer 4)" in line


def test_record_importing_control_fails_also_inline_and_under_cfg_test(tmp_path: Path) -> None:
    record = """
        fn f() { let on = crate::control::filter::enabled(); }
        #[cfg(test)]
        mod more_tests {
            use super::super::super::control::settings;
        }
    """
    found = violations(check(tmp_path, record__level=record))
    # record/level.rs has 6 lines already.
    assert [line.split(": upward import")[0].split("/src/")[1] for line in found] == [
        "record/level.rs:7: crate::control::filter::enabled",
        "record/level.rs:10: super::super::super::control::settings",
    ]
    assert all("record/ (layer 1) from control/ (layer 2)" in line for line in found)


def test_importing_the_crate_root_is_upward(tmp_path: Path) -> None:
    (line,) = violations(check(tmp_path, dest__fd="use crate::Builder;\n"))
    assert "dest/fd.rs:2: crate::Builder: upward import" in line
    assert "the top level, crate::Builder (layer 5)" in line


@pytest.mark.parametrize(
    ("importer", "path", "folders"),
    [
        ("control__filter", "crate::dest::fd::write", "control/ from dest/, both layer 2"),
        ("dest__fd", "crate::control::settings::Settings", "dest/ from control/, both layer 2"),
        ("front__log", "crate::call::enter", "front/ from call/, both layer 4"),
        ("call__mod", "crate::front::log::Log", "call/ from front/, both layer 4"),
    ],
)
def test_sibling_folders_importing_each_other_fail(
    tmp_path: Path, importer: str, path: str, folders: str
) -> None:
    (line,) = violations(check(tmp_path, **{importer: f"use {path};\n"}))
    assert f"{importer.replace('__', '/')}.rs:" in line
    assert f": {path}: sibling import: {folders}" in line


def test_cycle_in_a_folder_fails_once(tmp_path: Path) -> None:
    (line,) = violations(
        check(
            tmp_path,
            core__a="use crate::core::b::B;\npub struct A;\n",
            core__b="pub struct B;\nuse crate::core::a::A;\n",
        )
    )
    assert "src/core: import cycle among crate::core::a, crate::core::b: " in line
    assert "core/a.rs:1 imports crate::core::b::B" in line
    assert "core/b.rs:2 imports crate::core::a::A" in line


def test_cycle_through_super_fails(tmp_path: Path) -> None:
    (line,) = violations(
        check(
            tmp_path,
            front__a="use super::b::{self, B};\n",
            front__b="fn f() { super::a::f(); }\n",
        )
    )
    assert "src/front: import cycle among crate::front::a, crate::front::b: " in line
    assert "front/a.rs:1 imports super::b" in line
    assert "front/b.rs:1 imports super::a::f" in line


def test_cycle_through_mod_rs_fails(tmp_path: Path) -> None:
    # core/mod.rs re-exports core::emit; core::emit then uses an item of core.
    (line,) = violations(check(tmp_path, core__emit="use super::Shared;\n"))
    assert "src/core: import cycle among crate::core, crate::core::emit: " in line
    assert "core/emit.rs:8 imports super::Shared" in line


def test_longer_cycle_is_one_violation_with_all_members(tmp_path: Path) -> None:
    (line,) = violations(
        check(
            tmp_path,
            dest__a="use crate::dest::b::x;\n",
            dest__b="use crate::dest::c::x;\n",
            dest__c="use crate::dest::a::x;\n",
        )
    )
    assert "import cycle among crate::dest::a, crate::dest::b, crate::dest::c:" in line


def test_comments_and_strings_are_not_imports(tmp_path: Path) -> None:
    record = r'''
        //! crate::core::emit in the module's doc
        /// use crate::front::log::Log;
        // use crate::call::enter;
        /* use crate::core::thread;
           crate::control::filter::enabled() */
        const A: &str = "use crate::front::log::Log; // \" crate::call";
        const B: &str = r#"crate::core::emit "quoted" "#;
        const C: &[u8] = b"crate::dest::fd";
        const D: char = '"';
        const E: char = '\'';
        fn f<'a>(s: &'a str) -> &'a str { "/* crate::core */"; s }
    '''
    result = check(tmp_path, record__level=record)
    assert result.returncode == 0, result.stdout
    # The same paths in code are seen.
    code = "fn g() { crate::core::emit::emit(); } // crate::front\n"
    (line,) = violations(check(tmp_path, record__format=record + code))
    assert "record/format.rs:14: crate::core::emit::emit: upward import" in line


def test_grouped_use_is_expanded(tmp_path: Path) -> None:
    grouped = """
        use crate::{
            record::level::Level,
            core::{thread::State, emit::{self, emit as e}},
            dest::*,
        };
    """
    found = violations(check(tmp_path, control__settings=grouped))
    settings = tmp_path.resolve() / "src/control/settings.rs"
    assert [line.split(": ", 2)[:2] for line in found] == [
        [f"{settings}:4", "crate::core::thread::State"],
        [f"{settings}:4", "crate::core::emit"],
        [f"{settings}:4", "crate::core::emit::emit"],
        [f"{settings}:5", "crate::dest"],
    ]
    assert [line.split(": ", 3)[2] for line in found] == ["upward import"] * 3 + ["sibling import"]


def test_files_and_folders_outside_the_layers_fail(tmp_path: Path) -> None:
    src = fake_crate(tmp_path, {"sink.rs": "", "util/mod.rs": ""}).resolve()
    assert violations(run(src)) == [
        f"{src}/sink.rs: outside the layers: only lib.rs, builder.rs, python.rs stay directly in src/,"
        " every other module goes in a layer folder",
        f"{src}/util/: unknown folder: the layer folders are sys, record, control, dest, core, front, call",
    ]


def test_the_operating_system_outside_sys_fails_naming_file_and_line(tmp_path: Path) -> None:
    src = fake_crate(
        tmp_path,
        {
            "dest/fd.rs": """
                fn f() { unsafe { libc::write(2, b"x".as_ptr().cast(), 1) }; }
                use windows_sys::Win32::Foundation::HANDLE;
                #[link(name = "kernel32")]
                extern "system" {}
                const MAC: bool = cfg!(target_vendor = "apple");
            """,
            "builder.rs": "#[cfg(target_os = \"linux\")]\nfn g() {}\n",
        },
    ).resolve()
    found = violations(run(src))
    why = "the operating system outside sys/"
    assert [line.split(": ", 3)[:3] for line in found] == [
        [f"{src}/builder.rs:4", "target_os", why],
        [f"{src}/dest/fd.rs:2", "libc::write", why],
        [f"{src}/dest/fd.rs:3", "windows_sys::Win32", why],
        [f"{src}/dest/fd.rs:4", "#[link(", why],
        [f"{src}/dest/fd.rs:6", "target_vendor", why],
    ]


def test_the_operating_system_in_sys_or_in_words_passes(tmp_path: Path) -> None:
    src = fake_crate(
        tmp_path,
        {
            "sys/mod.rs": """
                #[cfg(target_os = "linux")]
                pub fn write() { unsafe { libc::write(2, b"x".as_ptr().cast(), 1) }; }
            """,
            "dest/fd.rs": """
                // libc::write, behind sys::write; cfg(target_os) is sys/'s.
                const A: &str = "libc::read windows_sys::X target_os";
                #[cfg(unix)]
                fn f() { crate::sys::write(); my_libc::x(); }
            """,
        },
    )
    result = run(src)
    assert result.returncode == 0, result.stdout


def test_lib_rs_lists_the_layers_bottom_up(tmp_path: Path) -> None:
    # lib.rs has four lines already: `mod record;` is on line 5.
    (line,) = violations(check(tmp_path, lib="mod record;\n// mod dest;\npub mod python;\n"))
    assert "src/lib.rs:5: mod record: out of order" in line
    assert "record (layer 1) comes after layer 5" in line
