# pylogsink's C ABI for CMake builds of C and C++ extensions.
#
#   execute_process(COMMAND "${Python_EXECUTABLE}" -c
#       "import pylogsink; print(pylogsink.get_cmake_dir())"
#       OUTPUT_VARIABLE pylogsink_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
#   find_package(pylogsink CONFIG REQUIRED)
#   target_link_libraries(my_ext PRIVATE pylogsink::pylogsink)
#
# The target carries the headers and the static library with the system
# libraries it needs; Python's own headers come from the extension's target
# (Python::Module, pybind11::module).
get_filename_component(_pylogsink_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
if(NOT TARGET pylogsink::pylogsink)
  file(STRINGS "${_pylogsink_root}/lib/link-args.txt" _pylogsink_link_args)
  # MSVC names the library pylogsink.lib; every other toolchain
  # libpylogsink.a.
  set(_pylogsink_library "${_pylogsink_root}/lib/libpylogsink.a")
  if(EXISTS "${_pylogsink_root}/lib/pylogsink.lib")
    set(_pylogsink_library "${_pylogsink_root}/lib/pylogsink.lib")
  endif()
  add_library(pylogsink::pylogsink STATIC IMPORTED)
  set_target_properties(pylogsink::pylogsink PROPERTIES
    IMPORTED_LOCATION "${_pylogsink_library}"
    INTERFACE_INCLUDE_DIRECTORIES "${_pylogsink_root}/include"
    INTERFACE_LINK_LIBRARIES "${_pylogsink_link_args}")
  unset(_pylogsink_link_args)
  unset(_pylogsink_library)
endif()
unset(_pylogsink_root)
set(pylogsink_FOUND TRUE)
