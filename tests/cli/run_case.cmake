# One end-to-end case of the posemb tool, run by ctest (see tools/CMakeLists.txt):
#   cmake -DPOSEMB=tool -DARGS=a|b|c -DEXPECT_EXIT=n [-DEXPECT_STDERR=regex]
#         [-DEXPECT_LINE=text (stderr is exactly "posemb: error: text\n")] [-DOUTPUT=file]
#         [-DSTDOUT=file] [-DEXPECT_STDOUT=regex] [-DCHECKER=program -DCHECK=a|b|c] -P run_case.cmake
# ARGS and CHECK separate arguments with '|'. OUTPUT is removed first; on failure (EXPECT_EXIT
# != 0) stderr must be exactly one line "posemb: error: ..." and OUTPUT must not exist; exit 3
# (diff: the files differ) is no failure: stderr must be empty.
string(REPLACE "|" ";" args "${ARGS}")
if(OUTPUT)
  file(REMOVE "${OUTPUT}")
endif()
execute_process(COMMAND "${POSEMB}" ${args}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REPLACE ";" " " shown "${args}")
if(NOT "${status}" STREQUAL "${EXPECT_EXIT}")
  message(FATAL_ERROR "posemb ${shown}\nexit status ${status}, expected ${EXPECT_EXIT}\nstderr: ${err}")
endif()
if(NOT EXPECT_EXIT EQUAL 0 AND NOT EXPECT_EXIT EQUAL 3)
  if(NOT err MATCHES "^posemb: error: [^\n]+\n$")
    message(FATAL_ERROR "posemb ${shown}\nstderr is not one line 'posemb: error: ...':\n${err}")
  endif()
  if(OUTPUT AND EXISTS "${OUTPUT}")
    message(FATAL_ERROR "posemb ${shown}\nfailed but wrote ${OUTPUT}")
  endif()
elseif(NOT err STREQUAL "")
  message(FATAL_ERROR "posemb ${shown}\nsucceeded but wrote to stderr:\n${err}")
endif()
if(EXPECT_STDERR AND NOT err MATCHES "${EXPECT_STDERR}")
  message(FATAL_ERROR "posemb ${shown}\nstderr does not match '${EXPECT_STDERR}':\n${err}")
endif()
if(EXPECT_LINE AND NOT err STREQUAL "posemb: error: ${EXPECT_LINE}\n")
  message(FATAL_ERROR "posemb ${shown}\nstderr is not the line\nposemb: error: ${EXPECT_LINE}\nbut:\n${err}")
endif()
if(EXPECT_STDOUT AND NOT out MATCHES "${EXPECT_STDOUT}")
  message(FATAL_ERROR "posemb ${shown}\nstdout does not match '${EXPECT_STDOUT}':\n${out}")
endif()
if(STDOUT)
  file(WRITE "${STDOUT}" "${out}")
endif()
if(CHECK)
  string(REPLACE "|" ";" check_args "${CHECK}")
  execute_process(COMMAND "${CHECKER}" ${check_args} RESULT_VARIABLE check_status
    OUTPUT_VARIABLE check_out ERROR_VARIABLE check_err)
  message("${check_out}${check_err}")
  if(NOT check_status EQUAL 0)
    string(REPLACE ";" " " check_shown "${check_args}")
    message(FATAL_ERROR "check failed: ${check_shown}")
  endif()
endif()
