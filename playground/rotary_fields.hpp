// Rotary Fields: a toy RoPE attention-score matrix, its metrics and presets, set beside the
// hippocampal phase code (theta phase precession and grid-cell interference), since both
// represent displacement as an angle. The analysis behind the page and its native twin,
// examples/rotary_fields.cpp.
//
// The score model (exact):
//   d = 2 * pairs, inv_freq[m] = base^(-2m/d) / position_scale      (RoFormer eq. 15; the
//       position_scale divisor is linear position interpolation, Chen et al. 2023)
//   S[i, j] = < R(i) q_i, R(j) k_j >                                 (RoFormer eq. 16)
// with R(p) the RoPE rotation at position p from posemb's rope.hpp, interleaved pairing (pairs
// (2m, 2m + 1), as written in the RoFormer paper), the raw dot product (no 1/sqrt(d), no
// softmax: the point is the smooth position dependence). q_i and k_j have unit norm, so every
// score lies in [-1, 1]. With the same content at every position, S[i, j] depends on j - i
// only: the matrix is Toeplitz.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "posemb/error.hpp"
#include "posemb/rotary/rope.hpp"

namespace rotary_fields {

inline constexpr double pi = 3.14159265358979323846;

// Reproducible random numbers: std::mt19937_64 (its output is fixed by the C++ standard) with
// the uniform and normal transforms written out here, since std::normal_distribution differs
// between standard libraries.
class Random {
 public:
  explicit Random(std::uint64_t seed) : engine_(seed) {}

  // Uniform on [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  // Standard normal by Box-Muller: sqrt(-2 ln u1) cos(2 pi u2), u1 in (0, 1].
  double normal() {
    const double u1 = 1.0 - uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * pi * u2);
  }

  // A direction drawn uniformly on the unit sphere: [dim]
  Eigen::VectorXd unit_vector(Eigen::Index dim) {
    Eigen::VectorXd v(dim);
    for (Eigen::Index i = 0; i < dim; ++i) v[i] = normal();
    return v / v.norm();
  }

  // A unit vector with equal energy 1 / pairs in every interleaved pair (2m, 2m + 1): in each
  // pair's plane a uniformly random direction of length 1 / sqrt(pairs). [2 * pairs]
  Eigen::VectorXd pair_balanced_unit_vector(int pairs) {
    Eigen::VectorXd v(2 * pairs);
    const double length = 1.0 / std::sqrt(static_cast<double>(pairs));
    for (int m = 0; m < pairs; ++m) {
      const double angle = 2.0 * pi * uniform();
      v[2 * m] = length * std::cos(angle);
      v[2 * m + 1] = length * std::sin(angle);
    }
    return v;
  }

 private:
  std::mt19937_64 engine_;
};

// ---------------------------------------------------------------------------------------------
// The score matrix

// One playground configuration: the rotary frequencies, the sequence and the content.
struct FieldConfig {
  std::string name = "custom";
  double base = 10000.0;        // RoPE base
  int pairs = 4;                // rotary pairs; head dimension d = 2 * pairs
  int len = 16;                 // sequence length N: the matrix is N x N
  double position_scale = 1.0;  // linear position interpolation: inv_freq / position_scale
  double similarity = 0.9;      // rho: cosine similarity of the shared key with the shared query
  double jitter = 0.02;         // epsilon: norm of the per-position random perturbation
  std::uint64_t seed = 21;

  int dim() const { return 2 * pairs; }

  // Throws posemb::Error naming the first bad field.
  void validate() const {
    posemb::require_positive_finite("base", base);
    if (pairs < 1 || pairs > 256) posemb::fail("pairs", pairs, "expected 1 .. 256");
    if (len < 2 || len > 1024) posemb::fail("len", len, "expected 2 .. 1024");
    posemb::require_positive_finite("position_scale", position_scale);
    if (!(similarity >= -1.0 && similarity <= 1.0)) {
      posemb::fail("similarity", similarity, "expected a cosine similarity in [-1, 1]");
    }
    if (!(std::isfinite(jitter) && jitter >= 0.0)) {
      posemb::fail("jitter", jitter, "expected a finite number >= 0");
    }
  }
};

// The rotary spec of a configuration: default frequencies divided by position_scale.
inline posemb::RopeSpec field_spec(const FieldConfig& config) {
  config.validate();
  posemb::RopeSpec spec =
      posemb::default_rope_spec(config.dim(), config.base, posemb::Pairing::Interleaved);
  spec.inv_freq /= config.position_scale;
  return spec;
}

// Rotation period of each pair in tokens, 2 pi / inv_freq[m]: [pairs], increasing.
inline std::vector<double> pair_periods(const FieldConfig& config) {
  const posemb::RopeSpec spec = field_spec(config);
  std::vector<double> periods(spec.pairs());
  for (int m = 0; m < spec.pairs(); ++m) periods[m] = 2.0 * pi / spec.inv_freq[m];
  return periods;
}

// Per-position queries and keys. queries, keys: [len, dim], every row of unit norm.
struct FieldContent {
  Eigen::MatrixXd queries;
  Eigen::MatrixXd keys;
};

// Content from the seed, drawn in this order:
//   q0 = a random unit vector with equal energy in every pair (pair_balanced_unit_vector);
//   u  = the same kind of draw, made orthogonal to q0 and renormalised (redrawn if degenerate);
//   k0 = rho q0 + sqrt(1 - rho^2) u            (so <q0, k0> = rho exactly, |k0| = 1)
//   for each position i: q_i = normalize(q0 + eps g_i), k_i = normalize(k0 + eps h_i),
//   with g_i, h_i fresh uniform random unit vectors.
// Equal pair energies let the frequencies alone shape the matrix: with an isotropic draw and
// 4 pairs, one pair often carries most of the energy by chance and the metrics follow the seed.
// eps = 0 gives the same content at every position; eps > 0 gives per-position content.
inline FieldContent make_content(const FieldConfig& config) {
  config.validate();
  Random random(config.seed);
  const Eigen::Index dim = config.dim();
  const Eigen::VectorXd q0 = random.pair_balanced_unit_vector(config.pairs);
  Eigen::VectorXd u;
  do {
    u = random.pair_balanced_unit_vector(config.pairs);
    u -= u.dot(q0) * q0;
  } while (u.norm() < 1e-6);
  u.normalize();
  const double rho = config.similarity;
  const Eigen::VectorXd k0 = rho * q0 + std::sqrt(1.0 - rho * rho) * u;

  FieldContent content{Eigen::MatrixXd(config.len, dim), Eigen::MatrixXd(config.len, dim)};
  for (int i = 0; i < config.len; ++i) {
    if (config.jitter == 0.0) {
      content.queries.row(i) = q0.transpose();
      content.keys.row(i) = k0.transpose();
    } else {
      const Eigen::VectorXd g = random.unit_vector(dim);
      const Eigen::VectorXd h = random.unit_vector(dim);
      content.queries.row(i) = (q0 + config.jitter * g).normalized().transpose();
      content.keys.row(i) = (k0 + config.jitter * h).normalized().transpose();
    }
  }
  return content;
}

// S[i, j] = <R(i) q_i, R(j) k_j>, query i at position i, key j at position j.
// content: queries, keys [N, dim]; returns S: [N, N] (rows: queries, columns: keys).
inline Eigen::MatrixXd score_matrix(const FieldContent& content, const posemb::RopeSpec& spec) {
  if (content.queries.rows() != content.keys.rows() ||
      content.queries.cols() != content.keys.cols()) {
    posemb::fail("keys.rows()", content.keys.rows(),
                 "expected the shape of queries [" + std::to_string(content.queries.rows()) + ", " +
                     std::to_string(content.queries.cols()) + "]");
  }
  const Eigen::Index n = content.queries.rows();
  posemb::PositionVector positions(n);
  for (Eigen::Index p = 0; p < n; ++p) positions[p] = p;
  Eigen::MatrixXd q = content.queries;
  Eigen::MatrixXd k = content.keys;
  posemb::rotate_inplace(q, positions, spec);
  posemb::rotate_inplace(k, positions, spec);
  return q * k.transpose();
}

inline Eigen::MatrixXd score_matrix(const FieldConfig& config) {
  return score_matrix(make_content(config), field_spec(config));
}

// ---------------------------------------------------------------------------------------------
// Metrics over a score matrix S: [N, N]. Offsets are distances |j - i| on both sides of the
// diagonal (the playground has no causal mask).

namespace internal {

inline void require_square_finite(const Eigen::MatrixXd& scores, Eigen::Index min_size,
                                  const std::string& why) {
  if (scores.rows() != scores.cols()) {
    posemb::fail("scores.cols()", scores.cols(),
                 "expected a square matrix (rows = " + std::to_string(scores.rows()) + ")");
  }
  if (scores.rows() < min_size) {
    posemb::fail("scores.rows()", scores.rows(),
                 "expected >= " + std::to_string(min_size) + " (" + why + ")");
  }
  if (!scores.allFinite()) {
    posemb::fail("scores", "a non-finite entry", "expected finite scores");
  }
}

// Mean of S[i, j] over first <= |j - i| <= last.
inline double mean_at_offsets(const Eigen::MatrixXd& scores, Eigen::Index first,
                              Eigen::Index last) {
  double sum = 0.0;
  Eigen::Index count = 0;
  const Eigen::Index n = scores.rows();
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < n; ++j) {
      const Eigen::Index offset = i > j ? i - j : j - i;
      if (offset >= first && offset <= last) {
        sum += scores(i, j);
        ++count;
      }
    }
  }
  return sum / static_cast<double>(count);
}

}  // namespace internal

// Largest score in the matrix.
inline double peak_score(const Eigen::MatrixXd& scores) {
  internal::require_square_finite(scores, 1, "a score matrix");
  return scores.maxCoeff();
}

// Mean over all N^2 scores.
inline double mean_score(const Eigen::MatrixXd& scores) {
  internal::require_square_finite(scores, 1, "a score matrix");
  return scores.mean();
}

// Nearby mass: mean score at offsets 1 .. 3.
inline double nearby_mass(const Eigen::MatrixXd& scores) {
  internal::require_square_finite(scores, 2, "nearby mass needs offset 1");
  return internal::mean_at_offsets(scores, 1, 3);
}

// Distant mass: mean score at offsets >= 8.
inline double distant_mass(const Eigen::MatrixXd& scores) {
  internal::require_square_finite(scores, 9, "distant mass needs offset 8");
  return internal::mean_at_offsets(scores, 8, scores.rows());
}

// Concentration = clamp((peak - distant) / 2, 0, 1). With scores in [-1, 1] the unclamped
// value already lies in [0, 1]; the clamp bounds it for any input.
inline double concentration(double peak, double distant) {
  if (!std::isfinite(peak)) posemb::fail("peak", peak, "expected a finite number");
  if (!std::isfinite(distant)) posemb::fail("distant", distant, "expected a finite number");
  return std::clamp((peak - distant) / 2.0, 0.0, 1.0);
}

// Context width of query row i: the smallest offset d >= 1 at which a key on either side,
// S[i, i - d] or S[i, i + d] (where inside the matrix), falls below half the row's peak
// max_j S[i, j]. A row that never falls counts as N, the whole window. Returns the median over
// the N rows (the mean of the two middle values when N is even).
inline double context_width(const Eigen::MatrixXd& scores) {
  internal::require_square_finite(scores, 2, "context width needs offset 1");
  const Eigen::Index n = scores.rows();
  std::vector<double> widths(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double half_peak = scores.row(i).maxCoeff() / 2.0;
    Eigen::Index width = n;
    for (Eigen::Index d = 1; d < n && width == n; ++d) {
      const bool left = i - d >= 0 && scores(i, i - d) < half_peak;
      const bool right = i + d < n && scores(i, i + d) < half_peak;
      if (left || right) width = d;
    }
    widths[i] = static_cast<double>(width);
  }
  std::sort(widths.begin(), widths.end());
  return n % 2 == 1 ? widths[n / 2] : 0.5 * (widths[n / 2 - 1] + widths[n / 2]);
}

// Translation drift: mean |S[i, j] - S[i + 1, j + 1]| over i, j in 0 .. N - 2. Zero exactly
// when S is Toeplitz.
inline double translation_drift(const Eigen::MatrixXd& scores) {
  internal::require_square_finite(scores, 2, "drift compares neighbouring diagonals");
  const Eigen::Index m = scores.rows() - 1;
  return (scores.topLeftCorner(m, m) - scores.bottomRightCorner(m, m)).cwiseAbs().mean();
}

struct FieldMetrics {
  double peak, mean, nearby, distant, concentration, context_width, drift;
};

// All metrics of one matrix; needs N >= 9 (distant mass).
inline FieldMetrics field_metrics(const Eigen::MatrixXd& scores) {
  FieldMetrics metrics{};
  metrics.peak = peak_score(scores);
  metrics.mean = mean_score(scores);
  metrics.nearby = nearby_mass(scores);
  metrics.distant = distant_mass(scores);
  metrics.concentration = concentration(metrics.peak, metrics.distant);
  metrics.context_width = context_width(scores);
  metrics.drift = translation_drift(scores);
  return metrics;
}

// ---------------------------------------------------------------------------------------------
// Presets and their calibration

// A concentration range a reader expects for a preset. The ranges are assigned by reading the
// construction (how fast the pairs decorrelate over the window), not measured from a trained
// model.
struct Regime {
  std::string label;
  double low, high;  // expected concentration in [low, high]
};

struct Preset {
  FieldConfig config;
  std::string description;
  Regime regime;
};

// The five presets. All share rho = 0.9, eps = 0.02 and seed 21 so that only the rotary
// frequencies differ. (Seed 21 is a typical draw. The concentration ordering short-context >
// baseline > long-range holds for each of seeds 1 .. 40, which the program re-checks; it is
// not universal: seed 45 breaks it.)
//   baseline       base 10000, 4 pairs, N = 16: LLaMA's base; periods 6.3, 63, 628, 6283 tokens,
//                  so two of the four pairs barely turn across the window.
//   long-range     base 1e6, 16 pairs, N = 32: 12 of 16 pairs turn less than one radian across
//                  the window (inv_freq < 1/31), so mass spreads across it.
//   short-context  base 10, 2 pairs, N = 16: periods 6.3 and 19.9 tokens; scores decorrelate
//                  within a few tokens and attention sharpens onto the diagonal.
//   extrapolation  base 16, 4 pairs, N = 64: inv_freq = 2^-m, periods 2 pi * (1, 2, 4, 8) tokens,
//                  the longest 50.3 < N; all pairs come back into phase near offset 50, so naive
//                  RoPE wraps around and a second band of high scores appears.
//   neural-phase   1 pair, position_scale 16 / (2 pi), N = 32: the pair's phase advances exactly
//                  360 degrees across a 16-token field, the phase slope of a place cell
//                  (O'Keefe and Recce 1993). base plays no part with one pair (inv_freq[0] = 1).
//
// Reader-assigned concentration regimes, argued from the construction with peak ~ rho = 0.9:
//   sharp     [0.55, 1]    every pair decorrelates within a few tokens; distant scores average
//                          below zero, so (peak - distant) / 2 > peak / 2.
//   moderate  [0.18, 0.40] half the pairs stay in phase across the window and hold distant
//                          scores near rho / 2.
//   diffuse   [0, 0.18]    three quarters of the pairs stay in phase: distant ~ 3/4 rho.
//   wrapped   [0.40, 0.60] every pair turns at least once, so distant scores average near zero
//                          (concentration ~ peak / 2) apart from the wrap-around band.
//   periodic  [0.40, 0.65] one cosine of period 16 over offsets up to 31 averages near zero.
inline std::vector<Preset> presets() {
  auto config = [](const char* name, double base, int pairs, int len, double position_scale) {
    FieldConfig c;
    c.name = name;
    c.base = base;
    c.pairs = pairs;
    c.len = len;
    c.position_scale = position_scale;
    c.similarity = 0.9;
    c.jitter = 0.02;
    c.seed = 21;
    return c;
  };
  return {
      {config("baseline", 10000.0, 4, 16, 1.0),
       "LLaMA-style: base 10000, 4 pairs, 16 tokens",
       {"moderate", 0.18, 0.40}},
      {config("long-range", 1.0e6, 16, 32, 1.0),
       "higher base, more pairs: mass spread across the window",
       {"diffuse", 0.0, 0.18}},
      {config("short-context", 10.0, 2, 16, 1.0),
       "lower base, fewer pairs: attention sharpened onto the diagonal",
       {"sharp", 0.55, 1.0}},
      {config("extrapolation", 16.0, 4, 64, 1.0),
       "sequence longer than the longest period (50.3 tokens): naive RoPE wraps around",
       {"wrapped", 0.40, 0.60}},
      {config("neural-phase", 10000.0, 1, 32, 16.0 / (2.0 * pi)),
       "one pair, 360 degrees of phase across a 16-token field",
       {"periodic", 0.40, 0.65}},
  };
}

// The preset called `name`; throws posemb::Error listing the names otherwise.
inline Preset preset(const std::string& name) {
  std::string names;
  for (const Preset& p : presets()) {
    if (p.config.name == name) return p;
    names += (names.empty() ? "" : ", ") + p.config.name;
  }
  posemb::fail("preset", name, "expected one of " + names);
}

struct Calibration {
  std::string name;
  Regime regime;
  double concentration;
  bool pass;  // regime.low <= concentration <= regime.high
};

// The computed concentration of each preset beside its reader-assigned regime.
inline std::vector<Calibration> calibrate() {
  std::vector<Calibration> rows;
  for (const Preset& p : presets()) {
    const double c = field_metrics(score_matrix(p.config)).concentration;
    rows.push_back({p.config.name, p.regime, c, c >= p.regime.low && c <= p.regime.high});
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Theta phase precession (O'Keefe and Recce 1993): as an animal crosses a place field, the
// cell fires at ever earlier phases of the theta rhythm, about 360 degrees in all.
//
// Model: position u in field units [0, 1]; firing rate r(u) = exp(-(u - 1/2)^2 / (2 sigma^2));
// preferred phase theta(u) = entry_phase + slope * u (degrees, mod 360); a spike at u has phase
// theta(u) + noise, noise ~ Normal(0, noise_deg^2), wrapped to [0, 360).

struct PrecessionConfig {
  double slope_deg = -360.0;       // phase change across the field (negative: precession)
  double entry_phase_deg = 360.0;  // preferred phase at field entry u = 0
  double noise_deg = 25.0;         // standard deviation of the phase noise
  double field_sigma = 0.18;       // rate-profile width in field units
  int spikes = 300;
  std::uint64_t seed = 1993;

  void validate() const {
    if (!std::isfinite(slope_deg)) posemb::fail("slope_deg", slope_deg, "expected finite");
    if (!std::isfinite(entry_phase_deg)) {
      posemb::fail("entry_phase_deg", entry_phase_deg, "expected finite");
    }
    if (!(std::isfinite(noise_deg) && noise_deg >= 0.0)) {
      posemb::fail("noise_deg", noise_deg, "expected a finite number >= 0");
    }
    posemb::require_positive_finite("field_sigma", field_sigma);
    posemb::require_positive("spikes", spikes);
  }
};

struct Spike {
  double position;   // u in [0, 1]
  double phase_deg;  // in [0, 360)
};

inline double wrap_degrees(double deg) {
  const double w = std::fmod(deg, 360.0);
  return w < 0.0 ? w + 360.0 : w;
}

inline double field_rate(const PrecessionConfig& config, double u) {
  const double z = (u - 0.5) / config.field_sigma;
  return std::exp(-0.5 * z * z);
}

// Preferred phase at position u, in [0, 360).
inline double preferred_phase_deg(const PrecessionConfig& config, double u) {
  return wrap_degrees(config.entry_phase_deg + config.slope_deg * u);
}

// Spikes from one pass through the field: positions drawn from r(u) by rejection sampling
// (r <= 1), phases from the model. Returns [spikes].
inline std::vector<Spike> generate_spikes(const PrecessionConfig& config) {
  config.validate();
  Random random(config.seed);
  std::vector<Spike> spikes;
  spikes.reserve(config.spikes);
  while (static_cast<int>(spikes.size()) < config.spikes) {
    const double u = random.uniform();
    if (random.uniform() >= field_rate(config, u)) continue;
    const double phase = preferred_phase_deg(config, u) + config.noise_deg * random.normal();
    spikes.push_back({u, wrap_degrees(phase)});
  }
  return spikes;
}

// Rate by phase: the expected share of spikes per degree of theta phase at each phase in
// phases_deg, p(phi) = integral r(u) WN(phi - theta(u)) du / integral r(u) du, with WN the
// wrapped normal density of the noise (per degree). Midpoint rule over 2000 steps in u.
// Returns [phases_deg.size()], integrating to 1 over 360 degrees.
inline std::vector<double> rate_by_phase(const PrecessionConfig& config,
                                         const std::vector<double>& phases_deg) {
  config.validate();
  constexpr int steps = 2000;
  const double sd = std::max(config.noise_deg, 1.0);  // a zero-noise density would be a spike
  std::vector<double> density(phases_deg.size(), 0.0);
  double rate_total = 0.0;
  for (int s = 0; s < steps; ++s) {
    const double u = (s + 0.5) / steps;
    const double r = field_rate(config, u);
    rate_total += r;
    const double theta = preferred_phase_deg(config, u);
    for (std::size_t k = 0; k < phases_deg.size(); ++k) {
      double wrapped_normal = 0.0;
      for (int turn = -4; turn <= 4; ++turn) {
        const double z = (phases_deg[k] - theta + 360.0 * turn) / sd;
        wrapped_normal += std::exp(-0.5 * z * z) / (sd * std::sqrt(2.0 * pi));
      }
      density[k] += r * wrapped_normal;
    }
  }
  for (double& v : density) v /= rate_total;
  return density;
}

struct CircularLinearFit {
  double slope_deg;         // phase change per field (360 * a)
  double phase_offset_deg;  // phase at u = 0, in [0, 360)
  double resultant_length;  // R(a) in [0, 1]: 1 when every spike lies on the line
};

// Circular-linear regression (Kempter et al. 2012, J. Neurosci. Methods 207:113):
//   a* = argmax_a R(a),  R(a) = | (1/n) sum_j exp(i (phi_j - 2 pi a u_j)) |,
//   phase offset = arg sum_j exp(i (phi_j - 2 pi a* u_j)),
// with a in cycles per field searched over [-max_cycles, max_cycles]: a grid of step 1/1000
// cycle, then golden-section refinement around the best grid point.
inline CircularLinearFit fit_circular_linear(const std::vector<Spike>& spikes,
                                             double max_cycles = 2.0) {
  if (spikes.size() < 2) posemb::fail("spikes.size()", spikes.size(), "expected >= 2");
  posemb::require_positive_finite("max_cycles", max_cycles);
  const double deg = pi / 180.0;
  auto resultant = [&](double a, double* angle) {
    double c = 0.0, s = 0.0;
    for (const Spike& spike : spikes) {
      const double x = spike.phase_deg * deg - 2.0 * pi * a * spike.position;
      c += std::cos(x);
      s += std::sin(x);
    }
    if (angle != nullptr) *angle = std::atan2(s, c);
    return std::hypot(c, s) / static_cast<double>(spikes.size());
  };
  constexpr double step = 1e-3;
  const int grid = static_cast<int>(std::ceil(max_cycles / step));
  double best_a = 0.0, best_r = -1.0;
  for (int g = -grid; g <= grid; ++g) {
    const double a = g * step;
    const double r = resultant(a, nullptr);
    if (r > best_r) {
      best_r = r;
      best_a = a;
    }
  }
  double lo = best_a - step, hi = best_a + step;
  const double golden = (std::sqrt(5.0) - 1.0) / 2.0;
  for (int it = 0; it < 40; ++it) {
    const double a1 = hi - golden * (hi - lo), a2 = lo + golden * (hi - lo);
    if (resultant(a1, nullptr) > resultant(a2, nullptr)) {
      hi = a2;
    } else {
      lo = a1;
    }
  }
  const double a = 0.5 * (lo + hi);
  double angle = 0.0;
  const double r = resultant(a, &angle);
  return {360.0 * a, wrap_degrees(angle / deg), r};
}

// ---------------------------------------------------------------------------------------------
// Grid-cell interference (Burgess, Barry and O'Keefe 2007; the three-wave form of Solstad et al.
// 2006): the sum of three planar cosine waves whose directions are 60 degrees apart,
//   g(x) = sum_{k=0..2} cos(kappa u_k . (x - origin)),  u_k at orientation + 60 k degrees,
//   kappa = 4 pi / (sqrt(3) spacing),
// which peaks (g = 3) on a hexagonal lattice with neighbouring peaks `spacing` apart, along
// orientation + 30 + 60 k degrees. g lies in [-1.5, 3].

struct GridConfig {
  double spacing = 1.0;
  double orientation_deg = 0.0;
  double origin_x = 0.0, origin_y = 0.0;
};

inline double grid_interference(const GridConfig& config, double x, double y) {
  posemb::require_positive_finite("spacing", config.spacing);
  const double kappa = 4.0 * pi / (std::sqrt(3.0) * config.spacing);
  double g = 0.0;
  for (int k = 0; k < 3; ++k) {
    const double angle = (config.orientation_deg + 60.0 * k) * pi / 180.0;
    g += std::cos(kappa * (std::cos(angle) * (x - config.origin_x) +
                           std::sin(angle) * (y - config.origin_y)));
  }
  return g;
}

}  // namespace rotary_fields
