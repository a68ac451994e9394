# cmake -DROOT=<source dir> [-DPURE=dir,dir] [-DNO_WORKER=dir,dir] [-DNO_LOGGING=dir,dir] [-DTOLERATED=file|path,...]
#       -P CheckLayering.cmake        (lists separated by commas)
# The layering rules of docs/design.md, checked on the #include lines of the sources:
#  - PURE folders (runtime/core, and runtime/node once it exists) include no library of
#    the outside world: no ZeroMQ, SimGrid, oneTBB, hwloc, threads, clocks or logging. The
#    node logic gets time and events passed in (STYLE.md, "The core knows nothing of the
#    world"). A PURE folder that does not exist is skipped (runtime/node may come later).
#  - NO_LOGGING folders (runtime/core, runtime/node) do not log either (no spdlog): the
#    scheduler reports through its actions, the node driver through the sink its adapter
#    gives (runtime/node/Log.hpp).
#  - NO_WORKER folders (master/) include nothing from worker/.
# TOLERATED lists "relative/file|included path" pairs that are known violations, scheduled
# to go (each is printed; one that no longer occurs is reported so the entry gets removed).
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/CheckArgs.cmake)
check_args(CheckLayering PURE NO_LOGGING NO_WORKER TOLERATED)

set(pure_regex "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]*[/_])?(zmq|cppzmq|simgrid|tbb|oneapi|hwloc|threads?|mutex|condition_variable|future|stop_token|semaphore|latch|barrier|chrono|ctime|time\\.h)([./_>\"]|$)")
set(logging_regex "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]*/)?spdlog[/.>\"]")
set(worker_regex "^[ \t]*#[ \t]*include[ \t]*[<\"](\\./)?worker/")

set(violations "")
set(tolerated_seen "")
set(checked 0)

# check(<dir> <regex> <rule text>)
function(check_dir dir regex rule)
  file(GLOB_RECURSE files LIST_DIRECTORIES false "${ROOT}/${dir}/*.hpp" "${ROOT}/${dir}/*.h"
       "${ROOT}/${dir}/*.cpp" "${ROOT}/${dir}/*.cc" "${ROOT}/${dir}/*.ipp" "${ROOT}/${dir}/*.inl")
  list(LENGTH files count)
  math(EXPR total "${checked} + ${count}")
  set(checked ${total} PARENT_SCOPE)
  foreach(f IN LISTS files)
    file(RELATIVE_PATH rel "${ROOT}" "${f}")
    file(STRINGS "${f}" lines)
    set(n 0)
    foreach(line IN LISTS lines)
      math(EXPR n "${n} + 1")
      string(TOLOWER "${line}" lower)
      if(lower MATCHES "${regex}")
        string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]*)[>\"].*$" "\\1" included "${line}")
        if("${rel}|${included}" IN_LIST TOLERATED)
          list(APPEND tolerated_seen "${rel}|${included}")
        else()
          string(STRIP "${line}" stripped)
          list(APPEND violations "${rel}:${n}: ${stripped}  (${rule})")
        endif()
      endif()
    endforeach()
  endforeach()
  set(violations "${violations}" PARENT_SCOPE)
  set(tolerated_seen "${tolerated_seen}" PARENT_SCOPE)
endfunction()

# check_dirs(<folders> <regex> <rule text, after the folder's name>): a folder that does
# not exist is skipped (runtime/node may come later).
macro(check_dirs dirs regex rule)
  foreach(dir IN LISTS ${dirs})
    if(IS_DIRECTORY "${ROOT}/${dir}")
      check_dir("${dir}" "${regex}" "${dir} ${rule}")
    else()
      message(STATUS "CheckLayering: ${dir} does not exist (skipped)")
    endif()
  endforeach()
endmacro()

check_dirs(PURE "${pure_regex}" "is pure: no I/O, thread, clock or third-party header")
check_dirs(NO_LOGGING "${logging_regex}" "does not log: no spdlog")
check_dirs(NO_WORKER "${worker_regex}" "must not include worker/")

foreach(t IN LISTS TOLERATED)
  if(t IN_LIST tolerated_seen)
    message(STATUS "CheckLayering: tolerated for now: ${t}")
  else()
    message(STATUS "CheckLayering: tolerated entry no longer occurs, remove it from tests/CMakeLists.txt: ${t}")
  endif()
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "CheckLayering: no source file found under ${PURE};${NO_LOGGING};${NO_WORKER} in ${ROOT}")
endif()
if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "layering violations:\n  ${text}")
endif()
message(STATUS "CheckLayering: ${checked} files follow the layering rules")
