// Fourier Position Embedding (FoPE).
//
// Hua et al. 2024, "Fourier Position Embedding: Enhancing Attention's Periodic Extension for
// Length Generalization", arXiv:2412.17739. Reference implementation: FourierEmbedding in
// olmo/model.py of github.com/TsinghuaC3I/Fourier-Position-Embedding (commit bd94b20), run with
// fourier_separate_basis, fourier_separate_head, fourier_ignore_zero,
// rope_clamp_floor_freq and rope_clamp_floor_to_zero. posemb reproduces its output; the
// conformance cases and a plain-math account of that code are in tests/data/fope/.
//
// FoPE treats RoPE as a non-uniform discrete Fourier transform and repairs two kinds of
// spectrum damage:
//
//  1. Clip floor (CF). With training length N, a frequency w_k = theta^(-2k/head_dim) strictly
//     below the floor 2 pi / N * floor_ratio never completes a full turn in training; it is set
//     to 0 and (by default) dropped. The D_in frequencies left are the retained ones.
//  2. Fourier series (FS). Each slot j < D_out of head h mixes every retained frequency:
//
//       C_hj(t) = sum_{k < D_in} A_cos[h, k, j] cos(w_k t)
//       S_hj(t) = sum_{k < D_in} A_sin[h, k, j] sin(w_k t)
//
//     Slots D_out <= j < head_dim/2 are padding: C = 1 and S = padding_sin (1 in the reference,
//     its "zero frequency, non-zero phase" slots).
//
// The head vector is then rotated with rotate-half pairing (j with j + head_dim/2):
//
//   y_j              = x_j C_j - x_{j+head_dim/2} S_j
//   y_{j+head_dim/2} = x_{j+head_dim/2} C_j + x_j S_j
//
// The same module (same coefficients) rotates queries and keys. With identity coefficients
// (D_in = D_out) FoPE is rotate-half RoPE on the retained frequencies plus the padded slots.
//
// Grouped-query attention: coefficients are stored per key-value head, [n_kv_heads, D_in,
// D_out]; query head h uses coefficient head h / (n_heads / n_kv_heads), the grouping of
// production ports (e.g. xtuner's FourierEmbedding) and of repeat_kv.
//
// Precision: angles w_k t are formed in double and reduced mod 2 pi, the sums C and S are
// accumulated in double, and only C and S are rounded to the arithmetic type (float for
// float/half/bf16 storage). The reference forms float32 phases, which drift by about t * 6e-8
// rad; at small positions the two agree to ~3e-6.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <unsupported/Eigen/CXX11/Tensor>
#include <utility>
#include <vector>

#include "posemb/detail/cos_sin.hpp"
#include "posemb/random.hpp"
#include "posemb/detail/rotary_engine.hpp"
#include "posemb/error.hpp"
#include "posemb/frequencies.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/rotate.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// ---------------------------------------------------------------------------------------------
// 1. Clip floor

// The frequencies before and after the clip floor.
struct FopeFrequencies {
  Eigen::VectorXd base_inv_freq;                  // [P] frequencies before the clip
  Eigen::Array<bool, Eigen::Dynamic, 1> clipped;  // [P] true where base_inv_freq < floor
  double floor = 0.0;                             // 2 pi / N * floor_ratio, radians per token
  bool drop_clipped = true;                       // clipped frequencies removed (not kept as 0)
  Eigen::VectorXd inv_freq;                       // [D_in] the frequencies FoPE mixes

  int pairs() const { return static_cast<int>(base_inv_freq.size()); }
  int d_in() const { return static_cast<int>(inv_freq.size()); }
  int clipped_count() const { return static_cast<int>(clipped.count()); }
};

// Clip floor (reference: RotaryEmbedding.get_inv_freq with rope_clamp_floor_freq and
// rope_clamp_floor_to_zero, then FourierEmbedding's fourier_ignore_zero):
//
//   floor = 2 pi / train_length * floor_ratio
//   w_k < floor (strictly)  ->  w_k = 0
//   drop_clipped: the zeros are removed, keeping the order of the others
//
// base_inv_freq: [P], e.g. default_inv_freq(head_dim, theta). floor_ratio = 0 clips nothing.
inline FopeFrequencies fope_clip_floor(const Eigen::VectorXd& base_inv_freq,
                                       std::int64_t train_length, double floor_ratio = 1.0,
                                       bool drop_clipped = true) {
  detail::require_positive("train_length", train_length);
  if (!(std::isfinite(floor_ratio) && floor_ratio >= 0.0)) {
    detail::fail("floor_ratio", floor_ratio, "expected a finite number >= 0");
  }
  FopeFrequencies f;
  f.base_inv_freq = base_inv_freq;
  f.floor = two_pi / static_cast<double>(train_length) * floor_ratio;
  f.drop_clipped = drop_clipped;
  f.clipped = (base_inv_freq.array() < f.floor);
  const Eigen::Index kept =
      drop_clipped ? base_inv_freq.size() - f.clipped.count() : base_inv_freq.size();
  f.inv_freq.resize(kept);
  Eigen::Index next = 0;
  for (Eigen::Index k = 0; k < base_inv_freq.size(); ++k) {
    if (!f.clipped[k]) {
      f.inv_freq[next++] = base_inv_freq[k];
    } else if (!drop_clipped) {
      f.inv_freq[next++] = 0.0;
    }
  }
  return f;
}

// The first n frequencies, the others dropped, no floor (vLLM 0.33.0,
// rotary_embedding/fope.py, FourierRotaryEmbedding._compute_inv_freq with num_inv_freq: the
// mask inv_freq_idx_selected[num_inv_freq:] = False). 1 <= n <= base_inv_freq.size().
inline FopeFrequencies fope_first_frequencies(const Eigen::VectorXd& base_inv_freq, int n) {
  FopeFrequencies f;
  f.base_inv_freq = base_inv_freq;
  f.clipped = Eigen::Array<bool, Eigen::Dynamic, 1>::Constant(base_inv_freq.size(), true);
  f.clipped.head(n).setConstant(false);
  f.inv_freq = base_inv_freq.head(n);
  return f;
}

// ---------------------------------------------------------------------------------------------
// 2. Parameters

// FoPE's settings as plain values (what a config.json's rope_scaling {"rope_type": "fope"}
// holds). Zero in n_kv_heads or d_out means "the default".
struct FopeConfig {
  int head_dim = 0;               // features per head (even)
  int n_heads = 0;                // query heads
  int n_kv_heads = 0;             // key-value heads = coefficient heads; 0: n_heads
  double theta = 10000.0;         // RoPE base
  std::int64_t train_length = 0;  // N, the training context length
  double floor_ratio = 1.0;       // the floor is 2 pi / N * floor_ratio
  bool drop_clipped = true;       // the reference's fourier_ignore_zero
  int d_out = 0;                  // mixed slots; 0: min(D_in, head_dim/4), or head_dim/2
                                  // when clipped frequencies are kept
  double sigma = 0.3;             // Xavier-normal gain of the initial noise
  std::uint64_t seed = 0;         // seed of the initial noise
  double padding_sin = 1.0;       // S of the padded slots (C is always 1)
  int num_inv_freq = 0;           // > 0: the first num_inv_freq frequencies, no clip floor
};

// A read-only view of a coefficient array: [coefficient heads, D_in, D_out], C order.
using FopeCoefficientMap = Eigen::TensorMap<const Eigen::Tensor<float, 3, Eigen::RowMajor>>;

class Fope;
inline Fope make_fope(const FopeConfig& config);
inline Fope fope_with_coefficients(const FopeConfig& config, const FopeCoefficientMap& sin_coef,
                                   const FopeCoefficientMap& cos_coef);

// Everything the FoPE kernel needs: frequencies, head counts, the coefficient arrays and the
// padding. Built by make_fope (initialised coefficients, owned) or fope_with_coefficients
// (a checkpoint's arrays, mapped without copying: keep them alive as long as the Fope and any
// copy or table of it). Immutable; copies share the coefficients.
class Fope {
 public:
  // The settings with n_kv_heads and d_out resolved.
  const FopeConfig& config() const { return config_; }
  int head_dim() const { return config_.head_dim; }
  int slots() const { return config_.head_dim / 2; }
  int n_heads() const { return config_.n_heads; }
  int n_kv_heads() const { return config_.n_kv_heads; }
  int d_in() const { return frequencies_.d_in(); }
  int d_out() const { return config_.d_out; }
  double padding_cos() const { return 1.0; }
  double padding_sin() const { return config_.padding_sin; }
  const FopeFrequencies& frequencies() const { return frequencies_; }
  const Eigen::VectorXd& inv_freq() const { return frequencies_.inv_freq; }  // [D_in]
  // A_sin, A_cos: [n_kv_heads, D_in, D_out]
  const FopeCoefficientMap& sin_coef() const { return sin_coef_; }
  const FopeCoefficientMap& cos_coef() const { return cos_coef_; }
  // True when the coefficients were initialised here, false when they map a caller's arrays.
  bool owns_coefficients() const { return storage_ != nullptr; }

  // Query heads per coefficient head for a tensor with `heads` heads: n_heads / n_kv_heads for
  // queries, 1 for keys (heads == n_kv_heads). Head h uses coefficient head h / group.
  Eigen::Index head_group(Eigen::Index heads) const {
    if (heads == n_heads()) return n_heads() / n_kv_heads();
    if (heads == n_kv_heads()) return 1;
    detail::fail("heads", heads,
                 "expected n_heads = " + std::to_string(n_heads()) +
                     " (queries) or n_kv_heads = " + std::to_string(n_kv_heads()) + " (keys)");
  }

 private:
  Fope(FopeConfig config, FopeFrequencies frequencies,
       std::shared_ptr<const std::vector<float>> storage, const float* sin_coef,
       const float* cos_coef)
      : config_(std::move(config)),
        frequencies_(std::move(frequencies)),
        storage_(std::move(storage)),
        sin_coef_(sin_coef, config_.n_kv_heads, frequencies_.d_in(), config_.d_out),
        cos_coef_(cos_coef, config_.n_kv_heads, frequencies_.d_in(), config_.d_out) {}

  friend Fope make_fope(const FopeConfig& config);
  friend Fope fope_with_coefficients(const FopeConfig& config, const FopeCoefficientMap& sin_coef,
                                     const FopeCoefficientMap& cos_coef);

  FopeConfig config_;
  FopeFrequencies frequencies_;
  std::shared_ptr<const std::vector<float>> storage_;  // owned sin then cos, or null
  FopeCoefficientMap sin_coef_, cos_coef_;
};

// Validates a FopeConfig (throws posemb::Error naming the field), clips the frequencies and
// fills in the defaults of n_kv_heads and d_out. Returns {the resolved config, the frequencies}.
inline std::pair<FopeConfig, FopeFrequencies> resolve_fope_config(FopeConfig config) {
  using detail::fail;
  using detail::require_positive;
  using detail::require_positive_finite;
  detail::require_even_positive("head_dim", config.head_dim);
  require_positive("n_heads", config.n_heads);
  if (config.n_kv_heads == 0) config.n_kv_heads = config.n_heads;
  require_positive("n_kv_heads", config.n_kv_heads);
  if (config.n_heads % config.n_kv_heads != 0) {
    fail("n_heads", config.n_heads,
         "expected a multiple of n_kv_heads = " + std::to_string(config.n_kv_heads));
  }
  require_positive_finite("theta", config.theta);
  if (!(std::isfinite(config.sigma) && config.sigma >= 0.0)) {
    fail("sigma", config.sigma, "expected a finite number >= 0");
  }
  if (!std::isfinite(config.padding_sin)) {
    fail("padding_sin", config.padding_sin, "expected a finite number");
  }
  if (config.num_inv_freq < 0 || config.num_inv_freq > config.head_dim / 2) {
    fail("num_inv_freq", config.num_inv_freq,
         "expected 0 (the clip floor chooses) or 1 .. head_dim / 2 = " +
             std::to_string(config.head_dim / 2));
  }
  FopeFrequencies frequencies =
      config.num_inv_freq > 0
          ? fope_first_frequencies(default_inv_freq(config.head_dim, config.theta),
                                   config.num_inv_freq)
          : fope_clip_floor(default_inv_freq(config.head_dim, config.theta), config.train_length,
                            config.floor_ratio, config.drop_clipped);
  if (frequencies.d_in() == 0) {
    fail("train_length", config.train_length,
         "every frequency lies below the clip floor 2 pi / train_length * floor_ratio = " +
             std::to_string(frequencies.floor) + "; expected a longer train_length");
  }
  const int slots = config.head_dim / 2;
  if (config.d_out == 0) {
    config.d_out = config.drop_clipped ? std::min(frequencies.d_in(), config.head_dim / 4) : slots;
  }
  if (config.d_out < 1 || config.d_out > slots) {
    fail("d_out", config.d_out, "expected 1 <= d_out <= head_dim / 2 = " + std::to_string(slots));
  }
  return {config, frequencies};
}

// The standard deviation of the initial noise: torch.nn.init.xavier_normal_(gain = sigma) on
// the 3-D tensor [H, D_in, D_out], as the reference does. torch takes fan_in = D_in * D_out and
// fan_out = H * D_out (the trailing dimension counts as a receptive field), so
//
//   std = sigma * sqrt(2 / (fan_in + fan_out)) = sigma * sqrt(2 / (D_out * (D_in + H)))
//
// which is not the 2-D value sigma * sqrt(2 / (D_in + D_out)).
inline double fope_noise_std(double sigma, int coefficient_heads, int d_in, int d_out) {
  return sigma * std::sqrt(2.0 / (static_cast<double>(d_out) * (d_in + coefficient_heads)));
}

// FoPE with initialised coefficients (reference: FourierEmbedding.reset_parameters with
// fourier_init = "eye_xavier_norm"): A = E + R for A_sin and A_cos independently, where
//   E, the "step-eye": step = ceil(D_in / D_out), E[h, i * step, i] = 1 for i * step < D_in
//      (the identity when D_in == D_out; trailing columns may hold no 1 when D_in > D_out);
//   R, normal noise with std fope_noise_std(sigma, n_kv_heads, D_in, D_out).
// The noise comes from SeededNormal(seed): A_sin's entries in C order, then A_cos's.
// A seed gives the same matrices everywhere, but not torch's: load a trained checkpoint's
// arrays with fope_with_coefficients to reproduce a model.
inline Fope make_fope(const FopeConfig& config) {
  auto [resolved, frequencies] = resolve_fope_config(config);
  const int heads = resolved.n_kv_heads, d_in = frequencies.d_in(), d_out = resolved.d_out;
  const double std_dev = fope_noise_std(resolved.sigma, heads, d_in, d_out);
  // Sizes as std::size_t for the indexing: A is [heads, D_in, D_out].
  const auto n_heads = static_cast<std::size_t>(heads), n_in = static_cast<std::size_t>(d_in),
             n_out = static_cast<std::size_t>(d_out);
  const std::size_t step = (n_in + n_out - 1) / n_out;
  const std::size_t per_array = n_heads * n_in * n_out;
  auto storage = std::make_shared<std::vector<float>>(2 * per_array);
  SeededNormal normal(resolved.seed);
  for (std::size_t array = 0; array < 2; ++array) {  // 0: A_sin, 1: A_cos
    float* a = storage->data() + array * per_array;
    for (std::size_t h = 0; h < n_heads; ++h) {
      for (std::size_t k = 0; k < n_in; ++k) {
        for (std::size_t j = 0; j < n_out; ++j) {
          const double eye = (k == j * step) ? 1.0 : 0.0;
          a[(h * n_in + k) * n_out + j] = static_cast<float>(eye + std_dev * normal());
        }
      }
    }
  }
  const float* sin_coef = storage->data();
  const float* cos_coef = storage->data() + per_array;
  return Fope(std::move(resolved), std::move(frequencies), std::move(storage), sin_coef, cos_coef);
}

// FoPE applying a checkpoint's coefficient arrays (e.g. the reference's
// transformer.blocks.<i>.pos_emb.sin_coef / cos_coef), mapped without copying.
// sin_coef, cos_coef: [n_kv_heads, D_in, D_out], float32, C order. D_out is taken from the
// arrays (config.d_out, if not 0, must agree); config.sigma and config.seed are not used.
inline Fope fope_with_coefficients(const FopeConfig& config, const FopeCoefficientMap& sin_coef,
                                   const FopeCoefficientMap& cos_coef) {
  FopeConfig wanted = config;
  if (wanted.d_out == 0) wanted.d_out = static_cast<int>(sin_coef.dimension(2));
  auto [resolved, frequencies] = resolve_fope_config(wanted);
  const std::array<Eigen::Index, 3> expected = {resolved.n_kv_heads, frequencies.d_in(),
                                                resolved.d_out};
  const char* axis[3] = {"n_kv_heads", "D_in (frequencies kept by the clip floor)", "d_out"};
  for (const auto* array : {&sin_coef, &cos_coef}) {
    const std::string name = array == &sin_coef ? "sin_coef" : "cos_coef";
    if (array->data() == nullptr) {
      detail::fail(name + ".data()", "null", "expected a coefficient array");
    }
    for (std::size_t i = 0; i < 3; ++i) {
      if (array->dimensions()[i] != expected[i]) {
        detail::fail(name + ".dimension(" + std::to_string(i) + ")", array->dimensions()[i],
                     "expected " + std::string(axis[i]) + " = " + std::to_string(expected[i]) +
                         " (shape [n_kv_heads, D_in, D_out] = [" + std::to_string(expected[0]) +
                         ", " + std::to_string(expected[1]) + ", " + std::to_string(expected[2]) +
                         "])");
      }
    }
    for (Eigen::Index i = 0; i < array->size(); ++i) {
      if (!std::isfinite(array->data()[i])) {
        detail::fail(name + "[" + std::to_string(i) + "]", array->data()[i],
                     "expected finite coefficients");
      }
    }
  }
  return Fope(std::move(resolved), std::move(frequencies), nullptr, sin_coef.data(),
              cos_coef.data());
}

// The same from raw pointers and shapes (e.g. an NpyArray's shape): each shape must be 3-D.
inline Fope fope_with_coefficients(const FopeConfig& config, const float* sin_coef,
                                   const std::vector<std::int64_t>& sin_shape,
                                   const float* cos_coef,
                                   const std::vector<std::int64_t>& cos_shape) {
  for (const auto* shape : {&sin_shape, &cos_shape}) {
    if (shape->size() != 3) {
      detail::fail(std::string(shape == &sin_shape ? "sin_coef" : "cos_coef") + " rank",
                   shape->size(), "expected 3 dimensions [n_kv_heads, D_in, D_out]");
    }
  }
  return fope_with_coefficients(
      config, FopeCoefficientMap(sin_coef, sin_shape[0], sin_shape[1], sin_shape[2]),
      FopeCoefficientMap(cos_coef, cos_shape[0], cos_shape[1], cos_shape[2]));
}

// ---------------------------------------------------------------------------------------------
// 3. C and S

namespace detail {

// C and S of every coefficient head and slot at one position, rounded to C.
// cos_out, sin_out: [n_kv_heads, head_dim / 2]; scratch: [2 * D_in + 2 * D_out] doubles.
// cos(w_k t) and sin(w_k t) come from the one cos/sin generator (detail/cos_sin.hpp) in double.
// Rotation::Inverse gives each slot's inverse: (C, -S) / (C^2 + S^2), in double.
template <class C>
void fope_cos_sin(const Fope& fope, double position, C* cos_out, C* sin_out, double* scratch,
                  Rotation rotation = Rotation::Forward) {
  const int d_in = fope.d_in(), d_out = fope.d_out(), slots = fope.slots();
  double* cos_w = scratch;               // [D_in] cos(w_k t)
  double* sin_w = scratch + d_in;        // [D_in] sin(w_k t)
  double* cos_sum = scratch + 2 * d_in;  // [D_out]
  double* sin_sum = cos_sum + d_out;     // [D_out]
  cos_sin_at(fope.inv_freq().data(), position, 1.0, d_in, cos_w, sin_w);
  for (int h = 0; h < fope.n_kv_heads(); ++h) {
    const std::size_t head_offset =
        static_cast<std::size_t>(h) * static_cast<std::size_t>(d_in * d_out);
    const float* a_cos = fope.cos_coef().data() + head_offset;  // [D_in, D_out]
    const float* a_sin = fope.sin_coef().data() + head_offset;
    std::fill(cos_sum, cos_sum + 2 * d_out, 0.0);
    for (int k = 0; k < d_in; ++k) {
      for (int j = 0; j < d_out; ++j) {
        cos_sum[j] += static_cast<double>(a_cos[k * d_out + j]) * cos_w[k];
        sin_sum[j] += static_cast<double>(a_sin[k * d_out + j]) * sin_w[k];
      }
    }
    C* cos_row = cos_out + static_cast<std::size_t>(h * slots);
    C* sin_row = sin_out + static_cast<std::size_t>(h * slots);
    for (int j = 0; j < slots; ++j) {
      const double c = j < d_out ? cos_sum[j] : fope.padding_cos();
      const double s = j < d_out ? sin_sum[j] : fope.padding_sin();
      if (rotation == Rotation::Inverse) {
        const double norm = c * c + s * s;
        cos_row[j] = static_cast<C>(c / norm);
        sin_row[j] = static_cast<C>(-s / norm);
      } else {
        cos_row[j] = static_cast<C>(c);
        sin_row[j] = static_cast<C>(s);
      }
    }
  }
}

inline std::size_t fope_scratch_size(const Fope& fope) {
  return 2 * static_cast<std::size_t>(fope.d_in() + fope.d_out());
}

}  // namespace detail

// C and S at one position, in double: {cos, sin}, each [n_kv_heads, head_dim / 2].
inline std::pair<Eigen::MatrixXd, Eigen::MatrixXd> fope_cos_sin(const Fope& fope,
                                                                std::int64_t position) {
  using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  RowMatrix cos(fope.n_kv_heads(), fope.slots()), sin(fope.n_kv_heads(), fope.slots());
  std::vector<double> scratch(detail::fope_scratch_size(fope));
  detail::fope_cos_sin(fope, static_cast<double>(position), cos.data(), sin.data(), scratch.data());
  return {cos, sin};
}

// A precomputed (C, S) table for positions [first_position, first_position + count), for
// tensors of storage type T (it holds compute_t<T>: float for float/half/bf16, double for
// double). Holds a copy of the Fope (sharing its coefficients). Immutable after construction.
// cos(), sin(): [count, n_kv_heads * head_dim / 2]; row r is position first_position + r, and
// coefficient head g's slots start at column g * head_dim / 2. cos_row(p), sin_row(p): one
// position's [n_kv_heads, head_dim / 2], throwing outside the range.
template <class T>
class FopeTable : public CosSinRows<compute_t<T>> {
 public:
  using compute_type = compute_t<T>;

  FopeTable(Fope fope, std::int64_t first_position, std::int64_t count)
      : CosSinRows<compute_type>("FoPE", first_position, count,
                                 static_cast<Eigen::Index>(fope.n_kv_heads()) * fope.slots()),
        fope_(std::move(fope)) {
    std::vector<double> scratch(detail::fope_scratch_size(fope_));
    detail::fill_table_rows(static_cast<Eigen::Index>(count), this->cos().cols(),
                            this->cos_storage(0), this->sin_storage(0),
                            [&](Eigen::Index row, compute_type* cos, compute_type* sin) {
                              detail::fope_cos_sin(fope_, static_cast<double>(first_position + row),
                                                   cos, sin, scratch.data());
                            });
  }

  const Fope& fope() const { return fope_; }

 private:
  Fope fope_;
};

// ---------------------------------------------------------------------------------------------
// 4. Application to 4-D tensors, through the rotary engine (detail/rotary_engine.hpp): one
// cos/sin segment per coefficient head, rotate-half pairs over the whole head.

namespace detail {

// Throws unless the tensor's heads are FoPE's: head_dim, and n_heads or n_kv_heads heads.
inline void check_fope_shape(const Fope& fope, const ActivationShape& shape) {
  if (shape.head_dim != fope.head_dim()) {
    fail("head_dim", shape.head_dim,
         "expected the FoPE head_dim = " + std::to_string(fope.head_dim()));
  }
  (void)fope.head_group(shape.heads);
}

// C and S computed per token (a RowFill source: one buffer per thread and call).
struct FopeSource {
  static constexpr SourceKind kind = SourceKind::RowFill;
  const Fope& fope;
  const Positions& positions;

  int rotary_dim() const { return fope.head_dim(); }
  int rotary_offset() const { return 0; }
  Pairing pairing() const { return Pairing::RotateHalf; }
  Eigen::Index head_group(Eigen::Index heads) const { return fope.head_group(heads); }
  void check(const ActivationShape& shape) const {
    check_fope_shape(fope, shape);
    positions.check(shape);
  }
  Eigen::Index row_width() const {
    return static_cast<Eigen::Index>(fope.n_kv_heads()) * fope.slots();
  }
  std::size_t scratch_size() const { return fope_scratch_size(fope); }
  template <class C>
  void fill_row(Eigen::Index b, Eigen::Index s, C* cos, C* sin, double* scratch,
                Rotation rotation) const {
    fope_cos_sin(fope, positions.at(b, s), cos, sin, scratch, rotation);
  }
};

// C and S read from a FopeTable (a Rows source).
template <class TableT>
struct FopeTableSource {
  static constexpr SourceKind kind = SourceKind::Rows;
  const FopeTable<TableT>& table;
  const Positions& positions;

  int rotary_dim() const { return table.fope().head_dim(); }
  int rotary_offset() const { return 0; }
  Pairing pairing() const { return Pairing::RotateHalf; }
  Eigen::Index head_group(Eigen::Index heads) const { return table.fope().head_group(heads); }
  Eigen::Index row_width() const { return table.cos().cols(); }
  void check(const ActivationShape& shape) const {
    check_fope_shape(table.fope(), shape);
    check_table_positions(table, positions, shape);
  }
  template <class C>
  const C* cos_row(Eigen::Index b, Eigen::Index s) const {
    static_assert(std::is_same_v<C, compute_t<TableT>>,
                  "posemb: the table's arithmetic type differs from the tensor's; use "
                  "FopeTable<T> with T the tensor's storage type");
    return table.cos_row(positions.integer_at(b, s));
  }
  template <class C>
  const C* sin_row(Eigen::Index b, Eigen::Index s) const {
    return table.sin_row(positions.integer_at(b, s));
  }
  // Each slot's inverse (C, -S) / (C^2 + S^2), from the table's rounded C and S, in double.
  template <class C>
  void inverse_row(Eigen::Index b, Eigen::Index s, C* cos, C* sin) const {
    const C* forward_cos = cos_row<C>(b, s);
    const C* forward_sin = sin_row<C>(b, s);
    for (Eigen::Index j = 0; j < row_width(); ++j) {
      const double c = forward_cos[j], n = forward_sin[j];
      cos[j] = static_cast<C>(c / (c * c + n * n));
      sin[j] = static_cast<C>(-n / (c * c + n * n));
    }
  }
};

inline FopeSource rotary_source(const Fope& fope, const Positions& positions) {
  return FopeSource{fope, positions};
}
template <class TableT>
FopeTableSource<TableT> rotary_source(const FopeTable<TableT>& table, const Positions& positions) {
  return FopeTableSource<TableT>{table, positions};
}

}  // namespace detail

// The rotate family's sources (rotate.hpp): a Fope forms C and S per token, a table reads them.
// Tensors only (per-head cos/sin).
template <>
struct rotary_source_traits<Fope> : rotary_source_base<Fope, Positions, void, false> {
  template <class T>
  static detail::FopeSource engine(const Fope& fope, const Positions& positions) {
    return detail::rotary_source(fope, positions);
  }
};
template <class U>
struct rotary_source_traits<FopeTable<U>>
    : rotary_source_base<Fope, Positions, compute_t<U>, false> {
  template <class T>
  static detail::FopeTableSource<U> engine(const FopeTable<U>& table, const Positions& positions) {
    return detail::rotary_source(table, positions);
  }
};

}  // namespace posemb
