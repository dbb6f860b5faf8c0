// fope_spectrum [--head-dim D] [--train-length N]
//
// What FoPE (Hua et al. 2024, arXiv:2412.17739) changes about RoPE's spectrum:
//  1. the frequency ladder w_k = 10000^(-2k/D) with each pair's period 2 pi / w_k in tokens,
//     whether it completes a full turn within the training length N, and whether the clip
//     floor (CF) sets it to zero;
//  2. for the same random queries and keys, the mean attention score <q(t + d), k(t)> / sqrt(D)
//     as a function of the distance d, inside and beyond N, for RoPE; RoPE with CF only (clipped
//     pairs stand still); FoPE with sigma 0 (CF, step-eye coefficients and FoPE's padded
//     slots, C = S = 1); and FoPE with sigma 0.3 (the Fourier mixing added).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "posemb/rotary/fope.hpp"
#include "posemb/rotary/rope.hpp"

namespace {

constexpr double theta = 10000.0;
constexpr int samples = 256;  // (q, k) pairs averaged per distance

int usage(const char* program) {
  std::fprintf(stderr, "usage: %s [--head-dim D] [--train-length N]\n", program);
  return 2;
}

// Features in [-1, 1) from std::mt19937_64 (the same sequence on every platform).
Eigen::VectorXd random_vector(std::mt19937_64& engine, int size) {
  Eigen::VectorXd v(size);
  for (int i = 0; i < size; ++i) {
    v[i] = 2.0 * static_cast<double>(engine() >> 11) * 0x1.0p-53 - 1.0;
  }
  return v;
}

// Scores of rotated (q, k) pairs: query at position query_pos, key at key_pos.
struct Scorer {
  int head_dim;
  std::vector<Eigen::VectorXd> queries, keys;

  double rope(const posemb::RopeSpec& spec, std::int64_t query_pos, std::int64_t key_pos,
              int pair_begin = 0, int pair_end = -1) const {
    if (pair_end < 0) pair_end = head_dim / 2;
    double total = 0.0;
    for (int n = 0; n < samples; ++n) {
      const Eigen::VectorXd q = posemb::rotated(queries[n], query_pos, spec);
      const Eigen::VectorXd k = posemb::rotated(keys[n], key_pos, spec);
      for (int i = pair_begin; i < pair_end; ++i) {  // pair i is (i, i + D/2)
        total += q[i] * k[i] + q[i + head_dim / 2] * k[i + head_dim / 2];
      }
    }
    return total / samples / std::sqrt(static_cast<double>(head_dim));
  }

  double fope(const posemb::Fope& fope, std::int64_t query_pos, std::int64_t key_pos) const {
    posemb::Tensor4<double> x(1, 2, 1, head_dim);  // [batch, seq = {q, k}, heads, head_dim]
    posemb::PositionMatrix positions(1, 2);
    positions << query_pos, key_pos;
    double total = 0.0;
    for (int n = 0; n < samples; ++n) {
      for (int i = 0; i < head_dim; ++i) {
        x(0, 0, 0, i) = queries[n][i];
        x(0, 1, 0, i) = keys[n][i];
      }
      posemb::rotate_inplace(x, positions, fope);
      for (int i = 0; i < head_dim; ++i) total += x(0, 0, 0, i) * x(0, 1, 0, i);
    }
    return total / samples / std::sqrt(static_cast<double>(head_dim));
  }
};

}  // namespace

int main(int argc, char** argv) {
  int head_dim = 64;
  std::int64_t train_length = 512;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage(argv[0]);
    if (arg == "--head-dim") {
      head_dim = std::atoi(argv[++i]);
    } else if (arg == "--train-length") {
      train_length = std::atoll(argv[++i]);
    } else {
      return usage(argv[0]);
    }
  }
  try {
    posemb::FopeConfig config;
    config.head_dim = head_dim;
    config.n_heads = 1;
    config.theta = theta;
    config.train_length = train_length;
    config.seed = 1;
    const posemb::Fope fope = posemb::make_fope(config);
    config.sigma = 0.0;  // no noise: the step-eye alone
    config.seed = 0;
    const posemb::Fope fope_unmixed = posemb::make_fope(config);
    const posemb::FopeFrequencies& f = fope.frequencies();
    const int pairs = f.pairs();

    std::printf("FoPE spectrum: head_dim %d, theta %g, training length N = %lld\n", head_dim, theta,
                static_cast<long long>(train_length));
    std::printf("clip floor 2 pi / N = %.6g rad/token (a period of N tokens)\n\n", f.floor);
    std::printf("pair   inv_freq     period (tokens)  full turn within N  CF\n");
    for (int k = 0; k < pairs; ++k) {
      const double w = f.base_inv_freq[k];
      const double period = posemb::two_pi / w;
      std::printf("%4d   %.5e  %14.1f   %-18s  %s\n", k, w, period,
                  period <= static_cast<double>(train_length) ? "yes" : "no",
                  f.clipped[k] ? "clipped to 0" : "kept");
    }
    std::printf(
        "\nCF keeps D_in = %d of %d frequencies. FoPE mixes them into D_out = %d slots per "
        "head;\nslots %d..%d are padding (C = 1, S = %g). Initial coefficients: "
        "step-eye + Xavier noise, std %.4g.\n\n",
        fope.d_in(), pairs, fope.d_out(), fope.d_out(), pairs - 1, fope.padding_sin(),
        posemb::fope_noise_std(0.3, 1, fope.d_in(), fope.d_out()));

    // The same queries and keys for every method: k = q + noise, so that scores start positive.
    std::mt19937_64 engine(2024);
    Scorer scorer{head_dim, {}, {}};
    for (int n = 0; n < samples; ++n) {
      scorer.queries.push_back(random_vector(engine, head_dim));
      scorer.keys.push_back(scorer.queries.back() + 0.5 * random_vector(engine, head_dim));
    }
    const posemb::RopeSpec rope = posemb::default_rope_spec(head_dim, theta);
    posemb::RopeSpec rope_cf = rope;  // clipped pairs stand still: angle 0 at every position
    for (int k = 0; k < pairs; ++k) {
      if (f.clipped[k]) rope_cf.inv_freq[k] = 0.0;
    }

    std::printf(
        "mean attention score <q(t+d), k(t)> / sqrt(D) over %d (q, k) pairs, key at t = 0\n",
        samples);
    std::printf(
        "(unseen = RoPE pairs whose phase w d mod 2 pi never occurs at distances < N;\n"
        " FoPE spread = max change of the FoPE score over key positions t in {1, 37, 1000})\n\n");
    std::printf("%8s  %-7s %9s %9s %9s %9s  %6s  %11s\n", "d", "", "RoPE", "RoPE+CF", "FoPE s=0",
                "FoPE", "unseen", "FoPE spread");
    const std::int64_t n = train_length;
    std::vector<std::int64_t> distances = {0,     1, 4,         16,    n / 8, n / 4, n / 2,
                                           n - 1, n, 3 * n / 2, 2 * n, 4 * n, 8 * n};
    double clipped_inside = 0.0, clipped_beyond = 0.0, mix_inside = 0.0, mix_beyond = 0.0;
    int inside = 0, beyond = 0;
    std::int64_t previous = -1;
    for (const std::int64_t d : distances) {
      if (d <= previous) continue;
      previous = d;
      const double s_rope = scorer.rope(rope, d, 0);
      const double s_cf = scorer.rope(rope_cf, d, 0);
      const double s_unmixed = scorer.fope(fope_unmixed, d, 0);
      const double s_fope = scorer.fope(fope, d, 0);
      int unseen = 0;
      for (int k = 0; k < pairs; ++k) {
        const double w = f.base_inv_freq[k];
        const double seen_max = w * static_cast<double>(n - 1);  // largest phase seen in training
        if (seen_max < posemb::two_pi &&
            std::fmod(w * static_cast<double>(d), posemb::two_pi) > seen_max) {
          ++unseen;
        }
      }
      double spread = 0.0;
      for (const std::int64_t t : {1, 37, 1000}) {
        spread = std::max(spread, std::abs(scorer.fope(fope, t + d, t) - s_fope));
      }
      // The clipped pairs' share of the RoPE score, and how far mixing moves FoPE.
      const double clipped_part = scorer.rope(rope, d, 0, fope.d_in(), pairs);
      if (d < n) {
        clipped_inside += std::abs(clipped_part - scorer.rope(rope, 0, 0, fope.d_in(), pairs));
        mix_inside += std::abs(s_fope - s_unmixed);
        ++inside;
      } else {
        clipped_beyond += std::abs(clipped_part - scorer.rope(rope, 0, 0, fope.d_in(), pairs));
        mix_beyond += std::abs(s_fope - s_unmixed);
        ++beyond;
      }
      std::printf("%8lld  %-7s %9.4f %9.4f %9.4f %9.4f  %6d  %11.2e\n", static_cast<long long>(d),
                  d < n ? "inside" : "beyond", s_rope, s_cf, s_unmixed, s_fope, unseen, spread);
    }
    std::printf(
        "\nWhat clipping changes: under RoPE the %d clipped pairs' part of the score moves "
        "by %.4f on average\ninside N and by %.4f beyond N (phases never trained); with "
        "CF it is constant.\n",
        pairs - fope.d_in(), clipped_inside / inside, clipped_beyond / beyond);
    std::printf(
        "FoPE s=0 has step-eye coefficients (the identity when D_in == D_out) and pads "
        "slots %d..%d with\nC = S = 1, sqrt(2) times a fixed 45 degree turn: each padded "
        "slot adds twice its unrotated\nshare to the score at every distance.\n",
        fope.d_out(), pairs - 1);
    std::printf(
        "What mixing changes: |FoPE - FoPE s=0| is %.4f on average inside N and %.4f "
        "beyond N;\nthe score is then only approximately a function of d (FoPE spread).\n",
        mix_inside / inside, mix_beyond / beyond);
  } catch (const posemb::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
