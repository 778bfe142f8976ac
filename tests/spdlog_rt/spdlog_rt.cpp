/*
 * spdlog_rt: a pybind11 extension whose runtime logs through spdlog, with
 * pylogsink::spdlog_sink_mt, or with a naive sink that writes each message
 * through sys.stderr.write, taking the GIL for it under spdlog's sink
 * mutex (what a sink built on pybind11 alone does).
 */
#include <pylogsink.hpp>
#include <pylogsink_spdlog.hpp>

#include <spdlog/async.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace py = pybind11;

namespace {

class naive_sink : public spdlog::sinks::base_sink<std::mutex> {
protected:
    void sink_it_(const spdlog::details::log_msg &msg) override {
        py::gil_scoped_acquire gil;
        try {
            std::string line(msg.payload.data(), msg.payload.size());
            py::module_::import("sys").attr("stderr").attr("write")(line + "\n");
        } catch (py::error_already_set &) {
        }
    }
    void flush_() override {}
};

// The runtime's logger, through pylogsink.
std::shared_ptr<spdlog::logger> make_logger(const std::string &name) {
    auto sink = std::make_shared<pylogsink::spdlog_sink_mt>();
    auto logger = std::make_shared<spdlog::logger>(name, sink);
    logger->set_level(spdlog::level::trace); // pylogsink's filter decides
    return logger;
}

// The runtime's loggers, made at import and never destroyed: spdlog may
// still be called from native threads while the process exits.
std::shared_ptr<spdlog::logger> *with_pylogsink, *with_naive, *current;
std::shared_ptr<spdlog::details::thread_pool> *pool;
std::shared_ptr<spdlog::async_logger> *async_log;

spdlog::logger &logger() { return **current; }

} // namespace

PYBIND11_MODULE(spdlog_rt, m) {
    if (pylogsink_init("SPDLOG_RT_LOG", "info") < 0 || pylogsink_add_functions(m.ptr()) < 0)
        throw py::error_already_set();

    with_pylogsink = new std::shared_ptr<spdlog::logger>(make_logger("rt"));
    with_naive = new std::shared_ptr<spdlog::logger>(
        std::make_shared<spdlog::logger>("rt", std::make_shared<naive_sink>()));
    (*with_naive)->set_level(spdlog::level::trace);
    // spdlog's async logger: one pool thread calls the sink.
    pool = new std::shared_ptr<spdlog::details::thread_pool>(
        std::make_shared<spdlog::details::thread_pool>(8192, 1));
    async_log = new std::shared_ptr<spdlog::async_logger>(std::make_shared<spdlog::async_logger>(
        "rt::async", std::make_shared<pylogsink::spdlog_sink_mt>(), *pool,
        spdlog::async_overflow_policy::block));
    (*async_log)->set_level(spdlog::level::trace);
    current = with_pylogsink;

    // Before any thread logs.
    m.def("set_sink", [](const std::string &name) {
        current = name == "naive" ? with_naive : with_pylogsink;
    });

    // fan_out(workers, lines): native threads attached to the call, each
    // logging "worker W line N" through the one logger (under its sink
    // mutex), with the GIL released while they run.
    m.def("fan_out", [](int workers, int lines) {
        pylogsink::call([&] {
            pylogsink_handle *call = pylogsink_call_handle();
            {
                py::gil_scoped_release released;
                std::vector<std::thread> threads;
                for (int w = 0; w < workers; w++) {
                    threads.emplace_back([call, w, lines] {
                        pylogsink_attach(call);
                        for (int i = 0; i < lines; i++)
                            SPDLOG_LOGGER_INFO(&logger(), "worker {} line {}", w, i);
                        pylogsink_detach();
                    });
                }
                for (auto &t : threads) t.join();
            }
            pylogsink_handle_free(call);
        });
    });

    // One line with the GIL held throughout: waits for the sink mutex.
    m.def(
        "log_with_gil", [] { SPDLOG_LOGGER_INFO(&logger(), "from the thread that holds the GIL"); },
        py::call_guard<pylogsink::scope>());

    // log(level, message, source): one line at spdlog's level, with or
    // without a source location.
    m.def(
        "log",
        [](int level, const std::string &message, bool source) {
            auto lvl = static_cast<spdlog::level::level_enum>(level);
            if (source)
                logger().log(spdlog::source_loc{__FILE__, __LINE__, SPDLOG_FUNCTION}, lvl, "{}", message);
            else
                logger().log(lvl, "{}", message);
        },
        py::arg("level"), py::arg("message"), py::arg("source") = true,
        py::call_guard<pylogsink::scope>());

    // log_async(n, delay_ms): a native thread no call knows of logs n lines
    // through the async logger delay_ms after the binding returned; spdlog's
    // pool thread hands them to the sink.
    m.def(
        "log_async",
        [](int n, int delay_ms) {
            std::thread([n, delay_ms] {
                std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
                for (int i = 0; i < n; i++) (*async_log)->info("async line {}", i);
            }).detach();
        },
        py::call_guard<pylogsink::scope>());
}
