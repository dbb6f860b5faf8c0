# posemb_baseline_isa(<out>): the x86-64 instruction sets the C++ compiler assumes under this
# build's flags (CMAKE_CXX_FLAGS and those of CMAKE_BUILD_TYPE), read from its predefined macros
# (`-dM -E`), as a Python tuple body of ("NAME", "cpuinfo flag") pairs. A default build assumes
# only SSE2, which every x86-64 CPU has (the faster levels are chosen at run time: posemb/machine/isa.hpp);
# a build with -march=native or -mavx2 assumes more, and posemb._cpu then refuses to load the
# extension on a CPU without them instead of dying of SIGILL. Empty on other targets and compilers.
function(posemb_baseline_isa out)
  set(${out} "" PARENT_SCOPE)
  if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$"
     OR NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    return()
  endif()
  string(TOUPPER "${CMAKE_BUILD_TYPE}" config)
  separate_arguments(flags UNIX_COMMAND "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${config}}")
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} ${flags} -dM -E -x c++ /dev/null
                  OUTPUT_VARIABLE macros RESULT_VARIABLE status ERROR_QUIET)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "posemb: `${CMAKE_CXX_COMPILER} -dM -E` failed: cannot tell the build's baseline instruction sets")
  endif()
  # macro, the name in messages, the flag Linux lists in /proc/cpuinfo
  set(isa_table
    __SSE2__ SSE2 sse2  __SSE3__ SSE3 pni  __SSSE3__ SSSE3 ssse3  __SSE4_1__ SSE4.1 sse4_1
    __SSE4_2__ SSE4.2 sse4_2  __POPCNT__ POPCNT popcnt  __AVX__ AVX avx  __AVX2__ AVX2 avx2
    __FMA__ FMA fma  __F16C__ F16C f16c  __BMI__ BMI1 bmi1  __BMI2__ BMI2 bmi2
    __LZCNT__ LZCNT abm  __MOVBE__ MOVBE movbe  __AVX512F__ AVX512F avx512f
    __AVX512CD__ AVX512CD avx512cd  __AVX512BW__ AVX512BW avx512bw  __AVX512DQ__ AVX512DQ avx512dq
    __AVX512VL__ AVX512VL avx512vl  __AVX512VNNI__ AVX512VNNI avx512_vnni
    __AVX512BF16__ AVX512_BF16 avx512_bf16  __AVX512FP16__ AVX512_FP16 avx512_fp16)
  set(pairs "")
  list(LENGTH isa_table length)
  math(EXPR last "${length} - 1")
  foreach(i RANGE 0 ${last} 3)
    math(EXPR name_at "${i} + 1")
    math(EXPR flag_at "${i} + 2")
    list(GET isa_table ${i} macro)
    list(GET isa_table ${name_at} name)
    list(GET isa_table ${flag_at} flag)
    if(macros MATCHES "#define ${macro} 1")
      string(APPEND pairs "(\"${name}\", \"${flag}\"), ")
    endif()
  endforeach()
  set(${out} "${pairs}" PARENT_SCOPE)
endfunction()
