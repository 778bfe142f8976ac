/*
 * av_rt: a small extension over libavcodec, built as an FFmpeg wrapper is,
 * that logs through one of three callbacks: ffmpeg_pylogsink (the recipe,
 * examples/c-libraries), FFmpeg's default (lines to fd 2), or "python", the
 * callback many wrappers have: take the GIL and call logging per line.
 *
 * encode(frames, size) -> list of packets (MPEG-4 part 2, made here);
 * decode(packets, threads=4, debug=0, gil=False) -> frames decoded, with
 * frame threads (thread_type FRAME|SLICE), the GIL released unless gil;
 * wait_frames(n) waits for n frames of a decode under way, the GIL held.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <libavcodec/avcodec.h>
#include <libavutil/log.h>
#include <pthread.h>
#include <pylogsink.h>
#include <string.h>

#include "ffmpeg_pylogsink.h"

/* "python": a callback as many wrappers write it. */
static void python_callback(void *ptr, int av_level, const char *fmt, va_list args) {
    char text[1024];
    const AVClass *avc = ptr ? *(const AVClass **)ptr : NULL;
    const char *name = avc && avc->item_name ? avc->item_name(ptr) : "";
    int level = av_level <= AV_LOG_ERROR ? 40 : av_level <= AV_LOG_WARNING ? 30 : av_level <= AV_LOG_INFO ? 20 : 10;
    if (av_level < 0 || av_level > av_log_get_level() || !Py_IsInitialized()) return;
    vsnprintf(text, sizeof text, fmt, args);
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *logging = PyImport_ImportModule("logging");
    PyObject *done = logging ? PyObject_CallMethod(logging, "getLogger", "s", "libav") : NULL;
    Py_XDECREF(logging);
    if (done) {
        PyObject *r = PyObject_CallMethod(done, "log", "isss", level, "%s: %s", name, text);
        Py_XDECREF(r);
        Py_DECREF(done);
    }
    if (PyErr_Occurred()) PyErr_Clear();
    PyGILState_Release(gil);
}

static long frames_done;
static int ended; /* a decode ended, and none began since */
static pthread_mutex_t progress_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t progress = PTHREAD_COND_INITIALIZER;

static void progressed(long frames, int running) {
    pthread_mutex_lock(&progress_lock);
    frames_done = frames;
    ended = !running;
    pthread_cond_broadcast(&progress);
    pthread_mutex_unlock(&progress_lock);
}

static PyObject *use(PyObject *self, PyObject *arg) {
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    if (strcmp(name, "pylogsink") == 0)
        av_log_set_callback(ffmpeg_pylogsink);
    else if (strcmp(name, "python") == 0)
        av_log_set_callback(python_callback);
    else if (strcmp(name, "default") == 0)
        av_log_set_callback(av_log_default_callback);
    else
        return PyErr_Format(PyExc_ValueError, "no callback %R", arg);
    Py_RETURN_NONE;
}

static PyObject *encode(PyObject *self, PyObject *args) {
    int frames, size;
    if (!PyArg_ParseTuple(args, "ii", &frames, &size)) return NULL;
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
    AVCodecContext *ctx = avcodec_alloc_context3(codec);
    AVFrame *frame = av_frame_alloc();
    AVPacket *packet = av_packet_alloc();
    PyObject *out = PyList_New(0);
    ctx->width = ctx->height = size;
    ctx->time_base = (AVRational){1, 25};
    ctx->pix_fmt = AV_PIX_FMT_YUV420P;
    ctx->gop_size = 12;
    ctx->max_b_frames = 2;
    frame->format = ctx->pix_fmt;
    frame->width = frame->height = size;
    if (avcodec_open2(ctx, codec, NULL) < 0 || av_frame_get_buffer(frame, 0) < 0) {
        PyErr_SetString(PyExc_RuntimeError, "cannot open the MPEG-4 encoder");
        Py_CLEAR(out);
        frames = -1;
    }
    for (int i = 0; i <= frames; i++) {
        if (i < frames) {
            av_frame_make_writable(frame);
            for (int y = 0; y < size; y++)
                for (int x = 0; x < size; x++) frame->data[0][y * frame->linesize[0] + x] = (uint8_t)(x + y + 3 * i);
            for (int y = 0; y < size / 2; y++)
                for (int x = 0; x < size / 2; x++) {
                    frame->data[1][y * frame->linesize[1] + x] = (uint8_t)(128 + y + i);
                    frame->data[2][y * frame->linesize[2] + x] = (uint8_t)(64 + x + 2 * i);
                }
            frame->pts = i;
        }
        avcodec_send_frame(ctx, i < frames ? frame : NULL);
        while (avcodec_receive_packet(ctx, packet) == 0) {
            PyObject *bytes = PyBytes_FromStringAndSize((const char *)packet->data, packet->size);
            if (!bytes || PyList_Append(out, bytes) < 0) Py_CLEAR(out);
            Py_XDECREF(bytes);
            av_packet_unref(packet);
            if (!out) break;
        }
        if (!out) break;
    }
    av_packet_free(&packet);
    av_frame_free(&frame);
    avcodec_free_context(&ctx);
    return out;
}

struct job {
    const char **data;
    int *sizes;
    Py_ssize_t count;
    int threads, debug;
    long frames;
    int failed;
};

static void run(struct job *job) {
    const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_MPEG4);
    AVCodecContext *ctx = avcodec_alloc_context3(codec);
    AVPacket *packet = av_packet_alloc();
    AVFrame *frame = av_frame_alloc();
    ctx->thread_count = job->threads;
    ctx->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
    ctx->debug = job->debug;
    progressed(0, 1);
    if (avcodec_open2(ctx, codec, NULL) < 0) job->failed = 1;
    for (Py_ssize_t i = 0; !job->failed && i <= job->count; i++) {
        if (i < job->count) {
            packet->data = (uint8_t *)job->data[i];
            packet->size = job->sizes[i];
        }
        if (avcodec_send_packet(ctx, i < job->count ? packet : NULL) < 0) job->failed = 1;
        while (avcodec_receive_frame(ctx, frame) == 0) progressed(++job->frames, 1);
    }
    packet->data = NULL;
    packet->size = 0;
    av_packet_free(&packet);
    av_frame_free(&frame);
    avcodec_free_context(&ctx);
    progressed(job->frames, 0);
}

static PyObject *decode(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"packets", "threads", "debug", "gil", NULL};
    PyObject *packets;
    struct job job = {0};
    int gil = 0;
    job.threads = 4;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|iip", names, &PyList_Type, &packets, &job.threads,
                                     &job.debug, &gil))
        return NULL;
    job.count = PyList_GET_SIZE(packets);
    job.data = PyMem_Calloc((size_t)job.count + 1, sizeof *job.data);
    job.sizes = PyMem_Calloc((size_t)job.count + 1, sizeof *job.sizes);
    if (!job.data || !job.sizes) {
        PyMem_Free(job.data);
        PyMem_Free(job.sizes);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < job.count; i++) {
        PyObject *p = PyList_GET_ITEM(packets, i);
        if (!PyBytes_Check(p)) {
            PyMem_Free(job.data);
            PyMem_Free(job.sizes);
            return PyErr_Format(PyExc_TypeError, "packet %zd is not bytes", i);
        }
        job.data[i] = PyBytes_AS_STRING(p);
        job.sizes[i] = (int)PyBytes_GET_SIZE(p);
    }
    Py_INCREF(packets); /* the bytes stay while the decoder reads them */
    pylogsink_call_enter();
    if (gil) {
        run(&job);
    } else {
        Py_BEGIN_ALLOW_THREADS run(&job);
        Py_END_ALLOW_THREADS
    }
    Py_DECREF(packets);
    PyMem_Free(job.data);
    PyMem_Free(job.sizes);
    if (pylogsink_call_exit() < 0) return NULL;
    if (job.failed) return pylogsink_raise(PyExc_RuntimeError, "decoding failed", 15);
    return PyLong_FromLong(job.frames);
}

/* Waits, the GIL held (as a binding that forgot to release it), until a
   decode has made n frames or ended (one that has not begun yet too). */
static PyObject *wait_frames(PyObject *self, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    pthread_mutex_lock(&progress_lock);
    while (frames_done < n && !ended) pthread_cond_wait(&progress, &progress_lock);
    long seen = frames_done;
    pthread_mutex_unlock(&progress_lock);
    return PyLong_FromLong(seen);
}

/* av_log(NULL, level, "%s", text), `times` times: a library's own calls. */
static PyObject *log_text(PyObject *self, PyObject *args) {
    int level, times = 1;
    const char *text;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "iy#|i", &level, &text, &len, &times)) return NULL;
    pylogsink_call_enter();
    for (int i = 0; i < times; i++) av_log(NULL, level, "%s", text);
    if (pylogsink_call_exit() < 0) return NULL;
    Py_RETURN_NONE;
}

struct logged {
    int level;
    const char *text;
};

static void *log_then_end(void *arg) {
    struct logged *logged = arg;
    av_log(NULL, logged->level, "%s", logged->text);
    return NULL;
}

static PyObject *log_in_thread(PyObject *self, PyObject *args) {
    struct logged logged;
    Py_ssize_t len;
    pthread_t thread;
    if (!PyArg_ParseTuple(args, "iy#", &logged.level, &logged.text, &len)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    if (pthread_create(&thread, NULL, log_then_end, &logged) == 0) pthread_join(thread, NULL);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *set_flags(PyObject *self, PyObject *arg) {
    av_log_set_flags((int)PyLong_AsLong(arg));
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyObject *set_level(PyObject *self, PyObject *arg) {
    av_log_set_level((int)PyLong_AsLong(arg));
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"use", use, METH_O, "Chooses the log callback: 'pylogsink', 'python' or 'default'."},
    {"encode", encode, METH_VARARGS, "encode(frames, size): MPEG-4 packets."},
    {"decode", (PyCFunction)(void (*)(void))decode, METH_VARARGS | METH_KEYWORDS,
     "decode(packets, threads=4, debug=0, gil=False): frames decoded."},
    {"wait_frames", wait_frames, METH_O, "Waits with the GIL held for n frames of a decode under way."},
    {"log", log_text, METH_VARARGS, "log(level, text, times=1): av_log(NULL, level, \"%s\", text)."},
    {"log_in_thread", log_in_thread, METH_VARARGS,
     "log_in_thread(level, text): av_log(NULL, level, \"%s\", text) on a thread that then ends."},
    {"set_flags", set_flags, METH_O, "av_log_set_flags(flags)."},
    {"set_level", set_level, METH_O, "av_log_set_level(level): the default and python callbacks' level."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "av_rt", NULL, -1, methods};

PyMODINIT_FUNC PyInit_av_rt(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (pylogsink_init("AV_RT_LOG", "warn") < 0 || pylogsink_add_functions(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    av_log_set_callback(ffmpeg_pylogsink);
    return m;
}
