/*
 * ctypes_rt: a C runtime that Python drives through ctypes, built with no
 * Python header: a plain shared library (a DLL on Windows) linked with
 * pylogsink's static library. Its log hook needs only pylogsink_emit.h; the
 * binding functions of pylogsink.h that take no Python object are declared
 * here. Python calls the binding functions through ctypes.PyDLL (the GIL
 * held; an exception they set is raised) and the work through ctypes.CDLL
 * (the GIL released, as Py_BEGIN_ALLOW_THREADS would).
 */
#include "pylogsink_emit.h"

#include <stdio.h>

#ifdef _WIN32
#include <windows.h>
#define EXPORT __declspec(dllexport)
#else
#include <pthread.h>
#define EXPORT __attribute__((visibility("default")))
#endif

/* From pylogsink.h, which includes Python.h; these take no Python object. */
int pylogsink_init(const char *env_var, const char *default_filter);
void pylogsink_call_enter(void);
int pylogsink_call_exit(void);

/* The binding: the filter from `env_var` (Info if unset), a call's edges. */
EXPORT int rt_init(const char *env_var) { return pylogsink_init(env_var, "info"); }
EXPORT void rt_enter(void) { pylogsink_call_enter(); }
EXPORT int rt_exit(void) { return pylogsink_call_exit(); }

/* rt_log(tag, n): n Info lines "<tag> <i>" (target "ctypes_rt"), and one
   Debug line, which the default filter drops. */
EXPORT void rt_log(const char *tag, int n) {
    char line[128];
    for (int i = 0; i < n; i++) {
        int len = snprintf(line, sizeof line, "%s %d", tag, i);
        pylogsink_emit(PYLOGSINK_INFO, "ctypes_rt", __FILE__, __LINE__, line, (size_t)len);
    }
    pylogsink_emit(PYLOGSINK_DEBUG, "ctypes_rt", __FILE__, __LINE__, "dropped", 7);
}

/* rt_log_threads(threads, n): each of `threads` native threads (at most 16)
   logs n lines "worker <t> <i>"; they are joined before the return. */
struct worker {
    int index, lines;
};

#ifdef _WIN32
static DWORD WINAPI worker_main(LPVOID arg) {
#else
static void *worker_main(void *arg) {
#endif
    const struct worker *w = arg;
    char tag[32];
    char line[64];
    snprintf(tag, sizeof tag, "worker %d", w->index);
    for (int i = 0; i < w->lines; i++) {
        int len = snprintf(line, sizeof line, "%s %d", tag, i);
        pylogsink_emit(PYLOGSINK_INFO, "ctypes_rt", __FILE__, __LINE__, line, (size_t)len);
    }
    return 0;
}

EXPORT void rt_log_threads(int threads, int n) {
    struct worker workers[16];
    if (threads > 16) threads = 16;
#ifdef _WIN32
    HANDLE handles[16];
    for (int t = 0; t < threads; t++) {
        workers[t] = (struct worker){t, n};
        handles[t] = CreateThread(NULL, 0, worker_main, &workers[t], 0, NULL);
        if (handles[t] == NULL) worker_main(&workers[t]); /* no thread: its lines all the same */
    }
    for (int t = 0; t < threads; t++) {
        if (handles[t] == NULL) continue;
        WaitForSingleObject(handles[t], INFINITE);
        CloseHandle(handles[t]);
    }
#else
    pthread_t handles[16];
    for (int t = 0; t < threads; t++) {
        workers[t] = (struct worker){t, n};
        if (pthread_create(&handles[t], NULL, worker_main, &workers[t]) != 0) {
            worker_main(&workers[t]); /* no thread: its lines all the same */
            workers[t].lines = -1;
        }
    }
    for (int t = 0; t < threads; t++)
        if (workers[t].lines >= 0) pthread_join(handles[t], NULL);
#endif
}
