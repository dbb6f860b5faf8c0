# The consumer programs, each built once: in a consumer project (find_package/, add_subdirectory/:
# each defines the posemb:: targets its way, includes this file and builds one program) or in
# posemb's own test build (tests/packaging/CMakeLists.txt: the rest).
#   posemb_consumer                    consumer_main.cpp with posemb::posemb (add_subdirectory/)
#   posemb_loader_consumer             consumer_loader.cpp with posemb::config: the loader called
#                                      through load.hpp without nlohmann-json (no_nlohmann/
#                                      first; find_package/, the installed static library)
#   posemb_config_consumer             consumer_config.cpp with posemb::config (compiled reader),
#                                      which alone must bring nlohmann-json (test build)
#   posemb_config_header_only_consumer consumer_config.cpp with posemb::config_header_only
#                                      (test build)
#   posemb_names_consumer              consumer_names.cpp with posemb::posemb: ModelPositions
#                                      named without nlohmann-json (no_nlohmann/ first; test build)
set(posemb_packaging_dir ${CMAKE_CURRENT_LIST_DIR})

# posemb_consumer(NAME SOURCE LIBRARY [WITHOUT_JSON]): the program NAME from SOURCE, linked to
# LIBRARY, warnings as errors; WITHOUT_JSON puts the stand-in nlohmann/json.hpp (which fails to
# compile) ahead of the include path.
function(posemb_consumer name source library)
  add_executable(${name} ${posemb_packaging_dir}/${source})
  target_link_libraries(${name} PRIVATE ${library})
  target_compile_options(${name} PRIVATE -Wall -Wextra -Werror)
  if("WITHOUT_JSON" IN_LIST ARGN)
    target_include_directories(${name} BEFORE PRIVATE ${posemb_packaging_dir}/no_nlohmann)
  endif()
endfunction()
