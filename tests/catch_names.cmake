# Every Catch2 test case name must survive catch_discover_tests and stay readable in ctest's
# output, which pads every line to the longest name. CatchAddTests.cmake splits the program's
# `--list-test-names-only` output into a CMake list, so a name holding ';' becomes two ctest
# entries that match no test case (they pass having run nothing), and an unbalanced '[' or ']'
# merges the names up to the next bracket into one entry. Run by ctest as
#   cmake -DPROGRAMS=<program>|<program>... -DMAX_LENGTH=<n> -P catch_names.cmake
# MAX_LENGTH counts the ctest name, "<program>: <test case>".
cmake_minimum_required(VERSION 3.16)

string(REPLACE "|" ";" programs "${PROGRAMS}")
set(failures "")
foreach(program IN LISTS programs)
  execute_process(COMMAND ${program} --list-test-names-only OUTPUT_VARIABLE output)
  get_filename_component(prefix ${program} NAME_WE)
  # One name per line, taken from the text (a CMake list would mangle the names checked here).
  string(APPEND output "\n")
  string(FIND "${output}" "\n" end)
  while(NOT end EQUAL -1)
    string(SUBSTRING "${output}" 0 ${end} line)
    math(EXPR next "${end} + 1")
    string(SUBSTRING "${output}" ${next} -1 output)
    string(FIND "${output}" "\n" end)
    if(line STREQUAL "")
      continue()
    endif()
    string(REGEX REPLACE "[^[]" "" opening "${line}")
    string(REGEX REPLACE "[^]]" "" closing "${line}")
    string(LENGTH "${opening}" opening)
    string(LENGTH "${closing}" closing)
    string(LENGTH "${prefix}: ${line}" length)
    if(line MATCHES ";")
      string(APPEND failures "\n  ${prefix}: a ';' in \"${line}\"")
    elseif(NOT opening EQUAL closing)
      string(APPEND failures "\n  ${prefix}: unbalanced brackets in \"${line}\"")
    elseif(length GREATER MAX_LENGTH)
      string(APPEND failures "\n  ${prefix}: ${length} characters (at most ${MAX_LENGTH}): \"${line}\"")
    endif()
  endwhile()
endforeach()
if(NOT failures STREQUAL "")
  message(FATAL_ERROR "Catch2 test case names ctest cannot run or show:${failures}")
endif()
