# Fails when a rule on a model_type or a GGUF architecture name is written outside the tables
# that hold those rules: a model_type or arch compared with a string literal, or any string
# literal that names a family of model/families.hpp compared with anything. A family's rules are
# a row of the table (docs/model-families.md), never an `if` on its name.
# Usage: cmake -DSOURCE_DIR=<repo> -P model_type_rules.cmake
cmake_minimum_required(VERSION 3.25)

# The files that may compare names: the family tables and llama.cpp's architectures.
set(allowed include/posemb/model/families.hpp include/posemb/model/gguf_archs.hpp
            include/posemb/model/gguf_arch_coverage.hpp)

file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR}
     ${SOURCE_DIR}/include/*.hpp ${SOURCE_DIR}/src/*.cpp ${SOURCE_DIR}/src/*.hpp
     ${SOURCE_DIR}/tools/*.cpp ${SOURCE_DIR}/tools/*.hpp ${SOURCE_DIR}/python/src/*.cpp
     ${SOURCE_DIR}/python/src/*.hpp)
list(REMOVE_ITEM sources ${allowed})
list(LENGTH sources count)
if(count LESS 100)
  message(FATAL_ERROR "found only ${count} sources under ${SOURCE_DIR}: expected the repository")
endif()

# Every model_type of the family tables, as the rows name them: family("NAME", ...).
file(STRINGS ${SOURCE_DIR}/include/posemb/model/families.hpp rows REGEX "family\\(\"[^\"]+\"")
set(names "")
foreach(row IN LISTS rows)
  string(REGEX MATCH "family\\(\"([^\"]+)\"" _ "${row}")
  list(APPEND names "${CMAKE_MATCH_1}")
endforeach()
list(LENGTH names name_count)
if(name_count LESS 90)
  message(FATAL_ERROR "read only ${name_count} model_types from families.hpp: expected every row")
endif()
list(JOIN names "|" name_alternatives)
string(REPLACE "." "\\." name_alternatives "${name_alternatives}")

set(word "(^|[^A-Za-z0-9_])")
set(patterns
  # model_type == "x", h.arch != "x", root.at("model_type") == "x"
  "${word}(model_type|arch|architecture)[A-Za-z0-9_.()\"]*[ ]*[!=]=[ ]*(std::string\\()?\""
  # "x" == model_type
  "\"[ ]*[!=]=[ ]*[A-Za-z0-9_.>-]*(model_type|arch|architecture)([^A-Za-z0-9_]|$)"
  # anything == "llama" (a family's name)
  "[!=]=[ ]*(std::string\\()?\"(${name_alternatives})\""
  "\"(${name_alternatives})\"\\)?[ ]*[!=]=")

list(JOIN patterns ")|(" any)
set(found "")
foreach(source IN LISTS sources)
  file(STRINGS ${SOURCE_DIR}/${source} lines REGEX "(${any})")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    string(APPEND found "\n  ${source}: ${line}")
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "a model_type or arch rule outside the tables (make it a column of the "
                      "family's row, model/families.hpp):${found}")
endif()
message(STATUS "no model_type or arch comparison in ${count} sources outside ${allowed}")
