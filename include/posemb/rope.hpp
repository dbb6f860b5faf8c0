// Rotary position embedding (RoPE): the spec, the cos/sin table and the one rotation kernel.
//
// Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position Embedding", eq. 13-15.
// A token at position p has each rotary pair (a, b) of its query/key head vector rotated by
// the angle theta_i = p * inv_freq[i]:
//
//   a' = s * (a cos theta_i - b sin theta_i)
//   b' = s * (a sin theta_i + b cos theta_i)
//
// with s = attention_scale (1 for plain RoPE; YaRN and LongRoPE set it, HuggingFace multiplies
// it into cos and sin, so do we). Then <R(m) q, R(n) k> depends on m - n only (s = 1).
//
// Which features form pair i is the Pairing:
//   Interleaved  (GPT-J, Meta LLaMA checkpoints, ggml "normal"): (2i, 2i + 1)
//   RotateHalf   (GPT-NeoX, HuggingFace LLaMA, ggml "neox"):   (i, i + rotary_dim / 2)
// Partial rotary: only the first rotary_dim features of each head rotate; features
// rotary_dim .. head_dim - 1 pass through bit-identical.
//
// Angles are formed in double and reduced mod 2 pi before cos/sin; only cos/sin are rounded to
// the arithmetic type (float for float/half/bf16 storage, double for double). Float32 angles
// drift by 5e-4 rad at 2k positions and break down past 1e5.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "posemb/detail/rope_kernels.hpp"
#include "posemb/detail/storage.hpp"
#include "posemb/error.hpp"
#include "posemb/frequencies.hpp"

namespace posemb {

enum class Pairing { Interleaved, RotateHalf };

// Memory layout of a 4-D activation tensor (row-major, last index fastest).
enum class TensorLayout {
  BSHD,  // [batch, seq, heads, head_dim]
  BHSD,  // [batch, heads, seq, head_dim]
};

inline const char* to_string(Pairing pairing) {
  return pairing == Pairing::Interleaved ? "interleaved" : "rotate_half";
}

// Worker threads for the 4-D tensor overloads that take one: at most `count` threads including
// the caller's, and fewer when the tensor is too small to gain from them (below 2^18 elements
// per thread a tensor is done on the calling thread alone).
struct Threads {
  int count = 1;
};

// Per-token positions: [batch, seq], or [1, seq] shared by every batch row.
using PositionMatrix = Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// One position per row of a [rows, head_dim] matrix.
using PositionVector = Eigen::Matrix<std::int64_t, Eigen::Dynamic, 1>;

template <class T>
using Tensor4 = Eigen::Tensor<T, 4, Eigen::RowMajor>;
template <class T>
using TensorMap4 = Eigen::TensorMap<Eigen::Tensor<T, 4, Eigen::RowMajor>>;

// Everything the rotation kernel needs. Built by default_rope_spec() or by the scaled-RoPE
// functions; an immutable value with no hidden state.
struct RopeSpec {
  Eigen::VectorXd inv_freq;      // [rotary_dim / 2], radians per position
  double attention_scale = 1.0;  // multiplies cos and sin
  Pairing pairing = Pairing::RotateHalf;
  int rotary_dim = 0;            // number of rotated features per head (even)

  int pairs() const { return rotary_dim / 2; }

  // Throws posemb::Error unless the fields are consistent.
  void validate() const {
    detail::require_even_positive("rotary_dim", rotary_dim);
    if (inv_freq.size() != rotary_dim / 2) {
      detail::fail("inv_freq.size()", inv_freq.size(),
                   "expected rotary_dim / 2 = " + std::to_string(rotary_dim / 2));
    }
    for (Eigen::Index i = 0; i < inv_freq.size(); ++i) {
      if (!std::isfinite(inv_freq[i])) {
        detail::fail("inv_freq[" + std::to_string(i) + "]", inv_freq[i], "expected a finite number");
      }
    }
    detail::require_positive_finite("attention_scale", attention_scale);
  }
};

// Plain RoPE: default frequencies base^(-2i/rotary_dim), attention_scale 1.
inline RopeSpec default_rope_spec(int rotary_dim, double base = 10000.0,
                                  Pairing pairing = Pairing::RotateHalf) {
  RopeSpec spec;
  spec.inv_freq = default_inv_freq(rotary_dim, base);
  spec.pairing = pairing;
  spec.rotary_dim = rotary_dim;
  return spec;
}

namespace detail {

inline constexpr double two_pi = 6.283185307179586476925286766559;

// theta = p * inv_freq formed in double, reduced to (-pi, pi] before cos/sin.
inline double rope_angle(std::int64_t position, double inv_freq) {
  return std::remainder(static_cast<double>(position) * inv_freq, two_pi);
}

// cos/sin for pairs [pair_begin, pair_end) at one position, scaled, rounded to C.
// cos_out, sin_out: [pair_end - pair_begin]
template <class C>
void rope_cos_sin(const RopeSpec& spec, std::int64_t position, int pair_begin, int pair_end,
                  C* cos_out, C* sin_out) {
  for (int i = pair_begin; i < pair_end; ++i) {
    const double angle = rope_angle(position, spec.inv_freq[i]);
    cos_out[i - pair_begin] = static_cast<C>(spec.attention_scale * std::cos(angle));
    sin_out[i - pair_begin] = static_cast<C>(spec.attention_scale * std::sin(angle));
  }
}

// The rotation kernel. Rotates pairs [pair_begin, pair_end) of one head vector.
// in, out: one head, element i at in[i * stride] (in == out for in place);
// cos, sin: [pair_end - pair_begin] for this token, already scaled.
// Contiguous heads (stride 1) go to the vectorized kernels of rope_kernels.hpp; the loop below
// is the plain scalar form of the same arithmetic, used for strided heads.
template <class T, class C>
inline void rotate_pairs(const T* in, T* out, Eigen::Index stride, const C* cos, const C* sin,
                         int pair_begin, int pair_end, int rotary_dim, Pairing pairing) {
  static_assert(std::is_same_v<C, compute_t<T>>, "cos/sin must be in the arithmetic type of T");
  if (stride == 1) {
    rotate_contiguous(in, out, cos, sin, pair_begin, pair_end, rotary_dim,
                      pairing == Pairing::Interleaved);
    return;
  }
  const Eigen::Index half = rotary_dim / 2;
  for (int i = pair_begin; i < pair_end; ++i) {
    const Eigen::Index ia = pairing == Pairing::Interleaved ? 2 * i : i;
    const Eigen::Index ib = pairing == Pairing::Interleaved ? 2 * i + 1 : i + half;
    const C a = static_cast<C>(in[ia * stride]);
    const C b = static_cast<C>(in[ib * stride]);
    const C c = cos[i - pair_begin];
    const C s = sin[i - pair_begin];
    out[ia * stride] = static_cast<T>(a * c - b * s);
    out[ib * stride] = static_cast<T>(a * s + b * c);
  }
}

}  // namespace detail

// cos/sin of every pair at one position, as the kernel uses them (scaled by attention_scale).
// Returns {cos, sin}: each [rotary_dim / 2].
inline std::pair<Eigen::VectorXd, Eigen::VectorXd> rope_cos_sin(const RopeSpec& spec,
                                                                std::int64_t position) {
  spec.validate();
  Eigen::VectorXd cos(spec.pairs()), sin(spec.pairs());
  detail::rope_cos_sin(spec, position, 0, spec.pairs(), cos.data(), sin.data());
  return {cos, sin};
}

namespace detail {

// cos/sin rows for the positions [first_position, first_position + count): the storage and the
// position lookup of RopeTable and FopeTable. Row r holds position first_position + r.
template <class C>
class PositionRows {
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>,
                "a cos/sin table holds float or double");

 public:
  using Matrix = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

  std::int64_t first_position() const { return first_position_; }
  std::int64_t count() const { return cos_.rows(); }
  bool contains(std::int64_t position) const {
    return position >= first_position_ && position - first_position_ < count();
  }
  // cos, sin: [count, width]
  const Matrix& cos() const { return cos_; }
  const Matrix& sin() const { return sin_; }

  // Row pointers for one position; throws if the table does not cover it.
  const C* cos_row(std::int64_t position) const { return cos_.row(row_of(position)).data(); }
  const C* sin_row(std::int64_t position) const { return sin_.row(row_of(position)).data(); }

 protected:
  // table: the table's name in error messages ("RoPE", "FoPE").
  PositionRows(const char* table, std::int64_t first_position, std::int64_t count,
               Eigen::Index width)
      : table_(table), first_position_(first_position) {
    require_positive("count", count);
    cos_.resize(count, width);
    sin_.resize(count, width);
  }

  Matrix cos_, sin_;

 private:
  Eigen::Index row_of(std::int64_t position) const {
    if (!contains(position)) {
      fail("position", position,
           std::string("outside the ") + table_ + " table's range [" +
               std::to_string(first_position_) + ", " + std::to_string(first_position_ + count()) +
               ")");
    }
    return static_cast<Eigen::Index>(position - first_position_);
  }

  const char* table_;
  std::int64_t first_position_;
};

inline const RopeSpec& validated(const RopeSpec& spec) {
  spec.validate();
  return spec;
}

}  // namespace detail

// A precomputed cos/sin table for positions [first_position, first_position + count), in the
// arithmetic type C (float for float/half/bf16 storage, double for double storage).
// cos(), sin(): [count, rotary_dim / 2], row r is position first_position + r.
// Immutable after construction: build once, share across threads.
template <class C>
class RopeTable : public detail::PositionRows<C> {
 public:
  RopeTable(RopeSpec spec, std::int64_t first_position, std::int64_t count)
      : detail::PositionRows<C>("RoPE", first_position, count, detail::validated(spec).pairs()),
        spec_(std::move(spec)) {
    detail::fill_rope_table(spec_.inv_freq.data(), spec_.pairs(), spec_.attention_scale,
                            first_position, count, this->cos_.data(), this->sin_.data());
  }

  const RopeSpec& spec() const { return spec_; }

 private:
  RopeSpec spec_;
};

// The table type to use with storage type T.
template <class T>
using RopeTableFor = RopeTable<detail::compute_t<T>>;

namespace detail {

// ---- Sources of cos/sin -----------------------------------------------------------------
// The kernels below take a `source` of each token's cos/sin: a RopeTable (rows looked up), a
// RopeSpec (computed in the call), or a CosSinFunction (computed by a callable: xPos's scaled
// cos/sin, the KV-cache helpers' re-rotations). spec_of(source) gives the pairing and
// rotary_dim; fill_cos_sin(source, ...) computes the cos/sin of pairs [begin, end) at a position.

// cos/sin from a callable: fill(position, pair_begin, pair_end, cos, sin) writes the cos/sin
// (already scaled, in the arithmetic type) of pairs [pair_begin, pair_end); `spec` gives the
// pairing and rotary_dim of the rotation they feed.
template <class Fill>
struct CosSinFunction {
  const RopeSpec& spec;
  const Fill& fill;
};

inline const RopeSpec& spec_of(const RopeSpec& spec) { return spec; }
template <class C>
const RopeSpec& spec_of(const RopeTable<C>& table) {
  return table.spec();
}
template <class Fill>
const RopeSpec& spec_of(const CosSinFunction<Fill>& source) {
  return source.spec;
}

template <class C>
void fill_cos_sin(const RopeSpec& spec, std::int64_t position, int begin, int end, C* cos, C* sin) {
  rope_cos_sin_vectorized(spec.inv_freq.data() + begin, position, spec.attention_scale,
                          end - begin, cos, sin);
}
template <class Fill, class C>
void fill_cos_sin(const CosSinFunction<Fill>& source, std::int64_t position, int begin, int end,
                  C* cos, C* sin) {
  source.fill(position, begin, end, cos, sin);
}

// Pairs whose cos/sin are computed at once on the stack when there is no table.
inline constexpr int cos_sin_chunk = 64;

// Calls visit(cos, sin, pair_begin, pair_end) over chunks of pairs for one position, with
// cos/sin computed on the fly into a stack buffer (no allocation).
template <class C, class Source, class Visit>
void for_cos_sin_chunks(const Source& source, std::int64_t position, Visit&& visit) {
  const int pairs = spec_of(source).pairs();
  C cos[cos_sin_chunk], sin[cos_sin_chunk];
  for (int begin = 0; begin < pairs; begin += cos_sin_chunk) {
    const int end = std::min(begin + cos_sin_chunk, pairs);
    fill_cos_sin(source, position, begin, end, cos, sin);
    visit(static_cast<const C*>(cos), static_cast<const C*>(sin), begin, end);
  }
}

template <class C, class Visit>
void for_cos_sin_chunks(const RopeTable<C>& table, std::int64_t position, Visit&& visit) {
  visit(table.cos_row(position), table.sin_row(position), 0, table.spec().pairs());
}

// Tokens per unit of work in rotate_tensor: their cos/sin are formed once for all heads.
inline constexpr int tokens_per_block = 16;

// The same for a block of tokens at positions[0 .. count), count <= tokens_per_block:
// visit(cos_rows, sin_rows, pair_begin, pair_end) where cos_rows[t], sin_rows[t] hold token t's
// cos/sin for pairs [pair_begin, pair_end).
template <class C, class Source, class Visit>
void for_block_cos_sin_chunks(const Source& source, const std::int64_t* positions, int count,
                              Visit&& visit) {
  const int pairs = spec_of(source).pairs();
  C cos[tokens_per_block][cos_sin_chunk], sin[tokens_per_block][cos_sin_chunk];
  const C* cos_rows[tokens_per_block];
  const C* sin_rows[tokens_per_block];
  for (int t = 0; t < count; ++t) {
    cos_rows[t] = cos[t];
    sin_rows[t] = sin[t];
  }
  for (int begin = 0; begin < pairs; begin += cos_sin_chunk) {
    const int end = std::min(begin + cos_sin_chunk, pairs);
    for (int t = 0; t < count; ++t) fill_cos_sin(source, positions[t], begin, end, cos[t], sin[t]);
    visit(cos_rows, sin_rows, begin, end);
  }
}

template <class C, class Visit>
void for_block_cos_sin_chunks(const RopeTable<C>& table, const std::int64_t* positions,
                              int count, Visit&& visit) {
  const C* cos_rows[tokens_per_block];
  const C* sin_rows[tokens_per_block];
  for (int t = 0; t < count; ++t) {
    cos_rows[t] = table.cos_row(positions[t]);
    sin_rows[t] = table.sin_row(positions[t]);
  }
  visit(cos_rows, sin_rows, 0, table.spec().pairs());
}

// Validates a spec (a table's spec was validated when it was built) and head_dim against it.
inline void check_head_dim(const RopeSpec& spec, Eigen::Index head_dim, bool validate_spec) {
  if (validate_spec) spec.validate();
  if (head_dim < spec.rotary_dim) {
    fail("head_dim", head_dim, "expected >= rotary_dim = " + std::to_string(spec.rotary_dim));
  }
}
inline void check_head_dim(const RopeSpec& spec, Eigen::Index head_dim) {
  check_head_dim(spec, head_dim, true);
}
template <class C>
void check_head_dim(const RopeTable<C>& table, Eigen::Index head_dim) {
  check_head_dim(table.spec(), head_dim, false);
}
template <class Fill>
void check_head_dim(const CosSinFunction<Fill>& source, Eigen::Index head_dim) {
  check_head_dim(source.spec, head_dim, true);
}

inline void check_threads(const Threads& threads) {
  if (threads.count < 1) fail("threads.count", threads.count, "expected >= 1");
}

// Rotates one head vector (out-of-place copies the pass-through tail).
// in, out: [head_dim] with element stride `stride`.
template <class T, class Source>
void rotate_head(const Source& source, std::int64_t position, const T* in, T* out,
                 Eigen::Index stride, Eigen::Index head_dim) {
  using C = compute_t<T>;
  const RopeSpec& spec = spec_of(source);
  for_cos_sin_chunks<C>(source, position, [&](const C* cos, const C* sin, int begin, int end) {
    rotate_pairs(in, out, stride, cos, sin, begin, end, spec.rotary_dim, spec.pairing);
  });
  if (in != out) {
    for (Eigen::Index i = spec.rotary_dim; i < head_dim; ++i) out[i * stride] = in[i * stride];
  }
}

// Positions of the tokens of a [batch, seq] grid: a matrix, or offset + seq index.
class TokenPositions {
 public:
  TokenPositions(const PositionMatrix& matrix) : matrix_(&matrix) {}  // NOLINT: implicit
  TokenPositions(std::int64_t offset) : offset_(offset) {}            // NOLINT: implicit

  void check(Eigen::Index batch, Eigen::Index seq) const {
    if (matrix_ == nullptr) return;
    if (matrix_->cols() != seq || (matrix_->rows() != batch && matrix_->rows() != 1)) {
      throw Error("positions shape = [" + std::to_string(matrix_->rows()) + ", " +
                  std::to_string(matrix_->cols()) + "]: expected [batch, seq] = [" +
                  std::to_string(batch) + ", " + std::to_string(seq) + "] or [1, " +
                  std::to_string(seq) + "]");
    }
  }
  std::int64_t at(Eigen::Index b, Eigen::Index s) const {
    if (matrix_ == nullptr) return offset_ + static_cast<std::int64_t>(s);
    return (*matrix_)(matrix_->rows() == 1 ? 0 : b, s);
  }

 private:
  const PositionMatrix* matrix_ = nullptr;
  std::int64_t offset_ = 0;
};

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
using if_row_major_tensor = std::enable_if_t<
    is_row_major_tensor<std::remove_cv_t<std::remove_reference_t<X>>, Rank>::value, int>;
template <class X>
using if_tensor4 = if_row_major_tensor<X, 4>;

inline void check_layout(TensorLayout layout) {
  if (layout != TensorLayout::BSHD && layout != TensorLayout::BHSD) {
    fail("layout", static_cast<int>(layout), "expected TensorLayout::BSHD or TensorLayout::BHSD");
  }
}

// Rows of the table for every token's position, so that an out-of-range position throws before
// any work (or any worker thread) starts. A spec covers every position.
template <class Source>
void check_positions(const Source&, const TokenPositions&, Eigen::Index, Eigen::Index) {}
template <class C>
void check_positions(const RopeTable<C>& table, const TokenPositions& positions,
                     Eigen::Index batch, Eigen::Index seq) {
  for (Eigen::Index b = 0; b < batch; ++b) {
    for (Eigen::Index s = 0; s < seq; ++s) (void)table.cos_row(positions.at(b, s));
  }
}

// Rotates every head of a 4-D tensor; in and out share shape and layout (in == out: in place).
// in, out: [batch, seq, heads, head_dim] (BSHD) or [batch, heads, seq, head_dim] (BHSD)
// Work is split into blocks of tokens_per_block tokens of one batch row; each block gets its
// cos/sin once (table rows, or computed on the stack) and rotates all its heads. Blocks are
// shared among up to `threads` threads (threads_for decides how many are worth starting).
template <class T, class Source>
void rotate_tensor(const Source& source, const TokenPositions& positions, TensorLayout layout,
                   const T* in, T* out, const Eigen::array<Eigen::Index, 4>& dims,
                   int threads = 1) {
  check_layout(layout);
  const bool bshd = layout == TensorLayout::BSHD;
  const Eigen::Index batch = dims[0];
  const Eigen::Index seq = bshd ? dims[1] : dims[2];
  const Eigen::Index heads = bshd ? dims[2] : dims[1];
  const Eigen::Index head_dim = dims[3];
  check_head_dim(source, head_dim);
  positions.check(batch, seq);
  check_positions(source, positions, batch, seq);
  // Element offsets between consecutive tokens and consecutive heads.
  const Eigen::Index token_stride = bshd ? heads * head_dim : head_dim;
  const Eigen::Index head_stride = bshd ? head_dim : seq * head_dim;
  using C = compute_t<T>;
  const RopeSpec& spec = spec_of(source);
  const bool interleaved = spec.pairing == Pairing::Interleaved;
  const Eigen::Index blocks_per_row = (seq + tokens_per_block - 1) / tokens_per_block;
  const auto rotate_blocks = [&](Eigen::Index block_begin, Eigen::Index block_end) {
    for (Eigen::Index block = block_begin; block < block_end; ++block) {
      const Eigen::Index b = block / blocks_per_row;
      const Eigen::Index s0 = (block % blocks_per_row) * tokens_per_block;
      const int count = static_cast<int>(std::min<Eigen::Index>(tokens_per_block, seq - s0));
      std::int64_t block_positions[tokens_per_block];
      for (int t = 0; t < count; ++t) block_positions[t] = positions.at(b, s0 + t);
      // Offset of token t's head h.
      const auto at = [&](int t, Eigen::Index h) {
        return b * seq * heads * head_dim + (s0 + t) * token_stride + h * head_stride;
      };
      for_block_cos_sin_chunks<C>(
          source, block_positions, count,
          [&](const C* const* cos_rows, const C* const* sin_rows, int begin, int end) {
            // Visit heads in memory order: BSHD token-major, BHSD head-major.
            const auto rotate = [&](int t, Eigen::Index h) {
              rotate_contiguous(in + at(t, h), out + at(t, h), cos_rows[t], sin_rows[t], begin,
                                end, spec.rotary_dim, interleaved);
            };
            if (bshd) {
              for (int t = 0; t < count; ++t)
                for (Eigen::Index h = 0; h < heads; ++h) rotate(t, h);
            } else {
              for (Eigen::Index h = 0; h < heads; ++h)
                for (int t = 0; t < count; ++t) rotate(t, h);
            }
          });
      if (in != out && spec.rotary_dim < head_dim) {  // the pass-through tail
        for (int t = 0; t < count; ++t) {
          for (Eigen::Index h = 0; h < heads; ++h) {
            std::copy(in + at(t, h) + spec.rotary_dim, in + at(t, h) + head_dim,
                      out + at(t, h) + spec.rotary_dim);
          }
        }
      }
    }
  };
  parallel_for(batch * blocks_per_row, threads_for(batch * seq * heads * head_dim, threads),
               rotate_blocks);
}

// A view of a dense Eigen matrix or vector as `count` head vectors of `head_dim` elements.
template <class Derived>
struct HeadRows {
  using T = typename Derived::Scalar;
  T* data;
  Eigen::Index count, head_dim, vector_stride, element_stride;
};

template <class Derived>
HeadRows<Derived> head_rows(const Eigen::MatrixBase<Derived>& x) {
  static_assert(bool(Eigen::internal::traits<Derived>::Flags & Eigen::DirectAccessBit),
                "posemb: the matrix must expose its storage (Matrix, Map, Block, Ref)");
  Derived& m = const_cast<Derived&>(x.derived());
  if (m.cols() == 1 && m.rows() != 1) {  // a column vector is one head vector
    return {m.data(), 1, m.rows(), 0, m.rowStride()};
  }
  return {m.data(), m.rows(), m.cols(), m.rowStride(), m.colStride()};
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Matrices and vectors. `source` is a RopeSpec (cos/sin computed per call) or a RopeTable.

// x: [rows, head_dim], row r at positions[r]; or a column vector [head_dim] with one position.
template <class Derived, class Source>
void apply_rope_inplace(const Eigen::MatrixBase<Derived>& x, const PositionVector& positions,
                        const Source& source) {
  auto rows = detail::head_rows(x);
  detail::check_head_dim(source, rows.head_dim);
  if (positions.size() != rows.count) {
    detail::fail("positions.size()", positions.size(),
                 "expected one position per row = " + std::to_string(rows.count));
  }
  for (Eigen::Index r = 0; r < rows.count; ++r) {
    auto* head = rows.data + r * rows.vector_stride;
    detail::rotate_head(source, positions[r], head, head, rows.element_stride, rows.head_dim);
  }
}

// x: [rows, head_dim], every row at the same position (e.g. all heads of one decode token);
// or a column vector [head_dim].
template <class Derived, class Source>
void apply_rope_inplace(const Eigen::MatrixBase<Derived>& x, std::int64_t position,
                        const Source& source) {
  auto rows = detail::head_rows(x);
  detail::check_head_dim(source, rows.head_dim);
  using C = detail::compute_t<typename decltype(rows)::T>;
  const RopeSpec& spec = detail::spec_of(source);
  // cos/sin once (table row, or computed on the stack), then every row.
  detail::for_cos_sin_chunks<C>(source, position, [&](const C* cos, const C* sin, int begin,
                                                      int end) {
    for (Eigen::Index r = 0; r < rows.count; ++r) {
      auto* head = rows.data + r * rows.vector_stride;
      detail::rotate_pairs(head, head, rows.element_stride, cos, sin, begin, end, spec.rotary_dim,
                           spec.pairing);
    }
  });
}

// Out of place: returns the rotated copy as a plain matrix of x's shape.
template <class Derived, class Positions, class Source>
typename Derived::PlainObject apply_rope(const Eigen::MatrixBase<Derived>& x,
                                         const Positions& positions, const Source& source) {
  typename Derived::PlainObject out = x;
  apply_rope_inplace(out, positions, source);
  return out;
}

// ---------------------------------------------------------------------------------------------
// 4-D tensors: Eigen::Tensor<T, 4, RowMajor> or a TensorMap of one (zero-copy on a model's own
// buffer). `positions` is a PositionMatrix [batch, seq] (or [1, seq]) or a scalar offset
// (token s at offset + s, as for KV-cache decode).

// x: [batch, seq, heads, head_dim] (BSHD) or [batch, heads, seq, head_dim] (BHSD). Allocates
// nothing.
template <class X, class Source, detail::if_tensor4<X> = 0>
void apply_rope_inplace(X&& x, const detail::TokenPositions& positions, const Source& source,
                        TensorLayout layout = TensorLayout::BSHD) {
  detail::rotate_tensor(source, positions, layout, x.data(), x.data(), x.dimensions());
}

// The same on up to threads.count threads (large tensors only; see Threads).
template <class X, class Source, detail::if_tensor4<X> = 0>
void apply_rope_inplace(X&& x, const detail::TokenPositions& positions, const Source& source,
                        TensorLayout layout, Threads threads) {
  detail::check_threads(threads);
  detail::rotate_tensor(source, positions, layout, x.data(), x.data(), x.dimensions(),
                        threads.count);
}

// Out of place into a caller's tensor `out` of the same shape (allocates nothing), on up to
// threads.count threads (large tensors only; see Threads).
template <class X, class Y, class Source, detail::if_tensor4<X> = 0, detail::if_tensor4<Y> = 0>
void apply_rope(const X& x, Y&& out, const detail::TokenPositions& positions,
                const Source& source, TensorLayout layout, Threads threads) {
  using YT = std::remove_reference_t<Y>;
  static_assert(std::is_same_v<std::remove_const_t<typename X::Scalar>, typename YT::Scalar>,
                "posemb: x and out must have the same scalar type");
  for (int i = 0; i < 4; ++i) {
    if (x.dimension(i) != out.dimension(i)) {
      detail::fail("out.dimension(" + std::to_string(i) + ")", out.dimension(i),
                   "expected x.dimension(" + std::to_string(i) + ") = " +
                       std::to_string(x.dimension(i)));
    }
  }
  detail::check_threads(threads);
  detail::rotate_tensor(source, positions, layout, x.data(), out.data(), x.dimensions(),
                        threads.count);
}

// Out of place into a caller's tensor `out` of the same shape (allocates nothing).
template <class X, class Y, class Source, detail::if_tensor4<X> = 0, detail::if_tensor4<Y> = 0>
void apply_rope(const X& x, Y&& out, const detail::TokenPositions& positions,
                const Source& source, TensorLayout layout = TensorLayout::BSHD) {
  apply_rope(x, std::forward<Y>(out), positions, source, layout, Threads{1});
}

// Out of place, returning a new tensor.
template <class X, class Source, detail::if_tensor4<X> = 0>
Tensor4<std::remove_const_t<typename X::Scalar>> apply_rope(
    const X& x, const detail::TokenPositions& positions, const Source& source,
    TensorLayout layout = TensorLayout::BSHD) {
  Tensor4<std::remove_const_t<typename X::Scalar>> out(x.dimensions());
  detail::rotate_tensor(source, positions, layout, x.data(), out.data(), x.dimensions());
  return out;
}

}  // namespace posemb
