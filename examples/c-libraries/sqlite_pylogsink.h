/* SQLite's error log through pylogsink: sqlite_pylogsink_install() before
   SQLite initializes. See sqlite_pylogsink.c. */
#ifndef SQLITE_PYLOGSINK_H
#define SQLITE_PYLOGSINK_H

void sqlite_pylogsink(void *arg, int code, const char *message);
int sqlite_pylogsink_install(void);

#endif
