"""Usage: python scripts/split_debug.py DEBUG_DIR WHEEL...

Takes the debug information out of each wheel's extension module, for a
crash investigation to find again: the module is built with line tables
(scripts/dist.sh, the release workflow), this writes them to
DEBUG_DIR/<module>.debug, strips them from the module in the wheel, and
leaves the module a `.gnu_debuglink` that names that file (gdb and
lldb look for it beside the module, or in a `.debug` folder there). The
wheel's RECORD gets the module's new hash and size.

objcopy does the work (binutils; OBJCOPY names another one, such as
aarch64-linux-gnu-objcopy for an aarch64 wheel): ELF (Linux) and PE
(Windows, MinGW) modules. A module with no debug information is left
alone, with a line saying so.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile

MODULE_PREFIX = "pylogsink/_pylogsink."


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def has_debug_info(path: str, objcopy: str) -> bool:
    """Whether the module holds DWARF: objcopy dumps .debug_info, or fails
    where there is none."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "debug_info")
        done = subprocess.run([objcopy, "--dump-section", f".debug_info={out}", path, os.path.join(tmp, "copy")], capture_output=True)
        return done.returncode == 0 and os.path.getsize(out) > 0


def split(wheel: str, debug_dir: str, objcopy: str) -> None:
    with zipfile.ZipFile(wheel) as z:
        infos = z.infolist()
        contents = {i.filename: z.read(i) for i in infos}
    modules = [name for name in contents if name.startswith(MODULE_PREFIX) and name.endswith((".so", ".pyd"))]
    if len(modules) != 1:
        sys.exit(f"{wheel}: expected one extension module {MODULE_PREFIX}*, found {modules}")
    [module] = modules
    base = os.path.basename(module)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, base)
        with open(path, "wb") as f:
            f.write(contents[module])
        if not has_debug_info(path, objcopy):
            print(f"{os.path.basename(wheel)}: {base} has no debug information, left as it is")
            return
        debug = os.path.join(debug_dir, base + ".debug")
        # --add-gnu-debuglink names the file by its base name and records
        # its CRC: it must be written before, under its final name.
        subprocess.run([objcopy, "--only-keep-debug", path, debug], check=True)
        subprocess.run([objcopy, "--strip-debug", f"--add-gnu-debuglink={debug}", path], check=True)
        with open(path, "rb") as f:
            contents[module] = f.read()
    record = next(name for name in contents if name.endswith(".dist-info/RECORD"))
    lines = []
    for line in contents[record].decode().splitlines():
        name = line.rsplit(",", 2)[0]
        if name == module:
            line = f"{module},{record_hash(contents[module])},{len(contents[module])}"
        lines.append(line)
    contents[record] = ("\n".join(lines) + "\n").encode()
    partial = wheel + ".partial"
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
        for info in infos:
            z.writestr(info, contents[info.filename], compress_type=zipfile.ZIP_DEFLATED)
    os.replace(partial, wheel)
    print(f"{os.path.basename(wheel)}: {base} {len(contents[module]):,} bytes, its debug information in {debug}")


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    debug_dir, wheels = sys.argv[1], sys.argv[2:]
    os.makedirs(debug_dir, exist_ok=True)
    objcopy = os.environ.get("OBJCOPY", "objcopy")
    for wheel in wheels:
        split(wheel, debug_dir, objcopy)


if __name__ == "__main__":
    main()
