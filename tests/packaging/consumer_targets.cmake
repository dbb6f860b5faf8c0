# The consumer programs, shared by find_package/ and add_subdirectory/ (each defines the posemb::
# targets its way, then includes this file). run_consumer.cmake runs every one of them.
#   posemb_consumer                    consumer_main.cpp with posemb::posemb
#   posemb_config_consumer             consumer_config.cpp with posemb::config (compiled reader),
#                                      which alone must bring nlohmann-json
#   posemb_config_header_only_consumer consumer_config.cpp with posemb::config_header_only
#   posemb_names_consumer              consumer_names.cpp with posemb::posemb: ModelPositions
#                                      named without nlohmann-json (no_nlohmann/ first)
#   posemb_loader_consumer             consumer_loader.cpp with posemb::config: the loader called
#                                      through load.hpp without nlohmann-json (no_nlohmann/ first)
set(posemb_packaging_dir ${CMAKE_CURRENT_LIST_DIR})

function(posemb_consumer name source library)
  add_executable(${name} ${posemb_packaging_dir}/${source})
  target_link_libraries(${name} PRIVATE ${library})
  target_compile_options(${name} PRIVATE -Wall -Wextra -Werror)
endfunction()

posemb_consumer(posemb_consumer consumer_main.cpp posemb::posemb)
posemb_consumer(posemb_config_consumer consumer_config.cpp posemb::config)
target_compile_definitions(posemb_config_consumer PRIVATE POSEMB_EXPECT_COMPILED=1)
posemb_consumer(posemb_config_header_only_consumer consumer_config.cpp posemb::config_header_only)
target_compile_definitions(posemb_config_header_only_consumer PRIVATE POSEMB_EXPECT_COMPILED=0)
posemb_consumer(posemb_names_consumer consumer_names.cpp posemb::posemb)
posemb_consumer(posemb_loader_consumer consumer_loader.cpp posemb::config)
foreach(name IN ITEMS posemb_names_consumer posemb_loader_consumer)
  target_include_directories(${name} BEFORE PRIVATE ${posemb_packaging_dir}/no_nlohmann)
endforeach()
