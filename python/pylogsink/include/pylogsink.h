/*
 * pylogsink.h: the C ABI of pylogsink, for C and C++ extension modules.
 *
 * A native runtime inside Python that logs through sys.stderr or logging
 * can deadlock (the write releases the GIL while the runtime holds its own
 * lock), hang a notebook on a full pipe, lose pytest's or Jupyter's
 * capture, or lose the lines that explain a crash. pylogsink_emit never
 * calls into Python, so it is safe under any lock; the call's lines reach
 * Python at pylogsink_call_exit, where the binding holds the GIL and none
 * of its own locks.
 *
 * Build inputs come from the installed Python package:
 *   pylogsink.get_include()    this directory
 *   pylogsink.get_library()    the static library (libpylogsink.a)
 *   pylogsink.get_link_args()  the system libraries it needs
 * One library serves every CPython 3.11 and newer: it uses stable-ABI
 * symbols only.
 *
 * Use, in a binding (the GIL held):
 *
 *     static PyObject *load(PyObject *self, PyObject *args) {
 *         pylogsink_call_enter();
 *         int rc = runtime_load();          // may log, under any lock
 *         if (pylogsink_call_exit() < 0)    // KeyboardInterrupt while writing
 *             return NULL;
 *         if (rc != 0)
 *             return pylogsink_raise(PyExc_RuntimeError, "load failed", 11);
 *         Py_RETURN_NONE;
 *     }
 *
 * The log functions, pylogsink_emit and pylogsink_emit_n, and the levels
 * are in pylogsink_emit.h (included here), which needs no Python header:
 * a runtime's own files (its platform log hook, a spdlog or glog sink)
 * include that one alone.
 *
 * Threads and the GIL: pylogsink_emit and pylogsink_emit_n may be called
 * from any thread, with or without the GIL, under any lock, in a call or
 * outside one (a native worker thread). Every other function must be
 * called with the GIL held; pylogsink_call_exit may run Python code
 * (sys.stderr.write), so it must be called with none of the runtime's
 * locks held.
 */
#ifndef PYLOGSINK_H
#define PYLOGSINK_H

#include <Python.h>
#include <stddef.h>

/* The levels, pylogsink_emit and pylogsink_emit_n. */
#include "pylogsink_emit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets pylogsink up; call it once, in the module's PyInit_ function.
   The users' directives (env_logger's syntax: "warn,myruntime=debug") come
   from the environment variable env_var (NULL: "PYLOGSINK_LOG"), else from
   default_filter (NULL: "warn"). A bad value in the variable never fails:
   its valid directives apply and one Warn record says what was ignored.
   Calling it again reads the variable again.
   GIL held. Returns 0, or -1 with a Python exception set: ValueError for a
   bad default_filter, RuntimeError if something else installed itself as
   the logger of Rust's log crate in this library, ImportError in a
   subinterpreter (pylogsink runs in the main interpreter only). */
int pylogsink_init(const char *env_var, const char *default_filter);

/* Adds set_log_filter(spec), log_filter(), set_log_destination(name),
   log_destination() and log_stats() to the extension's module, for its
   Python users. GIL held. Returns 0, or -1 with a Python exception set. */
int pylogsink_add_functions(PyObject *module);

/* Steps into a binding call: at the binding's entry, GIL held. Between
   enter and exit the binding may release the GIL (Py_BEGIN_ALLOW_THREADS)
   and take its own locks. Nested pairs join the outermost one. Each enter
   must be matched by one pylogsink_call_exit on the same thread. */
void pylogsink_call_enter(void);

/* Steps out of a binding call: at the binding's exit, GIL held, none of
   the runtime's locks held. Leaving the outermost call writes the lines it
   kept (through sys.stderr.write when sys.stderr was replaced).
   Returns 0, or -1 with the exception raised while the lines were written
   (a KeyboardInterrupt from Ctrl-C) set: the binding must then return NULL
   and drop its own result. An exception the binding set before is kept
   aside while the lines are written and set again (with -1, it becomes the
   __context__ of the new one). */
int pylogsink_call_exit(void);

/* Inside a call, GIL held, none of the runtime's locks held (a loop's step
   boundary): hands what the call kept so far to Python now (lines for a
   replaced sys.stderr, records for logging, its workers' too), so that a
   loop that holds the GIL shows its progress as it goes. Then checks for
   signals, as PyErr_CheckSignals does. Returns 0, or -1 with the exception
   raised (a KeyboardInterrupt from Ctrl-C) set: the binding then stops and
   returns NULL through pylogsink_call_exit. With nothing waiting it costs
   two loads and a compare. */
int pylogsink_flush(void);

/* A call that worker threads can join (a thread pool's workers: what they
   log then follows the call's routing, as the calling thread's own lines).
   pylogsink_call_handle: on the calling thread, inside a call; NULL
   outside any call. Any thread may use the handle; free it once with
   pylogsink_handle_free (NULL is ignored). No GIL needed. */
typedef struct pylogsink_handle pylogsink_handle;
pylogsink_handle *pylogsink_call_handle(void);
void pylogsink_handle_free(pylogsink_handle *handle);

/* On a worker thread: from pylogsink_attach until the matching
   pylogsink_detach on the same thread, what the thread logs goes where
   the call's own lines go (to fd 2 at once, or kept and written when the
   call returns). Once the call has returned, the worker's lines go as
   outside any call: never lost. Pairs nest. Any lock, GIL or not. */
void pylogsink_attach(const pylogsink_handle *handle);
void pylogsink_detach(void);

/* Sets an exception of type `type` (NULL: RuntimeError) whose message is
   text[0..len] followed by the Error lines logged during the current call,
   decoded as Python's bytes.decode("utf-8", "backslashreplace") does:
   invalid UTF-8 becomes \xNN. Returns NULL, for
   `return pylogsink_raise(PyExc_RuntimeError, msg, strlen(msg));`.
   GIL held. Call it before pylogsink_call_exit or after: the Error lines
   stay until the thread's next call starts. */
PyObject *pylogsink_raise(PyObject *type, const char *text, size_t len);

/* Sets the directives in force (env_logger's syntax). GIL held.
   Returns 0, or -1 with ValueError set, naming the bad directive; the
   filter then stays as it was. NULL goes back to the extension author's
   default. */
int pylogsink_set_filter(const char *spec);

#ifdef __cplusplus
}
#endif

#endif /* PYLOGSINK_H */
