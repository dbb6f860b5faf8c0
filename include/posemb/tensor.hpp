// The vocabulary every posemb scheme speaks: storage types, activation tensors and their
// layouts, per-token positions, feature pairing and threads. Nothing here computes a position
// encoding; every other header builds on this one.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <cstdint>
#include <string>
#include <type_traits>

#include "posemb/error.hpp"

namespace posemb {

// ---------------------------------------------------------------------------------------------
// Storage types. float, double, Eigen::half and Eigen::bfloat16 are stored; half-precision
// values are loaded into float, computed on in float, and rounded once on store.

template <class T>
inline constexpr bool is_storage_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Eigen::half> ||
    std::is_same_v<T, Eigen::bfloat16>;

template <class T>
struct compute_type {
  static_assert(is_storage_type_v<T>,
                "posemb storage type must be float, double, Eigen::half or Eigen::bfloat16");
  using type = float;
};
template <>
struct compute_type<double> {
  using type = double;
};

// The arithmetic type for storage type T: double for double, float otherwise.
template <class T>
using compute_t = typename compute_type<T>::type;

// ---------------------------------------------------------------------------------------------
// Activations

// Memory layout of a 4-D activation tensor (row-major, last index fastest).
enum class TensorLayout {
  BSHD,  // [batch, seq, heads, head_dim]
  BHSD,  // [batch, heads, seq, head_dim]
};

inline const char* to_string(TensorLayout layout) {
  return layout == TensorLayout::BSHD ? "bshd" : "bhsd";
}

template <class T>
using Tensor4 = Eigen::Tensor<T, 4, Eigen::RowMajor>;
template <class T>
using TensorMap4 = Eigen::TensorMap<Eigen::Tensor<T, 4, Eigen::RowMajor>>;

// True for Eigen::Tensor<T, Rank, RowMajor> and TensorMaps of one (const or not): the
// activations posemb takes (rank 4: [batch, seq, heads, head_dim]; rank 3: [batch, seq, d]).
template <class X, int Rank>
struct is_row_major_tensor : std::false_type {};
template <class T, int Rank, class Index>
struct is_row_major_tensor<Eigen::Tensor<T, Rank, Eigen::RowMajor, Index>, Rank> : std::true_type {};
template <class T, int Rank, class Index, int Options, template <class> class MakePointer>
struct is_row_major_tensor<
    Eigen::TensorMap<Eigen::Tensor<T, Rank, Eigen::RowMajor, Index>, Options, MakePointer>, Rank>
    : std::true_type {};
template <class T, int Rank, class Index, int Options, template <class> class MakePointer>
struct is_row_major_tensor<
    Eigen::TensorMap<const Eigen::Tensor<T, Rank, Eigen::RowMajor, Index>, Options, MakePointer>,
    Rank> : std::true_type {};

template <class X, int Rank>
inline constexpr bool is_row_major_tensor_v =
    is_row_major_tensor<std::remove_cv_t<std::remove_reference_t<X>>, Rank>::value;

// Template-parameter guards of the tensor overloads: `template <class X, IfTensor4<X> = 0>`.
template <class X>
using IfTensor4 = std::enable_if_t<is_row_major_tensor_v<X, 4>, int>;
template <class X>
using IfTensor3 = std::enable_if_t<is_row_major_tensor_v<X, 3>, int>;

// The storage type of a tensor X (const removed).
template <class X>
using scalar_of_t = std::remove_const_t<typename std::remove_reference_t<X>::Scalar>;

// The shape of a 4-D activation, decoded once from its dimensions and layout; the element
// offsets of every (batch row, token, head) follow from it.
//   BSHD: [batch, seq, heads, head_dim]    BHSD: [batch, heads, seq, head_dim]
struct ActivationShape {
  TensorLayout layout = TensorLayout::BSHD;
  Eigen::Index batch = 0, seq = 0, heads = 0, head_dim = 0;

  // Throws posemb::Error for a layout that is neither BSHD nor BHSD.
  ActivationShape(const Eigen::array<Eigen::Index, 4>& dims, TensorLayout layout_)
      : layout(layout_), batch(dims[0]), head_dim(dims[3]) {
    if (layout != TensorLayout::BSHD && layout != TensorLayout::BHSD) {
      detail::fail("layout", static_cast<int>(layout),
                   "expected TensorLayout::BSHD or TensorLayout::BHSD");
    }
    seq = layout == TensorLayout::BSHD ? dims[1] : dims[2];
    heads = layout == TensorLayout::BSHD ? dims[2] : dims[1];
  }

  bool bshd() const { return layout == TensorLayout::BSHD; }
  Eigen::Index size() const { return batch * seq * heads * head_dim; }
  // Elements between consecutive tokens, and between consecutive heads, of one batch row.
  Eigen::Index token_stride() const { return bshd() ? heads * head_dim : head_dim; }
  Eigen::Index head_stride() const { return bshd() ? head_dim : seq * head_dim; }
  // Element offset of batch row b, token s, head h.
  Eigen::Index offset(Eigen::Index b, Eigen::Index s, Eigen::Index h) const {
    return b * seq * heads * head_dim + s * token_stride() + h * head_stride();
  }
  // The dimensions of the same activation in another layout.
  Eigen::array<Eigen::Index, 4> dims() const {
    return bshd() ? Eigen::array<Eigen::Index, 4>{batch, seq, heads, head_dim}
                  : Eigen::array<Eigen::Index, 4>{batch, heads, seq, head_dim};
  }
};

// Throws unless `out` has the dimensions of `x`.
template <class X, class Y>
void require_same_dims(const X& x, const Y& out) {
  for (int i = 0; i < static_cast<int>(X::NumDimensions); ++i) {
    if (x.dimension(i) != out.dimension(i)) {
      detail::fail("out.dimension(" + std::to_string(i) + ")", out.dimension(i),
                   "expected x.dimension(" + std::to_string(i) + ") = " +
                       std::to_string(x.dimension(i)));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Positions

// Per-token positions: [batch, seq], or [1, seq] shared by every batch row.
using PositionMatrix = Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// One position per row of a [rows, head_dim] matrix.
using PositionVector = Eigen::Matrix<std::int64_t, Eigen::Dynamic, 1>;

// The positions of the tokens of a [batch, seq] grid, as every tensor entry point takes them:
// a PositionMatrix [batch, seq] or [1, seq] (packed sequences, left padding), or a scalar
// offset, token s at offset + s (prefill at 0, decode with a KV cache at its length). A view:
// the matrix must outlive it.
//
// Example:
//   posemb::apply_rope_inplace(q, /*offset=*/cache_length, spec);   // an offset
//   posemb::PositionMatrix pos(1, seq);  /* fill */
//   posemb::apply_rope_inplace(q, pos, spec);                       // per token
class Positions {
 public:
  Positions(const PositionMatrix& matrix) : matrix_(&matrix) {}  // NOLINT: implicit
  Positions(std::int64_t offset) : offset_(offset) {}            // NOLINT: implicit

  // Throws unless the positions fit a [batch, seq] grid.
  void check(Eigen::Index batch, Eigen::Index seq) const {
    if (matrix_ == nullptr) return;
    if (matrix_->cols() != seq || (matrix_->rows() != batch && matrix_->rows() != 1)) {
      throw Error("positions shape = [" + std::to_string(matrix_->rows()) + ", " +
                  std::to_string(matrix_->cols()) + "]: expected [batch, seq] = [" +
                  std::to_string(batch) + ", " + std::to_string(seq) + "] or [1, " +
                  std::to_string(seq) + "]");
    }
  }
  // The position of token s of batch row b.
  std::int64_t at(Eigen::Index b, Eigen::Index s) const {
    if (matrix_ == nullptr) return offset_ + static_cast<std::int64_t>(s);
    return (*matrix_)(matrix_->rows() == 1 ? 0 : b, s);
  }
  bool is_offset() const { return matrix_ == nullptr; }

 private:
  const PositionMatrix* matrix_ = nullptr;
  std::int64_t offset_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Pairing and threads

// Which features of a head form rotary pair i (rotary_dim r, head_dim 8, r = 4 below):
//   Interleaved (GPT-J, Meta LLaMA checkpoints, ggml "normal"): (2i, 2i + 1)   [abab....]
//   RotateHalf  (GPT-NeoX, HuggingFace LLaMA, ggml "neox"):     (i, i + r/2)   [aabb....]
enum class Pairing { Interleaved, RotateHalf };

inline const char* to_string(Pairing pairing) {
  return pairing == Pairing::Interleaved ? "interleaved" : "rotate_half";
}

// Worker threads for the tensor entry points: at most `count` threads including the caller's,
// and fewer when the tensor is too small to gain from them (below 2^18 elements per thread a
// tensor is done on the calling thread alone).
struct Threads {
  int count = 1;
};

}  // namespace posemb
