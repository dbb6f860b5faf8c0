// Attention scores of a causal grouped-query prefill (Llama-3-8B-like: 32 query heads, 8
// key-value heads, 2048 tokens, head_dim 128), posemb's blocked helper against Eigen's GEMM
// q·kᵀ on inputs rotated beforehand, in one process on preallocated buffers.
//
// Rows (each a ratio measured / baseline of times, the median over back-to-back pairs whose
// order alternates; below 1 means posemb is faster):
//   attention/<f32|bf16>/causal_gqa/vs_gemm_square    attention_scores (RoPE from a RopeSpec,
//       causal) against the GEMM of every head's full [2048 x 2048] square
//   attention/<f32|bf16>/causal_gqa/vs_gemm_triangle  the same against GEMMs of the blocks on
//       and below the diagonal only (128-row panels x the keys up to the panel's last query),
//       the work a causal kernel cannot avoid
//   fused/table/<f32|bf16>/causal_gqa/vs_gemm_...     attention_scores with RoPE from a RopeTable
// The baselines' inputs are float (bf16 rows: the bf16 values rotated in bf16, as posemb
// rotates them, then widened) in per-head contiguous rows; the baseline writes no -inf.
// Before timing, each result is checked against attention_oracle::scores (the plain loop of
// tests/attention/attention_oracle.hpp) on 192 query rows of every head, and against the square
// baseline everywhere.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <posemb/attention/scores.hpp>
#include <posemb/machine/isa.hpp>

#include "../tests/attention/attention_oracle.hpp"
#include "harness.hpp"

namespace {

constexpr Eigen::Index kSeq = 2048, kHeads = 32, kKvHeads = 8, kDim = 128, kPanel = 128;
constexpr int kPairs = 5;
using Rows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using namespace posemb::bench;

posemb::RopeSpec spec() {
  return posemb::default_rope_spec(int(kDim), 500000.0, posemb::Pairing::RotateHalf);
}

template <class T>
posemb::Tensor4<T> random_tensor(Eigen::Index heads, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  posemb::Tensor4<T> x(1, kSeq, heads, kDim);  // BSHD
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<T>(dist(gen));
  return x;
}

// x rotated in its storage type, widened, per head: heads x [seq, head_dim].
template <class T>
std::vector<Rows> rotated_heads(const posemb::Tensor4<T>& x) {
  const posemb::Tensor4<T> rotated = posemb::rotated(x, std::int64_t{0}, spec());
  std::vector<Rows> heads(static_cast<std::size_t>(x.dimension(2)), Rows(kSeq, kDim));
  for (Eigen::Index h = 0; h < x.dimension(2); ++h) {
    for (Eigen::Index s = 0; s < kSeq; ++s) {
      for (Eigen::Index c = 0; c < kDim; ++c)
        heads[std::size_t(h)](s, c) = static_cast<float>(rotated(0, s, h, c));
    }
  }
  return heads;
}

struct Baseline {
  std::vector<Rows> q, k;  // pre-rotated, per head
  float scale = 1.0f / std::sqrt(float(kDim));

  // out [heads, seq, seq] <- scale q_h k_{h/4}ᵀ, every entry.
  void square(float* out) const {
    for (Eigen::Index h = 0; h < kHeads; ++h) {
      Eigen::Map<Rows> scores(out + h * kSeq * kSeq, kSeq, kSeq);
      scores.noalias() =
          scale * (q[std::size_t(h)] * k[std::size_t(h / (kHeads / kKvHeads))].transpose());
    }
  }
  // Only the 128-row panels' products with the keys up to each panel's last query.
  void triangle(float* out) const {
    for (Eigen::Index h = 0; h < kHeads; ++h) {
      const Rows& qh = q[std::size_t(h)];
      const Rows& kh = k[std::size_t(h / (kHeads / kKvHeads))];
      for (Eigen::Index i0 = 0; i0 < kSeq; i0 += kPanel) {
        Eigen::Map<Rows, 0, Eigen::OuterStride<>> scores(out + (h * kSeq + i0) * kSeq, kPanel,
                                                         i0 + kPanel, Eigen::OuterStride<>(kSeq));
        scores.noalias() =
            scale * (qh.middleRows(i0, kPanel) * kh.topRows(i0 + kPanel).transpose());
      }
    }
  }
};

// Largest |scores - expected| over the rows of `rows` (expected: [1, heads, rows, seq]); the
// masked entries must match exactly. Returns infinity on a mask mismatch.
double compare_rows(const posemb::Tensor4<float>& scores, const posemb::Tensor4<float>& expected,
                    Eigen::Index first_row) {
  double worst = 0;
  for (Eigen::Index h = 0; h < kHeads; ++h) {
    for (Eigen::Index i = 0; i < expected.dimension(2); ++i) {
      for (Eigen::Index j = 0; j < kSeq; ++j) {
        const float got = scores(0, h, first_row + i, j), want = expected(0, h, i, j);
        if (std::isinf(want) || std::isinf(got)) {
          if (got != want) return std::numeric_limits<double>::infinity();
          continue;
        }
        worst = std::max(worst, double(std::abs(got - want)));
      }
    }
  }
  return worst;
}

// Largest |scores - square baseline| over the unmasked entries; -inf above the diagonal.
double compare_square(const posemb::Tensor4<float>& scores, const std::vector<float>& square) {
  double worst = 0;
  for (Eigen::Index h = 0; h < kHeads; ++h) {
    for (Eigen::Index i = 0; i < kSeq; ++i) {
      const float* want = square.data() + (h * kSeq + i) * kSeq;
      for (Eigen::Index j = 0; j < kSeq; ++j) {
        const float got = scores(0, h, i, j);
        if (j > i) {
          if (got != -std::numeric_limits<float>::infinity())
            return std::numeric_limits<double>::infinity();
        } else {
          worst = std::max(worst, double(std::abs(got - want[j])));
        }
      }
    }
  }
  return worst;
}

// Median of measured / baseline over kPairs back-to-back pairs, alternating which runs first.
struct Timing {
  double ratio, measured, baseline;  // seconds: the fastest of each
};
Timing paired(const std::function<void()>& baseline, const std::function<void()>& measured) {
  const PairSeries series = time_pairs(kPairs, baseline, measured, Order::Alternate);
  return {series.median_cost(), series.fastest_measured(), series.fastest_baseline()};
}

template <class T>
bool run(const char* type, double limit) {
  const posemb::Tensor4<T> q = random_tensor<T>(kHeads, 1u), k = random_tensor<T>(kKvHeads, 2u);
  Baseline baseline{rotated_heads(q), rotated_heads(k)};
  posemb::ScoreOptions options;
  options.rotation = spec();
  options.causal = true;
  const posemb::RopeTable<T> table(spec(), 0, kSeq);
  posemb::ScoreOptions fused_options = options;
  fused_options.rotation = &table;

  posemb::Tensor4<float> scores(1, kHeads, kSeq, kSeq);
  std::vector<float> square(std::size_t(kHeads * kSeq * kSeq));
  const std::int64_t zero = 0;
  const auto helper = [&] { posemb::attention_scores(q, zero, k, zero, scores, options); };
  const auto fused = [&] { posemb::attention_scores(q, zero, k, zero, scores, fused_options); };

  // ---- checks, before any timing ----
  baseline.square(square.data());
  bool ok = true;
  for (const auto& [name, call] :
       {std::pair<std::string, std::function<void()>>{"attention", helper},
        std::pair<std::string, std::function<void()>>{"fused/table", fused}}) {
    call();
    double worst = compare_square(scores, square);
    // The reference loop on the first 64 and the last 128 query rows against every key.
    for (const auto& [first, count] :
         {std::pair<Eigen::Index, Eigen::Index>{0, 64}, {kSeq - 128, 128}}) {
      const Eigen::array<Eigen::Index, 4> offsets{0, first, 0, 0}, extents{1, count, kHeads, kDim};
      const posemb::Tensor4<T> q_rows = q.slice(offsets, extents);
      const auto expected = attention_oracle::scores(q_rows, std::int64_t(first), k, zero, options);
      worst = std::max(worst, compare_rows(scores, expected, first));
    }
    const bool pass = worst <= limit;
    ok = ok && pass;
    std::printf("check %-44s max |posemb - reference or GEMM| %.2e (limit %.0e) %s\n",
                (name + "/" + type + "/causal_gqa").c_str(), worst, limit, pass ? "ok" : "FAILED");
  }
  if (!ok) return false;

  // ---- timing ----
  const auto row = [&](const std::string& name, const Timing& t) {
    std::printf("%-52s %6.3f   (posemb %.3f s, GEMM %.3f s; fastest of %d)\n", name.c_str(),
                t.ratio, t.measured, t.baseline, kPairs);
  };
  const std::string suffix = std::string("/") + type + "/causal_gqa";
  row("attention" + suffix + "/vs_gemm_square",
      paired([&] { baseline.square(square.data()); }, helper));
  row("attention" + suffix + "/vs_gemm_triangle",
      paired([&] { baseline.triangle(square.data()); }, helper));
  row("fused/table" + suffix + "/vs_gemm_square",
      paired([&] { baseline.square(square.data()); }, fused));
  row("fused/table" + suffix + "/vs_gemm_triangle",
      paired([&] { baseline.triangle(square.data()); }, fused));
  return true;
}

}  // namespace

int main() {
  print_header(std::string(POSEMB_BENCH_BUILD) +
               " build, Eigen SIMD: " + Eigen::SimdInstructionSetsInUse() +
               ", posemb kernels at level " + posemb::to_string(posemb::isa_level()));
  std::printf(
      "q [1, %ld, %ld, %ld], k [1, %ld, %ld, %ld] (BSHD), RoPE rotate-half theta 500000, causal, "
      "one thread\n",
      long(kSeq), long(kHeads), long(kDim), long(kSeq), long(kKvHeads), long(kDim));
  std::printf("ratio = posemb time / GEMM time (median of %d alternating pairs; target <= 1.20)\n",
              kPairs);
  bool ok = run<float>("f32", 1e-5);
  ok = run<Eigen::bfloat16>("bf16", 1e-5) && ok;
  return ok ? 0 : 1;
}
