// Whether code for an instruction-set level uses fused multiply-adds, as posemb/machine/isa.hpp
// documents: every level above portable, and portable when the build targets FMA (x86-64 with
// -mfma or -march=haswell and later; every aarch64 build: the architecture has FMA).
#pragma once

#include "posemb/machine/isa.hpp"

namespace test_support {

inline bool level_is_fused(posemb::IsaLevel level) {
#if defined(__FMA__) || defined(__aarch64__)
  (void)level;
  return true;
#else
  return level != posemb::IsaLevel::Portable;
#endif
}

}  // namespace test_support
