/*
 * pylogsink_spdlog.hpp: a spdlog sink that logs through pylogsink.
 *
 *     #include <pylogsink_spdlog.hpp>
 *
 *     auto logger = std::make_shared<spdlog::logger>(
 *         "my_runtime", std::make_shared<pylogsink::spdlog_sink_mt>());
 *     logger->set_level(spdlog::level::trace);   // pylogsink's filter decides
 *     SPDLOG_LOGGER_INFO(logger, "loaded {} layers", n);
 *
 * Each message becomes one pylogsink record: the logger's name is the
 * target (passed with its length, not copied), the source file and line
 * are the record's when spdlog has them (the SPDLOG_LOGGER_* macros), and
 * the message is spdlog's payload, without spdlog's pattern: the time,
 * level and target are written by pylogsink, in its own format. The
 * pattern set on this sink is not used.
 *
 * pylogsink_emit never calls into Python and never takes the GIL, so the
 * sink is safe under spdlog's own sink mutex, from any thread (an
 * async_logger's thread pool too: its lines reach Python as lines logged
 * outside any call do). Needs no Python header: the include directory
 * (pylogsink.get_include()) and spdlog's, and libpylogsink.a at link time.
 *
 * spdlog's levels: trace, debug, info, warn and err are pylogsink's Trace,
 * Debug, Info, Warn and Error. critical is Error too, not Fatal: a Fatal
 * line in pylogsink means that an abort follows (it passes every filter
 * and goes straight to fd 2), and spdlog's critical does not abort.
 * spdlog's logger level is checked before the sink is: set it to trace
 * (or to the lowest level the runtime logs at) and let pylogsink's filter
 * (the variable the extension names, set_log_filter) decide.
 */
#ifndef PYLOGSINK_SPDLOG_HPP
#define PYLOGSINK_SPDLOG_HPP

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>

#include <mutex>

#include "pylogsink_emit.h"

namespace pylogsink {

/* spdlog's level as pylogsink's (critical: Error, see above). */
inline int spdlog_level(spdlog::level::level_enum level) {
    switch (level) {
    case spdlog::level::trace:
        return PYLOGSINK_TRACE;
    case spdlog::level::debug:
        return PYLOGSINK_DEBUG;
    case spdlog::level::info:
        return PYLOGSINK_INFO;
    case spdlog::level::warn:
        return PYLOGSINK_WARN;
    default: // err, critical: never Fatal, which promises an abort
        return PYLOGSINK_ERROR;
    }
}

/* The sink; use spdlog_sink_mt (a std::mutex, as spdlog's _mt sinks) or
   spdlog_sink_st (no lock, as spdlog's _st sinks). */
template <typename Mutex>
class spdlog_sink : public spdlog::sinks::base_sink<Mutex> {
protected:
    void sink_it_(const spdlog::details::log_msg &msg) override {
        pylogsink_emit_n(spdlog_level(msg.level), msg.logger_name.data(),
                         msg.logger_name.size(), msg.source.filename,
                         msg.source.line > 0 ? static_cast<unsigned>(msg.source.line) : 0u,
                         msg.payload.data(), msg.payload.size());
    }

    /* pylogsink writes each line itself; nothing waits here. */
    void flush_() override {}
};

using spdlog_sink_mt = spdlog_sink<std::mutex>;
using spdlog_sink_st = spdlog_sink<spdlog::details::null_mutex>;

} // namespace pylogsink

#endif /* PYLOGSINK_SPDLOG_HPP */
