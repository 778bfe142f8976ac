/*
 * pylogsink.hpp: pylogsink for pybind11 bindings (C++11 and newer).
 *
 * Two ways to wrap a binding, both with the GIL held at entry and exit:
 *
 *   pylogsink::scope, as a call guard:
 *
 *       m.def("load", &load, py::call_guard<pylogsink::scope>());
 *       // releasing the GIL too: pylogsink::scope must come first, so that
 *       // the GIL is taken back before the call's lines are written
 *       m.def("run", &run, py::call_guard<pylogsink::scope, py::gil_scoped_release>());
 *
 *   pylogsink::call, around the body:
 *
 *       m.def("load", [](const std::string &path) {
 *           return pylogsink::call([&] { return load(path); });
 *       });
 *
 * The difference is what happens to an exception raised while the call's
 * lines are written through sys.stderr (a KeyboardInterrupt from Ctrl-C).
 * pylogsink::call throws it as py::error_already_set, so Python gets the
 * original exception object in place of the result. A destructor cannot
 * throw, so pylogsink::scope hands a KeyboardInterrupt back to Python
 * through a pending call (Py_AddPendingCall) that raises that same object
 * in the main thread as the binding returns, whatever SIGINT's disposition
 * (Ctrl-C is raised in the main thread only), and reports any other such
 * exception as unraisable (sys.unraisablehook).
 *
 * pylogsink::raise(type, text) throws the exception pylogsink_raise sets:
 * the text followed by the Error lines the call logged.
 */
#ifndef PYLOGSINK_HPP
#define PYLOGSINK_HPP

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "pylogsink.h"

namespace pylogsink {

/* Steps into a call when made and out when destroyed: usable as
   py::call_guard<pylogsink::scope>. Made and destroyed with the GIL held. */
class scope {
public:
    scope() { pylogsink_call_enter(); }
    ~scope() {
        if (pylogsink_call_exit() != 0) {
            hand_back();
        }
    }
    scope(const scope &) = delete;
    scope &operator=(const scope &) = delete;

private:
    /* The exception set by the exit, which a destructor cannot throw. */
    static void hand_back() {
        if (!PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
            PyErr_WriteUnraisable(nullptr);
            return;
        }
        PyObject *interrupt = take_exception();
        if (Py_AddPendingCall(&raise_pending, interrupt) != 0) {
            /* The queue of pending calls is full: a new Ctrl-C instead. */
            Py_DECREF(interrupt);
            PyErr_SetInterrupt();
        }
    }

    /* The exception set, as one object (a new reference); none set after. */
    static PyObject *take_exception() {
#if PY_VERSION_HEX >= 0x030C0000
        return PyErr_GetRaisedException();
#else
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        if (traceback != nullptr) {
            PyException_SetTraceback(value, traceback);
        }
        Py_XDECREF(type);
        Py_XDECREF(traceback);
        return value;
#endif
    }

    /* The pending call: raises the exception it was given (its reference). */
    static int raise_pending(void *exception) {
        PyObject *raised = static_cast<PyObject *>(exception);
#if PY_VERSION_HEX >= 0x030C0000
        PyErr_SetRaisedException(raised);
#else
        PyErr_Restore(Py_NewRef(reinterpret_cast<PyObject *>(Py_TYPE(raised))), raised,
                      PyException_GetTraceback(raised));
#endif
        return -1;
    }
};

namespace detail {
/* Steps out of the call when the body returned; throws the exit's
   exception then (a destructor may throw when no other exception is in
   flight, which `armed` ensures). */
struct exit_at_return {
    bool armed = true;
    ~exit_at_return() noexcept(false) {
        if (armed && pylogsink_call_exit() != 0) {
            throw pybind11::error_already_set();
        }
    }
};
} // namespace detail

/* Runs f() as one call and returns what it returns. GIL held. If writing
   the call's lines raised (a KeyboardInterrupt), throws it as
   py::error_already_set, in place of f's result or f's own exception. */
template <typename F>
auto call(F &&f) -> decltype(std::forward<F>(f)()) {
    pylogsink_call_enter();
    detail::exit_at_return exit;
    try {
        return std::forward<F>(f)();
    } catch (...) {
        exit.armed = false;
        if (pylogsink_call_exit() != 0) {
            throw pybind11::error_already_set();
        }
        throw;
    }
}

/* Inside a call, GIL held, none of the runtime's locks held: hands what
   the call kept so far to Python now and checks for signals
   (pylogsink_flush); throws the exception raised (a KeyboardInterrupt) as
   py::error_already_set. */
inline void flush() {
    if (pylogsink_flush() != 0) {
        throw pybind11::error_already_set();
    }
}

/* Throws an exception of `type` whose message is `text` followed by the
   Error lines logged during the call, invalid UTF-8 escaped as \xNN. */
[[noreturn]] inline void raise(PyObject *type, const std::string &text) {
    pylogsink_raise(type, text.data(), text.size());
    throw pybind11::error_already_set();
}

/* pylogsink_emit with a std::string message. Any thread, any lock. */
inline void emit(int level, const char *target, const char *file, unsigned line,
                 const std::string &message) {
    pylogsink_emit(level, target, file, line, message.data(), message.size());
}

/* The same with a std::string target (pylogsink_emit_n: no NUL needed,
   nothing copied). Any thread, any lock. */
inline void emit(int level, const std::string &target, const char *file, unsigned line,
                 const std::string &message) {
    pylogsink_emit_n(level, target.data(), target.size(), file, line, message.data(),
                     message.size());
}

} // namespace pylogsink

#endif /* PYLOGSINK_HPP */
