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

#include <stddef.h>

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

#ifdef __cplusplus
}
#endif

#endif /* PYLOGSINK_EMIT_H */
