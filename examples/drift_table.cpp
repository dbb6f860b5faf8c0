// Reproduces the published gap-5 drift table (sinusoidal vs RoPE), then sweeps the pair over
// every position 0..2047 to show how much each scheme's score moves at a fixed gap.
//
//   drift_table [--svg FILE] [DATA_DIR]
//
// DATA_DIR defaults to the project's data/drift_table; --svg also draws the gap-5 score
// against position for sinusoidal and RoPE.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "drift_table.hpp"
#include "svg.hpp"

namespace {

void print_sweep(const char* name, const drift::Sweep& s) {
  std::printf("| %-45s | %11.6f | %11.6f | %11.6g | %5d | %10.4f |\n", name, s.min, s.max,
              s.spread(), s.sign_changes, s.mean);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string dir = std::string(POSEMB_DATA_DIR) + "/drift_table";
    std::string svg_path;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--svg") == 0 && i + 1 < argc) {
        svg_path = argv[++i];
      } else if (argv[i][0] == '-') {
        std::fprintf(stderr, "usage: drift_table [--svg FILE] [DATA_DIR]\n");
        return 2;
      } else {
        dir = argv[i];
      }
    }
    const drift::Inputs in = drift::load_inputs(dir);
    const int table_len = drift::sweep_positions + 8;
    const auto pe_float32 = drift::sinusoidal_table_float32(table_len);
    const auto pe = posemb::sinusoidal_table<float>(table_len, drift::dim);
    const auto interleaved =
        posemb::default_rope_spec(drift::dim, 10000.0, posemb::Pairing::Interleaved);
    const auto rotate_half =
        posemb::default_rope_spec(drift::dim, 10000.0, posemb::Pairing::RotateHalf);

    std::printf(
        "Gap-5 drift table: the attention score of one query/key pair moved along the sequence\n"
        "with their distance fixed, for sinusoidal absolute embeddings and for RoPE (d = 64,\n"
        "base 10000). m is the query's position, n the key's, gap = m - n; a relative scheme\n"
        "scores every (m, n) with the same gap alike. The inputs (torch.manual_seed(774)) and\n"
        "the published figures this reproduces are described in data/drift_table/README.md.\n"
        "'published' columns repeat the published float32 arithmetic to its 4 decimals;\n"
        "'posemb' columns form the angles in double.\n\n");
    std::printf("gap     m     n   sinusoidal      RoPE  |  posemb: sinusoidal      RoPE\n");
    const int gaps[] = {5, 0};
    const int starts[] = {0, 100, 1000, 2000};
    for (int gap : gaps) {
      for (int n : starts) {
        const int m = n + gap;
        std::printf("%3d %5d %5d   %10.4f %9.4f  |          %10.4f %9.4f\n", gap, m, n,
                    drift::sinusoidal_score(in, pe_float32, m, n),
                    drift::rope_score_float32_angles(in, m, n),
                    drift::sinusoidal_score(in, pe, m, n),
                    drift::rope_score(in, interleaved, m, n));
      }
    }
    const float no_position = (in.Wq.transpose() * in.x_q).dot(in.Wk.transpose() * in.x_k);
    std::printf("\nno positional encoding at all: %.4f\n\n", no_position);

    std::printf(
        "Sweeping the gap-5 pair over n = 0..%d (m = n + 5). spread = max - min of the\n"
        "score; signs = how often it changes sign along the sweep (0 for a relative scheme).\n\n",
        drift::sweep_positions - 1);
    std::printf("| %-45s | %11s | %11s | %11s | %5s | %10s |\n", "scheme", "min", "max", "spread",
                "signs", "mean");
    print_sweep(
        "sinusoidal, float32 table (published)",
        drift::sweep([&](auto m, auto n) { return drift::sinusoidal_score(in, pe_float32, m, n); },
                     5));
    print_sweep(
        "sinusoidal, posemb table",
        drift::sweep([&](auto m, auto n) { return drift::sinusoidal_score(in, pe, m, n); }, 5));
    print_sweep("RoPE, float32 angles (published)",
                drift::sweep(
                    [&](auto m, auto n) { return drift::rope_score_float32_angles(in, m, n); }, 5));
    print_sweep(
        "RoPE, posemb (double angles, float32 storage)",
        drift::sweep([&](auto m, auto n) { return drift::rope_score(in, interleaved, m, n); }, 5));

    std::printf("\nRotate-half pairing (i, i + 32): gap-5 score %.4f, gap-0 score %.4f\n",
                drift::rope_score(in, rotate_half, 5, 0), drift::rope_score(in, rotate_half, 0, 0));

    std::printf("\nContent scaled by sqrt(64) before adding the table (x * 8 + pe):\n\n");
    print_sweep(
        "sinusoidal, float32 table (published), x * 8",
        drift::sweep(
            [&](auto m, auto n) { return drift::sinusoidal_score(in, pe_float32, m, n, 8.0f); },
            5));
    std::printf("\n|x_q| = %.4f, |pe[n]| = %.4f for every n\n", in.x_q.norm(), pe.row(0).norm());

    if (!svg_path.empty()) {
      std::vector<double> positions, sinusoidal, rope;
      for (std::int64_t n = 0; n < drift::sweep_positions; ++n) {
        positions.push_back(static_cast<double>(n));
        sinusoidal.push_back(drift::sinusoidal_score(in, pe_float32, n + 5, n));
        rope.push_back(drift::rope_score(in, interleaved, n + 5, n));
      }
      svg::write_line_chart_svg(
          svg_path, "Gap-5 score against position (d = 64, base 10000)",
          "key position n (query at n + 5)", "score", positions,
          {{"sinusoidal (added to the embedding)", sinusoidal}, {"RoPE", rope}});
      std::printf("wrote %s\n", svg_path.c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "drift_table: error: %s\n", e.what());
    return 1;
  }
}
