// The gap-5 drift table: how a query-key score moves as the pair slides along the sequence
// with a fixed gap, for sinusoidal absolute positions and for RoPE.
//
// Inputs (data/drift_table/, drawn with torch.manual_seed(774)): token embeddings x_q, x_k [64]
// and projections Wq, Wk [64, 64]. Scores are row-vector products, as in the published code:
//
//   sinusoidal(m, n) = ((x_q + pe[m]) Wq) . ((x_k + pe[n]) Wk)     pe: interleaved, base 10000
//   rope(m, n)       = R(m)(x_q Wq) . R(n)(x_k Wk)                 RoPE base 10000
//
// A relative scheme gives the same score for every (m, n) with the same gap m - n.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include <posemb/posemb.hpp>
#include <posemb/absolute/sinusoidal.hpp>

namespace drift {

constexpr int dim = 64;
constexpr int sweep_positions = 2048;  // n = 0 .. 2047

struct Inputs {
  Eigen::VectorXf x_q, x_k;  // [dim] token embeddings
  Eigen::MatrixXf Wq, Wk;    // [dim, dim] projections, used as x W (row vector times matrix)
};

inline Eigen::VectorXf read_vector(const std::string& path) {
  const posemb::NpyArray array = posemb::read_npy(path);
  if (array.shape != std::vector<std::int64_t>{dim})
    throw posemb::Error(path + ": expected shape (64,)");
  const std::vector<float> values = array.values<float>();
  return Eigen::Map<const Eigen::VectorXf>(values.data(), dim);
}

inline Eigen::MatrixXf read_matrix(const std::string& path) {
  const posemb::NpyArray array = posemb::read_npy(path);
  if (array.shape != std::vector<std::int64_t>{dim, dim}) {
    throw posemb::Error(path + ": expected shape (64, 64)");
  }
  const std::vector<float> values = array.values<float>();
  // The file is C order (row-major).
  return Eigen::Map<const Eigen::Matrix<float, dim, dim, Eigen::RowMajor>>(values.data());
}

inline Inputs load_inputs(const std::string& dir) {
  return {read_vector(dir + "/x_q.npy"), read_vector(dir + "/x_k.npy"),
          read_matrix(dir + "/Wq.npy"), read_matrix(dir + "/Wk.npy")};
}

// ---- The published implementation's float32 arithmetic ----------------------------------
// PyTorch float32 on a 16-wide SIMD CPU: products accumulated in 16 interleaved float32 lanes,
// the lanes then summed. The last printed decimal of the published table depends on this order
// (e.g. the gap-0 score at n = 2000 is 11.98345 in float64 and 11.9834 published).

inline float float32_lane_dot(const float* a, Eigen::Index a_stride, const float* b, int n) {
  constexpr int lanes = 16;
  float acc[lanes] = {};
  for (int i = 0; i < n; ++i) acc[i % lanes] += a[i * a_stride] * b[i];
  float sum = 0.0f;
  for (float lane : acc) sum += lane;
  return sum;
}

// x W for a row vector x [dim] and W [dim, dim] (column-major), in the published arithmetic.
inline Eigen::VectorXf float32_project(const Eigen::VectorXf& x, const Eigen::MatrixXf& W) {
  Eigen::VectorXf out(dim);
  for (int j = 0; j < dim; ++j) out[j] = float32_lane_dot(W.col(j).data(), 1, x.data(), dim);
  return out;
}

inline float float32_score(const Eigen::VectorXf& q, const Eigen::VectorXf& k) {
  return float32_lane_dot(q.data(), 1, k.data(), dim);
}

// The sinusoidal table as the published implementation computes it, in float32 (the Annotated
// Transformer's div_term = exp(arange(0, d, 2) * -(ln 10000 / d)), then sin/cos(position *
// div_term)): [positions, dim], interleaved. posemb::sinusoidal_table forms the angles in
// double instead; the two differ by up to 1e-4 at position 2000.
inline posemb::EmbeddingTable<float> sinusoidal_table_float32(int positions) {
  posemb::EmbeddingTable<float> pe(positions, dim);
  const float log_base_over_dim = static_cast<float>(-std::log(10000.0) / dim);
  for (int p = 0; p < positions; ++p) {
    for (int i = 0; i < dim / 2; ++i) {
      const float angle =
          static_cast<float>(p) * std::exp(static_cast<float>(2 * i) * log_base_over_dim);
      pe(p, 2 * i) = std::sin(angle);
      pe(p, 2 * i + 1) = std::cos(angle);
    }
  }
  return pe;
}

// Sinusoidal: ((content_scale * x_q + pe[m]) Wq) . ((content_scale * x_k + pe[n]) Wk) in the
// published float32 arithmetic. pe: [positions, dim], interleaved layout.
inline float sinusoidal_score(const Inputs& in, const posemb::EmbeddingTable<float>& pe,
                              std::int64_t m, std::int64_t n, float content_scale = 1.0f) {
  const Eigen::VectorXf q = float32_project(content_scale * in.x_q + pe.row(m).transpose(), in.Wq);
  const Eigen::VectorXf k = float32_project(content_scale * in.x_k + pe.row(n).transpose(), in.Wk);
  return float32_score(q, k);
}

// RoPE as the published implementation computes it: inv_freq and the angle p * inv_freq
// formed in float32 (torch: 1 / 10000 ** (arange(0, 64, 2).float() / 64), then
// positions.float() * inv_freq), interleaved pairs. Kept to show what float32 angles cost.
inline float rope_score_float32_angles(const Inputs& in, std::int64_t m, std::int64_t n) {
  auto rotate = [](Eigen::VectorXf x, std::int64_t p) {
    for (int i = 0; i < dim / 2; ++i) {
      const float inv_freq = 1.0f / std::pow(10000.0f, static_cast<float>(2 * i) / dim);
      const float angle = static_cast<float>(p) * inv_freq;
      const float c = std::cos(angle), s = std::sin(angle);
      const float a = x[2 * i], b = x[2 * i + 1];
      x[2 * i] = a * c - b * s;
      x[2 * i + 1] = a * s + b * c;
    }
    return x;
  };
  return float32_score(rotate(float32_project(in.x_q, in.Wq), m),
                       rotate(float32_project(in.x_k, in.Wk), n));
}

// ---- posemb ------------------------------------------------------------------------------

// RoPE with posemb: angles in double, cos/sin and the rotated q, k in float32; the final dot
// product accumulated in double so that what remains is the float32 storage of q and k.
inline double rope_score(const Inputs& in, const posemb::RopeSpec& spec, std::int64_t m,
                         std::int64_t n) {
  Eigen::VectorXf q = in.Wq.transpose() * in.x_q;
  Eigen::VectorXf k = in.Wk.transpose() * in.x_k;
  posemb::rotate_inplace(q, m, spec);
  posemb::rotate_inplace(k, n, spec);
  return q.cast<double>().dot(k.cast<double>());
}

// Summary of score(n + gap, n) over n = 0 .. sweep_positions - 1.
struct Sweep {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double mean = 0.0;
  int sign_changes = 0;
  double spread() const { return max - min; }
};

inline Sweep sweep(const std::function<double(std::int64_t m, std::int64_t n)>& score, int gap) {
  Sweep result;
  double previous = 0.0;
  for (std::int64_t n = 0; n < sweep_positions; ++n) {
    const double value = score(n + gap, n);
    result.min = std::min(result.min, value);
    result.max = std::max(result.max, value);
    result.mean += value / sweep_positions;
    if (n > 0 && ((previous < 0.0) != (value < 0.0))) ++result.sign_changes;
    previous = value;
  }
  return result;
}

}  // namespace drift
