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
 * SQLITE_CONFIG_LOG is set once per copy of the library in the process.
 * Before SQLite 3.42 only before it initializes: sqlite_pylogsink_install
 * then returns SQLITE_MISUSE (21) if Python's sqlite3 module, which loads
 * the same shared libsqlite3, used it first (IPython opens its history
 * database at start). An extension that links its own copy (the static
 * libsqlite3.a, its symbols kept private) is never too late.
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
