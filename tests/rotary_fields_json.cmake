# `rotary_fields --json`, run by ctest (cmake -DEXAMPLE=path -P rotary_fields_json.cmake): one
# JSON object whose keys are the page's metric names; a preset and the same frequencies given
# explicitly print the same metrics; a bad value exits 2 naming the setting.
function(run_json out_var)
  execute_process(COMMAND ${EXAMPLE} ${ARGN} --json
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "rotary_fields ${ARGN} --json exited ${rc}: ${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

run_json(preset --preset long-range --seed 7)
run_json(explicit --base 1000000 --pairs 16 --len 32 --scale 1 --seed 7)
string(JSON name GET "${preset}" preset)
string(JSON seed GET "${preset}" seed)
string(JSON explicit_name GET "${explicit}" preset)
if(NOT name STREQUAL "long-range" OR NOT seed STREQUAL "7" OR NOT explicit_name STREQUAL "custom")
  message(FATAL_ERROR "unexpected settings: ${preset} / ${explicit}")
endif()
foreach(key peak mean nearby distant concentration width drift fit-slope fit-length
            sinusoidal-spread)
  string(JSON a ERROR_VARIABLE missing GET "${preset}" ${key})
  if(missing)
    message(FATAL_ERROR "no \"${key}\" in ${preset}")
  endif()
  string(JSON b GET "${explicit}" ${key})
  if(NOT a STREQUAL b)
    message(FATAL_ERROR "${key}: --preset long-range gives ${a}, the same values explicitly ${b}")
  endif()
endforeach()

execute_process(COMMAND ${EXAMPLE} --preset long-range --seed abc --json
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 2 OR NOT err MATCHES "seed = \"abc\": expected a whole number")
  message(FATAL_ERROR "--seed abc: exit ${rc}, stderr ${err}")
endif()
