/*
 * backend.h: a small runtime backend for the C ABI tests, shared by the C
 * extension (c_rt.c) and the pybind11 one (cpp_rt.cpp).
 *
 * It is built like the runtime where the deadlock was found: a backend
 * that logs while holding its own lock (XNNPACK's workspace lock), and a
 * platform layer with one log function, ExecuTorch's
 * et_pal_emit_log_message, which forwards each line to pylogsink_emit, or,
 * with the naive sink, writes it through sys.stderr.write with the GIL, as
 * pybind11's stream redirect does.
 */
#ifndef BACKEND_H
#define BACKEND_H

#define PY_SSIZE_T_CLEAN
#include "pylogsink.h"

#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Where the platform layer sends lines: 0 pylogsink, 1 naive. */
static int backend_naive = 0;

/* ExecuTorch's platform log hook (runtime/platform/platform.h). */
typedef uint64_t et_timestamp_t;
typedef enum {
    kDebug = 'D',
    kInfo = 'I',
    kError = 'E',
    kFatal = 'F',
    kUnknown = '?'
} et_pal_log_level_t;

/* Each line through one sys.stderr.write, taking the GIL for it. */
static void naive_write(const char *message, size_t length) {
    char line[1024];
    int n = snprintf(line, sizeof line, "%.*s\n", (int)(length < 1000 ? length : 1000), message);
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *stream = PySys_GetObject("stderr"); /* borrowed */
    if (stream != NULL) {
        PyObject *done = PyObject_CallMethod(stream, "write", "s#", line, (Py_ssize_t)n);
        Py_XDECREF(done);
    }
    PyErr_Clear();
    PyGILState_Release(gil);
}

/* The forward to pylogsink: the few lines a runtime's platform layer needs. */
static void et_pal_emit_log_message(et_timestamp_t timestamp, et_pal_log_level_t level,
                                    const char *filename, const char *function, size_t line,
                                    const char *message, size_t length) {
    (void)timestamp; /* pylogsink stamps each record itself */
    (void)function;
    if (backend_naive) {
        naive_write(message, length);
        return;
    }
    int to = level == kDebug   ? PYLOGSINK_DEBUG
             : level == kInfo  ? PYLOGSINK_INFO
             : level == kError ? PYLOGSINK_ERROR
             : level == kFatal ? PYLOGSINK_FATAL
                               : PYLOGSINK_WARN;
    pylogsink_emit(to, "executorch", filename, (unsigned)line, message, length);
}

/* ExecuTorch's ET_LOG, cut down: formats, then calls the hook. */
#define ET_LOG(level, ...)                                                               \
    do {                                                                                 \
        char et_buf_[512];                                                               \
        int et_n_ = snprintf(et_buf_, sizeof et_buf_, __VA_ARGS__);                      \
        if (et_n_ > (int)sizeof et_buf_ - 1) et_n_ = (int)sizeof et_buf_ - 1;            \
        if (et_n_ > 0)                                                                   \
            et_pal_emit_log_message(0, level, __FILE__, __func__, __LINE__, et_buf_,     \
                                    (size_t)et_n_);                                      \
    } while (0)

/* The backend's own lock. */
static pthread_mutex_t backend_lock = PTHREAD_MUTEX_INITIALIZER;

/* Fails, logging an Error while it holds the backend lock. */
static int backend_load_method(void) {
    pthread_mutex_lock(&backend_lock);
    ET_LOG(kError, "XNNPACK backend: failed to create workspace");
    pthread_mutex_unlock(&backend_lock);
    return -1;
}

/* Takes the backend lock (the caller holds the GIL). */
static void backend_execute(void) {
    pthread_mutex_lock(&backend_lock);
    pthread_mutex_unlock(&backend_lock);
}

/* Logs an Error naming the program's identifier, raw bytes included. */
static void backend_check_program(const char *ident, size_t len) {
    ET_LOG(kError, "Program identifier '%.*s' != expected 'ET12'", (int)len, ident);
}

/* Logs a line of context, then a Fatal line, then aborts. */
static void backend_fatal(void) {
    ET_LOG(kInfo, "context: loading model.pte, 3 of 4 delegates ready");
    ET_LOG(kFatal, "out of memory in delegate 4");
    abort();
}

#endif /* BACKEND_H */
