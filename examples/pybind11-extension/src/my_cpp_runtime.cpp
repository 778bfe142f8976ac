// my_cpp_runtime: a pybind11 extension whose C++ code logs through
// pylogsink's C ABI.
#include <pylogsink.hpp>

#include <cstddef>
#include <mutex>
#include <string>

namespace py = pybind11;

namespace {

std::mutex backend_mutex;

// The runtime's own code: it logs under its own lock, with or without the
// GIL; pylogsink_emit never calls Python.
std::size_t backend_load(const std::string &path) {
    std::lock_guard<std::mutex> held(backend_mutex);
    pylogsink::emit(PYLOGSINK_INFO, "my_cpp_runtime", __FILE__, __LINE__, "loading " + path);
    if (path.empty()) {
        pylogsink::emit(PYLOGSINK_ERROR, "my_cpp_runtime", __FILE__, __LINE__, "no path given");
    }
    return path.size();
}

} // namespace

PYBIND11_MODULE(my_cpp_runtime, m) {
    // The filter the users set in MY_CPP_RUNTIME_LOG (else "warn"), and
    // set_log_filter, log_filter, set_log_destination, log_destination
    // and log_stats, for them.
    if (pylogsink_init("MY_CPP_RUNTIME_LOG", "warn") < 0 || pylogsink_add_functions(m.ptr()) < 0)
        throw py::error_already_set();

    // A helper around the body; the GIL released while the backend runs.
    m.def("load", [](const std::string &path) {
        return pylogsink::call([&] {
            std::size_t n;
            {
                py::gil_scoped_release released;
                n = backend_load(path);
            }
            if (n == 0)
                pylogsink::raise(PyExc_RuntimeError, "load failed");  // throws error_already_set
            return n;
        });
    });

    // Or a scope as a call guard; with the GIL released, pylogsink::scope
    // first, so that the GIL is back when the call's lines are written.
    m.def("load_released", &backend_load, py::call_guard<pylogsink::scope, py::gil_scoped_release>());
}
