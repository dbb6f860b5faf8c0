// ALiBi: attention with linear biases (Press et al. 2022, "Train Short, Test Long", sec. 3, and
// get_slopes in the authors' reference code, attention_with_linear_biases/fairseq).
//
// No embedding is added to the tokens. Head h adds to the attention logit of query i and key j
//
//   bias[h, i, j] = -slope_h * (qpos_i - kpos_j)
//
// built from EXPLICIT query and key positions, so a single decode token at position p against a
// KV cache of positions 0 .. p gets the full bias row (a bias built from the query length alone
// would give that token no bias at all).
//
//   Causal form (decoders, the paper):  -slope_h * (qpos_i - kpos_j) where kpos_j <= qpos_i,
//                                       -inf where kpos_j > qpos_i (the causal mask).
//   Symmetric form (encoders):          -slope_h * |qpos_i - kpos_j|, nothing masked.
//
// Slopes for n heads and maximum bias B (B = 8 in the paper; MPT's alibi_bias_max):
//   n a power of two: slope_h = 2^(-B h/n), h = 1 .. n (get_slopes for B = 8).
//   otherwise, c = the largest power of two below n: the c slopes of the c-head recipe, then
//   every other slope of the 2c-head recipe starting with its first, 2^(-B*1/(2c)),
//   2^(-B*3/(2c)), 2^(-B*5/(2c)), ..., the first n - c of them.
// For other B this is MPT's construction (llm-foundry, llmfoundry/models/layers/attention.py,
// gen_slopes; HuggingFace transformers, models/mpt/modeling_mpt.py, build_mpt_alibi_tensor):
// with N = 2^ceil(log2 n) and s_k = 2^(-B k/N), k = 1 .. N, the slopes are
// concat(s_2, s_4, ..., s_N, s_1, s_3, ...)[:n] -- s_2m = 2^(-B m/c) is the c-head recipe and
// s_(2m+1) the odd slopes of the 2c-head one, the same list. (MPT forms the exponents in
// float32; here they are double.)
//
// A tensor-parallel rank holding heads [begin, end) of n computes exactly their slopes with
// alibi_slopes(n, B, HeadRange{begin, end}); the ranks' slopes concatenated are the full list.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "posemb/error.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

enum class AlibiForm {
  Causal,     // -slope * (qpos - kpos), -inf where kpos > qpos
  Symmetric,  // -slope * |qpos - kpos|
};

inline const char* to_string(AlibiForm form) {
  return form == AlibiForm::Causal ? "causal" : "symmetric";
}

// A full bias: [heads, q_len, k_len].
template <class T>
using AlibiBias = Eigen::Tensor<T, 3, Eigen::RowMajor>;
// The bias of one query against every key: [heads, k_len].
template <class T>
using AlibiBiasRow = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// A contiguous slice [begin, end) of a layer's heads, e.g. the heads of one tensor-parallel rank.
struct HeadRange {
  int begin = 0;
  int end = 0;
};

// How the slopes are rounded once formed.
enum class AlibiSlopeRounding {
  None,      // the exact slopes (the paper's), in double
  BFloat16,  // each slope rounded to float32, then to bfloat16 (round to nearest even): Falcon's
             // build_alibi_tensor (transformers models/falcon/modeling_falcon.py, and Falcon-RW's
             // own modelling_RW.py) multiplies `slopes[..., None].bfloat16()` by the positions
};

// Returns slopes: [n_heads] in the reference code's head order, or [end - begin] for the heads of
// `heads` only. max_bias is B above.
// Example (MPT-7B: 32 heads, alibi_bias_max 8; rank 1 of 4 holds heads 8 .. 15):
//   const Eigen::VectorXd all = posemb::alibi_slopes(32);                                 // [32]
//   const Eigen::VectorXd mine = posemb::alibi_slopes(32, 8.0, posemb::HeadRange{8, 16});  // [8]
// Falcon-RW's slopes (tiiuae/falcon-rw-1b, 32 heads): its bias is then
// bfloat16(slope * bfloat16(k)) (torch promotes the int64 positions to bfloat16 and rounds the
// product to bfloat16):
//   const Eigen::VectorXd falcon =
//       posemb::alibi_slopes(32, 8.0, std::nullopt, posemb::AlibiSlopeRounding::BFloat16);
inline Eigen::VectorXd alibi_slopes(int n_heads, double max_bias = 8.0,
                                    std::optional<HeadRange> heads = std::nullopt,
                                    AlibiSlopeRounding rounding = AlibiSlopeRounding::None) {
  if (rounding != AlibiSlopeRounding::None && rounding != AlibiSlopeRounding::BFloat16) {
    detail::fail("rounding", static_cast<int>(rounding),
                 "expected AlibiSlopeRounding::None or AlibiSlopeRounding::BFloat16");
  }
  detail::require_positive("n_heads", n_heads);
  detail::require_positive_finite("max_bias", max_bias);
  const HeadRange range = heads.value_or(HeadRange{0, n_heads});
  if (range.begin < 0 || range.begin >= range.end || range.end > n_heads) {
    detail::fail("head range",
                 "[" + std::to_string(range.begin) + ", " + std::to_string(range.end) + ")",
                 "expected 0 <= begin < end <= n_heads = " + std::to_string(n_heads));
  }
  std::int64_t c = 1;  // the largest power of two <= n_heads
  while (2 * c <= n_heads) c *= 2;
  Eigen::VectorXd slopes(range.end - range.begin);
  for (std::int64_t h = range.begin; h < range.end; ++h) {
    const double exponent = h < c
                                ? static_cast<double>(h + 1) / static_cast<double>(c)
                                : static_cast<double>(2 * (h - c) + 1) / static_cast<double>(2 * c);
    const double slope = std::exp2(-max_bias * exponent);
    slopes[h - range.begin] =
        rounding == AlibiSlopeRounding::None
            ? slope
            : static_cast<double>(static_cast<float>(Eigen::bfloat16(static_cast<float>(slope))));
  }
  return slopes;
}

namespace detail {

inline void check_alibi_form(AlibiForm form) {
  if (form != AlibiForm::Causal && form != AlibiForm::Symmetric) {
    fail("form", static_cast<int>(form), "expected AlibiForm::Causal or AlibiForm::Symmetric");
  }
}

// The bias of one (query, key) position pair, in double. The distance is formed in double so
// that no position pair can overflow.
inline double alibi_bias_value(double slope, std::int64_t q_position, std::int64_t k_position,
                               AlibiForm form) {
  const double distance = static_cast<double>(q_position) - static_cast<double>(k_position);
  if (form == AlibiForm::Causal) {
    return k_position > q_position ? -std::numeric_limits<double>::infinity() : -slope * distance;
  }
  return -slope * std::abs(distance);
}

// slopes: [heads], heads >= 1, each finite and > 0.
inline void check_alibi_slopes(const Eigen::VectorXd& slopes) {
  require_positive("slopes.size()", slopes.size());
  for (Eigen::Index h = 0; h < slopes.size(); ++h) {
    require_positive_finite("slopes[" + std::to_string(h) + "]", slopes[h]);
  }
}

template <class T>
T alibi_to_storage(double value) {
  return static_cast<T>(static_cast<compute_t<T>>(value));
}

}  // namespace detail

// bias[h, i, j] for per-head slopes [heads] (alibi_slopes(n): all n heads; or another max_bias,
// or one rank's heads), query positions q_positions[i] ([q_len]) and key positions k_positions[j]
// ([k_len]); returns [heads, q_len, k_len] stored as T.
// Example (BLOOM, 16 heads, prefill of 8 tokens then the bias of the 9th against its cache):
//   const posemb::AlibiBias<float> prefill =
//       posemb::alibi_bias<float>(posemb::alibi_slopes(16), positions_0_to_7, positions_0_to_7);
//   const posemb::AlibiBiasRow<float> decode =
//       posemb::alibi_bias_row<float>(posemb::alibi_slopes(16), 8, positions_0_to_8);  // [16, 9]
template <class T = float>
AlibiBias<T> alibi_bias(const Eigen::VectorXd& slopes, const PositionVector& q_positions,
                        const PositionVector& k_positions, AlibiForm form = AlibiForm::Causal) {
  static_assert(is_storage_type_v<T>,
                "posemb storage type must be float, double, Eigen::half or Eigen::bfloat16");
  detail::check_alibi_form(form);
  detail::check_alibi_slopes(slopes);
  AlibiBias<T> bias(slopes.size(), q_positions.size(), k_positions.size());
  for (Eigen::Index h = 0; h < slopes.size(); ++h) {
    for (Eigen::Index i = 0; i < q_positions.size(); ++i) {
      for (Eigen::Index j = 0; j < k_positions.size(); ++j) {
        bias(h, i, j) = detail::alibi_to_storage<T>(
            detail::alibi_bias_value(slopes[h], q_positions[i], k_positions[j], form));
      }
    }
  }
  return bias;
}

// One query row, for decode with a KV cache: the bias of the query at q_position against every
// key position, without building the full [heads, q_len, k_len] bias. Returns [heads, k_len],
// equal to alibi_bias(slopes, {q_position}, k_positions, form) with the query axis dropped.
template <class T = float>
AlibiBiasRow<T> alibi_bias_row(const Eigen::VectorXd& slopes, std::int64_t q_position,
                               const PositionVector& k_positions,
                               AlibiForm form = AlibiForm::Causal) {
  static_assert(is_storage_type_v<T>,
                "posemb storage type must be float, double, Eigen::half or Eigen::bfloat16");
  detail::check_alibi_form(form);
  detail::check_alibi_slopes(slopes);
  AlibiBiasRow<T> row(slopes.size(), k_positions.size());
  for (Eigen::Index h = 0; h < slopes.size(); ++h) {
    for (Eigen::Index j = 0; j < k_positions.size(); ++j) {
      row(h, j) = detail::alibi_to_storage<T>(
          detail::alibi_bias_value(slopes[h], q_position, k_positions[j], form));
    }
  }
  return row;
}

}  // namespace posemb
