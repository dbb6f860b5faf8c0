// bench_rope's rows for the other sources of the rotary engine and the fused scores:
//   FoPE: queries [1, 2048, 32, 128] with 8 coefficient heads (grouped-query attention),
//     training length 4096, a prebuilt FopeTable, against memcpy, and on two threads;
//   M-RoPE: Qwen2-VL's sections [16, 24, 24] or Qwen3-VL's interleaved [24, 20, 20] at the
//     positions of a prompt text:64, image 1x64x64, text:960, from a prebuilt table;
//   fused scores [2048 x 128] x [2048 x 128], RoPE inside the product, against Eigen's GEMM.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../ratio_reporter.hpp"
#include "common.hpp"
#include "posemb/attention/fused.hpp"
#include "posemb/rotary/fope.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/mrope_positions.hpp"
#include "rows.hpp"

namespace posemb::bench::rope {
namespace {

// ---------------------------------------------------------------------------------------------
// FoPE through the rotary engine: queries [1, 2048, 32, 128] with 8 coefficient heads
// (grouped-query attention), training length 4096, a prebuilt FopeTable for positions 0..2047.

constexpr int kFopeKvHeads = 8;

const posemb::Fope& fope_model() {
  static const posemb::Fope fope = [] {
    posemb::FopeConfig config;
    config.head_dim = int(kDim);
    config.n_heads = int(kHeads);
    config.n_kv_heads = kFopeKvHeads;
    config.train_length = 4096;
    config.seed = 5;
    return posemb::make_fope(config);
  }();
  return fope;
}

const posemb::FopeTable<float>& fope_table() {
  static const posemb::FopeTable<float> table(fope_model(), 0, kSeq);
  return table;
}

void run_fope(Pair<float>& p, int threads) {
  auto x = map(p.x.data(), TensorLayout::BSHD);
  auto out = map(p.out.data(), TensorLayout::BSHD);
  posemb::rotate(x, out, 0, fope_table(),
                 posemb::RotateOptions().with_threads(posemb::Threads{threads}));
}

// FoPE on `threads` threads against a plain scalar evaluation: C and S of every coefficient
// head from fope_cos_sin (double), then the rotate-half rotation of each query head with its
// group's row. Returns the largest |fast - reference| / (|a| + |b|) of a pair.
double check_fope(int threads) {
  Pair<float>& p = buffers().f32;
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
  run_fope(p, threads);
  const posemb::Fope& fope = fope_model();
  const int slots = fope.slots();
  const Eigen::Index group = kHeads / kFopeKvHeads;
  double worst = 0;
  for (Eigen::Index s = 0; s < kSeq; ++s) {
    const auto [cos, sin] = posemb::fope_cos_sin(fope, s);
    for (Eigen::Index h = 0; h < kHeads; ++h) {
      const Eigen::Index at = (s * kHeads + h) * kDim;
      for (int j = 0; j < slots; ++j) {
        const double c = float(cos(h / group, j)), n = float(sin(h / group, j));
        const double a = p.x[at + j], b = p.x[at + j + slots];
        const double norm = std::abs(a) + std::abs(b) + 1e-30;
        worst = std::max(worst, std::abs(p.out[at + j] - (a * c - b * n)) / norm);
        worst = std::max(worst, std::abs(p.out[at + j + slots] - (b * c + a * n)) / norm);
      }
    }
  }
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
  return worst;
}

// FoPE (one thread) against memcpy of the same bytes.
void bm_fope_vs_memcpy(benchmark::State& state) {
  Pair<float>& p = buffers().f32;
  run_paired(
      state, [&] { copy_tensor(p, 0); }, [&] { run_fope(p, 1); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(kElements * sizeof(float)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// FoPE on two threads against one.
void bm_fope_threads(benchmark::State& state) {
  Pair<float>& p = buffers().f32;
  run_paired(
      state, [&] { run_fope(p, 1); }, [&] { run_fope(p, 2); });
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// FoPE on two threads against memcpy on two threads.
void bm_fope_threads_vs_memcpy(benchmark::State& state) {
  Pair<float>& p = buffers().f32;
  run_paired(
      state, [&] { copy_two_threads(p); }, [&] { run_fope(p, 2); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(kElements * sizeof(float)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// memcpy on two threads against one: how much a second thread can gain on this machine at all.
void bm_memcpy_threads(benchmark::State& state) {
  Pair<float>& p = buffers().f32;
  run_paired(
      state, [&] { copy_tensor(p, 0); }, [&] { copy_two_threads(p); });
}

// ---------------------------------------------------------------------------------------------
// M-RoPE through the rotary engine: x [1, 2048, 32, 128], rotate-half, the (t, h, w) positions
// of text:64, an image of 32 x 32 merged patches (1x64x64), text:960, gathered per pair from a
// prebuilt 1-D table (MropeTable<float>).

const posemb::MropeIndex& mrope_prompt() {
  static const posemb::MropeIndex index = posemb::mrope_position_ids(
      {posemb::MropeSegment::text(64), posemb::MropeSegment::image(1, 64, 64),
       posemb::MropeSegment::text(960)},
      {posemb::MropeFamily::Qwen2VL, 2});
  return index;
}

const posemb::MropeSpec& mrope_spec(posemb::MropeLayout layout) {
  static const posemb::MropeSpec chunked = posemb::make_mrope_spec(
      spec_for(Pairing::RotateHalf), {16, 24, 24}, posemb::MropeLayout::Chunked);
  static const posemb::MropeSpec interleaved = posemb::make_mrope_spec(
      spec_for(Pairing::RotateHalf), {24, 20, 20}, posemb::MropeLayout::Interleaved);
  return layout == posemb::MropeLayout::Chunked ? chunked : interleaved;
}

const posemb::MropeTable<float>& mrope_table(posemb::MropeLayout layout) {
  const std::int64_t count = mrope_prompt().positions.maxCoeff() + 1;
  static const posemb::MropeTable<float> chunked(mrope_spec(posemb::MropeLayout::Chunked), 0,
                                                 count);
  static const posemb::MropeTable<float> interleaved(mrope_spec(posemb::MropeLayout::Interleaved),
                                                     0, count);
  return layout == posemb::MropeLayout::Chunked ? chunked : interleaved;
}

void run_mrope(Pair<float>& p, posemb::MropeLayout layout) {
  auto x = map(p.x.data(), TensorLayout::BSHD);
  auto out = map(p.out.data(), TensorLayout::BSHD);
  posemb::rotate(x, out, mrope_prompt().positions, mrope_table(layout));
}

// M-RoPE against the scalar reference: each pair's cos/sin from reference_cos_sin at its axis'
// position, then the rotate-half rotation. Returns the largest |fast - reference| / (|a| + |b|).
double check_mrope(posemb::MropeLayout layout) {
  Pair<float>& p = buffers().f32;
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
  run_mrope(p, layout);
  const posemb::MropeSpec& spec = mrope_spec(layout);
  const posemb::PositionMatrix& thw = mrope_prompt().positions;
  float axis_cos[3][64], axis_sin[3][64], cos[64], sin[64];
  std::vector<float> head(kDim);
  double worst = 0;
  for (Eigen::Index s = 0; s < kSeq; ++s) {
    for (int a = 0; a < 3; ++a) reference_cos_sin(spec.rope, thw(a, s), axis_cos[a], axis_sin[a]);
    for (int j = 0; j < spec.rope.pairs(); ++j) {
      const int a = posemb::mrope_axis(spec, j);
      cos[j] = axis_cos[a][j];
      sin[j] = axis_sin[a][j];
    }
    for (Eigen::Index h = 0; h < kHeads; ++h) {
      const Eigen::Index at = (s * kHeads + h) * kDim;
      std::copy(p.x.begin() + at, p.x.begin() + at + kDim, head.begin());
      reference_rotate(spec.rope, cos, sin, head.data());
      for (int i = 0; i < spec.rope.pairs(); ++i) {
        const double norm = std::abs(p.x[at + i]) + std::abs(p.x[at + i + 64]) + 1e-30;
        for (int e : {i, i + 64})
          worst = std::max(worst, double(std::abs(p.out[at + e] - head[e])) / norm);
      }
    }
  }
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
  return worst;
}

// M-RoPE (one thread, out of place) against memcpy of the same bytes.
void bm_mrope_vs_memcpy(benchmark::State& state, posemb::MropeLayout layout) {
  Pair<float>& p = buffers().f32;
  run_paired(
      state, [&] { copy_tensor(p, 0); }, [&] { run_mrope(p, layout); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(kElements * sizeof(float)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

std::string mrope_name(posemb::MropeLayout layout) {
  return std::string("mrope/table/f32/rotate_half/bshd/out_of_place/") + posemb::to_string(layout);
}

// ---------------------------------------------------------------------------------------------
// Fused scores [2048 x 128] x [2048 x 128], one head, RoPE inside the product (cos/sin from a
// table), against Eigen's GEMM of the same shape on q and k rotated beforehand.
constexpr Eigen::Index kScoreSeq = 2048;
using RowsF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct ScoreInputs {
  RowsF q, k, q_rotated, k_rotated, scores;
  posemb::PositionVector positions;
  posemb::RopeTable<float> table{spec_for(Pairing::RotateHalf), 0, kScoreSeq};
  ScoreInputs() {
    std::mt19937 gen(5u);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    q.resize(kScoreSeq, kDim);
    k.resize(kScoreSeq, kDim);
    for (Eigen::Index i = 0; i < q.size(); ++i) q.data()[i] = dist(gen);
    for (Eigen::Index i = 0; i < k.size(); ++i) k.data()[i] = dist(gen);
    positions.resize(kScoreSeq);
    for (Eigen::Index i = 0; i < kScoreSeq; ++i) positions[i] = i;
    q_rotated = q;
    k_rotated = k;
    posemb::rotate_inplace(q_rotated, positions, table);
    posemb::rotate_inplace(k_rotated, positions, table);
    scores.resize(kScoreSeq, kScoreSeq);
  }
};

ScoreInputs& score_inputs() {
  static ScoreInputs inputs;
  return inputs;
}

// scores = scale * q_rotated k_rotatedᵀ, the unfused baseline.
void gemm_scores(ScoreInputs& in, RowsF& scores) {
  const float scale = 1.0f / std::sqrt(float(kDim));
  scores.noalias() = scale * (in.q_rotated * in.k_rotated.transpose());
}

constexpr double kScoreSlope = 0.0625;

posemb::ScoreOptions score_options(bool alibi_causal) {
  posemb::ScoreOptions options;
  if (alibi_causal) {
    options.bias = posemb::AlibiSlopes{Eigen::VectorXd::Constant(1, kScoreSlope)};
    options.causal = true;
  }
  return options;
}

void bm_fused_scores(benchmark::State& state, bool alibi_causal) {
  ScoreInputs& in = score_inputs();
  RowsF baseline(kScoreSeq, kScoreSeq);
  const posemb::ScoreOptions options = score_options(alibi_causal);
  run_paired(
      state, [&] { gemm_scores(in, baseline); },
      [&] {
        posemb::fused_rope_scores(in.q, in.positions, in.k, in.positions, in.scores, in.table,
                                  options);
      });
}

// Largest |fused - (GEMM on rotated q, k + bias, mask)| over all scores.
double check_fused(bool alibi_causal) {
  ScoreInputs& in = score_inputs();
  const posemb::ScoreOptions options = score_options(alibi_causal);
  posemb::fused_rope_scores(in.q, in.positions, in.k, in.positions, in.scores, in.table, options);
  RowsF expected(kScoreSeq, kScoreSeq);
  gemm_scores(in, expected);
  double worst = 0;
  for (Eigen::Index i = 0; i < kScoreSeq; ++i) {
    for (Eigen::Index j = 0; j < kScoreSeq; ++j) {
      if (options.causal && j > i) {
        if (in.scores(i, j) != -std::numeric_limits<float>::infinity()) return 1e30;
        continue;
      }
      const double want =
          double(expected(i, j)) - (alibi_causal ? kScoreSlope : 0.0) * double(i - j);
      worst = std::max(worst, std::abs(double(in.scores(i, j)) - want));
    }
  }
  return worst;
}

const std::string fope_name = "fope/table/f32/rotate_half/bshd/out_of_place/kv_heads:8";

}  // namespace

void check_fope_mrope_fused(const CheckReport& report) {
  for (int threads : {1, 2}) {
    report("fope/table/f32/rotate_half/bshd/out_of_place (threads " + std::to_string(threads) + ")",
           check_fope(threads), 4e-7);
  }
  for (const posemb::MropeLayout layout :
       {posemb::MropeLayout::Chunked, posemb::MropeLayout::Interleaved}) {
    report(mrope_name(layout), check_mrope(layout), 4e-7);
  }
  for (bool alibi_causal : {false, true}) {
    report(alibi_causal ? "fused/rope_alibi_causal (absolute)" : "fused/rope (absolute)",
           check_fused(alibi_causal), 1e-4);
  }
}

void register_fope_mrope_fused() {
  benchmark::RegisterBenchmark(fope_name.c_str(), bm_fope_vs_memcpy)->UseManualTime();
  benchmark::RegisterBenchmark((fope_name + "/threads:2/vs_one_thread").c_str(), bm_fope_threads)
      ->UseManualTime();
  benchmark::RegisterBenchmark((fope_name + "/threads:2/vs_memcpy").c_str(),
                               bm_fope_threads_vs_memcpy)
      ->UseManualTime();
  benchmark::RegisterBenchmark("memcpy/f32/threads:2/vs_one_thread", bm_memcpy_threads)
      ->UseManualTime();
  for (const posemb::MropeLayout layout :
       {posemb::MropeLayout::Chunked, posemb::MropeLayout::Interleaved}) {
    benchmark::RegisterBenchmark(mrope_name(layout).c_str(), bm_mrope_vs_memcpy, layout)
        ->UseManualTime();
  }
  benchmark::RegisterBenchmark("fused/rope", bm_fused_scores, false)->UseManualTime();
  benchmark::RegisterBenchmark("fused/rope_alibi_causal", bm_fused_scores, true)->UseManualTime();
}

void print_fope_mrope_fused_summary(const RatioReporter& reporter) {
  print_ratio(reporter, fope_name, "of memcpy bandwidth,", 0.6);
  print_ratio(reporter, fope_name + "/threads:2/vs_memcpy", "of 2-thread memcpy bandwidth,", 0.9);
  print_info(reporter, fope_name + "/threads:2/vs_one_thread", "speedup over 1 thread");
  print_info(reporter, "memcpy/f32/threads:2/vs_one_thread",
             "memcpy's own speedup on 2 threads: what a second thread can gain here");
  // M-RoPE: of memcpy, and relative to 1-D RoPE's ratio on the same tensor and table path.
  const RatioReporter::Result* rope_1d =
      reporter.find("rope/table/f32/rotate_half/bshd/out_of_place");
  for (const posemb::MropeLayout layout :
       {posemb::MropeLayout::Chunked, posemb::MropeLayout::Interleaved}) {
    print_ratio(reporter, mrope_name(layout), "of memcpy bandwidth,", 0.8);
    const RatioReporter::Result* r = reporter.find(mrope_name(layout));
    if (r != nullptr && rope_1d != nullptr) {
      const double relative = r->ratio() / rope_1d->ratio();
      std::printf(
          "%-60s %7.3f  of 1-D RoPE's ratio (rope/table/f32/rotate_half/bshd/out_of_place), >= "
          "0.90  %s\n",
          (mrope_name(layout) + "/vs_rope").c_str(), relative, relative >= 0.9 ? "met" : "MISSED");
    }
  }
  for (const char* name : {"fused/rope", "fused/rope_alibi_causal"}) {
    if (const RatioReporter::Result* r = reporter.find(name)) {
      const double cost = 1.0 / r->ratio();  // fused time / GEMM time
      std::printf("%-60s %7.3f  time relative to Eigen GEMM on pre-rotated q, k, <= 1.10  %s\n",
                  name, cost, cost <= 1.10 ? "met" : "MISSED");
    }
  }
}

}  // namespace posemb::bench::rope
