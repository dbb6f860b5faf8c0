// Scaled RoPE for long context: one free function per variant, each a change to the default
// frequencies inv_i = base^(-2i/d) (d = rotary_dim, i = 0 .. d/2 - 1), each returning a RopeSpec
// (inv_freq plus the attention factor that multiplies cos and sin). Each takes the head it is
// made for as `dims` (rope.hpp's RotaryDims): an int rotates the whole head (d = head_dim),
// RotaryDims{head_dim, rotary_dim} the first rotary_dim features only (partial rotary).
//
// Semantics follow HuggingFace transformers' `ROPE_INIT_FUNCTIONS` (modeling_rope_utils.py,
// v4.57 / v5): the same formulas, computed in double. See tests/data/hf/README.md for the
// golden values these functions are checked against.
//
// Every variant at factor 1 returns the default frequencies bit for bit (dynamic NTK: for
// seq_len <= max_position_embeddings, where it is a no-op at any factor).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "posemb/error.hpp"
#include "posemb/frequencies.hpp"
#include "posemb/rotary/rope.hpp"

namespace posemb {

namespace detail {

inline RopeSpec make_rope_spec(Eigen::VectorXd inv_freq, double attention_scale,
                               const RotaryDims& dims, Pairing pairing) {
  RopeSpec spec;
  spec.inv_freq = std::move(inv_freq);
  spec.attention_scale = attention_scale;
  spec.pairing = pairing;
  spec.rotary_dim = dims.rotary_dim;
  spec.head_dim = dims.head_dim;
  spec.validate();
  return spec;
}

inline void require_context_length(const std::string& name, std::int64_t value) {
  if (value <= 0) fail(name, value, "expected a context length > 0");
}

// NTK variants raise base to d/(d-2): undefined for d = 2.
inline void require_ntk_rotary_dim(int rotary_dim) {
  require_even_positive("rotary_dim", rotary_dim);
  if (rotary_dim < 4)
    fail("rotary_dim", rotary_dim, "expected >= 4 for NTK scaling (exponent d/(d-2))");
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Linear scaling / position interpolation (Chen et al. 2023, "Extending Context Window of Large
// Language Models via Positional Interpolation"): positions are divided by s, i.e.
//   inv_i' = inv_i / s,  attention factor 1.
inline RopeSpec linear_rope_spec(RotaryDims dims, double base, double factor,
                                 Pairing pairing = Pairing::RotateHalf) {
  dims.validate();
  detail::require_positive_finite("factor", factor);
  Eigen::VectorXd inv_freq = default_inv_freq(dims.rotary_dim, base) / factor;
  return detail::make_rope_spec(std::move(inv_freq), 1.0, dims, pairing);
}

// ---------------------------------------------------------------------------------------------
// Static NTK-aware scaling (bloc97 2023, "NTK-Aware Scaled RoPE"; Peng et al. 2023, YaRN §3.2):
// the base grows so that the lowest frequency is interpolated by s and the highest is kept:
//   base' = base * s^(d/(d-2)),  inv_i' = base'^(-2i/d),  attention factor 1.
inline RopeSpec ntk_rope_spec(RotaryDims dims, double base, double factor,
                              Pairing pairing = Pairing::RotateHalf) {
  dims.validate();
  const int rotary_dim = dims.rotary_dim;
  detail::require_ntk_rotary_dim(rotary_dim);
  detail::require_positive_finite("base", base);
  detail::require_positive_finite("factor", factor);
  const double d = rotary_dim;
  const double scaled_base = base * std::pow(factor, d / (d - 2.0));
  detail::require_positive_finite("scaled base (base * factor^(d/(d-2)))", scaled_base);
  return detail::make_rope_spec(default_inv_freq(rotary_dim, scaled_base), 1.0, dims, pairing);
}

// ---------------------------------------------------------------------------------------------
// Dynamic NTK scaling (emozilla 2023, "Dynamically Scaled RoPE"; HuggingFace
// `_compute_dynamic_ntk_parameters`). The base depends on the current sequence length, passed
// in explicitly (no cached state): with L = max_position_embeddings and seq' = max(seq_len, L),
//   base' = base * (s * seq'/L - (s - 1))^(d/(d-2)),  inv_i' = base'^(-2i/d),
// attention factor 1. For seq_len <= L, base' = base: the default frequencies.
// Keys cached under one seq_len must be re-rotated (kv/rerotate.hpp) when the spec changes.
inline RopeSpec dynamic_ntk_rope_spec(RotaryDims dims, double base, double factor,
                                      std::int64_t max_position_embeddings, std::int64_t seq_len,
                                      Pairing pairing = Pairing::RotateHalf) {
  dims.validate();
  const int rotary_dim = dims.rotary_dim;
  detail::require_ntk_rotary_dim(rotary_dim);
  detail::require_positive_finite("base", base);
  detail::require_positive_finite("factor", factor);
  detail::require_context_length("max_position_embeddings", max_position_embeddings);
  if (seq_len < 0) detail::fail("seq_len", seq_len, "expected >= 0");
  if (seq_len <= max_position_embeddings) {
    return detail::make_rope_spec(default_inv_freq(rotary_dim, base), 1.0, dims, pairing);
  }
  const double d = rotary_dim;
  const double growth =
      factor * static_cast<double>(seq_len) / static_cast<double>(max_position_embeddings) -
      (factor - 1.0);
  detail::require_positive_finite("dynamic NTK growth (s * seq_len / L - (s - 1))", growth);
  const double scaled_base = base * std::pow(growth, d / (d - 2.0));
  detail::require_positive_finite("scaled base", scaled_base);
  return detail::make_rope_spec(default_inv_freq(rotary_dim, scaled_base), 1.0, dims, pairing);
}

// ---------------------------------------------------------------------------------------------
// YaRN (Peng et al. 2023, "YaRN: Efficient Context Window Extension of Large Language Models",
// §3.3-3.4; HuggingFace `_compute_yarn_parameters`).
struct YarnParams {
  double factor = 1.0;                                // s
  std::int64_t original_max_position_embeddings = 0;  // L0, the pre-training context (> 0)
  double beta_fast = 32.0;  // pairs turning more than beta_fast times in L0 are kept
  double beta_slow = 1.0;   // pairs turning fewer than beta_slow times in L0 are divided by s
  bool truncate = true;     // floor/ceil the ramp bounds (false: gpt-oss style fractional bounds)
  std::optional<double> attention_factor;  // explicit attention factor, overrides the rest
  std::optional<double> mscale;            // DeepSeek: m(s, mscale) / m(s, mscale_all_dim)
  std::optional<double> mscale_all_dim;
};

// m(s, k) = 0.1 * k * ln(s) + 1 for s > 1, else 1 (YaRN eq. 22 with sqrt(1/t) = 0.1 ln s + 1).
inline double yarn_mscale(double factor, double k = 1.0) {
  if (factor <= 1.0) return 1.0;
  return 0.1 * k * std::log(factor) + 1.0;
}

// The pair-index value at which a pair turns `rotations` times within L0:
//   dim(r) = d * ln(L0 / (2 pi r)) / (2 ln base).
inline double yarn_correction_dim(double rotations, int rotary_dim, double base,
                                  std::int64_t original_max_position_embeddings) {
  return rotary_dim *
         std::log(static_cast<double>(original_max_position_embeddings) / (rotations * two_pi)) /
         (2.0 * std::log(base));
}

// The ramp's bounds, low and high (pair-index values):
//   low = floor(dim(beta_fast)), high = ceil(dim(beta_slow)) (no rounding if !truncate);
//   low = max(low, 0), high = min(high, d - 1) (HF clamps to d - 1, not d/2 - 1);
//   if low == high: high += 0.001.
struct YarnRampBounds {
  double low = 0.0, high = 0.0;
};

inline YarnRampBounds yarn_ramp_bounds(int rotary_dim, double base, const YarnParams& params) {
  detail::require_even_positive("rotary_dim", rotary_dim);
  detail::require_positive_finite("base", base);
  detail::require_context_length("original_max_position_embeddings",
                                 params.original_max_position_embeddings);
  detail::require_positive_finite("beta_fast", params.beta_fast);
  detail::require_positive_finite("beta_slow", params.beta_slow);
  // Equal betas run in HF (Kimi K2: 1 and 1; the ramp is one pair wide, or 0.001 when the
  // bounds meet); _validate_yarn_rope_parameters only warns about beta_fast < beta_slow.
  if (params.beta_fast < params.beta_slow) {
    detail::fail("beta_fast", params.beta_fast,
                 "expected >= beta_slow = " + std::to_string(params.beta_slow));
  }
  if (base == 1.0) detail::fail("base", base, "expected != 1 for YaRN (ln base is a divisor)");
  double low = yarn_correction_dim(params.beta_fast, rotary_dim, base,
                                   params.original_max_position_embeddings);
  double high = yarn_correction_dim(params.beta_slow, rotary_dim, base,
                                    params.original_max_position_embeddings);
  if (params.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(rotary_dim - 1));
  if (low == high) high += 0.001;
  return {low, high};
}

// ramp_i in [0, 1] per pair: 0 = kept (extrapolated), 1 = fully interpolated (divided by s):
//   ramp_i = clamp((i - low) / (high - low), 0, 1), low and high from yarn_ramp_bounds.
// Returns ramp: [rotary_dim / 2].
inline Eigen::VectorXd yarn_ramp(int rotary_dim, double base, const YarnParams& params) {
  const YarnRampBounds bounds = yarn_ramp_bounds(rotary_dim, base, params);
  Eigen::VectorXd ramp(rotary_dim / 2);
  for (int i = 0; i < ramp.size(); ++i) {
    ramp[i] = std::clamp((i - bounds.low) / (bounds.high - bounds.low), 0.0, 1.0);
  }
  return ramp;
}

// The YaRN attention factor: attention_factor if given; else m(s, mscale) / m(s, mscale_all_dim)
// if both are given and non-zero; else m(s, 1).
inline double yarn_attention_factor(const YarnParams& params) {
  if (params.attention_factor) {
    detail::require_positive_finite("attention_factor", *params.attention_factor);
    return *params.attention_factor;
  }
  if (params.mscale && params.mscale_all_dim && *params.mscale != 0.0 &&
      *params.mscale_all_dim != 0.0) {
    return yarn_mscale(params.factor, *params.mscale) /
           yarn_mscale(params.factor, *params.mscale_all_dim);
  }
  return yarn_mscale(params.factor);
}

// YaRN frequencies: the fast pairs (ramp 0) keep inv_i, the slow pairs (ramp 1) get inv_i / s,
// the ramp blends linearly in frequency:
//   inv_i' = inv_i * (1 - ramp_i) + inv_i / s * ramp_i   (written inv_i + (inv_i/s - inv_i) ramp_i)
inline RopeSpec yarn_rope_spec(RotaryDims dims, double base, const YarnParams& params,
                               Pairing pairing = Pairing::RotateHalf) {
  dims.validate();
  detail::require_positive_finite("factor", params.factor);
  const Eigen::VectorXd ramp = yarn_ramp(dims.rotary_dim, base, params);
  const Eigen::VectorXd inv = default_inv_freq(dims.rotary_dim, base);
  Eigen::VectorXd inv_freq(inv.size());
  for (Eigen::Index i = 0; i < inv.size(); ++i) {
    const double interpolated = inv[i] / params.factor;
    // The end points exactly, and a blend that is exact at s = 1 in between.
    inv_freq[i] = ramp[i] == 0.0   ? inv[i]
                  : ramp[i] == 1.0 ? interpolated
                                   : inv[i] + (interpolated - inv[i]) * ramp[i];
  }
  return detail::make_rope_spec(std::move(inv_freq), yarn_attention_factor(params), dims, pairing);
}

// ---------------------------------------------------------------------------------------------
// Llama 3.1 scaling (Meta 2024, "The Llama 3 Herd of Models"; reference `apply_scaling` in
// meta-llama/llama-models, HuggingFace `_compute_llama3_parameters`). With wavelength
// wl_i = 2 pi / inv_i, low_wl = L0 / low_freq_factor, high_wl = L0 / high_freq_factor:
//   wl_i < high_wl:  inv_i (kept)
//   wl_i > low_wl:   inv_i / s (interpolated)
//   otherwise:       t = (L0 / wl_i - low_freq_factor) / (high_freq_factor - low_freq_factor),
//                    inv_i' = (1 - t) inv_i / s + t inv_i   (continuous at both edges)
// Attention factor 1. low_freq_factor == high_freq_factor leaves no band between (HF warns and
// runs it: Llama-4-Scout-17B-16E-Instruct has both 1); a wavelength of exactly L0 / 1 is kept.
struct Llama3Params {  // defaults: Llama 3.1's values
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  std::int64_t original_max_position_embeddings = 8192;
};

enum class Llama3Band { Kept, Ramp, Interpolated };

// Which band pair i with inverse frequency inv_i falls in.
inline Llama3Band llama3_band(double inv_i, const Llama3Params& params) {
  const double wavelength = two_pi / inv_i;
  const double L0 = static_cast<double>(params.original_max_position_embeddings);
  if (wavelength < L0 / params.high_freq_factor) return Llama3Band::Kept;
  if (wavelength > L0 / params.low_freq_factor) return Llama3Band::Interpolated;
  if (params.high_freq_factor == params.low_freq_factor) return Llama3Band::Kept;
  return Llama3Band::Ramp;
}

namespace detail {
inline void validate_llama3_params(const Llama3Params& params) {
  require_positive_finite("factor", params.factor);
  require_positive_finite("low_freq_factor", params.low_freq_factor);
  require_positive_finite("high_freq_factor", params.high_freq_factor);
  if (!(params.low_freq_factor <= params.high_freq_factor)) {
    fail("low_freq_factor", params.low_freq_factor,
         "expected <= high_freq_factor = " + std::to_string(params.high_freq_factor));
  }
  require_context_length("original_max_position_embeddings",
                         params.original_max_position_embeddings);
}
}  // namespace detail

inline RopeSpec llama3_rope_spec(RotaryDims dims, double base, const Llama3Params& params,
                                 Pairing pairing = Pairing::RotateHalf) {
  dims.validate();
  detail::validate_llama3_params(params);
  const Eigen::VectorXd inv = default_inv_freq(dims.rotary_dim, base);
  const double L0 = static_cast<double>(params.original_max_position_embeddings);
  Eigen::VectorXd inv_freq(inv.size());
  for (Eigen::Index i = 0; i < inv.size(); ++i) {
    switch (llama3_band(inv[i], params)) {
      case Llama3Band::Kept:
        inv_freq[i] = inv[i];
        break;
      case Llama3Band::Interpolated:
        inv_freq[i] = inv[i] / params.factor;
        break;
      case Llama3Band::Ramp: {
        const double wavelength = two_pi / inv[i];
        const double t = (L0 / wavelength - params.low_freq_factor) /
                         (params.high_freq_factor - params.low_freq_factor);
        inv_freq[i] = inv[i] + (1.0 - t) * (inv[i] / params.factor - inv[i]);
        break;
      }
    }
  }
  return detail::make_rope_spec(std::move(inv_freq), 1.0, dims, pairing);
}

// ---------------------------------------------------------------------------------------------
// LongRoPE (Ding et al. 2024, "LongRoPE: Extending LLM Context Window Beyond 2 Million Tokens";
// Phi-3 / HuggingFace `_compute_longrope_parameters`): a searched per-pair rescale factor,
//   inv_i' = inv_i / ext_i,  ext = long_factor if seq_len > L0 else short_factor,
// attention factor: attention_factor if given, else sqrt(1 + ln(s) / ln(L0)) for s > 1, else 1.
struct LongRopeParams {
  std::vector<double> short_factor;                   // [rotary_dim / 2]
  std::vector<double> long_factor;                    // [rotary_dim / 2]
  std::int64_t original_max_position_embeddings = 0;  // L0 (> 0); the switch point
  double factor = 1.0;  // s = max_position_embeddings / L0 in Phi-3; only sets the attention factor
  std::optional<double> attention_factor;
  // PhiMoE (modeling_phimoe.py, PhimoeRotaryEmbedding.forward): when both are set, the attention
  // factor is short_mscale up to L0 tokens and long_mscale beyond (attention_factor unused).
  std::optional<double> short_mscale;
  std::optional<double> long_mscale;
};

inline double longrope_attention_factor(const LongRopeParams& params,
                                        std::optional<std::int64_t> seq_len = std::nullopt) {
  if (params.short_mscale && params.long_mscale) {
    const bool use_long = seq_len && *seq_len > params.original_max_position_embeddings;
    const double mscale = use_long ? *params.long_mscale : *params.short_mscale;
    detail::require_positive_finite(use_long ? "long_mscale" : "short_mscale", mscale);
    return mscale;
  }
  if (params.attention_factor) {
    detail::require_positive_finite("attention_factor", *params.attention_factor);
    return *params.attention_factor;
  }
  if (params.factor <= 1.0) return 1.0;
  return std::sqrt(1.0 + std::log(params.factor) / std::log(static_cast<double>(
                                                       params.original_max_position_embeddings)));
}

// seq_len: the current sequence length; std::nullopt (no length known) uses short_factor.
inline RopeSpec longrope_rope_spec(RotaryDims dims, double base, const LongRopeParams& params,
                                   std::optional<std::int64_t> seq_len,
                                   Pairing pairing = Pairing::RotateHalf) {
  dims.validate();
  const int rotary_dim = dims.rotary_dim;
  detail::require_positive_finite("factor", params.factor);
  detail::require_context_length("original_max_position_embeddings",
                                 params.original_max_position_embeddings);
  if (params.original_max_position_embeddings == 1 && !params.attention_factor &&
      params.factor > 1.0) {
    detail::fail("original_max_position_embeddings", 1,
                 "expected > 1 (ln(L0) divides the attention factor)");
  }
  if (seq_len && *seq_len < 0) detail::fail("seq_len", *seq_len, "expected >= 0");
  const std::size_t pairs = static_cast<std::size_t>(rotary_dim / 2);
  for (const auto* list : {&params.short_factor, &params.long_factor}) {
    const std::string name = list == &params.short_factor ? "short_factor" : "long_factor";
    if (list->size() != pairs) {
      detail::fail(name + ".size()", list->size(),
                   "expected rotary_dim / 2 = " + std::to_string(pairs));
    }
    for (std::size_t i = 0; i < pairs; ++i) {
      detail::require_positive_finite(name + "[" + std::to_string(i) + "]", (*list)[i]);
    }
  }
  const bool use_long = seq_len && *seq_len > params.original_max_position_embeddings;
  const std::vector<double>& ext = use_long ? params.long_factor : params.short_factor;
  Eigen::VectorXd inv_freq = default_inv_freq(rotary_dim, base);
  for (Eigen::Index i = 0; i < inv_freq.size(); ++i)
    inv_freq[i] /= ext[static_cast<std::size_t>(i)];
  return detail::make_rope_spec(std::move(inv_freq), longrope_attention_factor(params, seq_len),
                                dims, pairing);
}

// ---------------------------------------------------------------------------------------------
// Proportional RoPE, p-RoPE (Barbero et al. 2024, "Round and Round We Go! What makes Rotary
// Positional Encodings useful?"; Gemma 4's full-attention layers, HuggingFace
// modeling_rope_utils.py rope type "proportional"). Over the whole head H, the first
// k = int(p * H // 2) pairs rotate, the rest never do:
//   inv_i = base^(-2i/H) / s   for i < k,
//   inv_i = 0                  for k <= i < H/2,
// rotary_dim = H, attention factor 1. Not partial rotary of fraction p: the exponents run over
// H (not 2k), and the pairs span the whole head (rotate-half pairs (i, i + H/2)), so the zero
// pairs sit in the middle and at the end of the head and pass through bit-identical.
struct ProportionalParams {
  double partial_rotary_factor = 1.0;  // p in (0, 1]
  double factor = 1.0;                 // s
};

// Returns the number k of rotating pairs; throws unless k >= 1.
inline int proportional_rotating_pairs(int head_dim, const ProportionalParams& params) {
  const double p = params.partial_rotary_factor;
  if (!(p > 0.0 && p <= 1.0)) detail::fail("partial_rotary_factor", p, "expected in (0, 1]");
  const int pairs = static_cast<int>(std::floor(p * static_cast<double>(head_dim) / 2.0));
  if (pairs < 1) {
    detail::fail(
        "partial_rotary_factor", p,
        "expected int(partial_rotary_factor * head_dim // 2) >= 1 rotating pair, head_dim = " +
            std::to_string(head_dim));
  }
  return pairs;
}

inline RopeSpec proportional_rope_spec(int head_dim, double base, const ProportionalParams& params,
                                       Pairing pairing = Pairing::RotateHalf) {
  detail::require_positive_finite("factor", params.factor);
  const int rotating = proportional_rotating_pairs(head_dim, params);
  Eigen::VectorXd inv_freq = default_inv_freq(head_dim, base) / params.factor;
  inv_freq.tail(inv_freq.size() - rotating).setZero();
  return detail::make_rope_spec(std::move(inv_freq), 1.0, RotaryDims(head_dim), pairing);
}

}  // namespace posemb
