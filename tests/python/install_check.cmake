# python.install: `cmake --install --component python` into a staging folder, then import posemb
# from there in an isolated interpreter (no PYTHONPATH, no build tree, no current directory).
#   cmake -DBUILD_DIR=... -DSTAGE=... -DINSTALL_DIR=... -DPYTHON=... -DCONFIG=... -P install_check.cmake
file(REMOVE_RECURSE ${STAGE})
if(IS_ABSOLUTE ${INSTALL_DIR})
  # An absolute destination (the interpreter's platlib) is staged under DESTDIR.
  set(ENV{DESTDIR} ${STAGE})
  set(installed ${STAGE}${INSTALL_DIR})
  set(prefix_args)
else()
  set(installed ${STAGE}/${INSTALL_DIR})
  set(prefix_args --prefix ${STAGE})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --component python --config ${CONFIG}
                        ${prefix_args}
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "cmake --install --component python failed: ${status}")
endif()
foreach(file IN ITEMS __init__.py __init__.pyi py.typed)
  if(NOT EXISTS ${installed}/posemb/${file})
    message(FATAL_ERROR "not installed: ${installed}/posemb/${file}")
  endif()
endforeach()
execute_process(
  COMMAND ${PYTHON} -I -c "import sys; sys.path.insert(0, sys.argv[1]); import posemb, numpy; \
assert posemb.__file__.startswith(sys.argv[1]), posemb.__file__; \
x = numpy.ones((1, 2, 1, 4), numpy.float32); posemb.apply_rope_(x, 0, posemb.default_rope_spec(4, 10000.0)); \
print('imported', posemb.__version__, 'from', posemb.__file__)" ${installed}
  WORKING_DIRECTORY ${STAGE}
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "import posemb from ${installed} failed")
endif()
