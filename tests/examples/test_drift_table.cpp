// The drift-table example's numbers against the published figures
// (data/drift_table/README.md), and posemb's RoPE against them.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <string>

#include "drift_table.hpp"

namespace {

std::string four_decimals(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", value);
  return text;
}

const drift::Inputs& inputs() {
  static const drift::Inputs in = drift::load_inputs(std::string(POSEMB_DATA_DIR) + "/drift_table");
  return in;
}

}  // namespace

TEST_CASE("the published gap-5 table is reproduced to every printed decimal") {
  const auto& in = inputs();
  const auto pe = drift::sinusoidal_table_float32(2048);
  struct Row {
    int m, n;
    const char* sinusoidal;
    const char* rope;
  };
  const Row published[] = {
      {5, 0, "-15.1073", "-0.6102"},      {105, 100, "-15.4347", "-0.6102"},
      {1005, 1000, "-7.3550", "-0.6102"}, {2005, 2000, "12.5488", "-0.6101"},
      {0, 0, "-18.7137", "-5.8183"},      {100, 100, "-20.1633", "-5.8183"},
      {1000, 1000, "-4.1606", "-5.8183"}, {2000, 2000, "11.9834", "-5.8183"},
  };
  for (const Row& row : published) {
    INFO("m = " << row.m << ", n = " << row.n);
    CHECK(four_decimals(drift::sinusoidal_score(in, pe, row.m, row.n)) == row.sinusoidal);
    CHECK(four_decimals(drift::rope_score_float32_angles(in, row.m, row.n)) == row.rope);
  }
  const float no_position = drift::float32_score(drift::float32_project(in.x_q, in.Wq),
                                                 drift::float32_project(in.x_k, in.Wk));
  CHECK(four_decimals(no_position) == "-5.8183");
}

TEST_CASE("the published sweeps over n = 0..2047") {
  const auto& in = inputs();
  const auto pe = drift::sinusoidal_table_float32(2048 + 5);

  const auto sinusoidal =
      drift::sweep([&](auto m, auto n) { return drift::sinusoidal_score(in, pe, m, n); }, 5);
  CHECK(sinusoidal.min == Approx(-33.9097).margin(5e-5));
  CHECK(sinusoidal.max == Approx(21.6053).margin(5e-5));
  CHECK(sinusoidal.spread() == Approx(55.5150).margin(5e-5));
  CHECK(sinusoidal.sign_changes == 157);
  CHECK(sinusoidal.mean == Approx(-6.564).margin(5e-4));

  // Float32 angles: the published -0.610445 .. -0.609907 (spread 5.4e-4), to the summation
  // order's last float32 bits.
  const auto float32_rope =
      drift::sweep([&](auto m, auto n) { return drift::rope_score_float32_angles(in, m, n); }, 5);
  CHECK(float32_rope.min == Approx(-0.610445).margin(3e-6));
  CHECK(float32_rope.max == Approx(-0.609907).margin(3e-6));
  CHECK(float32_rope.spread() == Approx(5.4e-4).margin(0.1e-4));
  CHECK(float32_rope.sign_changes == 0);

  const auto scaled =
      drift::sweep([&](auto m, auto n) { return drift::sinusoidal_score(in, pe, m, n, 8.0f); }, 5);
  CHECK(scaled.min == Approx(-560.898).margin(5e-4));
  CHECK(scaled.max == Approx(-179.402).margin(5e-4));
  CHECK(scaled.spread() == Approx(381.496).margin(5e-4));
  CHECK(scaled.sign_changes == 0);
  CHECK(scaled.mean == Approx(-395.282).margin(5e-4));
}

TEST_CASE("posemb RoPE: double angles keep the gap-5 score flat") {
  const auto& in = inputs();
  const auto interleaved = posemb::default_rope_spec(64, 10000.0, posemb::Pairing::Interleaved);
  const auto rope =
      drift::sweep([&](auto m, auto n) { return drift::rope_score(in, interleaved, m, n); }, 5);
  // float32 storage of q and k is all that is left: two orders of magnitude below the
  // published float32-angle spread of 5.4e-4.
  CHECK(rope.spread() < 1e-5);
  CHECK(four_decimals(rope.mean) == "-0.6102");
  CHECK(rope.sign_changes == 0);

  // Rotate-half pairs (i, i + 32): -3.451334 at gap 5 (float64), -5.818313 at gap 0.
  const auto rotate_half = posemb::default_rope_spec(64, 10000.0, posemb::Pairing::RotateHalf);
  for (int n : {0, 100, 1000, 2000}) {
    CHECK(drift::rope_score(in, rotate_half, n + 5, n) == Approx(-3.451334).margin(1e-5));
    CHECK(drift::rope_score(in, rotate_half, n, n) == Approx(-5.818313).margin(1e-5));
    CHECK(drift::rope_score(in, interleaved, n, n) == Approx(-5.818313).margin(1e-5));
  }
  // |x_q| = 8.2795 and |pe[n]| = sqrt(32) = 5.6569 for every n, with posemb's table.
  CHECK(in.x_q.norm() == Approx(8.2795).margin(5e-5));
  const auto pe = posemb::sinusoidal_table<float>(2048, 64);
  for (int n : {0, 1, 777, 2047}) CHECK(pe.row(n).norm() == Approx(5.6569).margin(5e-5));
}
