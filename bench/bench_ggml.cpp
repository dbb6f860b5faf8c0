// posemb against ggml's CPU RoPE (ggml_rope_ext), in one process, on the same preallocated
// buffers. Built only with -DPOSEMB_GGML_DIR=<a ggml source tree> (bench/CMakeLists.txt).
//
// Cases, float32, one thread, cos/sin formed inside the call by both (ggml has no table):
//   x [1, 2048, 32, 128] (ggml ne = [128, 32, 2048, 1]) at positions 0..2047, out of place:
//     interleaved     ggml mode 0 (GGML_ROPE_TYPE_NORMAL)   posemb Pairing::Interleaved
//     rotate_half     ggml GGML_ROPE_TYPE_NEOX              posemb Pairing::RotateHalf
//     yarn            NEOX with YaRN as llama.cpp passes it for a model with rope_scaling yarn,
//                     factor 4, original context 4096: freq_scale = 1/4, ext_factor = 1,
//                     attn_factor = 1 (ggml multiplies by 1 + 0.1 ln 4 itself), beta_fast = 32,
//                     beta_slow = 1, n_ctx_orig = 4096; posemb yarn_rope_spec with the same
//   decode: x [1, 1, 32, 128] at position 100000, in place (ggml_rope_ext_inplace), one graph
//     computed per call, as a decoder does per layer.
//
// Before timing, both results are compared with a double-precision evaluation of the same
// rotation written out here (angles, YaRN blend and magnitude in double, libm cos/sin); the
// figure is max |result - reference| / max |x|. Timing alternates the two on every iteration
// (ggml first on odd iterations, posemb first on even ones) and reports the median time of
// each and the median of the per-iteration ratio ggml time / posemb time, and each against a
// memcpy of the same bytes measured in the same iteration.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ggml-cpu.h"
#include "ggml.h"
#include "harness.hpp"
#include "posemb/machine/isa.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/scaled.hpp"

namespace {

constexpr int kHeadDim = 128, kHeads = 32, kSeq = 2048;
constexpr double kBase = 10000.0;
constexpr double kYarnFactor = 4.0;
constexpr int kYarnContext = 4096;
constexpr std::int64_t kDecodePosition = 100000;
// Limits of the checks, in units of the value scale. posemb forms its angles in double; ggml in
// float (p * theta_scale^i), which is off by ~1e-2 at position 100000. Either limit is far
// below the O(1) error of a different pairing, frequency or YaRN convention.
constexpr double kPosembLimit = 1e-6, kGgmlLimit = 0.1;

using namespace posemb::bench;
using Buffer = std::vector<float, Eigen::aligned_allocator<float>>;

enum class Kind { Interleaved, RotateHalf, Yarn };

const char* name_of(Kind kind) {
  return kind == Kind::Interleaved  ? "interleaved"
         : kind == Kind::RotateHalf ? "rotate_half"
                                    : "yarn";
}

// ---------------------------------------------------------------------------------------------
// The double-precision reference: pair i of a head at position p turns by theta_i(p) and is
// scaled by m:
//   theta_i = p base^(-2i/d)                                    (interleaved, rotate_half)
//   theta_i = p base^(-2i/d) ((1 - r_i) + r_i / s),  m = 1 + 0.1 ln s      (yarn, factor s)
// with r_i = clamp((i - low) / max(0.001, high - low), 0, 1), low = max(0, floor(c(32))),
// high = min(d - 1, ceil(c(1))), c(b) = d ln(L0 / (2 pi b)) / (2 ln base) (YaRN §3.3, as ggml's
// ggml_rope_yarn_corr_dims and HuggingFace's find_correction_range compute them).
struct Angles {
  std::vector<double> inv_freq;  // [d / 2]
  double magnitude = 1.0;
};

Angles reference_angles(Kind kind) {
  Angles angles;
  const double d = kHeadDim;
  const auto corr = [&](double rotations) {
    return d * std::log(kYarnContext / (rotations * 2 * M_PI)) / (2 * std::log(kBase));
  };
  const double low = std::max(0.0, std::floor(corr(32.0)));
  const double high = std::min(d - 1, std::ceil(corr(1.0)));
  for (int i = 0; i < kHeadDim / 2; ++i) {
    double inv = std::pow(kBase, -2.0 * i / d);
    if (kind == Kind::Yarn) {
      const double ramp = std::clamp((i - low) / std::max(0.001, high - low), 0.0, 1.0);
      inv *= (1 - ramp) + ramp / kYarnFactor;
    }
    angles.inv_freq.push_back(inv);
  }
  if (kind == Kind::Yarn) angles.magnitude = 1 + 0.1 * std::log(kYarnFactor);
  return angles;
}

// max |result - reference| / max |x| over heads [tokens, kHeads, kHeadDim] at positions[t].
double error_against_double(Kind kind, const float* x, const float* result,
                            const std::vector<std::int64_t>& positions) {
  const Angles angles = reference_angles(kind);
  const bool interleaved = kind == Kind::Interleaved;
  double worst = 0, scale = 0;
  for (std::size_t t = 0; t < positions.size(); ++t) {
    for (int h = 0; h < kHeads; ++h) {
      const std::size_t at = (t * kHeads + h) * kHeadDim;
      for (int i = 0; i < kHeadDim / 2; ++i) {
        const int ia = interleaved ? 2 * i : i, ib = interleaved ? 2 * i + 1 : i + kHeadDim / 2;
        const double theta = double(positions[t]) * angles.inv_freq[i];
        const double c = angles.magnitude * std::cos(theta), s = angles.magnitude * std::sin(theta);
        const double a = x[at + ia], b = x[at + ib];
        worst = std::max({worst, std::abs(result[at + ia] - (a * c - b * s)),
                          std::abs(result[at + ib] - (a * s + b * c))});
        scale = std::max({scale, std::abs(a), std::abs(b)});
      }
    }
  }
  return worst / scale;
}

// ---------------------------------------------------------------------------------------------
// ggml: a graph of one ggml_rope_ext over our buffers (a context without allocation; every
// tensor's data points at memory owned here).
struct GgmlRope {
  ggml_context* context = nullptr;
  ggml_cgraph* graph = nullptr;
  ggml_cplan plan{};
  std::vector<std::uint8_t> work;
  std::vector<std::int32_t> positions;

  // x, out: [tokens, kHeads, kHeadDim] (out == x: in place).
  GgmlRope(Kind kind, float* x, float* out, const std::vector<std::int64_t>& token_positions) {
    ggml_init_params params{};
    params.mem_size = 1 << 20;
    params.no_alloc = true;
    context = ggml_init(params);
    const std::int64_t tokens = static_cast<std::int64_t>(token_positions.size());
    ggml_tensor* a = ggml_new_tensor_3d(context, GGML_TYPE_F32, kHeadDim, kHeads, tokens);
    ggml_tensor* pos = ggml_new_tensor_1d(context, GGML_TYPE_I32, tokens);
    positions.assign(token_positions.begin(), token_positions.end());
    a->data = x;
    pos->data = positions.data();
    const int mode = kind == Kind::Interleaved ? 0 : GGML_ROPE_TYPE_NEOX;
    const bool yarn = kind == Kind::Yarn;
    const float freq_scale = yarn ? float(1.0 / kYarnFactor) : 1.0f;
    const float ext_factor = yarn ? 1.0f : 0.0f;
    const int n_ctx_orig = yarn ? kYarnContext : 0;
    ggml_tensor* r =
        x == out ? ggml_rope_ext_inplace(context, a, pos, nullptr, kHeadDim, mode, n_ctx_orig,
                                         float(kBase), freq_scale, ext_factor, 1.0f, 32.0f, 1.0f)
                 : ggml_rope_ext(context, a, pos, nullptr, kHeadDim, mode, n_ctx_orig, float(kBase),
                                 freq_scale, ext_factor, 1.0f, 32.0f, 1.0f);
    if (x != out) r->data = out;
    graph = ggml_new_graph(context);
    ggml_build_forward_expand(graph, r);
    plan = ggml_graph_plan(graph, 1, nullptr);
    work.resize(plan.work_size + 1);
    plan.work_data = work.data();
  }
  ~GgmlRope() { ggml_free(context); }
  void run() { ggml_graph_compute(graph, &plan); }
};

// posemb: the same rotation through the public entry points.
posemb::RopeSpec posemb_spec(Kind kind) {
  if (kind == Kind::Yarn) {
    posemb::YarnParams params;
    params.factor = kYarnFactor;
    params.original_max_position_embeddings = kYarnContext;
    return posemb::yarn_rope_spec(kHeadDim, kBase, params, posemb::Pairing::RotateHalf);
  }
  return posemb::default_rope_spec(kHeadDim, kBase,
                                   kind == Kind::Interleaved ? posemb::Pairing::Interleaved
                                                             : posemb::Pairing::RotateHalf);
}

// ---------------------------------------------------------------------------------------------
// Timing.

struct Timing {
  double ggml, posemb, speedup, ggml_of_memcpy, posemb_of_memcpy;
};

// Each iteration: memcpy, then ggml and posemb in alternating order (ggml first in even
// iterations).
template <class Ggml, class Posemb, class Copy>
Timing time_iterations(int iterations, Ggml&& ggml, Posemb&& posemb, Copy&& copy) {
  PairSeries rope, copy_vs_ggml, copy_vs_posemb;  // baselines: ggml; memcpy, memcpy
  for (int k = 0; k < iterations; ++k) {
    const auto t0 = Clock::now();
    copy();
    const double copy_time = seconds(t0, Clock::now());
    const PairTimes times = time_pair(ggml, posemb, k % 2 == 1);
    rope.add(times);
    copy_vs_ggml.add({copy_time, times.baseline});
    copy_vs_posemb.add({copy_time, times.measured});
  }
  return {rope.median_baseline(), rope.median_measured(), rope.median_speedup(),
          copy_vs_ggml.median_speedup(), copy_vs_posemb.median_speedup()};
}

}  // namespace

int main() {
  ggml_cpu_init();
  print_header(std::string("posemb (kernels at level ") + posemb::to_string(posemb::isa_level()) +
               ") against ggml_rope_ext, one thread, float32.");

  // ---- large: x [1, 2048, 32, 128], out of place ----
  const std::size_t elements = std::size_t(kSeq) * kHeads * kHeadDim;
  Buffer x(elements), out_ggml(elements), out_posemb(elements);
  std::mt19937 gen(1u);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (float& v : x) v = dist(gen);
  std::copy(x.begin(), x.end(), out_ggml.begin());
  std::copy(x.begin(), x.end(), out_posemb.begin());
  std::vector<std::int64_t> positions(kSeq);
  for (int s = 0; s < kSeq; ++s) positions[s] = s;

  struct Row {
    std::string name;
    double ggml_error, posemb_error;
    Timing timing;
  };
  std::vector<Row> rows;
  for (Kind kind : {Kind::Interleaved, Kind::RotateHalf, Kind::Yarn}) {
    GgmlRope ggml(kind, x.data(), out_ggml.data(), positions);
    const posemb::RopeSpec spec = posemb_spec(kind);
    posemb::TensorMap4<float> in_map(x.data(), 1, kSeq, kHeads, kHeadDim);
    posemb::TensorMap4<float> out_map(out_posemb.data(), 1, kSeq, kHeads, kHeadDim);
    const auto run_posemb = [&] { posemb::rotate(in_map, out_map, 0, spec); };
    ggml.run();
    run_posemb();
    Row row{std::string("[1, 2048, 32, 128] ") + name_of(kind) + " out of place",
            error_against_double(kind, x.data(), out_ggml.data(), positions),
            error_against_double(kind, x.data(), out_posemb.data(), positions),
            {}};
    if (!(row.posemb_error <= kPosembLimit && row.ggml_error <= kGgmlLimit)) {
      std::printf("check %s: ggml %.2e, posemb %.2e of the value scale: FAILED, not timing\n",
                  row.name.c_str(), row.ggml_error, row.posemb_error);
      return 1;
    }
    Buffer copy_out(elements);
    row.timing = time_iterations(
        40, [&] { ggml.run(); }, run_posemb,
        [&] { std::memcpy(copy_out.data(), x.data(), elements * sizeof(float)); });
    rows.push_back(row);
  }

  // ---- decode: x [1, 1, 32, 128] at position 100000, in place ----
  for (Kind kind : {Kind::Interleaved, Kind::RotateHalf, Kind::Yarn}) {
    const std::vector<std::int64_t> decode_position = {kDecodePosition};
    Buffer token(std::size_t(kHeads) * kHeadDim), for_ggml, for_posemb;
    for (float& v : token) v = dist(gen);
    for_ggml = token;
    for_posemb = token;
    GgmlRope ggml(kind, for_ggml.data(), for_ggml.data(), decode_position);
    const posemb::RopeSpec spec = posemb_spec(kind);
    posemb::TensorMap4<float> map(for_posemb.data(), 1, 1, kHeads, kHeadDim);
    ggml.run();
    posemb::rotate_inplace(map, kDecodePosition, spec);
    Row row{std::string("decode [1, 1, 32, 128] at 100000 ") + name_of(kind) + " in place",
            error_against_double(kind, token.data(), for_ggml.data(), decode_position),
            error_against_double(kind, token.data(), for_posemb.data(), decode_position),
            {}};
    if (!(row.posemb_error <= kPosembLimit && row.ggml_error <= kGgmlLimit)) {
      std::printf("check %s: ggml %.2e, posemb %.2e of the value scale: FAILED, not timing\n",
                  row.name.c_str(), row.ggml_error, row.posemb_error);
      return 1;
    }
    // Rotating the same buffer again and again: values stay bounded (a rotation).
    Buffer copy_out(token.size());
    row.timing = time_iterations(
        20001, [&] { ggml.run(); }, [&] { posemb::rotate_inplace(map, kDecodePosition, spec); },
        [&] { std::memcpy(copy_out.data(), token.data(), token.size() * sizeof(float)); });
    rows.push_back(row);
  }

  std::printf("\n%-56s %12s %12s %10s %10s %10s %10s %10s\n", "case", "ggml error", "posemb error",
              "ggml", "posemb", "speedup", "ggml/copy", "posemb/copy");
  for (const Row& row : rows) {
    const bool decode = row.name.rfind("decode", 0) == 0;
    const double unit = decode ? 1e6 : 1e3;  // us or ms
    std::printf("%-56s %12.2e %12.2e %8.3f%s %8.3f%s %9.2fx %10.3f %10.3f\n", row.name.c_str(),
                row.ggml_error, row.posemb_error, row.timing.ggml * unit, decode ? "us" : "ms",
                row.timing.posemb * unit, decode ? "us" : "ms", row.timing.speedup,
                row.timing.ggml_of_memcpy, row.timing.posemb_of_memcpy);
  }
  std::printf(
      "\nerror: max |result - double reference| / max |x|; speedup: median of ggml time /\n"
      "posemb time per iteration; x/copy: memcpy of the same bytes / time (out of place:\n"
      "fraction of copy bandwidth).\n");
  return 0;
}
