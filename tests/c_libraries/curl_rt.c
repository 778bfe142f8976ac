/*
 * curl_rt: a small extension over libcurl whose transfers log through the
 * recipe (examples/c-libraries/curl_pylogsink.c).
 *
 * get(url, times=1, threads=1) -> bytes received: `threads` native threads
 * each GET the URL `times` times, the GIL released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <curl/curl.h>
#include <pthread.h>
#include <pylogsink.h>
#include <string.h>

#include "curl_pylogsink.h"

struct job {
    const char *url;
    int times;
    size_t received;
    CURLcode failed;
};

static size_t keep(char *data, size_t size, size_t n, void *userp) {
    (void)data;
    ((struct job *)userp)->received += size * n;
    return size * n;
}

static void *transfer(void *arg) {
    struct job *job = arg;
    CURL *handle = curl_easy_init();
    if (!handle) {
        job->failed = CURLE_FAILED_INIT;
        return NULL;
    }
    curl_pylogsink_setup(handle);
    curl_easy_setopt(handle, CURLOPT_URL, job->url);
    curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, keep);
    curl_easy_setopt(handle, CURLOPT_WRITEDATA, job);
    for (int i = 0; i < job->times && !job->failed; i++) job->failed = curl_easy_perform(handle);
    curl_easy_cleanup(handle);
    return NULL;
}

static PyObject *get(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"url", "times", "threads", NULL};
    const char *url;
    int times = 1, threads = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|ii", names, &url, &times, &threads)) return NULL;
    if (threads < 1 || threads > 64) return PyErr_Format(PyExc_ValueError, "threads must be 1 to 64");
    struct job jobs[64];
    pthread_t ids[64];
    size_t received = 0;
    CURLcode failed = CURLE_OK;
    pylogsink_call_enter();
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; i < threads; i++) {
        jobs[i] = (struct job){url, times, 0, CURLE_OK};
        pthread_create(&ids[i], NULL, transfer, &jobs[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(ids[i], NULL);
        received += jobs[i].received;
        if (jobs[i].failed) failed = jobs[i].failed;
    }
    Py_END_ALLOW_THREADS
    if (pylogsink_call_exit() < 0) return NULL;
    if (failed) {
        const char *why = curl_easy_strerror(failed);
        return pylogsink_raise(PyExc_RuntimeError, why, strlen(why));
    }
    return PyLong_FromSize_t(received);
}

static PyMethodDef methods[] = {
    {"get", (PyCFunction)(void (*)(void))get, METH_VARARGS | METH_KEYWORDS,
     "get(url, times=1, threads=1): bytes received."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "curl_rt", NULL, -1, methods};

PyMODINIT_FUNC PyInit_curl_rt(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || pylogsink_init("CURL_RT_LOG", "warn") < 0 ||
        pylogsink_add_functions(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
