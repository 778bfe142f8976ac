#!/usr/bin/env python3
"""Checks that the crate's modules keep to their layers.

The crate's src/ is split into layer folders whose imports go one way
only: a layer uses the layers below it, never one above it nor a sibling
beside it, and the files of one folder do not import each other in a
cycle. Nothing in rustc enforces this, so without a check the layers would
wear away one convenient import at a time. The rules are in LAYERS below.

The operating system is asked in sys/ only: outside it, no `libc::` or
`windows_sys::` path, no `#[link]`ed foreign library and no platform
finer than `unix` / `windows` (`target_os`, `target_vendor`), so that a
new platform is a file in sys/. SYSTEM_ALLOWED lists the exceptions, each
with its reason.

lib.rs declares the modules bottom up, so that a reader meets the layers
in order; a declaration out of that order fails too.

Usage: scripts/check_layers.py [SRC_DIR]   (default crates/pylogsink/src)
Prints one line per violation and exits with status 1, or prints a summary.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import NamedTuple

# Folder of src/ -> its layer. A folder imports only from lower layers, and
# never from another folder of its own layer (control/dest, front/call).
LAYERS = {"sys": 0, "record": 1, "control": 2, "dest": 2, "core": 3, "front": 4, "call": 4}
# The only files directly in src/: layer 5, they may import anything.
TOP_FILES = ("lib.rs", "builder.rs", "python.rs")
TOP = 5

# Outside sys/: the operating system's crates, a foreign library linked,
# a platform named finer than unix / windows.
SYSTEM = re.compile(r"(?<![\w:])(?:libc|windows_sys)::\w*|#\[link\(|\btarget_(?:os|vendor)\b")
# File (relative to src/) -> why it may ask the system outside sys/.
SYSTEM_ALLOWED: dict[str, str] = {}

ROOT = Path(__file__).resolve().parents[1]
Module = tuple[str, ...]

# Comments, strings and char literals, blanked before looking for paths.
# (Block comments are taken as not nested.)
NOT_CODE = re.compile(
    r"""//[^\n]*
    | /\*.*?\*/
    | (?<!\w)b?r(\#*)".*?"\1
    | b?"(?:\\.|[^"\\])*"
    | b?'(?:\\x\w\w|\\u\{\w*\}|\\.|[^'\\])'""",
    re.S | re.X,
)
VISIBILITY = re.compile(r"\bpub\s*\(\s*in\s[^)]*\)")  # pub(in crate::x) is no import
USE = re.compile(r"\buse\s+([^;]*);")
USE_TOKEN = re.compile(r"\$?\w+|[{},*]")
INLINE_PATH = re.compile(r"(?<![\w:$])(?:\$?crate|super|self)(?:::\w+)+")
INLINE_MOD = re.compile(r"\bmod\s+(\w+)\s*\{")


class Import(NamedTuple):
    written: str  # the path as written: crate::core::emit::Emit
    path: Module  # split: ("crate", "core", "emit", "Emit")
    inner: Module  # the inline modules it is in, such as ("tests",)
    line: int


def blank(match: re.Match[str]) -> str:
    """The match with everything but its newlines turned into spaces."""
    return re.sub(r"[^\n]", " ", match.group())


def use_paths(tree: str, start: int) -> list[tuple[list[str], int]]:
    """Expands a use tree (`crate::{a::b, c::{d, e as f}}`) into its full
    paths, each with the offset of its last segment."""
    paths: list[tuple[list[str], int]] = []
    prefixes: list[list[str]] = [[]]
    current: list[str] = []
    position = start
    alias = False

    def leaf() -> None:
        path = prefixes[-1] + current
        if path[-1] == "self":  # `a::{self, b}` names a itself
            path = path[:-1]
        paths.append((path, position))

    for token in USE_TOKEN.finditer(tree):
        text = token.group()
        if text == "{":
            prefixes.append(prefixes[-1] + current)
            current = []
        elif text in ",}":
            if current:
                leaf()
            current, alias = [], False
            if text == "}":
                prefixes.pop()
        elif text == "as":
            alias = True
        elif not alias and text != "*":
            current.append(text)
            position = start + token.start()
    if current:
        leaf()
    return paths


def imports(text: str) -> list[Import]:
    """Each `crate::`, `super::` or `self::` path in a Rust file's code."""
    code = NOT_CODE.sub(blank, text)
    code = VISIBILITY.sub(blank, code)
    found: list[tuple[list[str], int]] = []
    for use in USE.finditer(code):
        found += use_paths(use.group(1), use.start(1))
    code = USE.sub(blank, code)
    found += [(m.group().split("::"), m.start()) for m in INLINE_PATH.finditer(code)]
    # Inline modules (`mod tests { use super::*; }`) move `super` and `self`.
    blocks = []
    for m in INLINE_MOD.finditer(code):
        depth, end = 0, m.end() - 1
        for end in range(m.end() - 1, len(code)):
            depth += {"{": 1, "}": -1}.get(code[end], 0)
            if depth == 0:
                break
        blocks.append((m.start(), end, m.group(1)))
    return [
        Import(
            "::".join(path),
            tuple(path),
            tuple(name for start, end, name in blocks if start < offset < end),
            code.count("\n", 0, offset) + 1,
        )
        for path, offset in sorted(found, key=lambda each: each[1])
        if path and path[0] in ("crate", "$crate", "super", "self")
    ]


def system_uses(text: str) -> list[tuple[str, int]]:
    """Each operating-system path (`libc::read`), `#[link(` or
    `target_os` in a Rust file's code, with its line."""
    code = NOT_CODE.sub(blank, text)
    return [(m.group(), code.count("\n", 0, m.start()) + 1) for m in SYSTEM.finditer(code)]


def root_order(text: str) -> list[tuple[str, int]]:
    """The modules lib.rs declares, each with its line, in their order."""
    code = NOT_CODE.sub(blank, text)
    return [
        (m.group(1), code.count("\n", 0, m.start()) + 1)
        for m in re.finditer(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code, re.M)
    ]


def resolve(module: Module, inner: Module, path: Module) -> Module | None:
    """The absolute module path of `path` written in `module` (inside its
    inline modules `inner`), or None if it climbs above the crate."""
    if path[0] in ("crate", "$crate"):
        return path[1:]
    base = list(module + inner)
    if path[0] == "self":
        return tuple(base) + path[1:]
    while path and path[0] == "super":
        if not base:
            return None
        base.pop()
        path = path[1:]
    return tuple(base) + path


def module_of(rel: Path) -> Module:
    """`core/emit.rs` is core::emit, `core/mod.rs` core, `lib.rs` the root."""
    parts = rel.with_suffix("").parts
    return parts[:-1] if parts[-1] == "mod" or parts == ("lib",) else parts


def folder_of(rel: Path) -> str:
    """The folder of src/ a file is in, "" for src/ itself."""
    return rel.parts[0] if len(rel.parts) > 1 else ""


def name(module: Module) -> str:
    return "::".join(("crate",) + module)


def cycles(edges: dict[Module, dict[Module, str]]) -> list[list[Module]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[Module, int] = {}
    low: dict[Module, int] = {}
    stack: list[Module] = []
    found: list[list[Module]] = []

    def visit(node: Module) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def check(src: Path, shown: Path) -> tuple[int, list[str]]:
    """Checks the tree under `src` (named `shown` in the messages): the
    number of .rs files and one message per violation."""
    problems: list[str] = []
    for entry in sorted(src.iterdir()):
        if entry.is_dir() and entry.name not in LAYERS:
            layers = ", ".join(LAYERS)
            problems.append(f"{shown / entry.name}/: unknown folder: the layer folders are {layers}")
        elif entry.suffix == ".rs" and entry.name not in TOP_FILES:
            problems.append(
                f"{shown / entry.name}: outside the layers: only {', '.join(TOP_FILES)} stay"
                " directly in src/, every other module goes in a layer folder"
            )

    files = {module_of(p.relative_to(src)): p.relative_to(src) for p in sorted(src.rglob("*.rs"))}
    for rel in files.values():
        if folder_of(rel) == "sys" or rel.as_posix() in SYSTEM_ALLOWED:
            continue
        for written, line in system_uses((src / rel).read_text()):
            problems.append(
                f"{shown / rel}:{line}: {written}: the operating system outside sys/:"
                " put the call (or the platform's rule) behind a function or constant in sys/"
            )
    # lib.rs lists the modules bottom up, so that a reader meets the layers
    # in order.
    if (src / "lib.rs").is_file():
        rank = 0
        for declared, line in root_order((src / "lib.rs").read_text()):
            layer = LAYERS.get(declared, TOP)
            if layer < rank:
                problems.append(
                    f"{shown / 'lib.rs'}:{line}: mod {declared}: out of order: lib.rs lists the"
                    f" layers bottom up, and {declared} (layer {layer}) comes after layer {rank}"
                )
            rank = max(rank, layer)

    # Per folder, the imports between its files: module -> module -> the first.
    edges: dict[str, dict[Module, dict[Module, str]]] = {}
    for module, rel in files.items():
        folder, layer = folder_of(rel), LAYERS.get(folder_of(rel))
        for found in imports((src / rel).read_text()):
            target = resolve(module, found.inner, found.path)
            if target is None:
                continue
            where = f"{shown / rel}:{found.line}: {found.written}"
            to_folder = target[0] if target and target[0] in LAYERS else ""
            to_layer = LAYERS.get(to_folder, TOP)
            if layer is not None and to_layer > layer:
                what = f"{to_folder}/" if to_folder else f"the top level, {name(target[:1])}"
                problems.append(
                    f"{where}: upward import: {folder}/ (layer {layer}) from {what} (layer {to_layer})"
                )
            elif layer is not None and to_layer == layer and to_folder != folder:
                problems.append(
                    f"{where}: sibling import: {folder}/ from {to_folder}/, both layer {layer},"
                    " never import each other"
                )
            # The file imported is the one of the longest prefix of the target;
            # lib.rs (the root) is left out: it declares and re-exports all.
            node = next((target[:n] for n in range(len(target), 0, -1) if target[:n] in files), ())
            if node and module and node != module and folder_of(files[node]) == folder:
                edges.setdefault(folder, {}).setdefault(module, {}).setdefault(
                    node, f"{shown / rel}:{found.line} imports {found.written}"
                )

    for folder, graph in sorted(edges.items()):
        for component in cycles(graph):
            members = ", ".join(name(m) for m in component)
            evidence = "; ".join(
                next(why for to, why in graph[m].items() if to in component) for m in component
            )
            problems.append(f"{shown / folder}: import cycle among {members}: {evidence}")
    return len(files), problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", nargs="?", type=Path, default=ROOT / "crates/pylogsink/src")
    src: Path = parser.parse_args().src.resolve()
    if not src.is_dir():
        print(f"check_layers: no such directory: {src}", file=sys.stderr)
        return 2
    shown = src.relative_to(ROOT) if src.is_relative_to(ROOT) else src
    count, problems = check(src, shown)
    for problem in problems:
        print(problem)
    print(f"layers: {count} files, {len(problems)} violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
