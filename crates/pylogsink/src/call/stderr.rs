//! Is `sys.stderr` the process's own? Asked at every outermost call.
//!
//! The answer picks the route of every line of the call: to fd 2 at once,
//! or kept for a replaced stream (pytest's capture, Jupyter's cell,
//! `redirect_stderr`). It must cost next to nothing, and run no Python code
//! (which could hand the GIL away).

use crate::core::fork::generation;
use crate::core::queue::{for_stream_pending, for_stream_take, stderr_seen, stderr_watched};
use crate::dest::pending::queue;
use crate::dest::{prompt, Taken};
use crate::record::lock;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::UNIX_EPOCH;

/// `sys.__dict__` and the interned names looked up in it, as addresses.
/// The sys module, its dict and interned strings live as long as the
/// interpreter; PyO3 extensions run in one interpreter, started once.
struct SysNames {
    dict: usize,
    stderr: usize,
    own_stderr: usize,
    /// Whether a dict watcher on `sys.__dict__` keeps the answer.
    watched: bool,
    /// Where there is none: whether `sys.__dict__`'s version tag tells
    /// when the answer may have changed (CPython 3.11, [`version`]).
    versioned: bool,
}

/// `sys.__dict__` and the names, found (and the dict watched, where it
/// can be) at the first call.
#[inline]
fn sys_names(py: Python<'_>) -> &'static SysNames {
    match NAMES.get() {
        Some(names) => names,
        None => sys_names_at_first_call(py),
    }
}

static NAMES: OnceLock<SysNames> = OnceLock::new();

#[cold]
#[inline(never)]
fn sys_names_at_first_call(py: Python<'_>) -> &'static SysNames {
    NAMES.get_or_init(|| {
        // What `flush_lines` asks, found with the rest at the first call.
        super::capi::find_thread_state(py);
        // SAFETY: the `Python` token proves this thread holds the GIL, which
        // all these functions require. `PyImport_AddModule` and
        // `PyModule_GetDict` return borrowed references to objects that live
        // as long as the interpreter; the interned strings are new
        // references kept for good.
        let (dict, stderr, own_stderr) = unsafe {
            use pyo3::ffi::*;
            (
                PyModule_GetDict(PyImport_AddModule(c"sys".as_ptr())),
                PyUnicode_InternFromString(c"stderr".as_ptr()),
                PyUnicode_InternFromString(c"__stderr__".as_ptr()),
            )
        };
        let watched = watch::start(py, dict, stderr, own_stderr);
        SysNames {
            dict: dict as usize,
            stderr: stderr as usize,
            own_stderr: own_stderr as usize,
            watched,
            versioned: !watched && version::start(py, dict),
        }
    })
}

/// Whether Python found fd 2 closed when it started: its `sys.__stderr__`
/// is None.
pub(crate) fn was_closed_at_start(py: Python<'_>) -> bool {
    super::capi::sys_attr(py, c"__stderr__").is_ok_and(|own| own.is_none())
}

/// `sys.stderr is sys.__stderr__`. Where a dict watcher on `sys.__dict__`
/// keeps the answer (CPython 3.12+, abi3 builds included), one load;
/// else two borrowed dict lookups of interned names: a few nanoseconds,
/// and no Python code runs.
#[inline]
pub(crate) fn stderr_is_own(py: Python<'_>) -> bool {
    if let Some(own) = watch::known() {
        return own;
    }
    let names = sys_names(py);
    if names.versioned {
        if let Some(own) = version::known(names.dict) {
            return own;
        }
    }
    stderr_is_own_looked_up(py)
}

/// [`stderr_is_own`] by the two lookups; kept for the next calls where the
/// watcher will tell when it changes. Rare there, and every outermost
/// call's path elsewhere.
#[cold]
#[inline(never)]
fn stderr_is_own_looked_up(py: Python<'_>) -> bool {
    let names = sys_names(py);
    let lookup = |key: usize| {
        // SAFETY: the GIL is held (the `Python` token) and both pointers are
        // live (see `sys_names`); `PyDict_GetItemWithError` returns a
        // borrowed reference or NULL, which is only compared, never
        // dereferenced. With a dict and a str key it cannot raise: no error
        // is left set.
        unsafe { pyo3::ffi::PyDict_GetItemWithError(names.dict as *mut _, key as *mut _) }
    };
    let own = lookup(names.stderr) == lookup(names.own_stderr);
    if names.watched {
        watch::keep(own);
    } else if names.versioned {
        version::keep(names.dict, own);
    }
    own
}

/// Keeps whether `sys.stderr` is the process's own for the lines logged
/// outside any call, with the GIL held.
pub(crate) fn seen_outside_calls(own: bool) {
    let now_ms = UNIX_EPOCH.elapsed().map_or(0, |d| d.as_millis());
    stderr_seen(!own, Some(u64::try_from(now_ms).unwrap_or(u64::MAX)));
}

/// At init, with the GIL held: watches `sys.__dict__` where it can, so that
/// the lines logged outside any call follow a replaced `sys.stderr` from
/// the moment it is replaced (elsewhere pylogsink's thread looks again
/// while such lines flow), and keeps the answer for now.
pub(crate) fn watch_at_init(py: Python<'_>) {
    let own = stderr_is_own(py);
    seen_outside_calls(own);
    if sys_names(py).watched {
        stderr_watched();
    }
}

/// How a call's entry learns whether `sys.stderr` is the process's own:
/// `"dict watcher"` where a watcher on `sys.__dict__` keeps the answer
/// between changes of `sys.stderr` or `sys.__stderr__` (CPython 3.12 and
/// later, not free-threaded, and a watcher slot was free), `"dict
/// version"` where `sys.__dict__`'s version tag tells when to look again
/// (CPython 3.11), `"lookup"` where each outermost call looks both up. For
/// benchmarks and tests.
pub fn stderr_check(py: Python<'_>) -> &'static str {
    let names = sys_names(py);
    if names.watched {
        "dict watcher"
    } else if names.versioned {
        "dict version"
    } else {
        "lookup"
    }
}

/// CPython 3.11, which has no dict watcher: `sys.__dict__`'s version tag
/// (PEP 509's `ma_version_tag`), which takes a new value, unique in the
/// process, at every change of the dict. The answer looked up at a call's
/// entry is kept with the tag it was found under, and holds while the tag
/// is the same: one load and a compare instead of two dict lookups.
///
/// The tag is a field of `PyDictObject`, which the stable ABI does not
/// show: it is read at its place in CPython 3.11's layout (after the
/// object header and `ma_used`), and used only after a check at the first
/// call that the place holds the dict's size and a tag that changes with
/// the dict. Anywhere else, each call looks up as before.
mod version {
    use pyo3::ffi::PyObject;
    use pyo3::prelude::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

    /// `ma_used` and `ma_version_tag` in 3.11's `PyDictObject`, after
    /// `ob_refcnt` and `ob_type`.
    const USED_AT: usize = 2;
    const TAG_AT: usize = 3;

    /// The tag the answer was looked up under (0: none; CPython's tags
    /// start above 0), and the answer. Both are read and written with the
    /// GIL held only.
    static SEEN: AtomicU64 = AtomicU64::new(0);
    static OWN: AtomicBool = AtomicBool::new(false);

    /// The dict's tag. `dict` is `sys.__dict__`, a live dict of CPython
    /// 3.11 whose layout [`start`] checked.
    #[inline]
    fn tag(dict: usize) -> u64 {
        // SAFETY: the GIL is held by the caller and the dict is live (see
        // `sys_names`); on CPython 3.11, as `start` checked, the word at
        // `TAG_AT` is its `ma_version_tag`, which only a thread that holds
        // the GIL writes.
        unsafe { *(dict as *const u64).add(TAG_AT) }
    }

    /// The answer kept, if the dict has not changed since.
    #[inline]
    pub(super) fn known(dict: usize) -> Option<bool> {
        let seen = SEEN.load(Relaxed);
        (seen != 0 && tag(dict) == seen).then(|| OWN.load(Relaxed))
    }

    /// Keeps the answer just looked up, with the GIL held.
    pub(super) fn keep(dict: usize, own: bool) {
        OWN.store(own, Relaxed);
        SEEN.store(tag(dict), Relaxed);
    }

    /// Whether the tag can be read: CPython 3.11, and the layout checked
    /// on `sys.__dict__` itself: the word before the tag is the dict's
    /// size, and the tag changes when a key is added and again when it is
    /// removed (a private key, with the GIL held, so no Python code sees
    /// it).
    pub(super) fn start(py: Python<'_>, dict: *mut PyObject) -> bool {
        let version = py.version_info();
        if (version.major, version.minor) != (3, 11) {
            return false;
        }
        // SAFETY: the GIL is held (the `Python` token) and `dict` is
        // `sys.__dict__`, live, a dict of at least four words (an object
        // header and `ma_used` come first on every CPython); the words
        // are only read. The key is a new reference, released here; the
        // set and delete of a str key with `None` run no Python code, and
        // an error they raise is cleared.
        unsafe {
            use pyo3::ffi::*;
            let words = dict as *const u64;
            let used = *words.add(USED_AT);
            if i64::try_from(used).ok() != i64::try_from(PyDict_Size(dict)).ok() {
                return false;
            }
            let key = PyUnicode_FromString(c"__pylogsink_version_check__".as_ptr());
            if key.is_null() {
                drop(PyErr::take(py));
                return false;
            }
            let before = *words.add(TAG_AT);
            let added = PyDict_SetItem(dict, key, Py_None()) == 0;
            let after_add = *words.add(TAG_AT);
            let removed = added && PyDict_DelItem(dict, key) == 0;
            let after_remove = *words.add(TAG_AT);
            Py_DecRef(key);
            if !(added && removed) {
                drop(PyErr::take(py));
                return false;
            }
            before != 0 && after_add != before && after_remove != after_add && after_remove != 0
        }
    }
}

/// The dict watcher on `sys.__dict__` (CPython 3.12+, not free-threaded;
/// found at run time, see [`capi`](super::capi)): a process-wide answer to
/// "is `sys.stderr` the process's own", set at a call's entry and cleared
/// by the watcher when `sys.stderr` or `sys.__stderr__` is about to change.
/// Both run with the GIL held, so neither sees the other half done. A
/// watcher is called before the dict changes: it only clears the answer,
/// and the next entry looks the new values up. Where there is no watcher,
/// no answer is ever kept and each outermost call looks both up.
mod watch {
    use super::super::capi;
    use pyo3::ffi::{PyObject, PyUnicode_Check, PyUnicode_CompareWithASCIIString};
    use pyo3::prelude::*;
    use std::os::raw::c_int;
    use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};

    const UNKNOWN: u8 = 0;
    const OWN: u8 = 1;
    const REPLACED: u8 = 2;

    /// The answer while `sys.stderr` and `sys.__stderr__` are unchanged.
    static KNOWN: AtomicU8 = AtomicU8::new(UNKNOWN);
    /// The interned "stderr" and "__stderr__", for the watcher's compare.
    static STDERR: AtomicUsize = AtomicUsize::new(0);
    static OWN_STDERR: AtomicUsize = AtomicUsize::new(0);

    // `PyDict_WatchEvent` (Include/cpython/dictobject.h, 3.12 to 3.15).
    const ADDED: c_int = 0;
    const MODIFIED: c_int = 1;
    const DELETED: c_int = 2;

    /// The answer kept, if any.
    #[inline]
    pub(super) fn known() -> Option<bool> {
        match KNOWN.load(Relaxed) {
            OWN => Some(true),
            REPLACED => Some(false),
            _ => None,
        }
    }

    /// Keeps the answer looked up at a call's entry, with the GIL held.
    pub(super) fn keep(own: bool) {
        KNOWN.store(if own { OWN } else { REPLACED }, Relaxed);
    }

    /// Watches `sys.__dict__`; false (the lookup at each call stays) if the
    /// interpreter has no dict watcher, no watcher slot left (it has 8),
    /// or watching failed.
    pub(super) fn start(
        py: Python<'_>,
        dict: *mut PyObject,
        stderr: *mut PyObject,
        own_stderr: *mut PyObject,
    ) -> bool {
        let Some(watcher) = capi::dict_watcher(py) else {
            return false;
        };
        STDERR.store(stderr as usize, Relaxed);
        OWN_STDERR.store(own_stderr as usize, Relaxed);
        // SAFETY: the GIL is held (the `Python` token). `on_sys_dict_event`
        // has the signature of `PyDict_WatchCallback` and lives as long as
        // the process; `dict` is `sys.__dict__`, a live dict (see
        // `sys_names`); `id` is the watcher just added. On failure these
        // functions set an exception, which `PyErr::take` clears.
        let watched = unsafe {
            let id = (watcher.add)(on_sys_dict_event);
            if id >= 0 && (watcher.watch)(id, dict) != 0 {
                (watcher.clear)(id);
                false
            } else {
                id >= 0
            }
        };
        if !watched {
            drop(PyErr::take(py));
        }
        watched
    }

    /// Called by CPython, with the GIL held, before `sys.__dict__` changes.
    /// When `sys.stderr` or `sys.__stderr__` gets a new value, the answer
    /// for the new values is kept at once, for the calls and for the lines
    /// logged outside any call (which then need not wait for pylogsink's
    /// thread to look); any other change of the two names only clears the
    /// calls' answer.
    unsafe extern "C" fn on_sys_dict_event(
        event: c_int,
        dict: *mut PyObject,
        key: *mut PyObject,
        new_value: *mut PyObject,
    ) -> c_int {
        let name = match event {
            // SAFETY: for these events CPython passes the key, a live
            // object, and holds the GIL.
            ADDED | MODIFIED | DELETED => unsafe { stderr_name(key) },
            // Cloned, cleared, deallocated, or an event of a later version.
            _ => Name::Unknown,
        };
        if name == Name::Other {
            return 0;
        }
        KNOWN.store(UNKNOWN, Relaxed);
        let set = matches!(event, ADDED | MODIFIED) && !new_value.is_null();
        // SAFETY: the GIL is held and `dict` is `sys.__dict__`, live; the
        // borrowed reference (or NULL) is only compared. A str key cannot
        // raise.
        let current = |key: &AtomicUsize| unsafe {
            pyo3::ffi::PyDict_GetItemWithError(dict, key.load(Relaxed) as *mut _)
        };
        if name == Name::Stderr && super::for_stream_pending() {
            let (old, process_own) = (current(&STDERR), current(&OWN_STDERR));
            // SAFETY: the GIL is held (CPython calls watchers with it); `py`
            // lives only until this callback returns. `old` is a borrowed
            // reference to the value still in the dict, alive now; the new
            // reference taken keeps it alive while its lines wait.
            let py = unsafe { Python::assume_attached() };
            let stream = (!old.is_null() && old != process_own)
                .then(|| unsafe { Bound::from_borrowed_ptr(py, old) }.unbind());
            super::seal(stream);
        }
        let own = match name {
            Name::Stderr if set => Some(new_value == current(&OWN_STDERR)),
            Name::OwnStderr if set => Some(new_value == current(&STDERR)),
            // No `sys.stderr`: its lines go to fd 2 through pylogsink's
            // thread, which finds no stream.
            Name::Stderr => Some(false),
            _ => None,
        };
        if let Some(own) = own {
            keep(own);
            super::seen_outside_calls(own);
        }
        0
    }

    #[derive(PartialEq)]
    enum Name {
        Stderr,
        OwnStderr,
        /// Neither.
        Other,
        /// A key that is not a str, which could compare equal to one in a
        /// way only Python knows, or an event without a key.
        Unknown,
    }

    /// Which of "stderr" and "__stderr__" `key` is. Must be called with the
    /// GIL held and a live `key`.
    unsafe fn stderr_name(key: *mut PyObject) -> Name {
        let key_address = key as usize;
        if key_address == STDERR.load(Relaxed) {
            return Name::Stderr;
        }
        if key_address == OWN_STDERR.load(Relaxed) {
            return Name::OwnStderr;
        }
        if key.is_null() {
            return Name::Unknown;
        }
        // SAFETY: the caller holds the GIL and `key` is live and not NULL;
        // `PyUnicode_CompareWithASCIIString` does not raise.
        unsafe {
            if PyUnicode_Check(key) == 0 {
                Name::Unknown
            } else if PyUnicode_CompareWithASCIIString(key, c"stderr".as_ptr()) == 0 {
                Name::Stderr
            } else if PyUnicode_CompareWithASCIIString(key, c"__stderr__".as_ptr()) == 0 {
                Name::OwnStderr
            } else {
                Name::Other
            }
        }
    }
}

/// Lines logged outside any call while `sys.stderr` was a stream that has
/// since been replaced (the end of a `redirect_stderr` block, of a test's
/// capture): they belong to that stream, kept here with it by the watcher
/// on `sys.__dict__`, oldest first (`None`: fd 2), with the fork
/// generation they were kept in. Locked with the GIL held only, never
/// across Python code.
static SEALED: Mutex<Vec<Sealed>> = Mutex::new(Vec::new());

/// Lines kept for a stream: the fork generation, the stream, the lines.
type Sealed = (u64, Option<Py<PyAny>>, Taken);

/// Whether lines wait in [`SEALED`].
static SEALED_PENDING: AtomicBool = AtomicBool::new(false);

/// Before `sys.stderr` changes (the watcher on `sys.__dict__`, with the
/// GIL held): the lines logged outside any call that wait for the stream
/// now current, `old`, stay with it (`None`: the process's own, fd 2).
/// They are written at the next safe point, or by pylogsink's thread.
pub(crate) fn seal(old: Option<Py<PyAny>>) {
    if !for_stream_pending() {
        return;
    }
    let lines = for_stream_take();
    if lines.text.is_empty() {
        return;
    }
    lock(&SEALED).push((generation(), old, lines));
    SEALED_PENDING.store(true, Ordering::Release);
    prompt::ask();
    queue::wake_for_calls();
}

/// Whether lines wait for a stream that was replaced since.
#[inline]
pub(crate) fn sealed_pending() -> bool {
    SEALED_PENDING.load(Ordering::Acquire)
}

/// Takes the lines kept for streams replaced since, oldest first, with
/// their stream (`None`: fd 2); those a forked child's parent kept stay
/// the parent's.
pub(crate) fn take_sealed() -> Vec<(Option<Py<PyAny>>, Taken)> {
    if !SEALED_PENDING.swap(false, Ordering::AcqRel) {
        return Vec::new();
    }
    let sealed = std::mem::take(&mut *lock(&SEALED));
    let now = generation();
    sealed
        .into_iter()
        .filter(|(kept_in, _, _)| *kept_in == now)
        .map(|(_, stream, lines)| (stream, lines))
        .collect()
}

/// The descriptor of a replaced `sys.stderr` that outlives fd 2's reader,
/// where the crash handler writes the call's lines, or -1 (fd 2). In
/// ipykernel, fd 2 is a pipe that a thread of the kernel drains, a thread
/// that dies with the process; its `sys.stderr.fileno()` is the copy of the
/// kernel's original stderr it made first. A stream on a file gives that
/// file's descriptor; an in-memory one (pytest's, `io.StringIO`) none.
/// Asked of Python once per `sys.stderr` object: the answer is kept with a
/// reference to the object, so that its address cannot name another.
#[cold]
#[inline(never)]
pub(crate) fn surviving_fd(py: Python<'_>) -> i32 {
    static LAST: Mutex<Option<(Py<PyAny>, i32)>> = Mutex::new(None);
    let Ok(stderr) = super::capi::sys_attr(py, c"stderr") else {
        return -1;
    };
    if let Some((known, fd)) = &*lock(&LAST) {
        if known.is(&stderr) {
            return *fd;
        }
    }
    // `fileno` runs Python code, which may hand the GIL to a thread that
    // forks: the lock is not held meanwhile.
    let fd = stderr
        .call_method0("fileno")
        .and_then(|fd| fd.extract::<i32>())
        .unwrap_or(-1);
    *lock(&LAST) = Some((stderr.unbind(), fd));
    fd
}
