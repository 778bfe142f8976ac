/*
 * c_rt: a C extension (Python C API) over backend.h, every binding wrapped
 * in pylogsink_call_enter / pylogsink_call_exit.
 */
#include "backend.h"

#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static const char LOAD_FAILED[] = "load_method failed (error 0x23)";

static PyObject *set_sink(PyObject *self, PyObject *arg) {
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (name == NULL) return NULL;
    backend_naive = strcmp(name, "naive") == 0;
    Py_RETURN_NONE;
}

/* Logs an Error under the backend lock with the GIL held, then raises. */
static PyObject *load_method(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    pylogsink_call_enter();
    int rc = backend_load_method();
    if (pylogsink_call_exit() < 0) return NULL;
    if (rc != 0) return pylogsink_raise(PyExc_RuntimeError, LOAD_FAILED, strlen(LOAD_FAILED));
    Py_RETURN_NONE;
}

/* The same with the GIL released around the backend. */
static PyObject *load_method_detached(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    int rc;
    pylogsink_call_enter();
    Py_BEGIN_ALLOW_THREADS
    rc = backend_load_method();
    Py_END_ALLOW_THREADS
    if (pylogsink_call_exit() < 0) return NULL;
    if (rc != 0) return pylogsink_raise(PyExc_RuntimeError, LOAD_FAILED, strlen(LOAD_FAILED));
    Py_RETURN_NONE;
}

/* Takes the backend lock with the GIL held, and logs nothing. */
static PyObject *execute(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    backend_execute();
    Py_RETURN_NONE;
}

/* log(level, message: bytes, target: str) in one call. */
static PyObject *log_(PyObject *self, PyObject *args) {
    (void)self;
    int level;
    const char *message, *target = "rt";
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "iy#|s", &level, &message, &len, &target)) return NULL;
    pylogsink_call_enter();
    pylogsink_emit(level, target, __FILE__, __LINE__, message, (size_t)len);
    if (pylogsink_call_exit() < 0) return NULL;
    Py_RETURN_NONE;
}

/* log_and_printf(text: str): in one call, logs "logged: TEXT" through
   pylogsink and printf's "printed: TEXT" to stdout, as a library that
   writes to both would. */
static PyObject *log_and_printf(PyObject *self, PyObject *arg) {
    (void)self;
    const char *text = PyUnicode_AsUTF8(arg);
    if (text == NULL) return NULL;
    char message[256];
    int len = snprintf(message, sizeof message, "logged: %s", text);
    if (len < 0 || (size_t)len >= sizeof message) len = (int)strlen(message);
    pylogsink_call_enter();
    pylogsink_emit(PYLOGSINK_INFO, "rt", __FILE__, __LINE__, message, (size_t)len);
    printf("printed: %s\n", text);
    fflush(stdout);
    if (pylogsink_call_exit() < 0) return NULL;
    Py_RETURN_NONE;
}

/* log_n(level, buffer: bytes, start, length, message: bytes): the target is
   buffer[start:start + length], given by its length (no NUL after it). */
static PyObject *log_n(PyObject *self, PyObject *args) {
    (void)self;
    int level;
    const char *buffer, *message;
    Py_ssize_t size, start, length, len;
    if (!PyArg_ParseTuple(args, "iy#nny#", &level, &buffer, &size, &start, &length, &message, &len))
        return NULL;
    if (start < 0 || length < 0 || start + length > size) {
        PyErr_SetString(PyExc_ValueError, "log_n: the target is outside the buffer");
        return NULL;
    }
    pylogsink_call_enter();
    pylogsink_emit_n(level, buffer + start, (size_t)length, __FILE__, __LINE__, message, (size_t)len);
    if (pylogsink_call_exit() < 0) return NULL;
    Py_RETURN_NONE;
}

/* log_lines(n): n Info lines "line <i>" through ET_LOG, in one call. */
static PyObject *log_lines(PyObject *self, PyObject *arg) {
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    pylogsink_call_enter();
    for (long i = 0; i < n; i++) ET_LOG(kInfo, "line %ld", i);
    if (pylogsink_call_exit() < 0) return NULL;
    Py_RETURN_NONE;
}

/* progress(steps, ms, flush): a loop that holds the GIL, one Info line
   "step <i>" per step of `ms` milliseconds; with `flush`, pylogsink_flush
   at each step's end, its lines then shown as it goes. */
static PyObject *progress(PyObject *self, PyObject *args) {
    (void)self;
    int steps, ms, flush;
    if (!PyArg_ParseTuple(args, "iip", &steps, &ms, &flush)) return NULL;
    pylogsink_call_enter();
    int failed = 0;
    for (int i = 0; i < steps && !failed; i++) {
        usleep((useconds_t)ms * 1000);
        ET_LOG(kInfo, "step %d", i);
        if (flush && pylogsink_flush() < 0) failed = 1;
    }
    if (pylogsink_call_exit() < 0 || failed) return NULL;
    Py_RETURN_NONE;
}

/* log_then_hang(n, seconds): n lines, then sleeps inside the call. */
static PyObject *log_then_hang(PyObject *self, PyObject *args) {
    (void)self;
    int n, seconds;
    if (!PyArg_ParseTuple(args, "ii", &n, &seconds)) return NULL;
    pylogsink_call_enter();
    for (int i = 0; i < n; i++) ET_LOG(kError, "about to hang: line %d", i);
    sleep((unsigned)seconds);
    if (pylogsink_call_exit() < 0) return NULL;
    Py_RETURN_NONE;
}

/* load_program(identifier: bytes): logs the bad identifier, raises with a
   message cut inside a UTF-8 character. */
static PyObject *load_program(PyObject *self, PyObject *args) {
    (void)self;
    const char *ident;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "y#", &ident, &len)) return NULL;
    pylogsink_call_enter();
    backend_check_program(ident, (size_t)len);
    if (pylogsink_call_exit() < 0) return NULL;
    static const char text[] = "load_program: invalid program /data/\xe4\xb8\xad\xe4\xb8";
    return pylogsink_raise(PyExc_RuntimeError, text, sizeof text - 1);
}

static PyObject *fatal(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    pylogsink_call_enter();
    backend_fatal();
    Py_RETURN_NONE; /* not reached */
}

static PyObject *set_filter(PyObject *self, PyObject *arg) {
    (void)self;
    /* None: back to the default given to pylogsink_init. */
    const char *spec = arg == Py_None ? NULL : PyUnicode_AsUTF8(arg);
    if ((arg != Py_None && spec == NULL) || pylogsink_set_filter(spec) < 0) return NULL;
    Py_RETURN_NONE;
}

/* emitf_cases(): what a C library's printf-style log callback hands over,
   through pylogsink_emitf in one call: a short message ending in a
   newline, a 1 MB expansion, bytes that are not UTF-8 nor printable, and a
   Trace record whose argument would crash if it were formatted (the
   filter drops it first). */
static PyObject *emitf_cases(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    pylogsink_call_enter();
    pylogsink_emitf(PYLOGSINK_INFO, "clib", __FILE__, __LINE__, "fits: %d items\n", 3);
    pylogsink_emitf(PYLOGSINK_INFO, "clib", __FILE__, __LINE__, "%1000000d|end", 7);
    pylogsink_emitf(PYLOGSINK_INFO, "clib", __FILE__, __LINE__, "bytes: %s", "\xff\xfe\x1b[2J");
    pylogsink_emitf(PYLOGSINK_TRACE, "clib", __FILE__, __LINE__, "%s", (const char *)1);
    if (pylogsink_call_exit() < 0) return NULL;
    Py_RETURN_NONE;
}

/* One worker of fan_out: attached to the call, it logs "worker W line N". */
struct worker {
    const pylogsink_handle *call;
    int id;
    long lines;
};

static void *work(void *arg) {
    const struct worker *w = arg;
    pylogsink_attach(w->call);
    for (long i = 0; i < w->lines; i++) {
        char message[64];
        int len = snprintf(message, sizeof message, "worker %d line %ld", w->id, i);
        pylogsink_emit(PYLOGSINK_INFO, "rt::pool", __FILE__, __LINE__, message, (size_t)len);
    }
    pylogsink_detach();
    return NULL;
}

/* fan_out(workers, lines): one call handed to native threads (a pool's
   workers), each attached to it, with the GIL released while they run. */
static PyObject *fan_out(PyObject *self, PyObject *args) {
    (void)self;
    int workers;
    long lines;
    if (!PyArg_ParseTuple(args, "il", &workers, &lines)) return NULL;
    if (workers < 1 || workers > 16) {
        PyErr_SetString(PyExc_ValueError, "fan_out: 1 to 16 workers");
        return NULL;
    }
    pthread_t threads[16];
    struct worker each[16];
    pylogsink_call_enter();
    pylogsink_handle *call = pylogsink_call_handle();
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; i < workers; i++) {
        each[i] = (struct worker){call, i, lines};
        pthread_create(&threads[i], NULL, work, &each[i]);
    }
    for (int i = 0; i < workers; i++) pthread_join(threads[i], NULL);
    Py_END_ALLOW_THREADS
    pylogsink_handle_free(call);
    if (pylogsink_call_exit() < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"fan_out", fan_out, METH_VARARGS, NULL},
    {"set_sink", set_sink, METH_O, NULL},
    {"load_method", load_method, METH_NOARGS, NULL},
    {"load_method_detached", load_method_detached, METH_NOARGS, NULL},
    {"execute", execute, METH_NOARGS, NULL},
    {"log", log_, METH_VARARGS, NULL},
    {"log_n", log_n, METH_VARARGS, NULL},
    {"log_and_printf", log_and_printf, METH_O, NULL},
    {"log_lines", log_lines, METH_O, NULL},
    {"progress", progress, METH_VARARGS, NULL},
    {"log_then_hang", log_then_hang, METH_VARARGS, NULL},
    {"load_program", load_program, METH_VARARGS, NULL},
    {"fatal", fatal, METH_NOARGS, NULL},
    {"set_filter", set_filter, METH_O, NULL},
    {"emitf_cases", emitf_cases, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "c_rt", NULL, -1, methods};

PyMODINIT_FUNC PyInit_c_rt(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (pylogsink_init("RT_LOG", "info") < 0 || pylogsink_add_functions(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
