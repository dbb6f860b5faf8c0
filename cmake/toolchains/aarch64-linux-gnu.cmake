# Cross build for aarch64 Linux with Debian's cross compilers (g++-aarch64-linux-gnu), run under
# qemu-user (qemu-user-static): the configure preset `aarch64` (CMakePresets.json).
#
#   cmake --preset aarch64 && cmake --build --preset aarch64 && ctest --preset aarch64
#
# Programs: the Debian cross toolchain's aarch64-linux-gnu-gcc / -g++ and its sysroot
# /usr/aarch64-linux-gnu (libc, libstdc++, libm for aarch64).
# Dependencies: Eigen 3.4, Catch2 2 (header-only: tests/catch_main.cpp compiles its main, so the
# x86-only /usr/lib/libCatch2WithMain.a is never linked), nlohmann-json and CLI11 are
# header-only and architecture-independent: their CMake packages and headers come from the
# build machine's /usr (find_package looks in the sysroot and then in /usr; libraries and
# headers found under /usr are the architecture-independent ones).
# Running: every test program, the tool and the test-time helpers run through
# CMAKE_CROSSCOMPILING_EMULATOR (qemu-aarch64-static -L /usr/aarch64-linux-gnu); without qemu the
# configure stops here, so that a cross build is never left untested.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(posemb_aarch64_sysroot /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH ${posemb_aarch64_sysroot})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# GCC contracts a * b + c into one FMA by default (-ffp-contract=fast outside ISO mode), and
# aarch64 always has FMA: arithmetic outside the kernels could then round differently from an
# x86-64 build of the default target, which has no FMA to contract into. Off, so that the whole
# program (the tool's outputs too) computes as that build; the kernels' FMAs are explicit
# (std::fma). -Wno-psabi: GCC's note that std::pair<double, double> arguments are passed as GCC
# 10.1 changed them to, which concerns only code mixing objects of older compilers.
set(CMAKE_C_FLAGS_INIT "-ffp-contract=off")
set(CMAKE_CXX_FLAGS_INIT "-ffp-contract=off -Wno-psabi")

find_program(POSEMB_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(NOT POSEMB_QEMU_AARCH64)
  message(FATAL_ERROR "posemb: the aarch64 cross build runs its tests under qemu-user: "
                      "apt-get install qemu-user-static")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${POSEMB_QEMU_AARCH64} -L ${posemb_aarch64_sysroot})
