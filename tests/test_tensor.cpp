// tensor.hpp: the vocabulary. ActivationShape decodes both layouts once; Positions checks its
// grid; the storage types map to their arithmetic types.
#include <catch2/catch.hpp>

#include <cmath>
#include <type_traits>

#include <posemb/tensor.hpp>

#include "support.hpp"

using posemb::ActivationShape;
using posemb::TensorLayout;

TEST_CASE("ActivationShape: element offsets in both layouts") {
  // x: [2, 5, 3, 8] BSHD, or [2, 3, 5, 8] BHSD: batch 2, 5 tokens, 3 heads, head_dim 8.
  const ActivationShape bshd({2, 5, 3, 8}, TensorLayout::BSHD);
  const ActivationShape bhsd({2, 3, 5, 8}, TensorLayout::BHSD);
  for (const ActivationShape* shape : {&bshd, &bhsd}) {
    CHECK(shape->batch == 2);
    CHECK(shape->seq == 5);
    CHECK(shape->heads == 3);
    CHECK(shape->head_dim == 8);
    CHECK(shape->size() == 240);
  }
  // Row-major offsets written out: BSHD ((b * S + s) * H + h) * D, BHSD ((b * H + h) * S + s) * D.
  for (Eigen::Index b = 0; b < 2; ++b) {
    for (Eigen::Index s = 0; s < 5; ++s) {
      for (Eigen::Index h = 0; h < 3; ++h) {
        CHECK(bshd.offset(b, s, h) == ((b * 5 + s) * 3 + h) * 8);
        CHECK(bhsd.offset(b, s, h) == ((b * 3 + h) * 5 + s) * 8);
      }
    }
  }
  CHECK(bshd.dims() == Eigen::array<Eigen::Index, 4>{2, 5, 3, 8});
  CHECK(bhsd.dims() == Eigen::array<Eigen::Index, 4>{2, 3, 5, 8});
  test_support::throws_with(
      [] {
        (void)ActivationShape({1, 1, 1, 2}, static_cast<TensorLayout>(7));
      },
      "layout = 7");
}

TEST_CASE("Positions: an offset or a [batch, seq] matrix, checked against the grid") {
  const posemb::Positions offset(std::int64_t{100});
  CHECK_FALSE(offset.is_fractional());
  CHECK(offset.at(3, 4) == 104.0);
  CHECK(offset.integer_at(3, 4) == 104);
  CHECK(posemb::Positions::same(7).integer_at(2, 9) == 7);
  posemb::PositionMatrix shared(1, 3);
  shared << 7, 8, 9;
  const posemb::Positions rows(shared);
  CHECK(rows.integer_at(5, 2) == 9);  // [1, seq] is shared by every batch row
  rows.check(4, 3);
  test_support::throws_with([&] { rows.check(4, 2); },
                            "positions shape = [1, 3]: expected [batch, seq] = [4, 2] or [1, 2]");
}

TEST_CASE("storage types and their arithmetic types") {
  STATIC_REQUIRE(std::is_same_v<posemb::compute_t<float>, float>);
  STATIC_REQUIRE(std::is_same_v<posemb::compute_t<double>, double>);
  STATIC_REQUIRE(std::is_same_v<posemb::compute_t<Eigen::half>, float>);
  STATIC_REQUIRE(std::is_same_v<posemb::compute_t<Eigen::bfloat16>, float>);
  STATIC_REQUIRE(posemb::is_row_major_tensor_v<posemb::Tensor4<float>&, 4>);
  STATIC_REQUIRE(posemb::is_row_major_tensor_v<Eigen::TensorMap<const posemb::Tensor4<float>>, 4>);
  STATIC_REQUIRE_FALSE(posemb::is_row_major_tensor_v<Eigen::Tensor<float, 4>, 4>);  // column-major
}

TEST_CASE("fractional positions: finite, and integers only where a table is indexed") {
  posemb::FractionalPositionMatrix p(2, 2);
  p << 0.5, 1.0, 2.0, -3.0;
  const posemb::Positions positions(p);
  CHECK(positions.is_fractional());
  CHECK(positions.at(0, 0) == 0.5);
  CHECK(positions.integer_at(1, 1) == -3);
  test_support::throws_with([&] { (void)positions.integer_at(0, 0); }, "position = 0.5");
  p(1, 0) = std::nan("");
  test_support::throws_with([&] { positions.check(2, 2); }, "positions[1, 0] = nan");
  p(1, 0) = INFINITY;
  test_support::throws_with([&] { positions.check(2, 2); }, "positions[1, 0] = inf");
}
