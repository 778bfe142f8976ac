/*
 * sqlite_rt: a small extension over SQLite that installs the recipe
 * (examples/c-libraries/sqlite_pylogsink.c) when it is imported. Built twice
 * (setup.py): sqlite_rt with its own copy of SQLite (the static library,
 * symbols kept private), sqlite_rt_shared with the shared libsqlite3.
 *
 * installed: what sqlite_pylogsink_install returned (0, or 21 too late);
 * run(script, threads=1) -> error messages: `threads` native threads each
 * run the script on their own in-memory database, the GIL released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <pylogsink.h>
#include <sqlite3.h>

#include "sqlite_pylogsink.h"

#ifndef MODULE
#define MODULE sqlite_rt
#endif
#define TEXT(x) #x
#define NAME(x) TEXT(x)
#define JOIN(a, b) a##b
#define INIT(m) JOIN(PyInit_, m)

struct job {
    const char *script;
    int rc;
    char *error;
};

static void *run_script(void *arg) {
    struct job *job = arg;
    sqlite3 *db = NULL;
    job->rc = sqlite3_open(":memory:", &db);
    if (job->rc == SQLITE_OK) job->rc = sqlite3_exec(db, job->script, NULL, NULL, &job->error);
    sqlite3_close(db);
    return NULL;
}

static PyObject *run(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"script", "threads", NULL};
    const char *script;
    int threads = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|i", names, &script, &threads)) return NULL;
    if (threads < 1 || threads > 64) return PyErr_Format(PyExc_ValueError, "threads must be 1 to 64");
    struct job jobs[64];
    pthread_t ids[64];
    pylogsink_call_enter();
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; i < threads; i++) {
        jobs[i] = (struct job){script, 0, NULL};
        pthread_create(&ids[i], NULL, run_script, &jobs[i]);
    }
    for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
    Py_END_ALLOW_THREADS
    if (pylogsink_call_exit() < 0) return NULL;
    PyObject *errors = PyList_New(0);
    for (int i = 0; i < threads; i++) {
        if (errors && jobs[i].error) {
            PyObject *e = PyUnicode_DecodeUTF8(jobs[i].error, (Py_ssize_t)strlen(jobs[i].error), "backslashreplace");
            if (!e || PyList_Append(errors, e) < 0) Py_CLEAR(errors);
            Py_XDECREF(e);
        }
        sqlite3_free(jobs[i].error);
    }
    return errors;
}

static PyMethodDef methods[] = {
    {"run", (PyCFunction)(void (*)(void))run, METH_VARARGS | METH_KEYWORDS,
     "run(script, threads=1): error messages of each thread's run."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, NAME(MODULE), NULL, -1, methods};

PyMODINIT_FUNC INIT(MODULE)(void) {
    /* Before anything of SQLite's runs in this copy of the library. */
    int installed = sqlite_pylogsink_install();
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (pylogsink_init("SQLITE_RT_LOG", "info") < 0 || pylogsink_add_functions(m) < 0 ||
        PyModule_AddIntConstant(m, "installed", installed) < 0 ||
        PyModule_AddStringConstant(m, "sqlite_version", sqlite3_libversion()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
