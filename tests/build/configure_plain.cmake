# A plain configure of posemb, as a newcomer runs it (`cmake -S <source> -B <build>`, the optional
# parts left at AUTO unless CASE says otherwise), into a fresh build directory; run by ctest as
# `cmake -D... -P configure_plain.cmake` (see CMakeLists.txt here).
#
# Inputs (-D):
#   CASE           installed: no options; the tests must be configured (this test is only built
#                  when Catch2 and nlohmann-json are installed: the case where `include(Catch)`
#                  once failed). none: every optional dependency hidden
#                  (CMAKE_DISABLE_FIND_PACKAGE_<name>); each part must be skipped with its
#                  message, then `cmake --build` must succeed. off: every part OFF; nothing
#                  probed, nothing skipped, then `cmake --build` must succeed.
#   POSEMB_SOURCE  the posemb source tree (used in place, not copied)
#   WORK_DIR       the build directory, emptied first
#   GENERATOR, CXX_COMPILER: the parent build's.
cmake_minimum_required(VERSION 3.25)

foreach(input IN ITEMS CASE POSEMB_SOURCE WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${input} OR "${${input}}" STREQUAL "")
    message(FATAL_ERROR "configure_plain.cmake: -D${input}=... is required")
  endif()
endforeach()

set(parts "the tests" "the examples" "the benchmarks" "the posemb tool" "the Python package")
if(CASE STREQUAL "installed")
  set(options)
elseif(CASE STREQUAL "none")
  set(options)
  foreach(package IN ITEMS Catch2 nlohmann_json benchmark CLI11 pybind11 Python)
    list(APPEND options -DCMAKE_DISABLE_FIND_PACKAGE_${package}=ON)
  endforeach()
elseif(CASE STREQUAL "off")
  set(options)
  foreach(part IN ITEMS TESTS EXAMPLES BENCH TOOLS PYTHON)
    list(APPEND options -DPOSEMB_BUILD_${part}=OFF)
  endforeach()
else()
  message(FATAL_ERROR "configure_plain.cmake: CASE = ${CASE}: expected installed, none or off")
endif()

file(REMOVE_RECURSE ${WORK_DIR})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${POSEMB_SOURCE} -B ${WORK_DIR} -G ${GENERATOR}
          -DCMAKE_CXX_COMPILER=${CXX_COMPILER} ${options}
  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "[${CASE}] cmake -S ${POSEMB_SOURCE} -B ${WORK_DIR} ${options} failed (${result}):\n${out}")
endif()

set(tests_configured FALSE)
if(EXISTS ${WORK_DIR}/tests/CTestTestfile.cmake)
  set(tests_configured TRUE)
endif()
if(CASE STREQUAL "installed")
  if(NOT tests_configured OR out MATCHES "skipping the tests")
    message(FATAL_ERROR "[installed] the tests were not configured with Catch2 installed:\n${out}")
  endif()
else()
  if(tests_configured)
    message(FATAL_ERROR "[${CASE}] the tests were configured:\n${out}")
  endif()
  foreach(part IN LISTS parts)
    string(FIND "${out}" "posemb: skipping ${part}: " at)
    if(CASE STREQUAL "none" AND at EQUAL -1)
      message(FATAL_ERROR "[none] no 'posemb: skipping ${part}' message:\n${out}")
    elseif(CASE STREQUAL "off" AND NOT at EQUAL -1)
      message(FATAL_ERROR "[off] ${part} probed although OFF:\n${out}")
    endif()
  endforeach()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}
                  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "[${CASE}] cmake --build ${WORK_DIR} failed (${result}):\n${out}")
  endif()
endif()
message(STATUS "[${CASE}] passed")
