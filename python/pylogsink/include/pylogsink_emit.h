/*
 * pylogsink_emit.h: pylogsink's log function, with no Python header.
 *
 * For the files of a runtime that log and know nothing of Python: its
 * platform layer's log hook, a spdlog or glog sink (pylogsink_spdlog.hpp,
 * pylogsink_glog.hpp). They need the include directory only
 * (pylogsink.get_include()), not Python's. The binding, which calls
 * pylogsink_init and wraps each call, includes pylogsink.h, which includes
 * this file. The functions are in the same library (libpylogsink.a).
 *
 * Threads and locks: both functions may be called from any thread, with or
 * without the GIL, under any lock, in a binding call or outside one (a
 * native worker thread). They never call into Python, never take the GIL,
 * and wait for fd 2 at most the stall wait (100 ms). A record the filter
 * drops costs reading the target and a level compare: nothing is
 * formatted, allocated or locked.
 */
#ifndef PYLOGSINK_EMIT_H
#define PYLOGSINK_EMIT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How severe a record is. A level outside this range counts as the nearest
   one. PYLOGSINK_FATAL lines pass every filter and go straight to fd 2,
   after the lines the call kept: the caller is expected to abort next. */
enum pylogsink_level {
    PYLOGSINK_TRACE = 0,
    PYLOGSINK_DEBUG = 1,
    PYLOGSINK_INFO = 2,
    PYLOGSINK_WARN = 3,
    PYLOGSINK_ERROR = 4,
    PYLOGSINK_FATAL = 5
};

/* Logs one record, if the filter lets it through.
   target: the component ("myruntime::loader"), or NULL/"" for none.
   file, line: the source location (NULL and 0 for none).
   message, len: the message bytes; they need not be UTF-8 nor end in NUL. */
void pylogsink_emit(int level, const char *target, const char *file,
                    unsigned line, const char *message, size_t len);

/* pylogsink_emit with the target given by its length: target[0..target_len]
   need not end in NUL (a logger's name held as a string view, a slice of a
   longer buffer). NULL or a length of 0: no target. Bytes that are not
   UTF-8 become U+FFFD, and control characters are escaped in the record,
   as with pylogsink_emit. */
void pylogsink_emit_n(int level, const char *target, size_t target_len,
                      const char *file, unsigned line, const char *message,
                      size_t len);

/* Whether a record of `level` from `target` would be logged: 1 or 0. A
   level compare and the target's directives, for code that formats its
   messages itself, so that it formats only what is logged. */
int pylogsink_enabled(int level, const char *target);

/* The most bytes a formatted message keeps (pylogsink_vemit): what is
   longer is cut there, and the record says how much was cut. */
#define PYLOGSINK_FORMAT_MAX (64 * 1024)

/* Logs one record whose message is printf's `fmt` with `args`, if the
   filter lets it through (nothing is formatted otherwise): for a C
   library's log callback, which hands over a format and a va_list
   (FFmpeg's av_log_set_callback, SQLite's SQLITE_CONFIG_LOG). A message of
   up to 1 KiB is formatted on the stack, with no allocation; a longer one
   in a buffer of its size, at most PYLOGSINK_FORMAT_MAX bytes, and cut
   there with a note (" [pylogsink] cut: N bytes left out"); one whose
   buffer cannot be had is cut at 1 KiB. A format that fails (vsnprintf
   returns < 0) logs the format itself. One trailing newline is dropped:
   the record ends its line. `args` is used once (va_copy first to keep
   it). Any thread, any lock, as pylogsink_emit; it never calls Python. */
static inline void pylogsink_vemit(int level, const char *target, const char *file,
                                   unsigned line, const char *fmt, va_list args) {
    char stack[1024];
    char *text = stack;
    char *heap = NULL;
    size_t len;
    size_t cut = 0;
    va_list again;
    int n;
    if (fmt == NULL || !pylogsink_enabled(level, target)) return;
    va_copy(again, args);
    n = vsnprintf(stack, sizeof stack, fmt, args);
    if (n < 0) {
        va_end(again);
        pylogsink_emit(level, target, file, line, fmt, strlen(fmt));
        return;
    }
    len = (size_t)n;
    if (len >= sizeof stack) {
        size_t room = (len < PYLOGSINK_FORMAT_MAX ? len : PYLOGSINK_FORMAT_MAX) + 1;
        heap = (char *)malloc(room + 64);
        if (heap != NULL && vsnprintf(heap, room, fmt, again) >= 0) {
            text = heap;
        } else {
            /* The stack's start, with room left for the note. */
            room = sizeof stack - 64;
        }
        if (len >= room) {
            cut = len - (room - 1);
            len = room - 1;
        }
    }
    va_end(again);
    if (cut == 0 && len > 0 && text[len - 1] == '\n') len--;
    if (cut > 0) {
        /* 64 bytes are free after the kept part, in either buffer. */
        int m = snprintf(text + len, 64, " [pylogsink] cut: %zu bytes left out", cut);
        if (m > 0) len += (size_t)m < 64 ? (size_t)m : 63;
    }
    pylogsink_emit(level, target, file, line, text, len);
    free(heap);
}

/* pylogsink_vemit with the arguments given inline. */
static inline void pylogsink_emitf(int level, const char *target, const char *file,
                                   unsigned line, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static inline void pylogsink_emitf(int level, const char *target, const char *file,
                                   unsigned line, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    pylogsink_vemit(level, target, file, line, fmt, args);
    va_end(args);
}

#ifdef __cplusplus
}
#endif

#endif /* PYLOGSINK_EMIT_H */
