# A plain configure of posemb, as a newcomer runs it (`cmake -S <source> -B <build>`, the optional
# parts left at AUTO unless CASE says otherwise), into a fresh build directory; run by ctest as
# `cmake -D... -P configure_plain.cmake` (see CMakeLists.txt here).
#
# Inputs (-D):
#   CASE           installed: no options; the tests must be configured (this test is only built
#                  when Catch2 and nlohmann-json are installed: the case where `include(Catch)`
#                  once failed), then `cmake --install` with nothing built must install the
#                  headers, the CMake package and posemb.pc, and no library. none: every optional dependency hidden
#                  (CMAKE_DISABLE_FIND_PACKAGE_<name>); each part must be skipped with its
#                  message, then `cmake --build` must succeed. off: every part OFF (the C API
#                  too); nothing probed, nothing skipped, then `cmake --build` must succeed.
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
  foreach(part IN ITEMS TESTS EXAMPLES BENCH TOOLS PYTHON C_API)
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
  # The default install after configuring alone: header-only, whatever the build would compile.
  set(prefix ${WORK_DIR}/prefix)
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${WORK_DIR} --prefix ${prefix}
                  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "[installed] cmake --install with nothing built failed (${result}):\n${out}")
  endif()
  foreach(installed IN ITEMS include/posemb/posemb.hpp share/cmake/posemb/posembConfig.cmake
                             share/cmake/posemb/posembTargets.cmake share/pkgconfig/posemb.pc)
    if(NOT EXISTS ${prefix}/${installed})
      message(FATAL_ERROR "[installed] cmake --install installed no ${installed}:\n${out}")
    endif()
  endforeach()
  file(GLOB_RECURSE binaries ${prefix}/*.a ${prefix}/*.so* ${prefix}/bin/*)
  if(binaries)
    message(FATAL_ERROR "[installed] the default install has compiled files: ${binaries}")
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
