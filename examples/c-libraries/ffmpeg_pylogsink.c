/*
 * ffmpeg_pylogsink.c: FFmpeg's log lines through pylogsink.
 *
 * FFmpeg calls its log callback from the caller's thread and from its own
 * frame and slice threads, often under a codec's locks. A callback that
 * takes the GIL to call Python's logging deadlocks as soon as a Python
 * thread holds the GIL and waits for the decoder; this one never calls
 * Python. Install it once, from the binding (the module's init):
 *
 *     av_log_set_callback(ffmpeg_pylogsink);
 *
 * Records: the target is "ffmpeg::" and the item name of the context that
 * logs ("ffmpeg::h264"), or "ffmpeg" for none; the level is FFmpeg's
 * mapped to pylogsink's. pylogsink's filter decides what is logged
 * ("ffmpeg=debug"), not av_log_set_level: FFmpeg leaves the level to a
 * callback it is given. A line FFmpeg writes in several calls (its
 * macroblock dumps) is gathered per thread and logged once whole (up to
 * 2 KiB; a longer part is a record of its own, cut at 64 KiB). A part
 * whose line never ends is a record of its own, at its own level: when
 * the thread's next message has another level or context, or when the
 * thread ends (the process's first thread: at exit). With
 * av_log_set_flags(AV_LOG_SKIP_REPEATED), a thread's repeats of the same
 * line become one record "Last message repeated N times" before its next
 * other line.
 */
#include "ffmpeg_pylogsink.h"

#include <libavutil/log.h>
#include <pylogsink_emit.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FFmpeg's PANIC and FATAL come before it gives up on a stream, not on the
   process: they are errors, not pylogsink's FATAL (which expects an abort). */
static int level_of(int av_level) {
    if (av_level <= AV_LOG_ERROR) return PYLOGSINK_ERROR;
    if (av_level <= AV_LOG_WARNING) return PYLOGSINK_WARN;
    if (av_level <= AV_LOG_INFO) return PYLOGSINK_INFO;
    if (av_level <= AV_LOG_DEBUG) return PYLOGSINK_DEBUG; /* VERBOSE and DEBUG */
    return PYLOGSINK_TRACE;
}

static void target_of(void *ptr, char *target, size_t size) {
    const AVClass *avc = ptr ? *(const AVClass **)ptr : NULL;
    const char *name = avc && avc->item_name ? avc->item_name(ptr) : NULL;
    if (name && *name)
        snprintf(target, size, "ffmpeg::%s", name);
    else
        snprintf(target, size, "ffmpeg");
}

/* A thread's line under way (its level and target), and its last whole
   line (for the repeats). */
#define LINE_MAX_BYTES 2048
static _Thread_local struct {
    char text[LINE_MAX_BYTES];
    size_t len;
    int level;
    char target[64];
    char last[LINE_MAX_BYTES];
    char last_target[64];
    int last_level;
    unsigned repeats;
} line;

static void emit_line(int level, const char *target, const char *text, size_t len) {
    int skip_repeated = av_log_get_flags() & AV_LOG_SKIP_REPEATED;
    if (skip_repeated && strcmp(text, line.last) == 0 && strcmp(target, line.last_target) == 0) {
        line.repeats++;
        return;
    }
    if (line.repeats > 0)
        pylogsink_emitf(line.last_level, line.last_target, NULL, 0, "Last message repeated %u times",
                        line.repeats);
    line.repeats = 0;
    pylogsink_emit(level, target, NULL, 0, text, len);
    if (skip_repeated) {
        memcpy(line.last, text, len + 1);
        snprintf(line.last_target, sizeof line.last_target, "%s", target);
        line.last_level = level;
    }
}

/* The part under way, whose line did not end, as a record of its own. */
static void emit_part(void) {
    if (line.len == 0) return;
    line.text[line.len] = '\0';
    emit_line(line.level, line.target, line.text, line.len);
    line.len = 0;
    line.text[0] = '\0';
}

/* A thread's part under way is logged when the thread ends: a key whose
   destructor runs then (it is given a non-null value once the thread has
   a part), and, for the process's first thread, an atexit function. */
static pthread_key_t part_key;
static pthread_once_t part_once = PTHREAD_ONCE_INIT;
static void part_at_thread_end(void *unused) {
    (void)unused;
    emit_part();
}
static void part_at_exit(void) { emit_part(); }
static void make_part_key(void) {
    if (pthread_key_create(&part_key, part_at_thread_end) == 0) atexit(part_at_exit);
}

void ffmpeg_pylogsink(void *ptr, int av_level, const char *fmt, va_list args) {
    char target[64];
    int level;
    size_t n;
    if (av_level < 0 || fmt == NULL) return; /* AV_LOG_QUIET */
    level = level_of(av_level & 0xff);       /* the bits above are colours */
    target_of(ptr, target, sizeof target);
    if (!pylogsink_enabled(level, target)) return; /* nothing formatted */
    if (line.len > 0 && (level != line.level || strcmp(target, line.target) != 0))
        emit_part(); /* not this message's start: a record of its own */
    n = strlen(fmt);
    if (line.len == 0 && n > 0 && fmt[n - 1] == '\n' && !(av_log_get_flags() & AV_LOG_SKIP_REPEATED)) {
        /* The common case: one whole line, formatted on the stack. */
        pylogsink_vemit(level, target, NULL, 0, fmt, args);
        return;
    }
    {
        size_t room = sizeof line.text - line.len;
        va_list again;
        va_copy(again, args);
        int m = vsnprintf(line.text + line.len, room, fmt, args);
        if (m >= 0 && (size_t)m >= room) {
            /* Longer than the line's room: what came before is a record of
               its own, and this part is formatted as one, up to 64 KiB. */
            line.text[line.len] = '\0';
            if (line.len > 0) emit_line(level, target, line.text, line.len);
            line.len = 0;
            pylogsink_vemit(level, target, NULL, 0, fmt, again);
            va_end(again);
            return;
        }
        va_end(again);
        if (m > 0) {
            if (line.len == 0) {
                line.level = level;
                snprintf(line.target, sizeof line.target, "%s", target);
            }
            line.len += (size_t)m;
        }
    }
    if (line.len == 0) return;
    if (line.text[line.len - 1] != '\n') {
        /* More to come: the thread's end logs it if nothing does before. */
        pthread_once(&part_once, make_part_key);
        pthread_setspecific(part_key, &line);
        return;
    }
    if (line.text[line.len - 1] == '\n') line.text[--line.len] = '\0';
    emit_line(level, target, line.text, line.len);
    line.len = 0;
    line.text[0] = '\0';
}
