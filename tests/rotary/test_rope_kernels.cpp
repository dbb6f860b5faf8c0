// The fast RoPE paths (detail/rope_kernels.hpp behind rope.hpp) against a plain scalar
// reference written out here from the RoFormer formula, against ggml's reference vectors, and
// against mathematical properties: awkward sizes, partial rotary, unaligned TensorMaps, both
// pairings and layouts, every storage type, in place and out of place, positions up to 2^24,
// one and two threads.
#include <catch2/catch.hpp>

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "posemb/machine/isa.hpp"
#include "posemb/rotary/rope.hpp"
#include "reference.hpp"
#include "support.hpp"

namespace {

using posemb::Pairing;
using posemb::TensorLayout;
using test_reference::reference_rotate_head;
using test_reference::tolerance_of_pair;
using test_reference::ulp_distance;

constexpr double two_pi = 6.283185307179586476925286766559;

template <class T>
float as_float(T v) {
  return static_cast<float>(v);
}

struct Case {
  int head_dim, rotary_dim;
};

// Fills with values in [-2, 2], exactly representable in every storage type.
template <class T>
void fill_random(T* data, Eigen::Index n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-256, 256);
  for (Eigen::Index i = 0; i < n; ++i) data[i] = static_cast<T>(dist(gen) / 128.0f);
}

// Rotates x [batch, seq, heads, head_dim] (or BHSD) at positions[s] + b * batch_shift through
// the fast path (from an unaligned TensorMap) and through the reference; checks every element.
template <class T>
void check_tensor(const Case& size, Pairing pairing, TensorLayout layout, bool in_place,
                  bool use_table, int threads, Eigen::Index batch, Eigen::Index seq,
                  Eigen::Index heads, const std::vector<std::int64_t>& seq_positions) {
  posemb::RopeSpec spec = posemb::default_rope_spec(
      posemb::RotaryDims{size.head_dim, size.rotary_dim}, 10000.0, pairing);
  spec.attention_scale = 1.25;
  const bool bshd = layout == TensorLayout::BSHD;
  const Eigen::Index n = batch * seq * heads * size.head_dim;
  // One element of padding in front: the maps start at an odd address offset.
  std::vector<T> input_storage(n + 1), output_storage(n + 1);
  fill_random(input_storage.data(), n + 1, 17u + static_cast<std::uint32_t>(size.head_dim));
  T* input = input_storage.data() + 1;
  T* output = output_storage.data() + 1;
  const std::vector<T> original(input, input + n);
  const Eigen::Index d1 = bshd ? seq : heads, d2 = bshd ? heads : seq;
  posemb::TensorMap4<T> x(input, batch, d1, d2, size.head_dim);
  posemb::TensorMap4<T> out(output, batch, d1, d2, size.head_dim);

  posemb::PositionMatrix positions(batch, seq);
  for (Eigen::Index b = 0; b < batch; ++b)
    for (Eigen::Index s = 0; s < seq; ++s) positions(b, s) = seq_positions[s] + 3 * b;
  const posemb::Threads thread_count{threads};
  if (use_table) {
    const std::int64_t low = positions.minCoeff(), high = positions.maxCoeff();
    const posemb::RopeTable<T> table(spec, low, high - low + 1);
    if (in_place)
      posemb::rotate_inplace(x, positions, table, posemb::RotateOptions{layout, thread_count});
    else posemb::rotate(x, out, positions, table, posemb::RotateOptions{layout, thread_count});
  } else {
    if (in_place)
      posemb::rotate_inplace(x, positions, spec, posemb::RotateOptions{layout, thread_count});
    else posemb::rotate(x, out, positions, spec, posemb::RotateOptions{layout, thread_count});
  }
  const T* result = in_place ? input : output;
  if (!in_place) {
    for (Eigen::Index i = 0; i < n; ++i) {
      REQUIRE(as_float(input[i]) == as_float(original[i]));  // the input is untouched
    }
  }

  const double tolerance = tolerance_of_pair<T>();
  std::int64_t checked = 0;
  for (Eigen::Index b = 0; b < batch; ++b) {
    for (Eigen::Index s = 0; s < seq; ++s) {
      for (Eigen::Index h = 0; h < heads; ++h) {
        const Eigen::Index at = b * seq * heads * size.head_dim +
                                (bshd ? (s * heads + h) : (h * seq + s)) * size.head_dim;
        std::vector<T> expected(original.begin() + at, original.begin() + at + size.head_dim);
        reference_rotate_head(expected.data(), positions(b, s), spec);
        for (int i = 0; i < spec.pairs(); ++i) {
          const int ia = pairing == Pairing::Interleaved ? 2 * i : i;
          const int ib = pairing == Pairing::Interleaved ? 2 * i + 1 : i + spec.pairs();
          const double scale =
              std::abs(as_float(original[at + ia])) + std::abs(as_float(original[at + ib])) + 1e-30;
          for (int e : {ia, ib}) {
            const double error = std::abs(double(as_float(result[at + e])) - as_float(expected[e]));
            if (error > tolerance * scale * spec.attention_scale) {
              FAIL("element " << e << " of head " << h << " token " << s << " batch " << b
                              << " position " << positions(b, s) << ": got "
                              << as_float(result[at + e]) << " expected " << as_float(expected[e]));
            }
            ++checked;
          }
        }
        for (int e = size.rotary_dim; e < size.head_dim; ++e) {  // pass-through: bit-identical
          REQUIRE(as_float(result[at + e]) == as_float(original[at + e]));
        }
      }
    }
  }
  CHECK(checked == batch * seq * heads * size.rotary_dim);
}

// A compact window ending near 2^24, out of order, for tables (which cover a contiguous range).
std::vector<std::int64_t> table_positions(Eigen::Index seq) {
  std::vector<std::int64_t> positions(seq);
  for (Eigen::Index s = 0; s < seq; ++s) positions[s] = (1 << 24) - 3 * seq + (s * 7) % (2 * seq);
  return positions;
}

std::vector<std::int64_t> awkward_positions(Eigen::Index seq) {
  // Small, large, up to 2^24, and near multiples of pi/2 for inv_freq 1.
  const std::vector<std::int64_t> special = {
      0, 1, 2, 3, 7, 11, 22, 33, 100000, (1 << 24) - 1, 1 << 24, 12345678, 4095, 355, 710};
  std::vector<std::int64_t> positions(seq);
  for (Eigen::Index s = 0; s < seq; ++s) {
    positions[s] = s < Eigen::Index(special.size()) ? special[s] : 1000 + 37 * s;
  }
  return positions;
}

template <class T>
void check_all_sizes() {
  const std::vector<Case> sizes = {{2, 2},   {6, 6},   {6, 4},     {80, 80},   {80, 34},
                                   {96, 96}, {96, 50}, {256, 256}, {256, 130}, {130, 130}};
  for (const Case& size : sizes) {
    for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
      for (TensorLayout layout : {TensorLayout::BSHD, TensorLayout::BHSD}) {
        for (bool in_place : {true, false}) {
          for (bool use_table : {true, false}) {
            INFO("head_dim " << size.head_dim << " rotary_dim " << size.rotary_dim << " "
                             << posemb::to_string(pairing)
                             << (layout == TensorLayout::BSHD ? " BSHD" : " BHSD")
                             << (in_place ? " in place" : " out of place")
                             << (use_table ? " table" : " on the fly"));
            check_tensor<T>(size, pairing, layout, in_place, use_table, 1, 2, 19, 3,
                            use_table ? table_positions(19) : awkward_positions(19));
          }
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("vectorized cos/sin: float within 1 ulp of rounded std::cos/sin of the double angle") {
  const Eigen::VectorXd inv_freq = posemb::default_inv_freq(128);
  std::vector<float> cos(64), sin(64);
  std::int64_t worst = 0;
  std::int64_t samples = 0;
  for (std::int64_t position = -50000; position <= (std::int64_t(1) << 24); position += 4099) {
    posemb::detail::cos_sin_at(inv_freq.data(), static_cast<double>(position), 1.0, 64, cos.data(),
                               sin.data());
    for (int i = 0; i < 64; ++i) {
      const double angle = std::remainder(double(position) * inv_freq[i], two_pi);
      worst = std::max(worst, ulp_distance(cos[i], static_cast<float>(std::cos(angle))));
      worst = std::max(worst, ulp_distance(sin[i], static_cast<float>(std::sin(angle))));
      ++samples;
    }
  }
  CHECK(samples > 200000);
  CHECK(worst <= 1);
}

TEST_CASE("vectorized cos/sin: double within 4 double ulps (absolute) of std::cos/sin") {
  const Eigen::VectorXd inv_freq = posemb::default_inv_freq(64, 500000.0);
  std::vector<double> cos(32), sin(32);
  double worst = 0;
  for (std::int64_t position = 0; position <= (std::int64_t(1) << 24); position += 65537) {
    posemb::detail::cos_sin_at(inv_freq.data(), static_cast<double>(position), 1.0, 32, cos.data(),
                               sin.data());
    for (int i = 0; i < 32; ++i) {
      const double angle = std::remainder(double(position) * inv_freq[i], two_pi);
      worst =
          std::max({worst, std::abs(cos[i] - std::cos(angle)), std::abs(sin[i] - std::sin(angle))});
    }
  }
  CHECK(worst <= 4 * std::numeric_limits<double>::epsilon());
}

TEST_CASE("vectorized cos/sin: hand values, quadrant edges and scale") {
  // Known constants: cos 1, sin 1; cos/sin of angles on each side of every quadrant edge
  // (+-pi/4, +-3pi/4, +-pi), where the reduction switches between polynomials.
  const double frequencies[] = {1.0,
                                0.7853981633974483,
                                0.7853981633974484,
                                2.356194490192345,
                                2.3561944901923453,
                                3.141592653589793,
                                -3.141592653589793,
                                -0.7853981633974483,
                                1e-300,
                                0.0};
  const int n = sizeof(frequencies) / sizeof(frequencies[0]);
  double cos[n], sin[n];
  posemb::detail::cos_sin_at(frequencies, static_cast<double>(1), 2.0, n, cos, sin);
  CHECK(cos[0] == Approx(2 * 0.5403023058681398).epsilon(1e-15));
  CHECK(sin[0] == Approx(2 * 0.8414709848078965).epsilon(1e-15));
  for (int i = 1; i < n; ++i) {
    INFO("angle " << frequencies[i]);
    CHECK(std::abs(cos[i] - 2 * std::cos(frequencies[i])) <= 4e-16);
    CHECK(std::abs(sin[i] - 2 * std::sin(frequencies[i])) <= 4e-16);
    CHECK(cos[i] * cos[i] + sin[i] * sin[i] == Approx(4.0).epsilon(1e-15));
  }
  CHECK(sin[8] == 2e-300);  // sin x = x for tiny x, no underflow to 0
  CHECK(cos[9] == 2.0);
  CHECK(sin[9] == 0.0);
}

TEST_CASE("vectorized cos/sin: relative accuracy at the zeros of cos and sin") {
  // The doubles nearest pi/2 and pi are not zeros of cos and sin:
  // cos(1.5707963267948966) = 6.123233995736766e-17, sin(3.141592653589793)
  // = 1.2246467991473532e-16 (pi/2 - 1.5707963267948966 and pi - 3.141592653589793, to first
  // order).
  const double angles[] = {1.5707963267948966, 3.141592653589793};
  for (bool as_float : {false, true}) {
    double cos[2], sin[2];
    float cos_f[2], sin_f[2];
    if (as_float) {
      posemb::detail::cos_sin_at(angles, static_cast<double>(1), 1.0, 2, cos_f, sin_f);
      cos[0] = cos_f[0];
      sin[1] = sin_f[1];
    } else {
      posemb::detail::cos_sin_at(angles, static_cast<double>(1), 1.0, 2, cos, sin);
    }
    const double tolerance = as_float ? 1.2e-7 : 1e-15;
    CHECK(cos[0] == Approx(6.123233995736766e-17).epsilon(tolerance));
    CHECK(sin[1] == Approx(1.2246467991473532e-16).epsilon(tolerance));
  }
}

TEST_CASE("RopeTable<float> rows equal the vectorized cos/sin and stay within 1 ulp of libm") {
  const posemb::RopeSpec spec = posemb::default_rope_spec(64);
  const posemb::RopeTable<float> table(spec, 16777000, 300);
  std::int64_t worst = 0;
  for (std::int64_t row = 0; row < table.count(); ++row) {
    for (int i = 0; i < spec.pairs(); ++i) {
      const double angle = std::remainder(double(16777000 + row) * spec.inv_freq[i], two_pi);
      worst = std::max(worst, ulp_distance(table.cos()(row, i), float(std::cos(angle))));
      worst = std::max(worst, ulp_distance(table.sin()(row, i), float(std::sin(angle))));
    }
  }
  CHECK(worst <= 1);
}

TEST_CASE("fast paths equal the scalar reference: float") { check_all_sizes<float>(); }
TEST_CASE("fast paths equal the scalar reference: double") { check_all_sizes<double>(); }
TEST_CASE("fast paths equal the scalar reference: Eigen::half") { check_all_sizes<Eigen::half>(); }
TEST_CASE("fast paths equal the scalar reference: Eigen::bfloat16") {
  check_all_sizes<Eigen::bfloat16>();
}

TEST_CASE("cos/sin tables start on 64-byte boundaries in every build, copies share the rows") {
  const auto on_line = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; };
  // 3000 x 64 floats: 750 KiB, a block glibc maps on its own (16 bytes past a page boundary).
  const posemb::RopeTable<float> table(posemb::default_rope_spec(128), 0, 3000);
  CHECK(on_line(table.cos_row(0)));
  CHECK(on_line(table.sin_row(0)));
  CHECK(on_line(table.cos().data()));
  CHECK(table.sin_row(0) == table.sin().data());
  // An odd width (rotary_dim 80: 40 pairs) and 7 rows: sin still starts on a boundary.
  const posemb::RopeTable<double> narrow(posemb::default_rope_spec(80), -3, 7);
  CHECK(on_line(narrow.cos_row(-3)));
  CHECK(on_line(narrow.sin_row(-3)));
  CHECK(narrow.cos().rows() == 7);
  CHECK(narrow.cos().cols() == 40);
  CHECK(narrow.sin()(6, 39) == *(narrow.sin_row(3) + 39));

  posemb::RopeTable<float> copy = table;
  CHECK(copy.cos_row(5) == table.cos_row(5));
  const posemb::RopeTable<float> moved = std::move(copy);
  CHECK(moved.sin()(5, 3) == table.sin()(5, 3));
  CHECK(copy.cos()(2999, 63) == table.cos()(2999, 63));  // NOLINT: a moved-from table stays usable
}

TEST_CASE("BHSD blocks are as long as the threads allow") {
  using posemb::detail::bhsd_block_tokens;
  CHECK(bhsd_block_tokens(1, 8192, 1) == 512);
  CHECK(bhsd_block_tokens(1, 300, 1) == 512);   // one part: never shorter
  CHECK(bhsd_block_tokens(1, 8192, 2) == 512);  // 16 blocks, 8 per part
  CHECK(bhsd_block_tokens(1, 2048, 2) == 256);  // 512 would give 4 blocks to 2 parts
  CHECK(bhsd_block_tokens(4, 2048, 2) == 512);  // 16 blocks over the batch
  CHECK(bhsd_block_tokens(1, 1100, 2) == 128);  // 9 blocks
  CHECK(bhsd_block_tokens(1, 100, 8) == 64);    // never below 64
}

TEST_CASE("BHSD visits every head and token once: partial groups, several blocks, every level") {
  // 6 heads: one full group of bhsd_heads_per_group and a partial one; 1100 tokens: two full
  // blocks of 512 (one thread) or eight of 128 (two threads, head_dim 96) and a partial one.
  using posemb::detail::bhsd_block_tokens;
  using posemb::detail::bhsd_heads_per_group;
  const Eigen::Index heads = 6, seq = 1100;
  REQUIRE(heads % bhsd_heads_per_group != 0);
  REQUIRE(heads > bhsd_heads_per_group);
  REQUIRE(bhsd_block_tokens(1, seq, 1) == 512);
  REQUIRE(posemb::detail::parts_for(seq * heads * 96, posemb::Threads{2}) == 2);  // head_dim 96
  REQUIRE(bhsd_block_tokens(1, seq, 2) == 128);
  const posemb::IsaLevel saved = posemb::isa_level();
  for (posemb::IsaLevel level : posemb::supported_isa_levels()) {
    posemb::set_isa_level(level);
    for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
      for (bool in_place : {true, false}) {
        INFO("level " << posemb::to_string(posemb::isa_level()) << " " << posemb::to_string(pairing)
                      << (in_place ? " in place" : " out of place"));
        check_tensor<float>({128, 128}, pairing, TensorLayout::BHSD, in_place, true, 1, 2, seq,
                            heads, table_positions(seq));
        check_tensor<float>({96, 64}, pairing, TensorLayout::BHSD, in_place, false, 2, 1, seq,
                            heads, awkward_positions(seq));
        check_tensor<Eigen::bfloat16>({128, 128}, pairing, TensorLayout::BHSD, in_place, true, 1, 1,
                                      seq, heads, table_positions(seq));
        check_tensor<Eigen::half>({128, 128}, pairing, TensorLayout::BHSD, in_place, false, 1, 1,
                                  seq, heads, awkward_positions(seq));
      }
    }
  }
  posemb::set_isa_level(saved);
}

TEST_CASE("two threads equal the reference on a tensor large enough to split") {
  // [2, 64, 32, 128] float: 2^19 elements, so threads_for allows 2 threads.
  REQUIRE(posemb::detail::threads_for(2 * 64 * 32 * 128, 2) == 2);
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    for (TensorLayout layout : {TensorLayout::BSHD, TensorLayout::BHSD}) {
      check_tensor<float>({128, 128}, pairing, layout, true, true, 2, 2, 64, 32,
                          table_positions(64));
      check_tensor<float>({128, 96}, pairing, layout, false, false, 2, 2, 64, 32,
                          awkward_positions(64));
    }
  }
}

TEST_CASE("threads_for never splits tiny tensors") {
  using posemb::detail::threads_for;
  CHECK(threads_for(32 * 128, 8) == 1);  // one decode token
  CHECK(threads_for((1 << 18) - 1, 2) == 1);
  CHECK(threads_for(1 << 19, 2) == 2);
  CHECK(threads_for(1 << 19, 8) == 2);  // no more threads than 2^18-element parts
  CHECK(threads_for(1 << 24, 1) == 1);  // never more than asked
}

TEST_CASE("parallel_for covers every index exactly once") {
  for (int threads : {1, 2, 3, 7}) {
    for (Eigen::Index count : {0, 1, 2, 5, 100}) {
      std::vector<int> hits(static_cast<std::size_t>(count), 0);
      posemb::detail::parallel_for(count, threads, [&](Eigen::Index begin, Eigen::Index end) {
        for (Eigen::Index i = begin; i < end; ++i) ++hits[static_cast<std::size_t>(i)];
      });
      for (int h : hits) CHECK(h == 1);
    }
  }
}

TEST_CASE("bad thread counts and out-of-table positions throw before any work") {
  posemb::Tensor4<float> x(1, 4, 2, 8);
  x.setConstant(1.0f);
  const posemb::RopeSpec spec = posemb::default_rope_spec(8);
  const posemb::RopeTable<float> table(spec, 0, 4);
  CHECK_THROWS_WITH(
      posemb::rotate_inplace(x, 0, spec, posemb::RotateOptions().with_threads(posemb::Threads{0})),
      Catch::Contains("threads.count = 0") && Catch::Contains(">= 1"));
  posemb::Tensor4<float> out(1, 4, 2, 8);
  CHECK_THROWS_WITH(
      posemb::rotate(x, out, 0, spec, posemb::RotateOptions().with_threads(posemb::Threads{-3})),
      Catch::Contains("threads.count = -3"));
  // Position 4 is outside [0, 4): nothing may be rotated before the error.
  CHECK_THROWS_WITH(
      posemb::rotate_inplace(x, 1, table, posemb::RotateOptions().with_threads(posemb::Threads{2})),
      Catch::Contains("position = 4"));
  for (Eigen::Index i = 0; i < x.size(); ++i) REQUIRE(x.data()[i] == 1.0f);
}

TEST_CASE("ggml reference vectors (fp64 lines) through the fast tensor path") {
  // tests/data/ggml/vectors.md: head_dim 8, x[d] = d + 1, base 10000; the `fp64`
  // lines are the rotation evaluated in double and rounded to float.
  struct Row {
    std::int64_t position;
    float values[8];
  };
  const Row interleaved[] = {
      {1,
       {-1.14263964f, 1.92207563f, 2.58567882f, 4.2795167f, 4.93975115f, 6.04969931f, 6.99199629f,
        8.00699615f}},
      {3,
       {-1.27223253f, -1.83886504f, 1.68392861f, 4.70790672f, 4.81777716f, 6.14727783f, 6.97596836f,
        8.02096367f}},
      {100,
       {1.87505019f, 1.21827209f, -0.341130137f, -4.98834944f, -2.34731436f, 7.44916868f,
        6.16636181f, 8.65886688f}},
      {4095,
       {1.9296664f, -1.12977326f, -2.17236876f, 4.50342226f, -4.31569767f, -6.5095892f, 2.47078538f,
        -10.3390141f}},
  };
  const Row rotate_half[] = {
      {1,
       {-3.66705251f, 1.39100778f, 2.92985106f, 3.99199796f, 3.54298258f, 6.16969204f, 7.02964973f,
        8.0039959f}},
      {3,
       {-1.69559252f, 0.13755174f, 2.78868151f, 3.97598195f, -4.80884266f, 6.32305956f, 7.08683681f,
        8.01196384f}},
      {100,
       {3.39414716f, 1.58598363f, -4.26939011f, 3.18134928f, 3.80522871f, -6.12247133f, 6.30652905f,
        8.35936737f}},
      {4095,
       {4.92313004f, -4.40821171f, -2.2185533f, 4.20750952f, -1.32770121f, 4.53515959f,
        -7.28546667f, -7.89283609f}},
  };
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    const Row* rows = pairing == Pairing::Interleaved ? interleaved : rotate_half;
    const posemb::RopeSpec spec = posemb::default_rope_spec(8, 10000.0, pairing);
    for (int r = 0; r < 4; ++r) {
      for (bool use_table : {false, true}) {
        posemb::Tensor4<float> x(1, 1, 1, 8);
        for (int d = 0; d < 8; ++d) x(0, 0, 0, d) = float(d + 1);
        if (use_table) {
          posemb::rotate_inplace(x, rows[r].position,
                                 posemb::RopeTable<float>(spec, rows[r].position, 1));
        } else {
          posemb::rotate_inplace(x, rows[r].position, spec);
        }
        for (int d = 0; d < 8; ++d) {
          INFO(posemb::to_string(pairing) << " position " << rows[r].position << " d " << d);
          CHECK(x(0, 0, 0, d) == Approx(rows[r].values[d]).epsilon(1e-6).margin(1e-6));
        }
      }
    }
  }
}

TEST_CASE("relative-position property holds at positions near 2^24 in float") {
  // <R(m) q, R(n) k> depends on m - n only: compare (m, n) = (2^24 + 5, 2^24) with (5, 0).
  const posemb::RopeSpec spec = posemb::default_rope_spec(128, 10000.0, Pairing::RotateHalf);
  Eigen::Matrix<float, 1, 128> q, k;
  fill_random(q.data(), 128, 3u);
  fill_random(k.data(), 128, 4u);
  const auto score = [&](std::int64_t m, std::int64_t n) {
    Eigen::Matrix<float, 1, 128> qm = q, kn = k;
    posemb::rotate_inplace(qm, m, spec);
    posemb::rotate_inplace(kn, n, spec);
    return double(qm.dot(kn));
  };
  const std::int64_t far = std::int64_t(1) << 24;
  const double near_score = score(5, 0), far_score = score(far + 5, far);
  CHECK(far_score == Approx(near_score).epsilon(1e-5).margin(1e-5));
  CHECK(std::abs(near_score - double(q.dot(k))) > 1e-3);  // the rotation did something
}

TEST_CASE("single-token decode: all heads of one position, matrix and tensor, no table") {
  // x: [heads = 32, head_dim = 128] at position 100000, as for a decode step.
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    const posemb::RopeSpec spec = posemb::default_rope_spec(128, 10000.0, pairing);
    Eigen::Matrix<float, 32, 128, Eigen::RowMajor> x;
    fill_random(x.data(), x.size(), 9u);
    Eigen::Matrix<float, 32, 128, Eigen::RowMajor> expected = x;
    for (int h = 0; h < 32; ++h) reference_rotate_head(expected.row(h).data(), 100000, spec);
    Eigen::Matrix<float, 32, 128, Eigen::RowMajor> by_matrix = x;
    posemb::rotate_inplace(by_matrix, 100000, spec);
    posemb::Tensor4<float> by_tensor(1, 1, 32, 128);
    std::copy(x.data(), x.data() + x.size(), by_tensor.data());
    posemb::rotate_inplace(by_tensor, 100000, spec);
    const Eigen::Map<Eigen::Matrix<float, 32, 128, Eigen::RowMajor>> tensor_view(by_tensor.data());
    CHECK((by_matrix - expected).cwiseAbs().maxCoeff() <= 1e-5f);
    CHECK((tensor_view - expected).cwiseAbs().maxCoeff() <= 1e-5f);
    // Column-major storage (strided heads) goes through the scalar kernel: same values.
    Eigen::Matrix<float, 32, 128> column_major = x;
    posemb::rotate_inplace(column_major, 100000, spec);
    CHECK((column_major - expected).cwiseAbs().maxCoeff() <= 1e-5f);
  }
}

TEST_CASE("bfloat16 and half narrowing match Eigen's conversions bit for bit") {
  std::vector<float> values;
  std::mt19937 gen(5u);
  std::uniform_int_distribution<std::uint32_t> bits_of;
  for (int i = 0; i < 20000; ++i) values.push_back(Eigen::numext::bit_cast<float>(bits_of(gen)));
  // Ties at both roundings, overflow, subnormals, signed zeros, infinities.
  for (std::uint32_t tie :
       {0x3F808000u, 0x3F818000u, 0xBF808000u, 0x3F800FFFu, 0x3F801000u, 0x3F803000u, 0x7F7FFFFFu,
        0x00000001u, 0x80000000u, 0x00000000u, 0x7F800000u, 0xFF800000u, 0x477FF000u, 0x477FE000u,
        0x33000000u, 0x33000001u, 0x387FC000u,
        // NaNs whose payload would round into an infinity
        0x7F800001u, 0xFF800001u, 0x7FC00000u}) {
    values.push_back(Eigen::numext::bit_cast<float>(tie));
  }
  const Eigen::Index n = static_cast<Eigen::Index>(values.size());
  std::vector<Eigen::bfloat16> bf(n);
  std::vector<Eigen::half> hf(n);
  posemb::detail::narrow(values.data(), bf.data(), n);
  posemb::detail::narrow(values.data(), hf.data(), n);
  std::vector<float> bf_back(n), hf_back(n);
  posemb::detail::widen(bf.data(), bf_back.data(), n);
  posemb::detail::widen(hf.data(), hf_back.data(), n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const float v = values[i];
    INFO("value bits " << Eigen::numext::bit_cast<std::uint32_t>(v));
    if (std::isnan(v)) {
      CHECK(std::isnan(float(bf[i])));
      CHECK(std::isnan(float(hf[i])));
      continue;
    }
    REQUIRE(Eigen::numext::bit_cast<std::uint16_t>(bf[i]) ==
            Eigen::numext::bit_cast<std::uint16_t>(static_cast<Eigen::bfloat16>(v)));
    REQUIRE(Eigen::numext::bit_cast<std::uint16_t>(hf[i]) ==
            Eigen::numext::bit_cast<std::uint16_t>(static_cast<Eigen::half>(v)));
    REQUIRE(Eigen::numext::bit_cast<std::uint32_t>(bf_back[i]) ==
            Eigen::numext::bit_cast<std::uint32_t>(static_cast<float>(bf[i])));
    REQUIRE(Eigen::numext::bit_cast<std::uint32_t>(hf_back[i]) ==
            Eigen::numext::bit_cast<std::uint32_t>(static_cast<float>(hf[i])));
  }
}

namespace {

// At position 0 (cos 1, sin 0 exactly) a rotation returns every finite input but -0 bit for
// bit, subnormals included (which vcvtneps2bf16 alone would flush to zero); a lane is NaN
// where it or its partner is NaN or infinite (inf * 0), and an infinity stays infinite when its
// partner is finite.
// x: [1, 1, 2, 128], both heads through the vectorized half-precision kernels.
template <class T>
void check_special_values_at_position_zero(Pairing pairing, bool in_place) {
  const std::uint16_t min_subnormal = 0x0001;
  const std::uint16_t max_subnormal = std::is_same_v<T, Eigen::half> ? 0x03FF : 0x007F;
  const std::uint16_t max_finite = std::is_same_v<T, Eigen::half> ? 0x7BFF : 0x7F7F;
  const std::uint16_t infinity = std::is_same_v<T, Eigen::half> ? 0x7C00 : 0x7F80;
  const std::uint16_t nan = std::is_same_v<T, Eigen::half> ? 0x7E00 : 0x7FC0;
  posemb::Tensor4<T> x(1, 1, 2, 128), out(1, 1, 2, 128);
  fill_random(x.data(), x.size(), 11u);
  const auto set = [&](Eigen::Index at, std::uint16_t bits) {
    x.data()[at] = Eigen::numext::bit_cast<T>(bits);
  };
  // Head 0: finite specials scattered over the 16-lane blocks.
  set(0, min_subnormal);
  set(17, max_subnormal);
  set(40, static_cast<std::uint16_t>(0x8000 | min_subnormal));
  set(64, static_cast<std::uint16_t>(0x8000 | max_subnormal));
  set(90, max_finite);
  set(127, static_cast<std::uint16_t>(0x8000 | max_finite));
  // Head 1: infinities and NaNs.
  set(128 + 3, infinity);
  set(128 + 50, static_cast<std::uint16_t>(0x8000 | infinity));
  set(128 + 64, nan);
  set(128 + 101, static_cast<std::uint16_t>(0x8000 | nan));
  set(128 + 120, min_subnormal);
  const posemb::Tensor4<T> original = x;
  const posemb::RopeSpec spec = posemb::default_rope_spec(128, 10000.0, pairing);
  if (in_place) posemb::rotate_inplace(x, 0, spec);
  else posemb::rotate(x, out, 0, spec);
  const T* result = in_place ? x.data() : out.data();
  for (Eigen::Index head = 0; head < 2; ++head) {
    for (Eigen::Index d = 0; d < 128; ++d) {
      const Eigen::Index partner = pairing == Pairing::Interleaved ? (d ^ 1) : (d + 64) % 128;
      const float value = static_cast<float>(original.data()[head * 128 + d]);
      const float other = static_cast<float>(original.data()[head * 128 + partner]);
      const T got = result[head * 128 + d];
      INFO(posemb::to_string(pairing)
           << (in_place ? " in place" : " out of place") << " head " << head << " element " << d);
      if (std::isnan(value) || !std::isfinite(other)) {
        CHECK(std::isnan(static_cast<float>(got)));
      } else {
        CHECK(Eigen::numext::bit_cast<std::uint16_t>(got) ==
              Eigen::numext::bit_cast<std::uint16_t>(original.data()[head * 128 + d]));
      }
    }
  }
}

}  // namespace

TEST_CASE("half-precision kernels keep subnormals, infinities and NaNs (position 0)") {
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    for (bool in_place : {false, true}) {
      check_special_values_at_position_zero<Eigen::bfloat16>(pairing, in_place);
      check_special_values_at_position_zero<Eigen::half>(pairing, in_place);
    }
  }
}
