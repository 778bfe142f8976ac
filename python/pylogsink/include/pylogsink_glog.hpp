/*
 * pylogsink_glog.hpp: a glog sink that logs through pylogsink.
 *
 *     #include <pylogsink_glog.hpp>
 *
 *     static pylogsink::glog_sink sink;          // target "glog"
 *     google::AddLogSink(&sink);                 // RemoveLogSink before it dies
 *     LOG(WARNING) << "cache miss for " << key;
 *
 * Each message becomes one pylogsink record: the target is the one given
 * to the constructor ("glog" by default: one name for every glog line,
 * which users filter with "glog=info"; the file's base name is in the
 * record anyway), the file and line are LOG()'s, and the message is
 * glog's text without its prefix: the time, level and target are written
 * by pylogsink, in its own format.
 *
 * pylogsink_emit never calls into Python and never takes the GIL, so the
 * sink is safe where glog calls it: with glog's own mutex held, on any
 * thread. Needs no Python header: the include directory
 * (pylogsink.get_include()) and glog's, and libpylogsink.a at link time.
 *
 * Severities: INFO (and VLOG) is Info, WARNING Warn, ERROR Error. FATAL is
 * Error too, not Fatal: glog aborts by itself once the sinks have the
 * message, and pylogsink's crash handler then writes the lines still
 * waiting in memory (the call's, before the FATAL one) to fd 2 before the
 * abort takes its course.
 *
 * A sink does not turn glog's own outputs off: before InitGoogleLogging
 * glog writes every message to stderr as well, and after it to its log
 * files, and ERROR and above to stderr. A runtime that wants pylogsink
 * alone says so to glog, e.g. after InitGoogleLogging:
 *
 *     for (int s = google::GLOG_INFO; s < google::NUM_SEVERITIES; s++)  // no log files
 *         google::SetLogDestination(static_cast<google::LogSeverity>(s), "");
 *     FLAGS_stderrthreshold = google::GLOG_FATAL;  // FATAL alone on fd 2 as well
 *
 * Works with glog 0.6 and newer (the send() with LogMessageTime) and with
 * older glog (the send() with std::tm), chosen by the header glog has.
 */
#ifndef PYLOGSINK_GLOG_HPP
#define PYLOGSINK_GLOG_HPP

#include <glog/logging.h>

#include <cstddef>
#include <string>
#include <utility>

#include "pylogsink_emit.h"

namespace pylogsink {

/* glog's severity as pylogsink's (FATAL: Error, see above). */
inline int glog_level(google::LogSeverity severity) {
    switch (severity) {
    case google::GLOG_INFO:
        return PYLOGSINK_INFO;
    case google::GLOG_WARNING:
        return PYLOGSINK_WARN;
    default: // ERROR, FATAL: glog aborts after FATAL by itself
        return PYLOGSINK_ERROR;
    }
}

class glog_sink : public google::LogSink {
public:
    explicit glog_sink(std::string target = "glog") : target_(std::move(target)) {}

    using google::LogSink::send; // the overload not overridden stays visible

// glog 0.6 brought GLOG_EXPORT (glog/export.h) and the send() that takes a
// LogMessageTime, whose default calls the older one, now deprecated.
#ifdef GLOG_EXPORT
    void send(google::LogSeverity severity, const char *full_filename,
              const char * /*base_filename*/, int line,
              const google::LogMessageTime & /*time*/, const char *message,
              std::size_t message_len) override {
        forward(severity, full_filename, line, message, message_len);
    }
#else
    void send(google::LogSeverity severity, const char *full_filename,
              const char * /*base_filename*/, int line, const struct ::tm * /*tm_time*/,
              const char *message, std::size_t message_len) override {
        forward(severity, full_filename, line, message, message_len);
    }
#endif

private:
    void forward(google::LogSeverity severity, const char *file, int line, const char *message,
                 std::size_t len) const {
        pylogsink_emit_n(glog_level(severity), target_.data(), target_.size(), file,
                         line > 0 ? static_cast<unsigned>(line) : 0u, message, len);
    }

    std::string target_;
};

} // namespace pylogsink

#endif /* PYLOGSINK_GLOG_HPP */
