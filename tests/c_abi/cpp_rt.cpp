/*
 * cpp_rt: a pybind11 extension over backend.h, with the same functions as
 * c_rt. Bindings use py::call_guard<pylogsink::scope> or pylogsink::call.
 */
#include "backend.h"

#include <pybind11/pybind11.h>

#include "pylogsink.hpp"

#include <chrono>
#include <cstddef>
#include <string>
#include <thread>

namespace py = pybind11;

static const char LOAD_FAILED[] = "load_method failed (error 0x23)";

PYBIND11_MODULE(cpp_rt, m) {
    if (pylogsink_init("RT_LOG", "info") < 0 || pylogsink_add_functions(m.ptr()) < 0) {
        throw py::error_already_set();
    }

    m.def("set_sink", [](const std::string &name) { backend_naive = name == "naive"; });

    // An Error under the backend lock with the GIL held, then the raise.
    m.def(
        "load_method",
        [] {
            if (backend_load_method() != 0) pylogsink::raise(PyExc_RuntimeError, LOAD_FAILED);
        },
        py::call_guard<pylogsink::scope>());

    // The same with the GIL released around the backend.
    m.def("load_method_detached", [] {
        pylogsink::call([] {
            int rc;
            {
                py::gil_scoped_release released;
                rc = backend_load_method();
            }
            if (rc != 0) pylogsink::raise(PyExc_RuntimeError, LOAD_FAILED);
        });
    });

    // The whole binding with the GIL released: scope first, so that the
    // GIL is back when the call's lines are written.
    m.def(
        "load_method_released",
        [] { return backend_load_method(); },
        py::call_guard<pylogsink::scope, py::gil_scoped_release>());

    m.def("execute", [] { backend_execute(); });

    m.def(
        "log",
        [](int level, const py::bytes &message, const std::string &target) {
            pylogsink::emit(level, target.c_str(), __FILE__, __LINE__, std::string(message));
        },
        py::arg("level"), py::arg("message"), py::arg("target") = "rt",
        py::call_guard<pylogsink::scope>());

    // The target a std::string (pylogsink_emit_n underneath): the slice
    // buffer[start:start + length].
    m.def(
        "log_n",
        [](int level, const py::bytes &buffer, std::size_t start, std::size_t length,
           const py::bytes &message) {
            const std::string all(buffer);
            if (start + length > all.size()) throw py::value_error("log_n: the target is outside the buffer");
            pylogsink::emit(level, all.substr(start, length), __FILE__, __LINE__, std::string(message));
        },
        py::call_guard<pylogsink::scope>());

    m.def(
        "log_lines",
        [](long n) {
            for (long i = 0; i < n; i++) ET_LOG(kInfo, "line %ld", i);
        },
        py::call_guard<pylogsink::scope>());

    m.def(
        "log_then_hang",
        [](int n, int seconds) {
            for (int i = 0; i < n; i++) ET_LOG(kError, "about to hang: line %d", i);
            std::this_thread::sleep_for(std::chrono::seconds(seconds));
        },
        py::call_guard<pylogsink::scope>());

    m.def("load_program", [](const py::bytes &ident) {
        pylogsink::call([&] {
            std::string id(ident);
            backend_check_program(id.data(), id.size());
            pylogsink::raise(PyExc_RuntimeError,
                             "load_program: invalid program /data/\xe4\xb8\xad\xe4\xb8");
        });
    });

    // A loop that holds the GIL: pylogsink::flush() after each step when
    // asked, so that its progress shows as it goes.
    m.def("progress", [](int steps, int ms, bool flush) {
        pylogsink::call([&] {
            for (int i = 0; i < steps; i++) {
                std::this_thread::sleep_for(std::chrono::milliseconds(ms));
                ET_LOG(kInfo, "step %d", i);
                if (flush) pylogsink::flush();
            }
        });
    });

    m.def("fatal", [] { backend_fatal(); }, py::call_guard<pylogsink::scope>());

    // None: back to the default given to pylogsink_init.
    m.def("set_filter", [](const py::object &spec) {
        const std::string text = spec.is_none() ? "" : spec.cast<std::string>();
        if (pylogsink_set_filter(spec.is_none() ? nullptr : text.c_str()) < 0)
            throw py::error_already_set();
    });
}
