# Compiles the BLOCK-th ```cpp block of a Markdown page (README.md, docs/*.md; syntax only); run
# by ctest as `cmake -D... -P readme_block.cmake` (see CMakeLists.txt here). The page is read when
# the test runs, so an edit is checked without a re-configure.
#
# The convention: a block is its leading #include lines, compiled at file scope, then the rest,
# compiled as the body of a function; both come after readme_context.hpp, which declares the
# names the blocks use without declaring them (q, k, spec, table, positions, ...). #line
# directives make the compiler's messages name the page's lines.
#
# Inputs (-D):
#   MARKDOWN     the page (README.md, docs/<page>.md)
#   BLOCK        which ```cpp block, from 1
#   UNIT         the C++ file to write
#   COMPILE      the compiler and its arguments (a list); the unit is appended
cmake_minimum_required(VERSION 3.25)

foreach(input IN ITEMS MARKDOWN BLOCK UNIT COMPILE)
  if(NOT DEFINED ${input} OR "${${input}}" STREQUAL "")
    message(FATAL_ERROR "readme_block.cmake: -D${input}=... is required")
  endif()
endforeach()

# Number of lines in `text`.
function(count_lines text out_var)
  string(REGEX REPLACE "[^\n]" "" newlines "${text}")
  string(LENGTH "${newlines}" count)
  set(${out_var} ${count} PARENT_SCOPE)
endfunction()

file(READ ${MARKDOWN} rest)
set(line 1)  # the page's line number at the start of `rest`
foreach(block RANGE 1 ${BLOCK})
  # The next "```cpp" fence at the start of a line; the block runs to the closing fence.
  string(REGEX MATCH "(^|\n)```cpp[ \t]*\n" fence "${rest}")
  if(fence STREQUAL "")
    math(EXPR found "${block} - 1")
    message(FATAL_ERROR "${MARKDOWN} has ${found} ```cpp blocks, not ${BLOCK}: re-configure")
  endif()
  string(FIND "${rest}" "${fence}" at)
  string(LENGTH "${fence}" fence_length)
  math(EXPR code_start "${at} + ${fence_length}")
  string(SUBSTRING "${rest}" 0 ${code_start} before)
  string(SUBSTRING "${rest}" ${code_start} -1 rest)
  count_lines("${before}" before_lines)
  math(EXPR line "${line} + ${before_lines}")
  string(FIND "${rest}" "\n```" code_end)
  if(code_end EQUAL -1)
    message(FATAL_ERROR "${MARKDOWN}:${line}: a ```cpp block without its closing fence")
  endif()
  math(EXPR code_end "${code_end} + 1")
  string(SUBSTRING "${rest}" 0 ${code_end} code)
  string(SUBSTRING "${rest}" ${code_end} -1 rest)
  if(block LESS BLOCK)
    count_lines("${code}" code_lines)
    math(EXPR line "${line} + ${code_lines}")
  endif()
endforeach()

# Leading #include lines (and blank lines) at file scope, the rest in a function.
set(includes "")
if(code MATCHES "^(([ \t]*(#include[^\n]*)?\n)+)")
  set(includes "${CMAKE_MATCH_1}")
endif()
string(LENGTH "${includes}" includes_length)
string(SUBSTRING "${code}" ${includes_length} -1 body)
count_lines("${includes}" include_lines)
math(EXPR body_line "${line} + ${include_lines}")
file(WRITE ${UNIT}
  "// ${MARKDOWN} line ${line}: ```cpp block ${BLOCK} (written by tests/build/readme_block.cmake)\n"
  "#include \"readme_context.hpp\"\n"
  "#line ${line} \"${MARKDOWN}\"\n${includes}"
  "void readme_block();\nvoid readme_block() {\n"
  "#line ${body_line} \"${MARKDOWN}\"\n${body}}\n")

execute_process(COMMAND ${COMPILE} ${UNIT} RESULT_VARIABLE result OUTPUT_VARIABLE out
                ERROR_VARIABLE out)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${MARKDOWN}:${line}: ```cpp block ${BLOCK} does not compile:\n${out}")
endif()
message(STATUS "${MARKDOWN}:${line}: ```cpp block ${BLOCK} compiles")
