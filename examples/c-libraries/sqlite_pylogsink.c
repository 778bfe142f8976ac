/*
 * sqlite_pylogsink.c: SQLite's error log (SQLITE_CONFIG_LOG) through
 * pylogsink.
 *
 * SQLite calls the log function from any thread that uses it, under its
 * own mutexes, and it must not call SQLite back; this one never calls
 * Python either. Records have the target "sqlite", the message SQLite
 * wrote and its result code ("no such table: nope (code 1)"); notices are
 * INFO, warnings (an automatic index) WARN, the rest ERROR.
 *
 * SQLITE_CONFIG_LOG can only be set before SQLite initializes, once per
 * copy of the library in the process. sqlite_pylogsink_install returns
 * SQLITE_MISUSE when it is too late: Python's sqlite3 module initializes
 * the shared libsqlite3 it loads (CPython 3.11 at import, and IPython opens
 * its history database at start). An extension that links its own copy
 * (the static libsqlite3.a, its symbols kept private) is never too late.
 */
#include "sqlite_pylogsink.h"

#include <pylogsink_emit.h>
#include <sqlite3.h>

void sqlite_pylogsink(void *arg, int code, const char *message) {
    (void)arg;
    int level = (code & 0xff) == SQLITE_NOTICE    ? PYLOGSINK_INFO
                : (code & 0xff) == SQLITE_WARNING ? PYLOGSINK_WARN
                                                  : PYLOGSINK_ERROR;
    pylogsink_emitf(level, "sqlite", NULL, 0, "%s (code %d)", message ? message : "", code);
}

int sqlite_pylogsink_install(void) {
    return sqlite3_config(SQLITE_CONFIG_LOG, sqlite_pylogsink, (void *)0);
}
