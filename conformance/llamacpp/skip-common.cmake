# Included by setup.sh's wheel build right after llama.cpp's project()
# (CMAKE_PROJECT_llama.cpp_INCLUDE): a normal variable shadows the FORCEd cache entry llama-cpp-python's CMakeLists sets, so
# llama.cpp's `common` library (not loaded by the Python bindings) is neither built nor installed.
set(LLAMA_BUILD_COMMON OFF)
