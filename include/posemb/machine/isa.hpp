// Instruction-set levels: which build of the hot kernels (rotation, half-precision conversion,
// the cos/sin generator, the KV-cache conversions, the streaming copy) runs. On x86-64 with GCC
// or clang every level is compiled into the program through target attributes, whatever -march
// the program is built with, and the best level the CPU has is chosen once, at the first call. On
// aarch64 every CPU has NEON (Advanced SIMD) and FMA, so the build's own target is the neon level.
// Other targets and compilers have only the portable level.
//
//   portable  the code compiled for the build's own target (SSE2 on a default x86-64 build;
//             NEON and FMA on aarch64)
//   avx2      x86-64: AVX2 + FMA + F16C (Haswell, Zen 1 and later)
//   avx512    x86-64: AVX-512 F, BW, DQ and VL on top of avx2 (Skylake-SP, Zen 4 and later);
//             rounds float to bfloat16 with AVX512_BF16 where the CPU has it (Cooper Lake,
//             Sapphire Rapids, Zen 4)
//   neon      aarch64: NEON + FMA (every ARMv8-A CPU: Apple M, Graviton, Ampere, Cortex-A)
//
// A level of another architecture (neon on x86-64, avx2 or avx512 on aarch64) is refused with
// posemb::Error naming the level and this machine's levels, as is a level the CPU lacks.
//
// A level at or below what the build itself targets (-march=native on an AVX-512 machine: all
// three) runs the build's own code, inlined into its callers, so such a build pays nothing for
// the choice and forcing a lower level there changes nothing.
//
// Results. Every level with FMA (avx2, avx512, neon, and portable when the build itself targets
// FMA, as every aarch64 build does) gives the same bits, on x86-64 and aarch64 alike
// (tests/digests holds the digests both must reproduce): cos/sin reduce the angle with one exact
// FMA and evaluate their polynomials with FMAs, and a rotation forms a cos - b sin as fma(a, cos,
// -(b sin)) and a sin + b cos as fma(a, sin, b cos). Without FMA the reduction splits 2 pi in three
// parts and every product is rounded; the two differ by at most one rounding of a product or of the
// reduced angle, and both stay within the bounds documented in detail/cos_sin.hpp (cos/sin within 1
// float ulp of libm on the double angle) and detail/rotate.hpp. Half-precision conversions are
// bit-identical to static_cast at every level.
//
// The code around the kernels (frequencies, angles) must round alike too. GCC contracts
// a * b + c into an FMA by default (-ffp-contract=fast) wherever the target has FMA (aarch64,
// x86-64 -march=haswell and later); the digests of tests/digests hold on aarch64 with that
// default as with -ffp-contract=off, which the aarch64 cross build
// (cmake/toolchains/aarch64-linux-gnu.cmake) uses so that all of its code rounds as an x86-64
// default build does.
//
// Forcing a level (tests, benchmarks, comparing against the portable code): set the environment
// variable POSEMB_ISA to portable, avx2, avx512 or neon before the first call, or call
// posemb::set_isa_level. Set it before building tables that later calls must match bit for bit:
// a table and an in-call cos/sin agree exactly only when formed at levels with the same FMA use.
//
// Example:
//   posemb::set_isa_level(posemb::IsaLevel::Portable);   // or: POSEMB_ISA=portable ./app
//   std::printf("%s of %s\n", posemb::to_string(posemb::isa_level()),
//               posemb::to_string(posemb::best_isa_level()));
#pragma once

#include <Eigen/Core>
#include <atomic>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "posemb/error.hpp"

// POSEMB_ISA_DISPATCH: 1 where the avx2 and avx512 levels are compiled in (x86-64, GCC or
// clang), 0 elsewhere. POSEMB_ISA_NEON: 1 on aarch64 with NEON and FMA (GCC, clang), where the
// build's own code is the neon level and arm_neon.h serves the explicit vector kernels.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define POSEMB_ISA_DISPATCH 1
#include <cpuid.h>
#include <immintrin.h>
// Functions compiled for one level; their callees are inlined into them (POSEMB_INLINE).
#define POSEMB_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define POSEMB_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))
#define POSEMB_INLINE inline __attribute__((always_inline))
#else
#define POSEMB_ISA_DISPATCH 0
#define POSEMB_TARGET_AVX2
#define POSEMB_TARGET_AVX512
#define POSEMB_INLINE inline
#endif
#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__ARM_FEATURE_FMA) && \
    (defined(__GNUC__) || defined(__clang__))
#define POSEMB_ISA_NEON 1
#include <arm_neon.h>
#else
#define POSEMB_ISA_NEON 0
#endif

namespace posemb {

// The levels of every architecture; which ones this machine has: detail::isa_machine below.
enum class IsaLevel { Portable = 0, Avx2 = 1, Avx512 = 2, Neon = 3 };

inline const char* to_string(IsaLevel level) {
  switch (level) {
    case IsaLevel::Avx2:
      return "avx2";
    case IsaLevel::Avx512:
      return "avx512";
    case IsaLevel::Neon:
      return "neon";
    default:
      return "portable";
  }
}

namespace detail {

// This build's architecture: its name and its levels, lowest first (a CPU that runs a level runs
// every level before it).
struct IsaMachine {
  const char* name;
  IsaLevel levels[3];
  int count;
};
#if POSEMB_ISA_DISPATCH
inline constexpr IsaMachine isa_machine{
    "x86-64", {IsaLevel::Portable, IsaLevel::Avx2, IsaLevel::Avx512}, 3};
#elif POSEMB_ISA_NEON
inline constexpr IsaMachine isa_machine{"aarch64", {IsaLevel::Portable, IsaLevel::Neon}, 2};
#else
inline constexpr IsaMachine isa_machine{"this target", {IsaLevel::Portable}, 1};
#endif

// The place of `level` in isa_machine.levels, -1 if this architecture does not have it.
constexpr int isa_rank(IsaLevel level) {
  for (int i = 0; i < isa_machine.count; ++i) {
    if (isa_machine.levels[i] == level) return i;
  }
  return -1;
}

}  // namespace detail

// The best level this CPU (and this build) can run.
inline IsaLevel best_isa_level() {
#if POSEMB_ISA_NEON
  return IsaLevel::Neon;
#elif POSEMB_ISA_DISPATCH
  static const IsaLevel best = [] {
    __builtin_cpu_init();
    // F16C: CPUID leaf 1, ECX bit 29 (clang's __builtin_cpu_supports does not know "f16c").
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && ((ecx >> 29) & 1u) != 0;
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                        __builtin_cpu_supports("avx512vl");
    return avx512 ? IsaLevel::Avx512 : avx2 ? IsaLevel::Avx2 : IsaLevel::Portable;
  }();
  return best;
#else
  return IsaLevel::Portable;
#endif
}

// The levels this CPU (and this build) can run, lowest first: portable up to best_isa_level().
inline std::vector<IsaLevel> supported_isa_levels() {
  const int best = detail::isa_rank(best_isa_level());
  return std::vector<IsaLevel>(detail::isa_machine.levels, detail::isa_machine.levels + best + 1);
}

namespace detail {

// This machine's levels as "portable, avx2, avx512".
inline std::string isa_level_names() {
  std::string names;
  for (int i = 0; i < isa_machine.count; ++i) {
    names += (i == 0 ? "" : ", ") + std::string(to_string(isa_machine.levels[i]));
  }
  return names;
}

// Throws unless `level` is a level of this architecture and runs on this CPU.
inline void require_supported(IsaLevel level, const std::string& name) {
  const int rank = isa_rank(level);
  if (rank < 0) {
    fail(name, to_string(level),
         std::string("expected a level of this machine (") + isa_machine.name + ": " +
             isa_level_names() + ")");
  }
  if (rank > isa_rank(best_isa_level())) {
    fail(name, to_string(level),
         std::string("expected a level this CPU supports (up to ") + to_string(best_isa_level()) +
             ")");
  }
}

// POSEMB_ISA if set (throws for an unknown or unsupported value), else the best level.
inline IsaLevel initial_isa_level() {
  const char* forced = std::getenv("POSEMB_ISA");
  if (forced == nullptr || *forced == '\0') return best_isa_level();
  const std::string name(forced);
  for (IsaLevel level : {IsaLevel::Portable, IsaLevel::Avx2, IsaLevel::Avx512, IsaLevel::Neon}) {
    if (name == to_string(level)) {
      require_supported(level, "POSEMB_ISA");
      return level;
    }
  }
  fail("POSEMB_ISA", name, "expected portable, avx2, avx512 or neon");
}

// The level the build itself targets (-march): the portable code runs at least this level's
// kernels, so forcing portable in a -march=native build still runs native code.
#if POSEMB_ISA_DISPATCH && defined(__AVX512F__) && defined(__AVX512BW__) && \
    defined(__AVX512DQ__) && defined(__AVX512VL__) && defined(__FMA__) && defined(__F16C__)
inline constexpr IsaLevel compiled_isa_level = IsaLevel::Avx512;
#elif POSEMB_ISA_DISPATCH && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
inline constexpr IsaLevel compiled_isa_level = IsaLevel::Avx2;
#elif POSEMB_ISA_NEON
inline constexpr IsaLevel compiled_isa_level = IsaLevel::Neon;
#else
inline constexpr IsaLevel compiled_isa_level = IsaLevel::Portable;
#endif

// What the kernels instantiated for level L may use: L, or more if the build targets more.
template <IsaLevel L>
inline constexpr IsaLevel effective_level_v = isa_rank(L) > isa_rank(compiled_isa_level)
                                                  ? L
                                                  : compiled_isa_level;

// Whether the kernels for `level` are the ones compiled for the build's own target (inlined into
// their callers), which run `level`'s code or better.
inline bool runs_inline(IsaLevel level) { return isa_rank(level) <= isa_rank(compiled_isa_level); }

// Whether code for level L has FMA (and so takes the fused arithmetic described above).
#if defined(__FMA__) || POSEMB_ISA_NEON
template <IsaLevel L>
inline constexpr bool has_fma_v = true;
#else
template <IsaLevel L>
inline constexpr bool has_fma_v = L != IsaLevel::Portable;
#endif

// The per-level kernels (detail/rotate.hpp, detail/cos_sin.hpp) are plain loops left to the
// compiler's vectorizer. GCC at -O2 (RelWithDebInfo, distribution packages) vectorizes only
// loops whose trip count it knows, so they run blocks of lane_block lanes, each a loop of
// constant count (lane_count), then the rest. Measured on Zen 4, g++ 12 -O2, level avx512:
// cos/sin 1.1 ns per entry against 5.6 for one loop of unknown count; RoPE on a cached
// [1, 256, 32, 128] float tensor 0.58 of memcpy against 0.16-0.23.
inline constexpr Eigen::Index lane_block = 16;
using lane_count = std::integral_constant<Eigen::Index, lane_block>;

inline std::atomic<IsaLevel>& active_isa_level() {
  static std::atomic<IsaLevel> level{initial_isa_level()};
  return level;
}

}  // namespace detail

// The level the kernels run at.
inline IsaLevel isa_level() { return detail::active_isa_level().load(std::memory_order_relaxed); }

// Runs every later call at `level`; throws posemb::Error if the CPU lacks it.
inline void set_isa_level(IsaLevel level) {
  detail::require_supported(level, "level");
  detail::active_isa_level().store(level, std::memory_order_relaxed);
}

}  // namespace posemb
