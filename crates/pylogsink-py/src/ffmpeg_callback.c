/*
 * FFmpeg's log callback for pylogsink.ffmpeg (ffmpeg.rs installs it).
 *
 * In C because FFmpeg hands the callback a va_list, which stable Rust
 * cannot take. It never calls Python: FFmpeg calls it from its frame and
 * slice threads, under its codecs' locks, while a Python thread may hold
 * the GIL and wait for them. It asks pylogsink's filter before it formats
 * anything, and hands each whole line to pylogsink_py_ffmpeg_emit (Rust).
 *
 * FFmpeg 4 to 8 share what this reads: an AVClass starts with its
 * class_name and item_name, and a context that logs starts with a pointer
 * to its AVClass.
 */
#ifdef _MSC_VER
#define _CRT_SECURE_NO_WARNINGS /* vsnprintf is C99's here, not a warning */
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <windows.h>
#else
#include <pthread.h>
#endif

#ifdef _MSC_VER
#define THREAD_LOCAL __declspec(thread)
#else
#define THREAD_LOCAL _Thread_local
#endif

/* ffmpeg.rs; levels are pylogsink's, 0 (trace) to 4 (error). */
int pylogsink_py_ffmpeg_enabled(int level, const char *target);
void pylogsink_py_ffmpeg_emit(int level, const char *target, const char *text, size_t len);
/* Here; also ffmpeg.rs's, which asks the filter at a level of FFmpeg's. */
int pylogsink_py_ffmpeg_level(int av_level);

struct av_class_start {
    const char *class_name;
    const char *(*item_name)(void *ctx);
};

/* FFmpeg's PANIC and FATAL give up on a stream, not on the process: they
   are errors, not pylogsink's fatal (which expects an abort next). */
int pylogsink_py_ffmpeg_level(int av_level) {
    if (av_level <= 16) return 4; /* PANIC, FATAL, ERROR */
    if (av_level <= 24) return 3; /* WARNING */
    if (av_level <= 32) return 2; /* INFO */
    if (av_level <= 48) return 1; /* VERBOSE, DEBUG */
    return 0;                     /* TRACE */
}

static void target_of(void *avcl, char *target, size_t size) {
    const struct av_class_start *avc = avcl ? *(const struct av_class_start **)avcl : NULL;
    const char *name = avc && avc->item_name ? avc->item_name(avcl) : NULL;
    if (name && *name)
        snprintf(target, size, "ffmpeg::%s", name);
    else
        snprintf(target, size, "ffmpeg");
}

/* A thread's line under way: FFmpeg writes some lines in several calls
   (its macroblock dumps), and only the last part ends in '\n'. */
#define LINE_BYTES 2048
#define LONG_LINE_BYTES (64 * 1024)
static THREAD_LOCAL struct {
    char text[LINE_BYTES];
    size_t len;
    int level;
    char target[64];
} line;

static void emit_part(void) {
    if (line.len == 0) return;
    if (line.text[line.len - 1] == '\n') line.len--;
    pylogsink_py_ffmpeg_emit(line.level, line.target, line.text, line.len);
    line.len = 0;
}

/* A part whose line never ends is logged when its thread ends (the
   process's first thread: at exit), if nothing logs it before: a
   thread-specific key's destructor (POSIX), a fiber-local slot's callback
   (Windows), which run on the ending thread. watch_part_end arms it for
   the calling thread. */
#ifdef _WIN32
static DWORD part_slot = FLS_OUT_OF_INDEXES;
static INIT_ONCE part_once = INIT_ONCE_STATIC_INIT;
static void WINAPI part_at_thread_end(void *unused) {
    (void)unused;
    emit_part();
}
static BOOL CALLBACK make_part_slot(INIT_ONCE *once, void *param, void **context) {
    (void)once;
    (void)param;
    (void)context;
    part_slot = FlsAlloc(part_at_thread_end);
    if (part_slot != FLS_OUT_OF_INDEXES) atexit(emit_part);
    return TRUE;
}
static void watch_part_end(void) {
    InitOnceExecuteOnce(&part_once, make_part_slot, NULL, NULL);
    if (part_slot != FLS_OUT_OF_INDEXES) FlsSetValue(part_slot, &line); /* non-null: the callback runs */
}
#else
static pthread_key_t part_key;
static pthread_once_t part_once = PTHREAD_ONCE_INIT;
static void part_at_thread_end(void *unused) {
    (void)unused;
    emit_part();
}
static void make_part_key(void) {
    if (pthread_key_create(&part_key, part_at_thread_end) == 0) atexit(emit_part);
}
static void watch_part_end(void) {
    pthread_once(&part_once, make_part_key);
    pthread_setspecific(part_key, &line); /* non-null: the destructor runs */
}
#endif

void pylogsink_py_ffmpeg_callback(void *avcl, int av_level, const char *fmt, va_list args) {
    char target[64];
    int level, n;
    size_t room;
    va_list again;
    if (av_level < 0 || fmt == NULL) return; /* AV_LOG_QUIET */
    level = pylogsink_py_ffmpeg_level(av_level & 0xff);       /* the bits above are colours */
    target_of(avcl, target, sizeof target);
    if (!pylogsink_py_ffmpeg_enabled(level, target)) return; /* nothing formatted */
    if (line.len > 0 && (level != line.level || strcmp(target, line.target) != 0))
        emit_part(); /* another message's start: the part is a record of its own */
    if (line.len == 0) {
        line.level = level;
        memcpy(line.target, target, sizeof target);
    }
    room = sizeof line.text - line.len;
    va_copy(again, args);
    n = vsnprintf(line.text + line.len, room, fmt, args);
    if (n >= 0 && (size_t)n >= room) {
        /* Longer than the line's room: the part before is a record, and
           this one too, formatted in a buffer of its size. */
        size_t size = (size_t)n < LONG_LINE_BYTES ? (size_t)n + 1 : LONG_LINE_BYTES;
        char *text = malloc(size);
        emit_part();
        if (text != NULL) {
            n = vsnprintf(text, size, fmt, again);
            if (n > 0) {
                size_t len = (size_t)n < size ? (size_t)n : size - 1;
                if (text[len - 1] == '\n') len--;
                pylogsink_py_ffmpeg_emit(level, target, text, len);
            }
            free(text);
        }
        va_end(again);
        return;
    }
    va_end(again);
    if (n > 0) line.len += (size_t)n;
    if (line.len == 0) return;
    if (line.text[line.len - 1] == '\n') {
        emit_part();
    } else {
        watch_part_end();
    }
}
