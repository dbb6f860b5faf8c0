// The streaming (non-temporal) copy behind posemb's streaming stores
// (posemb/machine/streaming_stores.hpp): whole 64-byte lines of the destination are written with
// non-temporal stores, which go to memory without first reading the line into the cache (an
// ordinary store reads it: "read for ownership"), so a pass that reads x and writes out moves two
// streams instead of three. The partial lines at either end of a run are written with ordinary
// stores. A copy, so the bytes are those of the source whatever the level.
//
// Compiled per instruction-set level (posemb/machine/isa.hpp): 512-bit stores at avx512, 256-bit at
// avx2, 128-bit SSE2 stores at portable on x86-64 (every x86-64 CPU has SSE2); on aarch64 (neon,
// and portable, the same code) two STNP of a pair of 128-bit registers per line; elsewhere a plain
// memcpy. x86-64's non-temporal stores are weakly ordered: a thread calls stream_fence() after its
// last streaming copy, before its results are handed to another thread. STNP's stores are
// ordered as ordinary stores are (the Arm ARM relaxes only a later load's address dependency on
// LDNP), so stream_fence() is nothing there.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "posemb/machine/isa.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#define POSEMB_STREAM_X86 1
#include <immintrin.h>
#else
#define POSEMB_STREAM_X86 0
#endif

namespace posemb {
namespace detail {

inline constexpr std::size_t cache_line_bytes = 64;

#if POSEMB_STREAM_X86
// `lines` whole 64-byte lines from src to dst (dst 64-byte aligned) with non-temporal stores:
// with the widest vectors the build itself targets (portable), AVX2 or AVX-512.
inline void stream_lines_portable(unsigned char* dst, const unsigned char* src, std::size_t lines) {
  for (std::size_t i = 0; i < lines; ++i, dst += cache_line_bytes, src += cache_line_bytes) {
#if defined(__AVX512F__)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), _mm512_loadu_si512(src));
#elif defined(__AVX2__)
    for (int part = 0; part < 2; ++part) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 32 * part),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32 * part)));
    }
#else
    for (int part = 0; part < 4; ++part) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16 * part),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16 * part)));
    }
#endif
  }
}
#endif

#if POSEMB_ISA_NEON
// `lines` whole 64-byte lines from src to dst with STNP (store pair, non-temporal hint) of two
// q registers, two per line. ACLE has no intrinsic for it, hence the assembly.
inline void stream_lines_neon(unsigned char* dst, const unsigned char* src, std::size_t lines) {
  for (std::size_t i = 0; i < lines; ++i, dst += cache_line_bytes, src += cache_line_bytes) {
    const uint8x16_t a = vld1q_u8(src), b = vld1q_u8(src + 16);
    const uint8x16_t c = vld1q_u8(src + 32), d = vld1q_u8(src + 48);
    __asm__ volatile("stnp %q[a], %q[b], [%[to]]\n\tstnp %q[c], %q[d], [%[to], #32]"
                     :
                     : [a] "w"(a), [b] "w"(b), [c] "w"(c), [d] "w"(d), [to] "r"(dst)
                     : "memory");
  }
}
#endif

#if POSEMB_ISA_DISPATCH
POSEMB_TARGET_AVX2 inline void stream_lines_avx2(unsigned char* dst, const unsigned char* src,
                                                 std::size_t lines) {
  for (std::size_t i = 0; i < lines; ++i, dst += cache_line_bytes, src += cache_line_bytes) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 32), b);
  }
}
POSEMB_TARGET_AVX512 inline void stream_lines_avx512(unsigned char* dst, const unsigned char* src,
                                                     std::size_t lines) {
  for (std::size_t i = 0; i < lines; ++i, dst += cache_line_bytes, src += cache_line_bytes) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), _mm512_loadu_si512(src));
  }
}
#endif

// The bytes [0, n) of src to dst (no overlap) at the active level: ordinary stores up to dst's
// first line boundary, streaming stores for whole lines, ordinary stores for the rest.
inline void stream_copy(void* dst, const void* src, std::size_t n) {
  auto* to = static_cast<unsigned char*>(dst);
  const auto* from = static_cast<const unsigned char*>(src);
#if POSEMB_STREAM_X86 || POSEMB_ISA_NEON
  const std::size_t misalign = reinterpret_cast<std::uintptr_t>(to) & (cache_line_bytes - 1);
  const std::size_t head = misalign == 0 ? 0 : std::min(n, cache_line_bytes - misalign);
  std::memcpy(to, from, head);
  to += head;
  from += head;
  n -= head;
  const std::size_t lines = n / cache_line_bytes;
#if POSEMB_ISA_NEON
  stream_lines_neon(to, from, lines);
#else
  bool done = false;
#if POSEMB_ISA_DISPATCH
  const IsaLevel level = isa_level();
  if (!runs_inline(level)) {
    if (level == IsaLevel::Avx512) {
      stream_lines_avx512(to, from, lines);
      done = true;
    } else if (level == IsaLevel::Avx2) {
      stream_lines_avx2(to, from, lines);
      done = true;
    }
  }
#endif
  if (!done) stream_lines_portable(to, from, lines);
#endif
  std::memcpy(to + lines * cache_line_bytes, from + lines * cache_line_bytes,
              n - lines * cache_line_bytes);
#else
  std::memcpy(to, from, n);
#endif
}

// Orders this thread's streaming stores before its later stores (sfence).
inline void stream_fence() {
#if POSEMB_STREAM_X86
  _mm_sfence();
#endif
}

}  // namespace detail
}  // namespace posemb
