/* FFmpeg's log lines through pylogsink: install with
   av_log_set_callback(ffmpeg_pylogsink). See ffmpeg_pylogsink.c. */
#ifndef FFMPEG_PYLOGSINK_H
#define FFMPEG_PYLOGSINK_H

#include <stdarg.h>

void ffmpeg_pylogsink(void *ptr, int level, const char *fmt, va_list args);

#endif
