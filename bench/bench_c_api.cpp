// The C API's cost over the C++ call it wraps (include/posemb/c/posemb.h, src/c_api/): the same
// RoPE rotation through posemb_rope_rotate_inplace (libposemb_c.so, through the PLT, with its
// argument checks and the exception boundary) and through posemb::rotate_inplace inline, timed
// back to back in pairs (harness.hpp). Each row prints the median over pairs of C time / C++ time.
// Targets (issue 37): decode [1 token, 32 heads, 128] at most 1.2x; prefill within 3%.
// Both sides are built with this build's flags (no -march: the library is built the same way).
//   ./build/bench/bench/bench_c_api
#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "harness.hpp"
#include "posemb/c/posemb.h"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/rotate.hpp"

namespace {

using posemb::bench::Order;
using posemb::bench::time_pairs;

template <class T>
using Map4 = Eigen::TensorMap<Eigen::Tensor<T, 4, Eigen::RowMajor>>;

struct Row {
  const char* name;
  std::int64_t seq, heads, head_dim;
  bool per_token;  // per-token positions (ids) instead of an offset
  int calls;       // calls per timing, so that one timing is well above the clock's resolution
  double limit;    // the largest C / C++ ratio the row allows
};

// One row: the median over pairs of (C time / C++ time) for `calls` rotations each.
double run_row(const Row& row, const posemb::RopeSpec& spec, const posemb_rope* rope) {
  const std::int64_t n = row.seq * row.heads * row.head_dim;
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) / 97.0f - 0.5f;
  std::vector<std::int64_t> ids(static_cast<std::size_t>(row.seq));
  for (std::int64_t s = 0; s < row.seq; ++s) ids[static_cast<std::size_t>(s)] = 4096 + 3 * s;
  const posemb::PositionMatrix id_matrix =
      Eigen::Map<const posemb::PositionMatrix>(ids.data(), 1, row.seq);
  const posemb_shape shape = {POSEMB_LAYOUT_BSHD, 1, row.seq, row.heads, row.head_dim};
  const posemb_positions c_positions =
      row.per_token ? posemb_positions{0, ids.data(), 1} : posemb_positions{4096, nullptr, 0};
  Map4<float> map(x.data(), 1, row.seq, row.heads, row.head_dim);
  const auto cxx = [&] {
    for (int i = 0; i < row.calls; ++i) {
      if (row.per_token) {
        posemb::rotate_inplace(map, posemb::Positions(id_matrix), spec);
      } else {
        posemb::rotate_inplace(map, std::int64_t{4096}, spec);
      }
    }
  };
  bool ok = true;
  const auto c = [&] {
    for (int i = 0; i < row.calls; ++i) {
      ok &= posemb_rope_rotate_inplace(rope, POSEMB_F32, x.data(), &shape, &c_positions,
                                       POSEMB_FORWARD) == POSEMB_OK;
    }
  };
  cxx();
  c();  // warm both
  const auto series = time_pairs(101, cxx, c, Order::Alternate);
  if (!ok) std::printf("  C call failed: %s\n", posemb_last_error());
  return series.median_cost();
}

}  // namespace

int main() {
  posemb::bench::print_header(std::string("bench_c_api (") + POSEMB_BENCH_BUILD +
                              " build): C API call / C++ call, RoPE float32, Llama 3 (base 5e5)");
  const posemb::RopeSpec spec = posemb::default_rope_spec(128, 500000.0);
  posemb_rope* rope = nullptr;
  if (posemb_rope_create_default(128, 128, 500000.0, POSEMB_PAIRING_ROTATE_HALF, &rope) !=
      POSEMB_OK) {
    std::printf("%s\n", posemb_last_error());
    return 1;
  }
  const Row rows[] = {
      {"decode [1, 1, 32, 128], offset", 1, 32, 128, false, 200, 1.2},
      {"decode [1, 1, 32, 128], per-token ids", 1, 32, 128, true, 200, 1.2},
      {"prefill [1, 512, 32, 128], offset", 512, 32, 128, false, 2, 1.03},
      {"prefill [1, 512, 32, 128], per-token ids", 512, 32, 128, true, 2, 1.03},
  };
  int over = 0;
  for (const Row& row : rows) {
    const double ratio = run_row(row, spec, rope);
    const bool within = ratio <= row.limit;
    over += !within;
    std::printf("%-44s C / C++ = %.3f (limit %.2f) %s\n", row.name, ratio, row.limit,
                within ? "ok" : "OVER");
  }
  posemb_rope_free(rope);
  return over == 0 ? 0 : 1;
}
