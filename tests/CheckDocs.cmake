# Docs for users say what is true now (docs/design.md, "docs/"), checked:
#   cmake -DROOT=DIR [-DMAX_BENCHMARK_LINES=N] [-DPROGRAMS=a,b,...] -P CheckDocs.cmake
# - DIR/docs/benchmarks.md has at most MAX_BENCHMARK_LINES lines (default 400);
# - no line of DIR/README.md or DIR/docs/**/*.md tells development history: the patterns
#   below (a session, issue or wave number, "used to", "no longer", "previously", a date, ...);
# - PROGRAMS (full paths; optional): each one's --help, and recursively every subcommand's
#   --help, cites no issue or session number.
# Every finding is printed as FILE:LINE: TEXT (or PROGRAM ...: TEXT); any finding fails.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/CheckArgs.cmake)
check_args(CheckDocs PROGRAMS)
if(NOT MAX_BENCHMARK_LINES)
  set(MAX_BENCHMARK_LINES 400)
endif()

# Lines that tell history rather than what is true now. Matched on the lowercased line,
# after the phrases in _allowed are taken out.
set(_history
  "sessions? #?[0-9]"
  "(this|previous|earlier|later|last|next) (development )?session"
  "issues? #?[0-9]"
  "(^|[ (])#[0-9]+([ ),.:;]|$)"
  "waves? [0-9]"
  "(this|previous|earlier|next|first|second|third|last) wave"
  "used to"
  "previously"
  "formerly"
  "no longer"
  "anymore"
  "(was|were|got) fixed"
  "is fixed now"
  "(^|[^a-z])new:"
  "before this (change|session|issue|fix|commit|release|version|branch)"
  "(since|after|before) (the|this) (refactor|rewrite|redesign|fix)"
  "(is|are|it|they|this|which|that) now [a-z]"
  "(^|[^a-z])now (uses|looks|takes|runs|has|gives|writes|reads|checks|keeps|sends|counts|shows|stays|comes|goes|works|needs|handles|supports|prints|returns)( |$)"
  "(^|[^a-z])landed([^a-z]|$)"
  "stages? [0-9]"
  "stage of (development|the project|the work)"
  "(^|[^0-9])20[0-9][0-9]-[01][0-9]-[0-3][0-9]([^t0-9]|$)"
  "(^|[^0-9])20[0-9][0-9]-[01][0-9]-[0-3][0-9]$")
# Phrases that look like history but state what is true now (passive "used to").
set(_allowed
  "(is|are|be|been|being|was|were|get|gets) used to")

set(_findings "")
set(_count 0)

# --- docs/benchmarks.md length
set(_bench "${ROOT}/docs/benchmarks.md")
if(EXISTS "${_bench}")
  file(READ "${_bench}" _text)
  string(REGEX MATCHALL "\n" _newlines "${_text}")
  list(LENGTH _newlines _n)
  if(_n GREATER MAX_BENCHMARK_LINES)
    string(APPEND _findings "docs/benchmarks.md: ${_n} lines, above ${MAX_BENCHMARK_LINES}\n")
    math(EXPR _count "${_count} + 1")
  endif()
else()
  string(APPEND _findings "docs/benchmarks.md: missing\n")
  math(EXPR _count "${_count} + 1")
endif()

# --- history lines in README.md and docs/**/*.md
file(GLOB_RECURSE _docs RELATIVE "${ROOT}" "${ROOT}/docs/*.md")
if(EXISTS "${ROOT}/README.md")
  list(APPEND _docs README.md)
endif()
list(SORT _docs)
list(LENGTH _docs _ndocs)
if(_ndocs EQUAL 0)
  message(FATAL_ERROR "CheckDocs: no Markdown under ${ROOT}/docs")
endif()
foreach(_doc IN LISTS _docs)
  file(READ "${ROOT}/${_doc}" _text)
  # One list element per line: first take out what CMake's lists treat specially
  # (separators, brackets, escapes).
  string(REPLACE ";" "," _text "${_text}")
  string(REPLACE "\\" "/" _text "${_text}")
  string(REPLACE "[" "{" _text "${_text}")
  string(REPLACE "]" "}" _text "${_text}")
  string(REPLACE "\n" ";" _lines "${_text}")
  set(_no 0)
  foreach(_line IN LISTS _lines)
    math(EXPR _no "${_no} + 1")
    string(TOLOWER "${_line}" _low)
    foreach(_ok IN LISTS _allowed)
      string(REGEX REPLACE "${_ok}" "" _low "${_low}")
    endforeach()
    foreach(_pattern IN LISTS _history)
      if(_low MATCHES "${_pattern}")
        string(APPEND _findings "${_doc}:${_no}: ${_line}   [${_pattern}]\n")
        math(EXPR _count "${_count} + 1")
        break()
      endif()
    endforeach()
  endforeach()
endforeach()

# --- --help of each program and of each of its subcommands (two levels down)
set_property(GLOBAL PROPERTY _help_findings "")
set_property(GLOBAL PROPERTY _help_count 0)
set_property(GLOBAL PROPERTY _help_texts 0)
function(check_help _cmd _depth)
  separate_arguments(_argv UNIX_COMMAND "${_cmd}")
  execute_process(COMMAND ${_argv} --help OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc TIMEOUT 30)
  get_property(_c GLOBAL PROPERTY _help_count)
  get_property(_t GLOBAL PROPERTY _help_texts)
  math(EXPR _t "${_t} + 1")
  set_property(GLOBAL PROPERTY _help_texts ${_t})
  if(NOT _rc EQUAL 0)
    set_property(GLOBAL APPEND_STRING PROPERTY _help_findings "${_cmd} --help: exit ${_rc}: ${_err}\n")
    math(EXPR _c "${_c} + 1")
    set_property(GLOBAL PROPERTY _help_count ${_c})
    return()
  endif()
  string(REPLACE ";" "," _out "${_out}")
  string(REPLACE "\\" "/" _out "${_out}")
  string(REPLACE "[" "{" _out "${_out}")
  string(REPLACE "]" "}" _out "${_out}")
  string(REPLACE "\n" ";" _lines "${_out}")
  set(_in_sub FALSE)
  set(_subs "")
  foreach(_line IN LISTS _lines)
    string(TOLOWER "${_line}" _low)
    if(_low MATCHES "(issues?|sessions?|waves?) #?[0-9]" OR _low MATCHES "(^|[ (])#[0-9]+([ ),.:;]|$)")
      set_property(GLOBAL APPEND_STRING PROPERTY _help_findings "${_cmd} --help: ${_line}\n")
      math(EXPR _c "${_c} + 1")
    endif()
    if(_line MATCHES "^Subcommands:")
      set(_in_sub TRUE)
    elseif(_in_sub AND _line STREQUAL "")
      set(_in_sub FALSE)
    elseif(_in_sub AND _line MATCHES "^  ([a-z][a-z0-9-]*) ")
      list(APPEND _subs "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY _help_count ${_c})
  if(_depth LESS 2)
    math(EXPR _next "${_depth} + 1")
    foreach(_sub IN LISTS _subs)
      check_help("${_cmd} ${_sub}" ${_next})
    endforeach()
  endif()
endfunction()

foreach(_program IN LISTS PROGRAMS)
  if(NOT EXISTS "${_program}")
    string(APPEND _findings "${_program}: missing (build it first)\n")
    math(EXPR _count "${_count} + 1")
    continue()
  endif()
  check_help("${_program}" 0)
endforeach()
get_property(_help_findings GLOBAL PROPERTY _help_findings)
get_property(_help_count GLOBAL PROPERTY _help_count)
get_property(_helps GLOBAL PROPERTY _help_texts)
string(APPEND _findings "${_help_findings}")
math(EXPR _count "${_count} + ${_help_count}")

if(_count GREATER 0)
  message(NOTICE "${_findings}")
  message(FATAL_ERROR "CheckDocs: ${_count} finding(s), listed above")
endif()
message(STATUS "CheckDocs: ${_ndocs} Markdown files, docs/benchmarks.md ${_n} lines (at most ${MAX_BENCHMARK_LINES}), ${_helps} --help texts: no history, no issue numbers")
