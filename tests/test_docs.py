"""Every code block in README.md, crates/pylogsink/README.md and docs/ is
built or run by the suite, or is text.

A fenced block is one of two kinds:

- marked ``<!-- from FILE -->`` on the line just above it, where FILE is
  something the suite builds or runs, and the block is a verbatim part of
  it:

  - ``examples/``, ``tests/ext/``, ``tests/c_abi/``, ``tests/spdlog_rt/``,
    ``tests/glog_rt/`` and ``crates/``: built by scripts/test.sh,
    tests/test_c_abi.py, tests/test_spdlog.py and tests/test_glog.py; for a Rust file, the
    block may be a part of its doc comments, whose examples ``cargo test``
    compiles as doctests;
  - ``docs/snippets/``: each file there is run here, in a child process
    against the installed packages (``test_snippet_runs``);
  - ``Makefile``: each line is ``make TARGET`` for a target it defines;
  - ``.ci/run``: the set-up commands, which install what .ci/run installs
    on a fresh machine, and nothing else;

- a ``text`` block (output, a table, a message), which must not look like
  code.

So a new unmarked code block fails, and so does a marked block that
differs from its file.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SNIPPETS = ROOT / "docs/snippets"
DOCS = sorted(
    [ROOT / "README.md", ROOT / "crates/pylogsink/README.md", *(ROOT / "docs").glob("*.md")],
    key=lambda p: str(p),
)
# Where a marked block may come from: what the suite builds or runs.
BUILT = ("examples/", "tests/ext/", "tests/c_abi/", "tests/c_libraries/", "tests/spdlog_rt/", "tests/glog_rt/", "crates/", "docs/snippets/")
COMMANDS = ("Makefile", ".ci/run")


@dataclass
class Block:
    doc: Path
    line: int  # of the opening fence, from 1
    lang: str
    source: str | None  # FILE of <!-- from FILE -->
    code: str

    def __str__(self) -> str:
        name = self.doc.relative_to(ROOT) if self.doc.is_relative_to(ROOT) else self.doc.name
        return f"{name}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    """The fenced blocks of ``doc``; fails on an unclosed fence or a marker
    that no block follows."""
    lines = doc.read_text().split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        assert not line.lstrip().startswith("~~~"), f"{doc}:{i + 1}: use ``` fences"
        marker = re.fullmatch(r"<!-- from (\S+) -->", line)
        if marker:
            assert i + 1 < len(lines) and lines[i + 1].startswith("```"), f"{doc}:{i + 1}: a marker with no block under it"
        fence = re.fullmatch(r"( *)```(\S*)", line)
        if fence:
            assert fence.group(1) == "", f"{doc}:{i + 1}: an indented fence; fences start at the margin"
            start = i
            i += 1
            while i < len(lines) and lines[i] != "```":
                i += 1
            assert i < len(lines), f"{doc}:{start + 1}: a fence never closed"
            above = re.fullmatch(r"<!-- from (\S+) -->", lines[start - 1]) if start else None
            code = "\n".join(lines[start + 1 : i]) + "\n"
            found.append(Block(doc, start + 1, fence.group(2), above.group(1) if above else None, code))
        i += 1
    return found


ALL = [b for doc in DOCS for b in blocks(doc)]


# What code looks like, line by line: Rust, Python, C and C++, shell, TOML,
# CMake. A text block has no such line.
CODE_LINE = re.compile(
    r"""^\s*(
      (pub\s+)?(fn|use|let|impl|struct|enum|mod|static|const|match)\s
    | \#\[ | \#include | \#define | \#!
    | (import|def|class|async\s+def|return|with|for|while|if)\s.*[:;)]?$
    | from\s+\S+\s+import\s
    | [A-Za-z_][\w.:<>]*\(.*[)(,]\s*;?\s*$
    | \$\s | (sudo\s+)?(make|cargo|pip|python3?|maturin|rustup|apt-get|cmake|git|cd)(\s|$)
    | [A-Z_]+=\S*\s+\S
    | \[[\w.-]+\]\s*$ | [\w-]+\s*=\s*["\[{\d]
    | (void|int|size_t|char|bool|auto)\s+\**\w+\s*[(=;]
    | [{}]\s*$ | \}\s*//
    )""",
    re.X,
)


def looks_like_code(text: str) -> bool:
    return any(CODE_LINE.match(line) for line in text.splitlines())


def rust_docs(text: str) -> str:
    """The text of a Rust file's doc comments (``///`` and ``//!``), where
    its doctests are."""
    return "\n".join(re.sub(r"^\s*//[/!] ?", "", line) for line in text.splitlines() if re.match(r"^\s*//[/!]", line))


def check_setup(block: Block) -> None:
    """The set-up commands install the Rust components and the Debian
    packages that .ci/run installs on a fresh machine, and nothing else."""
    ci = (ROOT / ".ci/run").read_text()
    components = set(re.search(r"rustup component add ([\w ]+?)\s*>", ci).group(1).split())
    packages = set(re.findall(r"missing\+=\(([\w.+-]+)\)", ci))
    assert components and packages
    seen = set()
    for line in block.code.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[:3] == ["rustup", "component", "add"]:
            assert set(words[3:]) == components, f"{block}: .ci/run adds {sorted(components)}"
            seen.add("rustup")
            continue
        if words[:3] == ["rustup", "toolchain", "install"]:
            assert f"rustup {' '.join(words[1:])} ||" in ci, f"{block}: .ci/run does not run {line!r}"
            continue
        command = " ".join(words)
        assert "apt-get install" in command, f"{block}: {line!r} is not what .ci/run does"
        installed = command.split("apt-get install", 1)[1].split("&&")[0].split()
        assert {w for w in installed if not w.startswith("-")} == packages, f"{block}: .ci/run installs {sorted(packages)}"
        seen.add("apt-get")
    assert seen == {"rustup", "apt-get"}, f"{block}: both set-up commands"


def check_make(block: Block) -> None:
    targets = set(re.findall(r"^([a-z]+):", (ROOT / "Makefile").read_text(), re.M))
    for line in block.code.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        assert words[0] == "make" and len(words) >= 2 and words[1] in targets, f"{block}: {line!r} is not a Makefile target"
        assert all(re.fullmatch(r"[A-Z_]+=\S*", w) for w in words[2:]), f"{block}: {line!r}"


@pytest.mark.parametrize("block", ALL, ids=str)
def test_each_block_is_built_run_or_text(block: Block) -> None:
    if block.source is None:
        assert block.lang == "text", (
            f"{block}: a ```{block.lang} block that no test builds or runs: mark it "
            "<!-- from FILE --> with FILE what the suite builds or runs (docs/snippets/ for a new one), "
            "or make it ```text if it is output"
        )
        assert not looks_like_code(block.code), f"{block}: a text block that looks like code"
        return
    assert block.lang != "text", f"{block}: a marked block is code: name its language"
    if block.source == ".ci/run":
        return check_setup(block)
    if block.source == "Makefile":
        return check_make(block)
    assert block.source.startswith(BUILT), f"{block}: {block.source} is not something the suite builds or runs"
    path = ROOT / block.source
    assert path.is_file(), f"{block}: no file {block.source}"
    text = path.read_text()
    if path.suffix == ".rs":
        text += "\n" + rust_docs(text)
    assert block.code in text, f"{block}: the block differs from {block.source}"


def test_the_code_heuristic_tells_the_blocks_apart() -> None:
    """``looks_like_code`` (what keeps code out of text blocks) knows each
    marked block as code."""
    code = [b for b in ALL if b.source is not None]
    assert len(code) >= 20
    for block in code:
        assert looks_like_code(block.code), f"{block}: marked code that the check would take for text"


def test_an_unmarked_or_changed_block_fails(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("Text.\n\n```rust\nfn main() {}\n```\n\n<!-- from Makefile -->\n```sh\nmake test\n```\n")
    [unmarked, marked] = blocks(doc)
    with pytest.raises(AssertionError, match="no test builds or runs"):
        test_each_block_is_built_run_or_text(unmarked)
    test_each_block_is_built_run_or_text(marked)
    changed = Block(doc, 1, "rust", "examples/pyo3-extension/src/lib.rs", "fn not_there() {}\n")
    with pytest.raises(AssertionError, match="differs"):
        test_each_block_is_built_run_or_text(changed)
    text = Block(doc, 1, "text", None, "import os\nos.getcwd()\n")
    with pytest.raises(AssertionError, match="looks like code"):
        test_each_block_is_built_run_or_text(text)


def snippet_files() -> list[Path]:
    return sorted(p for p in SNIPPETS.iterdir() if p.is_file())


def child_env() -> dict[str, str]:
    """No variable of the extensions' users: each snippet starts from the
    authors' defaults. ``python`` is the interpreter running the tests."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_LOG")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


# Shell snippets run in bash, which a Windows CPython finds none of (the
# tests under wine); a snippet that captures output needs capture_output().
needs_bash = pytest.mark.skipif(sys.platform == "win32", reason="shell snippets run in bash, not on Windows")
needs_capture = pytest.mark.skipif(sys.platform == "win32", reason="capture_output() is not available on Windows")


def snippet_params() -> list[object]:
    return [
        pytest.param(
            p,
            id=p.name,
            marks=[needs_bash] if p.suffix == ".sh" else [needs_capture] if p.name.startswith("capture_") else [],
        )
        for p in snippet_files()
    ]


@pytest.mark.parametrize("snippet", snippet_params())
def test_snippet_runs(snippet: Path, tmp_path: Path) -> None:
    runner = {".py": [sys.executable], ".sh": ["bash", "-euo", "pipefail"]}.get(snippet.suffix)
    assert runner, f"{snippet.name}: docs/snippets/ holds what this test runs (.py, .sh)"
    # A temporary folder of its own, which the snippet leaves as it found it.
    env = child_env() | {name: str(tmp_path) for name in ("TMPDIR", "TEMP", "TMP")}
    done = subprocess.run([*runner, snippet.name], cwd=SNIPPETS, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not list(tmp_path.iterdir()), f"{snippet.name} left {[p.name for p in tmp_path.iterdir()]} behind"


def test_each_snippet_is_shown() -> None:
    shown = {b.source for b in ALL}
    unused = [p.name for p in snippet_files() if f"docs/snippets/{p.name}" not in shown and p.name != "app.py"]
    assert not unused, f"snippets no doc shows: {unused}"


@needs_bash
def test_the_filter_variable_snippet_shows_more_and_less() -> None:
    done = subprocess.run(
        ["bash", "filter_variable.sh"], cwd=SNIPPETS, capture_output=True, text=True, timeout=120, env=child_env()
    )
    assert done.returncode == 0, done.stderr
    # debug and my_runtime=trace show the Info line; error hides it.
    assert done.stderr.count("] loading model.pte") == 2, done.stderr


# Links and figures.


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    text = re.sub(r"^```.*?^```$", "", doc.read_text(), flags=re.S | re.M)
    return {slug(h) for h in re.findall(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_lead_somewhere(doc: Path) -> None:
    text = re.sub(r"^```.*?^```$", "", doc.read_text(), flags=re.S | re.M)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        where = (doc.parent / path).resolve() if path else doc
        assert where.exists(), f"{doc.relative_to(ROOT)}: {target}: no such file"
        if anchor:
            assert anchor in anchors(where), f"{doc.relative_to(ROOT)}: {target}: no such heading"


def test_the_readme_is_a_front_door() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme.count("\n") <= 250
    index = (ROOT / "docs/README.md").read_text()
    chapters = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md")
    for chapter in chapters:
        assert f"(docs/{chapter})" in readme, f"README.md does not link docs/{chapter}"
        assert f"({chapter})" in index, f"docs/README.md does not list {chapter}"


def test_bench_rows_cited_are_in_the_results() -> None:
    """The docs cite the benchmark's figures by the name of their row in
    bench/results/latest.txt, and do not copy them: each row named exists."""
    results = (ROOT / "bench/results/latest.txt").read_text()
    cited = [row for doc in DOCS for row in re.findall(r"\brows?\s+`([^`]+)`", doc.read_text(), re.I)]
    assert cited
    for row in cited:
        assert re.search(rf"^\s+{re.escape(row)}\s{{2,}}", results, re.M), f"no row {row!r} in bench/results/latest.txt"
