//! Builds the C ABI's static library (`crates/pylogsink-c`) into the Python
//! package, next to its headers: `python/pylogsink/lib/libpylogsink.a`
//! (`pylogsink.lib` for MSVC), and
//! `link-args.txt` with the system libraries it needs (what rustc prints as
//! `native-static-libs`, less libpython, which the interpreter that loads
//! the extension provides).
//!
//! Why a build script of the crate maturin builds, rather than a step before
//! maturin (a script, or a PEP 517 backend wrapped around maturin's): it is
//! the one place that every way of building the package goes through, so
//! `pip install .`, `pip wheel .`, `python -m build` (the sdist, then the
//! wheel from it), `maturin build` and `maturin develop` each ship the
//! library with no other command. maturin runs cargo before it gathers the
//! package's files, so the wheel picks up what this writes.
//!
//! The library is built by a second cargo, in its own target directory
//! (`target/pylogsink-c`: the outer cargo holds the lock on its own), with
//! the `c-abi` profile of the workspace's Cargo.toml, for the target of the
//! outer build. With `maturin build --zig` it inherits maturin's zig
//! compiler and linker settings; it compiles no C, so the library is rustc's
//! alone either way, and `tests/test_dist.py` checks that it links against
//! glibc 2.28. It runs again only when the sources it is built from change,
//! or when its outputs are gone.
//!
//! It also compiles `src/ffmpeg_callback.c` into the extension (Linux,
//! macOS and Windows): FFmpeg's log callback for `pylogsink.ffmpeg`, in C
//! because it takes a va_list.
use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest_dir.join("../..");
    let lib_dir = root.join("python/pylogsink/lib");
    // Relative to this crate, so that another copy of the source sharing
    // the target directory (CARGO_TARGET_DIR) is looked at, not the first
    // one. A missing output counts as changed: deleting
    // python/pylogsink/lib builds it again.
    for input in [
        "../pylogsink-c",
        "../pylogsink/src",
        "../pylogsink/Cargo.toml",
        "../../Cargo.toml",
        "../../Cargo.lock",
        "../../python/pylogsink/lib/libpylogsink.a",
        "../../python/pylogsink/lib/pylogsink.lib",
        "../../python/pylogsink/lib/link-args.txt",
    ] {
        println!("cargo:rerun-if-changed={input}");
    }
    println!("cargo:rerun-if-changed=src/ffmpeg_callback.c");
    println!("cargo:rerun-if-env-changed=RUSTFLAGS");
    println!("cargo:rerun-if-env-changed=PYLOGSINK_CHECK_ONLY");
    // `cargo check` and `clippy` for another platform (make lint) need no
    // library, and cannot build one with a standard library built from
    // source (the inner cargo has no -Zbuild-std).
    if env::var_os("PYLOGSINK_CHECK_ONLY").is_some() {
        return;
    }

    let target = env::var("TARGET").expect("TARGET");
    if matches!(
        env::var("CARGO_CFG_TARGET_OS").as_deref(),
        Ok("linux" | "macos" | "windows")
    ) {
        cc::Build::new()
            .file("src/ffmpeg_callback.c")
            .std("c11")
            .warnings_into_errors(true)
            .compile("pylogsink_ffmpeg_callback");
    }
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let target_dir = outer_target_dir(&out_dir).join("pylogsink-c");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));

    let mut command = Command::new(cargo);
    command
        .arg("rustc")
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .args([
            "-p",
            "pylogsink-c",
            "--lib",
            "--features",
            "abi3",
            "--profile",
            "c-abi",
            "--target",
            &target,
        ])
        .arg("--target-dir")
        .arg(&target_dir)
        // Diagnostics as JSON: cargo replays a fresh build's cached ones,
        // so the native-static-libs note comes back without a rebuild.
        .args(["--message-format", "json-diagnostic-short"])
        .args(["--", "--print", "native-static-libs"]);
    // What cargo sets for this build script describes pylogsink-py's build,
    // not the library's: the inner cargo works its own out. The jobserver
    // (CARGO_MAKEFLAGS) stays shared, so both together use no more jobs than
    // asked for.
    for (key, _) in env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if key.starts_with("CARGO_CFG_")
            || key.starts_with("CARGO_FEATURE_")
            || key.starts_with("CARGO_PKG_")
            || key.starts_with("CARGO_MANIFEST_")
            || key.starts_with("DEP_")
            || key.starts_with("PYO3_")
            || matches!(
                key,
                "CARGO_ENCODED_RUSTFLAGS"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_DIR"
                    | "RUSTC_WORKSPACE_WRAPPER"
                    | "RUSTC_LINKER"
                    | "OUT_DIR"
                    | "TARGET"
                    | "HOST"
                    | "NUM_JOBS"
                    | "OPT_LEVEL"
                    | "DEBUG"
                    | "PROFILE"
            )
        {
            command.env_remove(key);
        }
    }
    // The library uses the stable ABI only (its feature abi3): it needs no
    // interpreter, and builds the same whichever one maturin builds for.
    // It is linked into extension modules, which get libpython's symbols
    // from the interpreter that loads them.
    command
        .env("PYO3_NO_PYTHON", "1")
        .env("PYO3_BUILD_EXTENSION_MODULE", "1");

    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo for the C library: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        panic!(
            "building the C library (crates/pylogsink-c) failed:\n{}\n{}",
            rendered(&stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let Some(libs) = stdout
        .lines()
        .filter_map(|line| {
            line.split_once("native-static-libs: ")
                .map(|(_, libs)| libs)
        })
        .next_back()
    else {
        panic!("no native-static-libs note from rustc for crates/pylogsink-c:\n{stdout}");
    };
    // The note's text ends at the end of its JSON string.
    let libs = libs.split(['"', '\\']).next().unwrap_or_default();
    let libs: Vec<&str> = libs
        .split_whitespace()
        .filter(|arg| !arg.is_empty() && !arg.starts_with("-lpython"))
        .collect();

    // MSVC names a static library `name.lib`, every other toolchain
    // `libname.a`.
    let (built_name, shipped_name) = if target.contains("msvc") {
        ("pylogsink_c.lib", "pylogsink.lib")
    } else {
        ("libpylogsink_c.a", "libpylogsink.a")
    };
    let built = target_dir.join(&target).join("c-abi").join(built_name);
    fs::create_dir_all(&lib_dir).expect("create python/pylogsink/lib");
    // Debug information is most of the size, and of no use to extensions.
    // Without a `strip` (binutils) that knows the target's objects, the
    // library ships as rustc made it.
    let stripped = out_dir.join(shipped_name);
    let strip = env::var_os("STRIP").unwrap_or_else(|| OsString::from("strip"));
    let did_strip = !target.contains("msvc")
        && Command::new(strip)
            .arg("--strip-debug")
            .arg("-o")
            .arg(&stripped)
            .arg(&built)
            .status()
            .is_ok_and(|status| status.success());
    if !did_strip {
        println!("cargo:warning=no strip: {shipped_name} keeps its debug information");
        fs::copy(&built, &stripped).expect("copy the library");
    }
    let library = fs::read(&stripped).expect("read the library");
    write_if_changed(&lib_dir.join(shipped_name), &library);
    write_if_changed(
        &lib_dir.join("link-args.txt"),
        format!("{}\n", libs.join("\n")).as_bytes(),
    );
}

/// The outer build's target directory: the first directory above OUT_DIR
/// that cargo tagged as its own. OUT_DIR itself if none is.
fn outer_target_dir(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .unwrap_or(out_dir)
        .to_path_buf()
}

/// The compiler's messages, as rendered, out of cargo's JSON lines.
fn rendered(stdout: &str) -> String {
    stdout
        .lines()
        .filter_map(|line| {
            let start = line.find("\"rendered\":\"")? + "\"rendered\":\"".len();
            let text = &line[start..];
            let end = text.find("\",\"")?;
            Some(text[..end].replace("\\n", "\n").replace("\\\"", "\""))
        })
        .collect()
}

/// Writes only new content, and through a rename: an unchanged output keeps
/// its time (cargo would otherwise run this script again on every build),
/// and a reader never sees half a file.
fn write_if_changed(path: &Path, content: &[u8]) {
    if fs::read(path).is_ok_and(|old| old == content) {
        return;
    }
    let partial = path.with_extension("partial");
    fs::write(&partial, content).unwrap_or_else(|e| panic!("write {}: {e}", partial.display()));
    fs::rename(&partial, path).unwrap_or_else(|e| panic!("rename to {}: {e}", path.display()));
}
