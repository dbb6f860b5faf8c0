// packed.hpp: positions of packed documents (cu_seqlens) and context-parallel shards.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include <posemb/rotary/packed.hpp>
#include <posemb/rotary/rope.hpp>

#include "support.hpp"

using posemb::PositionMatrix;

TEST_CASE("packed positions restart at every document, or at its offset") {
  const PositionMatrix p = posemb::packed_positions({0, 3, 5, 5, 9});
  PositionMatrix expected(1, 9);
  expected << 0, 1, 2, 0, 1, 0, 1, 2, 3;  // an empty third document holds no token
  CHECK(p == expected);
  const PositionMatrix shifted = posemb::packed_positions({0, 3, 5}, 5, {100, 7});
  PositionMatrix expected_shifted(1, 5);
  expected_shifted << 100, 101, 102, 7, 8;
  CHECK(shifted == expected_shifted);
}

TEST_CASE("two identical documents packed together rotate identically") {
  // x: [1, T = 2 * 6, heads 3, head_dim 16] packed THD as one BSHD row.
  posemb::Tensor4<float> x(1, 12, 3, 16);
  for (Eigen::Index i = 0; i < x.size() / 2; ++i) {
    x.data()[i] = x.data()[i + x.size() / 2] = float(i % 17) * 0.25f - 2.0f;
  }
  const posemb::RopeSpec spec = posemb::default_rope_spec(16);
  posemb::rotate_inplace(x, posemb::packed_positions({0, 6, 12}, 12), spec);
  for (Eigen::Index i = 0; i < x.size() / 2; ++i)
    REQUIRE(x.data()[i] == x.data()[i + x.size() / 2]);
  // And the second document was really moved: position 0 leaves the first token unchanged.
  CHECK(x(0, 6, 1, 3) == x(0, 0, 1, 3));
}

TEST_CASE("context-parallel shards hold chunks r and 2c - 1 - r, together every position once") {
  PositionMatrix rank0(1, 4), rank1(1, 4);
  rank0 << 0, 1, 6, 7;
  rank1 << 2, 3, 4, 5;
  CHECK(posemb::context_parallel_positions(8, 0, 2) == rank0);
  CHECK(posemb::context_parallel_positions(8, 1, 2) == rank1);
  for (int ranks : {1, 2, 3, 4, 8}) {
    const std::int64_t length = 2 * ranks * 5;
    std::vector<std::int64_t> all;
    for (int r = 0; r < ranks; ++r) {
      const PositionMatrix p = posemb::context_parallel_positions(length, r, ranks, 1000);
      all.insert(all.end(), p.data(), p.data() + p.size());
    }
    std::sort(all.begin(), all.end());
    REQUIRE(all.size() == std::size_t(length));
    for (std::int64_t i = 0; i < length; ++i) REQUIRE(all[std::size_t(i)] == 1000 + i);
  }
}

TEST_CASE("bad packing input is a posemb::Error naming it") {
  test_support::throws_with(
      [] {
        (void)posemb::packed_positions({0, 4, 3});
      },
      "cu_seqlens[2] = 3: expected >= cu_seqlens[1] = 4");
  test_support::throws_with([] { (void)posemb::packed_positions({1, 4}); }, "cu_seqlens[0] = 1");
  test_support::throws_with(
      [] {
        (void)posemb::packed_positions({0, 4}, 5);
      },
      "cu_seqlens.back() = 4: expected the token count T = 5");
  test_support::throws_with(
      [] {
        (void)posemb::packed_positions({0, 4}, {1, 2});
      },
      "offsets.size() = 2");
  test_support::throws_with([] { (void)posemb::context_parallel_positions(8, 2, 2); },
                            "rank = 2: expected a rank in [0, ranks) = [0, 2)");
  test_support::throws_with([] { (void)posemb::context_parallel_positions(8, -1, 2); },
                            "rank = -1");
  test_support::throws_with([] { (void)posemb::context_parallel_positions(10, 0, 2); },
                            "seq_len = 10: expected a multiple of 2 * ranks = 4");
}
