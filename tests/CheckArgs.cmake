# The arguments every tests/Check*.cmake script takes (included by them):
#   check_args(NAME LIST...) turns each named comma-separated list into a CMake list and
#   stops with a clear error unless ROOT is a directory (made absolute).
macro(check_args name)
  foreach(_v ${ARGN})
    string(REPLACE "," ";" ${_v} "${${_v}}")
  endforeach()
  if(NOT ROOT OR NOT IS_DIRECTORY "${ROOT}")
    message(FATAL_ERROR "${name}: ROOT='${ROOT}' is not a directory (pass -DROOT=<source dir>)")
  endif()
  get_filename_component(ROOT "${ROOT}" ABSOLUTE)
endmacro()
