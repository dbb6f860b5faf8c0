# Configures one consumer project, builds its one program and runs it; run by ctest as
# `cmake -D... -P` (see CMakeLists.txt here). Every step's failure fails the test with that
# step's output.
#
# Inputs (-D):
#   MODE             find_package: `cmake --install` this test build (POSEMB_BUILD) into
#                    WORK_DIR/prefix, the default install and the component config, as
#                    docs/cpp-api.md says, then find_package(posemb) from there; add_subdirectory:
#                    the source tree.
#   CONSUMER_DIR     the consumer project's source directory
#   PROGRAM          the program it builds (its only target built) and runs
#   POSEMB_SOURCE    the posemb source tree
#   POSEMB_BUILD     this build of posemb (find_package), posemb_config built
#   WORK_DIR         scratch directory, emptied first
#   GENERATOR, CXX_COMPILER, BUILD_TYPE, CXX_FLAGS, EXE_LINKER_FLAGS: the parent build's.
cmake_minimum_required(VERSION 3.16)

foreach(input IN ITEMS MODE CONSUMER_DIR PROGRAM POSEMB_SOURCE WORK_DIR GENERATOR CXX_COMPILER)
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
  run_step(install-posemb ${CMAKE_COMMAND} --install ${POSEMB_BUILD} --prefix ${prefix})
  run_step(install-posemb-config
           ${CMAKE_COMMAND} --install ${POSEMB_BUILD} --prefix ${prefix} --component config)
  foreach(installed IN ITEMS include/posemb/posemb.hpp include/posemb/version.hpp
                             share/cmake/posemb/posembConfig.cmake share/pkgconfig/posemb.pc)
    if(NOT EXISTS ${prefix}/${installed})
      message(FATAL_ERROR "install: ${prefix}/${installed} is missing")
    endif()
  endforeach()
  # pkg-config, where installed: posemb.pc's include directory is the prefix's.
  find_program(pkg_config NAMES pkg-config pkgconf)
  if(pkg_config)
    set(ENV{PKG_CONFIG_PATH} ${prefix}/share/pkgconfig)
    run_step(pkg-config ${pkg_config} --cflags-only-I posemb)
    string(REGEX MATCH "^-I([^ \n]+)" flag "${step_output}")
    get_filename_component(pc_include "${CMAKE_MATCH_1}" REALPATH)
    get_filename_component(prefix_include "${prefix}/include" REALPATH)
    if(NOT pc_include STREQUAL prefix_include)
      message(FATAL_ERROR "pkg-config --cflags posemb gave ${step_output}, not -I${prefix}/include")
    endif()
  else()
    message(STATUS "pkg-config not installed: posemb.pc checked for presence only")
  endif()
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
run_step(build-consumer ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-build --target ${PROGRAM})
run_step(run-${PROGRAM} ${WORK_DIR}/consumer-build/${PROGRAM})
message(STATUS "${step_output}")
