// Sinusoidal absolute position embeddings.
//
// Vaswani et al. 2017, "Attention Is All You Need", sec. 3.5. Position p, model width d:
//
//   w_i = base^(-2i / d),  i = 0 .. d/2 - 1          (base = 10000 in the paper)
//   Interleaved (the paper, the original Transformer):  pe[p, 2i] = sin(p w_i),  pe[p, 2i+1] =
//   cos(p w_i) Concat:                                            pe[p, i]  = sin(p w_i),  pe[p,
//   d/2 + i] = cos(p w_i)
//
// Concat is the [sin | cos] order of tensor2tensor's get_timing_signal_1d and fairseq. Those
// implementations also space their frequencies differently, w_i = exp(-i ln(base) / (d/2 - 1)),
// so their tables are not a permutation of this one; posemb uses the paper's w_i in both layouts.
//
// The angle p w_i is formed in double and reduced mod 2 pi by the one cos/sin generator
// (detail/cos_sin.hpp, as for RoPE); only the final sin/cos is rounded to the storage type.
// Every row has norm sqrt(d/2) (sin^2 + cos^2 = 1 per pair). absolute.hpp adds the table to
// token embeddings.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "posemb/absolute/absolute.hpp"
#include "posemb/detail/cos_sin.hpp"
#include "posemb/error.hpp"
#include "posemb/frequencies.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

enum class SinusoidalLayout {
  Interleaved,  // sin at 2i, cos at 2i + 1 (Vaswani et al. 2017)
  Concat,       // sin at i, cos at d/2 + i (tensor2tensor / fairseq order)
};

inline const char* to_string(SinusoidalLayout layout) {
  return layout == SinusoidalLayout::Interleaved ? "interleaved" : "concat";
}

namespace detail {

inline void check_sinusoidal_layout(SinusoidalLayout layout) {
  if (layout != SinusoidalLayout::Interleaved && layout != SinusoidalLayout::Concat) {
    fail("layout", static_cast<int>(layout),
         "expected SinusoidalLayout::Interleaved or SinusoidalLayout::Concat");
  }
}

// Writes the embedding of `position` into out[0 .. d), rounded to T.
// inv_freq: [d / 2], w_i = base^(-2i/d).
template <class T>
void sinusoidal_row(std::int64_t position, const Eigen::VectorXd& inv_freq, SinusoidalLayout layout,
                    T* out) {
  const Eigen::Index half = inv_freq.size();
  constexpr Eigen::Index chunk = 64;
  double cos[chunk], sin[chunk];
  for (Eigen::Index begin = 0; begin < half; begin += chunk) {
    const Eigen::Index n = std::min(chunk, half - begin);
    cos_sin_at(inv_freq.data() + begin, static_cast<double>(position), 1.0, n, cos, sin);
    for (Eigen::Index i = begin; i < begin + n; ++i) {
      const Eigen::Index sin_at = layout == SinusoidalLayout::Interleaved ? 2 * i : i;
      const Eigen::Index cos_at = layout == SinusoidalLayout::Interleaved ? 2 * i + 1 : half + i;
      out[sin_at] = round_to_storage<T>(sin[i - begin]);
      out[cos_at] = round_to_storage<T>(cos[i - begin]);
    }
  }
}

}  // namespace detail

// The embedding of one position, in double: [d]. Any position (negative too) is accepted.
inline Eigen::VectorXd sinusoidal_embedding(
    std::int64_t position, int d, double base = 10000.0,
    SinusoidalLayout layout = SinusoidalLayout::Interleaved) {
  detail::check_sinusoidal_layout(layout);
  detail::require_even_positive("d", d);
  const Eigen::VectorXd inv_freq = default_inv_freq(d, base);  // checks base
  Eigen::VectorXd out(d);
  detail::sinusoidal_row(position, inv_freq, layout, out.data());
  return out;
}

// The table for positions 0 .. max_len - 1, stored as T: [max_len, d].
template <class T = float>
EmbeddingTable<T> sinusoidal_table(std::int64_t max_len, int d, double base = 10000.0,
                                   SinusoidalLayout layout = SinusoidalLayout::Interleaved) {
  static_assert(is_storage_type_v<T>,
                "posemb storage type must be float, double, Eigen::half or Eigen::bfloat16");
  detail::check_sinusoidal_layout(layout);
  detail::require_even_positive("d", d);
  detail::check_table_size(max_len, d);
  const Eigen::VectorXd inv_freq = default_inv_freq(d, base);  // checks base
  EmbeddingTable<T> table;
  detail::allocate_sized("max_len", max_len, static_cast<long double>(max_len) * d, sizeof(T),
                         [&] { table.resize(static_cast<Eigen::Index>(max_len), d); });
  for (Eigen::Index p = 0; p < table.rows(); ++p) {
    detail::sinusoidal_row(p, inv_freq, layout, table.row(p).data());
  }
  return table;
}

}  // namespace posemb
