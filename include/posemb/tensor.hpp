// The vocabulary every posemb scheme speaks: storage types, activation tensors and their
// layouts, per-token positions, feature pairing and threads. Nothing here computes a position
// encoding; every other header builds on this one.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

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
struct is_row_major_tensor<Eigen::Tensor<T, Rank, Eigen::RowMajor, Index>, Rank> : std::true_type {
};
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

// True for Eigen matrices, vectors, maps and blocks (what the matrix overloads take).
namespace detail {
template <class Derived>
std::true_type matrix_test(const Eigen::MatrixBase<Derived>*);
std::false_type matrix_test(...);
}  // namespace detail
template <class X>
inline constexpr bool is_eigen_matrix_v =
    decltype(detail::matrix_test(std::declval<std::decay_t<X>*>()))::value;

// A readable compile error for anything but a rank-4 row-major tensor (the rotate family takes
// anything that is not an Eigen matrix as a tensor, then says what it expects here instead of a
// page of failed overloads).
template <class X>
constexpr bool require_activation_tensor() {
  static_assert(is_row_major_tensor_v<X, 4>,
                "posemb: expected an activation Eigen::Tensor<T, 4, Eigen::RowMajor> or an "
                "Eigen::TensorMap of one: [batch, seq, heads, head_dim] (BSHD) or [batch, heads, "
                "seq, head_dim] (BHSD). Eigen's default (column-major) TensorMap, other ranks and "
                "std::vector are not accepted: map the buffer as "
                "Eigen::TensorMap<Eigen::Tensor<T, 4, Eigen::RowMajor>>(data, b, s, h, d), or use "
                "an Eigen::Matrix / Map [rows, head_dim] with the matrix overloads");
  return true;
}

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
  for (std::size_t i = 0; i < static_cast<std::size_t>(X::NumDimensions); ++i) {
    if (x.dimensions()[i] != out.dimensions()[i]) {
      detail::fail("out.dimension(" + std::to_string(i) + ")", out.dimensions()[i],
                   "expected x.dimension(" + std::to_string(i) +
                       ") = " + std::to_string(x.dimensions()[i]));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Positions

// Per-token positions: [batch, seq], or [1, seq] shared by every batch row.
using PositionMatrix = Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// Fractional per-token positions (HuggingFace accepts float position_ids): [batch, seq] or
// [1, seq]. Angles are p * inv_freq in double; an integer-valued position gives exactly what the
// integer one gives.
using FractionalPositionMatrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// One position per token of one sequence (or per row of a [rows, head_dim] matrix).
using PositionVector = Eigen::Matrix<std::int64_t, Eigen::Dynamic, 1>;

// The positions of the tokens of a [batch, seq] grid, as every tensor entry point takes them:
//   - a scalar offset: token s at offset + s (prefill at 0, decode with a KV cache at its length);
//   - a PositionMatrix or FractionalPositionMatrix [batch, seq], or [1, seq] shared by every
//     batch row (packed sequences, left padding, fractional positions);
//   - a PositionVector [seq]: one sequence's positions, shared by every batch row;
//   - Positions::same(p): every token at position p (e.g. all heads of one decode token).
// A view: the matrix or vector must outlive it. Non-finite fractional positions throw.
//
// Example:
//   posemb::rotate_inplace(q, /*offset=*/cache_length, spec);       // an offset
//   posemb::PositionMatrix pos(1, seq);  /* fill */
//   posemb::rotate_inplace(q, pos, spec);                           // per token
class Positions {
 public:
  Positions(const PositionMatrix& matrix)  // NOLINT: implicit
      : integers_(matrix.data()), rows_(matrix.rows()), cols_(matrix.cols()) {}
  Positions(const FractionalPositionMatrix& matrix)  // NOLINT: implicit
      : fractions_(matrix.data()), rows_(matrix.rows()), cols_(matrix.cols()) {}
  Positions(const PositionVector& vector)  // NOLINT: implicit
      : integers_(vector.data()), rows_(1), cols_(vector.size()) {}
  Positions(std::int64_t offset) : offset_(offset) {}  // NOLINT: implicit

  // Every token at `position`.
  static Positions same(std::int64_t position) {
    Positions positions(position);
    positions.same_ = true;
    return positions;
  }

  // Throws unless the positions fit the [batch, seq] grid of an activation of `shape` and are
  // finite. Positions as many as the tokens of the other layout's seq axis are named as a likely
  // layout mistake (a BHSD buffer passed as BSHD, or the reverse).
  void check(const ActivationShape& shape) const {
    if (!is_matrix() || cols_ == shape.seq) {
      check(shape.batch, shape.seq);
      return;
    }
    const bool bshd = shape.bshd();
    std::string expected = grid_expected(shape.batch, shape.seq) + ", seq being x.dimension(" +
                           (bshd ? "1" : "2") + ") under " + layout_name(shape.layout);
    if (cols_ == shape.heads && shape.heads != shape.seq) {
      const TensorLayout other = bshd ? TensorLayout::BHSD : TensorLayout::BSHD;
      expected += "; " + std::to_string(cols_) + " is x.dimension(" + (bshd ? "2" : "1") +
                  "), the seq axis under " + layout_name(other) + ": if x is " +
                  (bshd ? "[batch, heads, seq, head_dim], pass TensorLayout::BHSD"
                        : "[batch, seq, heads, head_dim], pass TensorLayout::BSHD");
    }
    throw Error("positions shape = " + shape_text() + ": " + expected);
  }

  // Throws unless the positions fit a [batch, seq] grid and are finite.
  void check(Eigen::Index batch, Eigen::Index seq) const {
    if (!is_matrix()) {
      // offset + s for s < seq must not wrap past int64.
      if (!same_ && seq > 0 && offset_ > std::numeric_limits<std::int64_t>::max() - (seq - 1)) {
        detail::fail("positions offset", offset_,
                     "expected offset + seq - 1 <= 2^63 - 1 (seq = " + std::to_string(seq) + ")");
      }
      return;
    }
    if (cols_ != seq || (rows_ != batch && rows_ != 1)) {
      throw Error("positions shape = " + shape_text() + ": " + grid_expected(batch, seq));
    }
    if (fractions_ != nullptr) {
      for (Eigen::Index i = 0; i < rows_ * cols_; ++i) {
        if (!std::isfinite(fractions_[i])) {
          detail::fail("positions[" + std::to_string(i / cols_) + ", " + std::to_string(i % cols_) +
                           "]",
                       fractions_[i], "expected a finite position");
        }
      }
    }
  }
  // The position of token s of batch row b.
  double at(Eigen::Index b, Eigen::Index s) const {
    if (fractions_ != nullptr) return fractions_[index(b, s)];
    return static_cast<double>(integer_at(b, s));
  }
  // The same as an integer, for tables indexed by position; a fractional position throws.
  std::int64_t integer_at(Eigen::Index b, Eigen::Index s) const {
    if (integers_ != nullptr) return integers_[index(b, s)];
    if (fractions_ != nullptr) {
      const double p = fractions_[index(b, s)];
      if (!(p == std::floor(p) && std::fabs(p) < 9.0e18)) {
        detail::fail("position", p, "expected an integer position (a table holds whole positions)");
      }
      return static_cast<std::int64_t>(p);
    }
    return same_ ? offset_ : offset_ + static_cast<std::int64_t>(s);
  }
  bool is_fractional() const { return fractions_ != nullptr; }

 private:
  bool is_matrix() const { return integers_ != nullptr || fractions_ != nullptr; }
  std::string shape_text() const {
    return "[" + std::to_string(rows_) + ", " + std::to_string(cols_) + "]";
  }
  static std::string grid_expected(Eigen::Index batch, Eigen::Index seq) {
    const std::string one_row = "[1, " + std::to_string(seq) + "]";
    return "expected [batch, seq] = [" + std::to_string(batch) + ", " + std::to_string(seq) + "]" +
           (batch == 1 ? "" : " or " + one_row);
  }
  static std::string layout_name(TensorLayout layout) {
    return layout == TensorLayout::BSHD ? "TensorLayout::BSHD [batch, seq, heads, head_dim]"
                                        : "TensorLayout::BHSD [batch, heads, seq, head_dim]";
  }
  Eigen::Index index(Eigen::Index b, Eigen::Index s) const {
    return (rows_ == 1 ? 0 : b) * cols_ + s;
  }

  const std::int64_t* integers_ = nullptr;
  const double* fractions_ = nullptr;
  Eigen::Index rows_ = 0, cols_ = 0;
  std::int64_t offset_ = 0;
  bool same_ = false;
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

// The direction of a rotation: R(p), its inverse R(p)^T = R(-p) (un-rotating cached keys or
// outputs; for xPos the inverse also undoes the scale), or its transpose, the vector-Jacobian
// product of the forward (the backward pass): each pair's 2 x 2 matrix [[c, -s], [s, c]]
// transposed, i.e. the forward's own (c, s) with the sign of s flipped. For a pure rotation the
// transpose is the inverse; for xPos (c, s carry the magnitude), FoPE (C, S are mixtures) and an
// attention scale it is not.
enum class Rotation { Forward, Inverse, Transpose };

// The layouts of an out-of-place rotation: the input's, the output's, and the first sequence
// index of the output it writes. Out of place from BSHD into BHSD (or back) rotates and
// transposes in one pass; a seq offset writes into a caller's KV-cache slot
// (out: [batch, heads, max_seq, head_dim], tokens out_seq_offset .. out_seq_offset + seq - 1).
// A single TensorLayout means the same layout in and out, and an output of x's dimensions;
// Layouts(in, out, offset) lets the output be longer than x along seq (a KV cache).
struct Layouts {
  TensorLayout in = TensorLayout::BSHD;
  TensorLayout out = TensorLayout::BSHD;
  Eigen::Index out_seq_offset = 0;
  bool into_slot = false;  // the output may hold more tokens than x

  Layouts(TensorLayout both) : in(both), out(both) {}  // NOLINT: implicit
  Layouts(TensorLayout in_, TensorLayout out_, Eigen::Index out_seq_offset_ = 0)
      : in(in_), out(out_), out_seq_offset(out_seq_offset_), into_slot(true) {}
};

// A caller's thread pool, as a parallel-for: pool(tasks, task) calls task(i) exactly once for
// every i in [0, tasks), on any threads (the calling one included), at once or in turn, and
// returns when all have finished. task does not throw. posemb/machine/eigen_threads.hpp adapts an
// Eigen::ThreadPoolDevice; OpenMP, TBB or an engine's own pool adapt the same way.
//
// Example (OpenMP):
//   posemb::ParallelFor omp = [](std::size_t tasks, const std::function<void(std::size_t)>& task) {
//   #pragma omp parallel for
//     for (std::size_t i = 0; i < tasks; ++i) task(i);
//   };
//   posemb::rotate(x, out, 0, table,
//                  posemb::RotateOptions().with_threads(posemb::Threads{8, omp}));
using ParallelFor =
    std::function<void(std::size_t tasks, const std::function<void(std::size_t)>& task)>;

// Worker threads for the tensor entry points: the work is split into at most `count` contiguous
// parts (fewer when the tensor is too small to gain from them). Without a pool, parts 1.. run on
// threads started for the call and part 0 on the caller (below 2^18 elements per thread a tensor
// is done on the calling thread alone); with a pool, the parts are the pool's tasks and no
// thread is started (below 2^15 elements per task). When there is a single part it runs on the
// calling thread, without the pool, so Threads{1, pool} is the single-threaded path.
//
// Example:
//   posemb::rotate(x, out, 0, table, posemb::RotateOptions().with_threads(posemb::Threads{2}));
//   posemb::rotate(x, out, 0, table,
//                  posemb::RotateOptions().with_threads(posemb::Threads{4, pool}));
struct Threads {
  int count = 1;
  ParallelFor pool = {};  // empty: threads started per call
};

}  // namespace posemb
