// Tests for relative_bias.hpp: the T5 buckets against a float32 re-statement of HuggingFace's
// _relative_position_bucket written out here, hand-checked edge values, the Toeplitz property,
// decode rows, owned and mapped tables, and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <posemb/bias/relative_bias.hpp>

#include "support.hpp"

using test_support::position_range;
using test_support::positions_of;
using test_support::throws_with;

using posemb::T5BiasTable;
using posemb::T5Buckets;

namespace {

// modeling_t5.py, T5Attention._relative_position_bucket, one element at a time, with the
// tensor expression's float32 steps spelled out:
//   relative_position.float() / max_exact               float32 / float32
//   torch.log(...)                                       float32 log
//   / math.log(max_distance / max_exact)                 double log, rounded to float32
//   * (num_buckets - max_exact)                          float32 product
//   .to(torch.long)                                      truncation toward zero
std::int64_t reference_bucket(std::int64_t relative_position, bool bidirectional, int num_buckets,
                              int max_distance) {
  std::int64_t relative_buckets = 0;
  if (bidirectional) {
    num_buckets /= 2;
    relative_buckets += (relative_position > 0 ? 1 : 0) * num_buckets;
    relative_position = std::llabs(relative_position);
  } else {
    relative_position = -std::min<std::int64_t>(relative_position, 0);
  }
  const int max_exact = num_buckets / 2;
  const bool is_small = relative_position < max_exact;
  const float log_ratio =
      std::log(static_cast<float>(relative_position) / static_cast<float>(max_exact));
  const float denominator =
      static_cast<float>(std::log(static_cast<double>(max_distance) / max_exact));
  const float product = log_ratio / denominator * static_cast<float>(num_buckets - max_exact);
  std::int64_t if_large = max_exact + static_cast<std::int64_t>(product);
  if_large = std::min<std::int64_t>(if_large, num_buckets - 1);
  return relative_buckets + (is_small ? relative_position : if_large);
}

posemb::T5BiasTable<float>::Table counting_table(int buckets, int heads) {
  // table[b, h] = 100 h + b: every entry tells its bucket and head.
  posemb::T5BiasTable<float>::Table table(buckets, heads);
  for (int b = 0; b < buckets; ++b)
    for (int h = 0; h < heads; ++h) table(b, h) = static_cast<float>(100 * h + b);
  return table;
}

}  // namespace

TEST_CASE("relative bias: buckets equal the float32 reference over rel -1000..1000") {
  for (bool bidirectional : {true, false}) {
    CAPTURE(bidirectional);
    for (std::int64_t rel = -1000; rel <= 1000; ++rel) {
      CAPTURE(rel);
      const std::int64_t expected = reference_bucket(rel, bidirectional, 32, 128);
      REQUIRE(posemb::t5_relative_position_bucket(rel, 32, 128, bidirectional) == expected);
    }
  }
  // Other shapes: 64 buckets / 256 (bidirectional 4 .. 16 exact), 8 buckets / 20, 2 causal buckets.
  for (const T5Buckets& b :
       {T5Buckets{64, 256, true}, T5Buckets{8, 20, false}, T5Buckets{2, 5, false},
        T5Buckets{4, 3, true}, T5Buckets{128, 1000, false}}) {
    CAPTURE(b.num_buckets, b.max_distance, b.bidirectional);
    for (std::int64_t rel = -3000; rel <= 3000; ++rel) {
      CAPTURE(rel);
      REQUIRE(posemb::t5_relative_position_bucket(rel, b.num_buckets, b.max_distance,
                                                  b.bidirectional) ==
              reference_bucket(rel, b.bidirectional, b.num_buckets, b.max_distance));
    }
  }
}

TEST_CASE("relative bias: hand-checked bucket edges at 32 buckets, max distance 128") {
  const auto bi = [](std::int64_t rel) {
    return posemb::t5_relative_position_bucket(rel, 32, 128, true);
  };
  const auto causal = [](std::int64_t rel) {
    return posemb::t5_relative_position_bucket(rel, 32, 128, false);
  };
  CHECK(bi(-128) == 15);
  CHECK(bi(-64) == 14);
  CHECK(bi(-9) == 8);
  CHECK(bi(-8) == 8);
  CHECK(bi(-1) == 1);
  CHECK(bi(0) == 0);
  CHECK(bi(1) == 17);
  CHECK(bi(8) == 24);
  CHECK(bi(16) == 26);
  CHECK(bi(127) == 31);
  CHECK(causal(-128) == 31);
  CHECK(causal(-64) == 26);
  CHECK(causal(-32) == 21);
  CHECK(causal(-16) == 16);
  CHECK(causal(-9) == 9);
  CHECK(causal(-8) == 8);
  CHECK(causal(1) == 0);
  // Far away: the last bucket of each side, also at the int64 extremes.
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  CHECK(bi(-big) == 15);
  CHECK(bi(std::numeric_limits<std::int64_t>::min()) == 15);
  CHECK(bi(big) == 31);
  CHECK(causal(std::numeric_limits<std::int64_t>::min()) == 31);
  CHECK(causal(big) == 0);
}

TEST_CASE("relative bias: buckets and bias are Toeplitz (depend on j - i only)") {
  for (bool bidirectional : {true, false}) {
    CAPTURE(bidirectional);
    const T5BiasTable<float> table({32, 128, bidirectional}, counting_table(32, 3));
    const posemb::PositionVector q = position_range(40, 70), k = position_range(0, 300);
    const posemb::RelativeBias<float> bias = posemb::t5_bias(table, q, k);
    REQUIRE(bias.dimension(0) == 3);
    REQUIRE(bias.dimension(1) == 70);
    REQUIRE(bias.dimension(2) == 300);
    for (int h = 0; h < 3; ++h) {
      for (int i = 0; i < 70; ++i) {
        for (int j = 0; j < 300; ++j) {
          const std::int64_t rel = k[j] - q[i];
          const float want =
              static_cast<float>(100 * h + reference_bucket(rel, bidirectional, 32, 128));
          if (bias(h, i, j) != want)
            FAIL("bias(" << h << ", " << i << ", " << j << ") = " << bias(h, i, j));
          if (i > 0 && j > 0 && bias(h, i, j) != bias(h, i - 1, j - 1))
            FAIL("not Toeplitz at " << i << ", " << j);
        }
      }
    }
    // Shifting every position changes nothing.
    const posemb::PositionVector qs = q.array() + 1000000000000LL, ks = k.array() + 1000000000000LL;
    const posemb::RelativeBias<float> shifted = posemb::t5_bias(table, qs, ks);
    for (Eigen::Index n = 0; n < bias.size(); ++n) REQUIRE(shifted.data()[n] == bias.data()[n]);
  }
}

TEST_CASE("relative bias: the decode row equals the last row of the full bias") {
  const int len = 200;
  for (bool bidirectional : {true, false}) {
    CAPTURE(bidirectional);
    const T5BiasTable<float> table({32, 128, bidirectional}, counting_table(32, 4));
    const auto full = posemb::t5_bias(table, position_range(0, len), position_range(0, len));
    const auto row = posemb::t5_bias_row(table, len - 1, position_range(0, len));
    REQUIRE(row.rows() == 4);
    REQUIRE(row.cols() == len);
    for (int h = 0; h < 4; ++h)
      for (int j = 0; j < len; ++j) CHECK(row(h, j) == full(h, len - 1, j));
    // The decode query far from the start of its cache reaches the far buckets.
    CHECK(row(0, 0) == (bidirectional ? 15.0f : 31.0f));
  }
  // The bucket matrix at an offset equals the tail rows of the full one.
  const posemb::BucketMatrix full = posemb::t5_bucket_matrix({32, 128, false}, 50, 50, 0);
  const posemb::BucketMatrix tail = posemb::t5_bucket_matrix({32, 128, false}, 3, 50, 47);
  CHECK(tail == full.bottomRows(3));
  CHECK(posemb::t5_bucket_matrix({32, 128, false}, positions_of({47, 48, 49}),
                                 position_range(0, 50)) == tail);
}

TEST_CASE("relative bias: a mapped table reads the caller's weights in place") {
  std::vector<float> weights(32 * 2);
  for (std::size_t n = 0; n < weights.size(); ++n)
    weights[n] = static_cast<float>(n);  // [b, h] = 2b + h
  const T5BiasTable<float> mapped({32, 128, true}, weights.data(), 32, 2);
  CHECK(mapped.table().data() == weights.data());
  CHECK(mapped.heads() == 2);
  const auto row = posemb::t5_bias_row(mapped, 10, positions_of({10, 11, 2}));
  CHECK(row(0, 0) == 0.0f);     // bucket 0
  CHECK(row(1, 1) == 35.0f);    // bucket 17, head 1
  CHECK(row(0, 2) == 16.0f);    // rel -8: bucket 8
  weights[2 * 17 + 1] = -1.0f;  // no copy: a change in the weights shows
  CHECK(posemb::t5_bias_row(mapped, 10, positions_of({11}))(1, 0) == -1.0f);
  // Copies of an owned table own their own storage; head(h) is one column.
  const T5BiasTable<float> owned({32, 128, true}, counting_table(32, 3));
  const T5BiasTable<float> copy = owned;
  CHECK(copy.table().data() != owned.table().data());
  const T5BiasTable<float> head2 = owned.head(2);
  CHECK(head2.heads() == 1);
  CHECK(head2.table()(17, 0) == 217.0f);
}

TEST_CASE("relative bias: errors name the parameter") {
  throws_with([] { posemb::t5_relative_position_bucket(0, 3, 128, true); },
              "num_buckets = 3: expected a number >= 4 for bidirectional buckets");
  throws_with([] { posemb::t5_relative_position_bucket(0, 1, 128, false); },
              "num_buckets = 1: expected a number >= 2");
  throws_with([] { posemb::t5_relative_position_bucket(0, 32, 8, true); },
              "max_distance = 8: expected a number > max_exact = 8");
  throws_with([] { posemb::t5_relative_position_bucket(0, 32, 16, false); },
              "max_distance = 16: expected a number > max_exact = 16");
  throws_with([] { posemb::t5_bucket_matrix({32, 0, true}, 2, 2, 0); }, "max_distance = 0");
  throws_with([] { posemb::t5_bucket_matrix({32, 128, true}, -1, 2, 0); }, "q_len = -1");
  throws_with([] { posemb::t5_bucket_matrix({32, 128, true}, 2, -2, 0); }, "k_len = -2");
  throws_with(
      [] {
        posemb::t5_bucket_matrix({32, 128, true}, 3, 2,
                                 std::numeric_limits<std::int64_t>::max() - 1);
      },
      "q_offset = 9223372036854775806: expected q_offset + q_len - 1 to fit in int64");
  throws_with(
      [] {
        T5BiasTable<float>({32, 128, true}, counting_table(16, 4));
      },
      "table shape = [16, 4]: expected [num_buckets, heads] with num_buckets = 32");
  throws_with(
      [] {
        T5BiasTable<float>({32, 128, true}, counting_table(32, 0));
      },
      "table shape = [32, 0]");
  std::vector<float> w(64);
  throws_with(
      [&] {
        T5BiasTable<float>({32, 128, true}, w.data(), 64, 1);
      },
      "table shape = [64, 1]");
  throws_with([&] { T5BiasTable<float>({32, 128, true}, nullptr, 32, 2); }, "table data = null");
  throws_with([&] { T5BiasTable<float>({2, 128, true}, w.data(), 2, 32); }, "num_buckets = 2");
  const T5BiasTable<float> table({32, 128, true}, counting_table(32, 3));
  throws_with([&] { table.head(3); }, "head = 3: expected a head in [0, heads) = [0, 3)");
  throws_with([&] { table.head(-1); }, "head = -1");
}
