/*
 * glog_rt: a pybind11 extension whose runtime logs through glog, with
 * pylogsink::glog_sink added and glog's own outputs turned off (FATAL
 * alone still goes to fd 2 from glog too).
 */
#include <pylogsink.hpp>
#include <pylogsink_glog.hpp>

#include <string>

namespace py = pybind11;

PYBIND11_MODULE(glog_rt, m) {
    if (pylogsink_init("GLOG_RT_LOG", "info") < 0 || pylogsink_add_functions(m.ptr()) < 0)
        throw py::error_already_set();

    if (!google::IsGoogleLoggingInitialized()) google::InitGoogleLogging("glog_rt");
    for (int s = google::GLOG_INFO; s < google::NUM_SEVERITIES; s++)
        google::SetLogDestination(static_cast<google::LogSeverity>(s), "");
    FLAGS_stderrthreshold = google::GLOG_FATAL;
    // Never destroyed: glog keeps a pointer to it until the process ends.
    google::AddLogSink(new pylogsink::glog_sink());

    // log(severity, message): INFO 0, WARNING 1, ERROR 2.
    m.def(
        "log",
        [](int severity, const std::string &message) {
            switch (severity) {
            case google::GLOG_INFO:
                LOG(INFO) << message;
                break;
            case google::GLOG_WARNING:
                LOG(WARNING) << message;
                break;
            default:
                LOG(ERROR) << message;
            }
        },
        py::call_guard<pylogsink::scope>());

    // A line of context, then FATAL: glog aborts.
    m.def(
        "fatal",
        [] {
            LOG(INFO) << "context: 3 of 4 shards loaded";
            LOG(FATAL) << "shard 4 is corrupt";
        },
        py::call_guard<pylogsink::scope>());
}
