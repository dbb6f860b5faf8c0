# Configures, builds and runs one consumer project; run by ctest as `cmake -D... -P` (see
# CMakeLists.txt here). Every step's failure fails the test with that step's output.
#
# Inputs (-D):
#   MODE             find_package: install posemb into WORK_DIR/prefix first, then
#                    find_package(posemb) from there; add_subdirectory: use the source tree.
#   CONSUMER_DIR     the consumer project's source directory
#   POSEMB_SOURCE    the posemb source tree
#   WORK_DIR         scratch directory, emptied first
#   GENERATOR, CXX_COMPILER, BUILD_TYPE, CXX_FLAGS, EXE_LINKER_FLAGS: the parent build's.
cmake_minimum_required(VERSION 3.16)

foreach(input IN ITEMS MODE CONSUMER_DIR POSEMB_SOURCE WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${input} OR "${${input}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer.cmake: -D${input}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

set(toolchain_args
  -G ${GENERATOR}
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
  "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
  "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}")

function(run_step name)
  message(STATUS "[${name}] ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "[${name}] failed (${result}):\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

set(consumer_args)
if(MODE STREQUAL "find_package")
  set(prefix ${WORK_DIR}/prefix)
  # posemb configured on its own with nothing but the library (not the Python package or the C
  # API, which the consumers do not use), built (the compiled config reader), then installed.
  run_step(configure-posemb ${CMAKE_COMMAND} -S ${POSEMB_SOURCE} -B ${WORK_DIR}/posemb-build
           ${toolchain_args} -DPOSEMB_BUILD_TESTS=OFF -DPOSEMB_BUILD_EXAMPLES=OFF
           -DPOSEMB_BUILD_TOOLS=OFF -DPOSEMB_BUILD_BENCH=OFF -DPOSEMB_BUILD_PYTHON=OFF
           -DPOSEMB_BUILD_C_API=OFF)
  run_step(build-posemb ${CMAKE_COMMAND} --build ${WORK_DIR}/posemb-build --parallel 2)  # posemb::config
  run_step(install-posemb ${CMAKE_COMMAND} --install ${WORK_DIR}/posemb-build --prefix ${prefix})
  foreach(installed IN ITEMS include/posemb/posemb.hpp include/posemb/version.hpp)
    if(NOT EXISTS ${prefix}/${installed})
      message(FATAL_ERROR "install: ${prefix}/${installed} is missing")
    endif()
  endforeach()
  list(APPEND consumer_args -DCMAKE_PREFIX_PATH=${prefix})
elseif(MODE STREQUAL "add_subdirectory")
  list(APPEND consumer_args -DPOSEMB_SOURCE_DIR=${POSEMB_SOURCE})
else()
  message(FATAL_ERROR "run_consumer.cmake: MODE = ${MODE}: expected find_package or add_subdirectory")
endif()

run_step(configure-consumer ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/consumer-build
         ${toolchain_args} ${consumer_args})
if(MODE STREQUAL "find_package")
  # The package found must be the one just installed, not the source or a build tree.
  file(STRINGS ${WORK_DIR}/consumer-build/CMakeCache.txt posemb_dir_line REGEX "^posemb_DIR:")
  string(REGEX REPLACE "^posemb_DIR:[A-Z]+=" "" posemb_dir "${posemb_dir_line}")
  get_filename_component(posemb_dir "${posemb_dir}" REALPATH)
  get_filename_component(real_prefix "${prefix}" REALPATH)
  string(FIND "${posemb_dir}" "${real_prefix}/" at)
  if(NOT at EQUAL 0)
    message(FATAL_ERROR "find_package(posemb) found ${posemb_dir}, not the install in ${prefix}")
  endif()
endif()
run_step(build-consumer ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-build --parallel 2)
foreach(program IN ITEMS posemb_consumer posemb_config_consumer posemb_config_header_only_consumer
                         posemb_names_consumer posemb_loader_consumer)
  run_step(run-${program} ${WORK_DIR}/consumer-build/${program})
  message(STATUS "${step_output}")
endforeach()
