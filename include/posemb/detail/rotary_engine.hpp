// The one rotary engine: every rotary scheme (RoPE from a spec or a table, xPos, the KV-cache
// re-rotation and shift, FoPE from its coefficients or a table) is a source of per-token cos/sin
// for this engine, and gets its token blocking, threads, half-precision storage and vectorized
// rotation from it.
//
// A source is a small adapter the public entry points build around their argument:
//
//   int rotary_dim() const; Pairing pairing() const;   what rotates, and how it pairs
//   void check(const ActivationShape&) const;          throws posemb::Error for a shape it cannot rotate
//   Eigen::Index head_group(Eigen::Index heads) const; heads per cos/sin segment (below)
//   static constexpr SourceKind kind;                  how it provides cos/sin:
//     Rows:    const C* cos_row(position), sin_row(position)    (a table; throws out of range)
//     Pairs:   fill(position, begin, end, C* cos, C* sin)      (pairs [begin, end) at once)
//     RowFill: fill_row(position, C* cos, C* sin, double* scratch), row_width(), scratch_size()
//
// A row holds one or more segments of rotary_dim / 2 values; head h of a tensor with `heads`
// heads uses segment h / head_group(heads). RoPE has one segment shared by all heads; FoPE one per
// key-value head (its per-head Fourier coefficients), so query head h uses segment
// h / (n_heads / n_kv_heads) as HuggingFace's repeat_kv groups them.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "posemb/detail/parallel.hpp"
#include "posemb/detail/rotate.hpp"
#include "posemb/error.hpp"
#include "posemb/tensor.hpp"

namespace posemb {
namespace detail {

enum class SourceKind { Rows, Pairs, RowFill };

// Pairs whose cos/sin are computed at once on the stack by a Pairs source.
inline constexpr int cos_sin_chunk = 64;

// Tokens per unit of work: their cos/sin are formed once for all heads.
inline constexpr int tokens_per_block = 16;

// Head vectors handed to the rotation kernels per call.
inline constexpr int heads_per_batch = 64;

// The cos/sin rows of a block of tokens at positions[0 .. count), count <= tokens_per_block:
// calls visit(cos_rows, sin_rows, pair_begin, pair_end) where cos_rows[t], sin_rows[t] point at
// token t's values of pairs [pair_begin, pair_end) (segment 0; segment g starts g * pairs
// further, for Rows and RowFill sources). `buffer` is a RowFill source's per-thread storage.
template <class C, class Source, class Visit>
void for_block_cos_sin(const Source& source, const std::int64_t* positions, int count,
                       std::vector<C>& buffer, std::vector<double>& scratch, Visit&& visit) {
  const int pairs = source.rotary_dim() / 2;
  const C* cos_rows[tokens_per_block];
  const C* sin_rows[tokens_per_block];
  if constexpr (Source::kind == SourceKind::Rows) {
    for (int t = 0; t < count; ++t) {
      cos_rows[t] = source.template cos_row<C>(positions[t]);
      sin_rows[t] = source.template sin_row<C>(positions[t]);
    }
    visit(cos_rows, sin_rows, 0, pairs);
  } else if constexpr (Source::kind == SourceKind::RowFill) {
    const Eigen::Index width = source.row_width();
    buffer.resize(static_cast<std::size_t>(2 * tokens_per_block * width));
    scratch.resize(source.scratch_size());
    for (int t = 0; t < count; ++t) {
      C* cos = buffer.data() + 2 * t * width;
      source.fill_row(positions[t], cos, cos + width, scratch.data());
      cos_rows[t] = cos;
      sin_rows[t] = cos + width;
    }
    visit(cos_rows, sin_rows, 0, pairs);
  } else {
    C cos[tokens_per_block][cos_sin_chunk], sin[tokens_per_block][cos_sin_chunk];
    for (int t = 0; t < count; ++t) {
      cos_rows[t] = cos[t];
      sin_rows[t] = sin[t];
    }
    for (int begin = 0; begin < pairs; begin += cos_sin_chunk) {
      const int end = std::min(begin + cos_sin_chunk, pairs);
      for (int t = 0; t < count; ++t) source.fill(positions[t], begin, end, cos[t], sin[t]);
      visit(cos_rows, sin_rows, begin, end);
    }
  }
}

inline void check_threads(const Threads& threads) {
  if (threads.count < 1) fail("threads.count", threads.count, "expected >= 1");
}

// Rotates every head of a 4-D activation; in and out share shape and layout (in == out: in
// place). in, out: [batch, seq, heads, head_dim] (BSHD) or [batch, heads, seq, head_dim] (BHSD).
// Work is split into blocks of tokens_per_block tokens of one batch row; each block gets its
// cos/sin once and rotates all its heads. Blocks are shared among up to threads.count threads
// (threads_for decides how many are worth starting). Everything is checked before any work.
template <class T, class Source>
void rotate_tensor(const Source& source, const Positions& positions, const ActivationShape& shape,
                   const T* in, T* out, Threads threads) {
  using C = compute_t<T>;
  check_threads(threads);
  source.check(shape);
  positions.check(shape.batch, shape.seq);
  if constexpr (Source::kind == SourceKind::Rows) {  // out-of-range positions throw here
    for (Eigen::Index b = 0; b < shape.batch; ++b) {
      for (Eigen::Index s = 0; s < shape.seq; ++s) (void)source.template cos_row<C>(positions.at(b, s));
    }
  }
  const int rotary_dim = source.rotary_dim();
  const int pairs = rotary_dim / 2;
  const bool interleaved = source.pairing() == Pairing::Interleaved;
  const Eigen::Index head_dim = shape.head_dim, heads = shape.heads, seq = shape.seq;
  const Eigen::Index group = std::max<Eigen::Index>(source.head_group(heads), 1);
  const Eigen::Index blocks_per_row = (seq + tokens_per_block - 1) / tokens_per_block;
  const auto rotate_blocks = [&](Eigen::Index block_begin, Eigen::Index block_end) {
    std::vector<C> buffer;        // RowFill sources only
    std::vector<double> scratch;  // RowFill sources only
    for (Eigen::Index block = block_begin; block < block_end; ++block) {
      const Eigen::Index b = block / blocks_per_row;
      const Eigen::Index s0 = (block % blocks_per_row) * tokens_per_block;
      const int count = static_cast<int>(std::min<Eigen::Index>(tokens_per_block, seq - s0));
      std::int64_t block_positions[tokens_per_block];
      for (int t = 0; t < count; ++t) block_positions[t] = positions.at(b, s0 + t);
      for_block_cos_sin<C>(
          source, block_positions, count, buffer, scratch,
          [&](const C* const* cos_rows, const C* const* sin_rows, int begin, int end) {
            // Heads are queued and rotated a batch per call (detail/rotate.hpp: rotate_heads).
            HeadRotation<T, C> batch[heads_per_batch];
            int queued = 0;
            const auto flush = [&] {
              rotate_heads(batch, queued, begin, end, rotary_dim, interleaved);
              queued = 0;
            };
            const auto rotate = [&](int t, Eigen::Index h) {
              const Eigen::Index at = shape.offset(b, s0 + t, h);
              const Eigen::Index segment = (h / group) * pairs;
              batch[queued++] = {in + at, out + at, cos_rows[t] + segment, sin_rows[t] + segment};
              if (queued == heads_per_batch) flush();
            };
            // Visit heads in memory order: BSHD token-major, BHSD head-major.
            if (shape.bshd()) {
              for (int t = 0; t < count; ++t)
                for (Eigen::Index h = 0; h < heads; ++h) rotate(t, h);
            } else {
              for (Eigen::Index h = 0; h < heads; ++h)
                for (int t = 0; t < count; ++t) rotate(t, h);
            }
            flush();
          });
      if (in != out && rotary_dim < head_dim) {  // the pass-through tail
        for (int t = 0; t < count; ++t) {
          for (Eigen::Index h = 0; h < heads; ++h) {
            const Eigen::Index at = shape.offset(b, s0 + t, h);
            std::copy(in + at + rotary_dim, in + at + head_dim, out + at + rotary_dim);
          }
        }
      }
    }
  };
  parallel_for(shape.batch * blocks_per_row, threads_for(shape.size(), threads.count),
               rotate_blocks);
}

// The scalar rotation of pairs [pair_begin, pair_end) of one strided head vector (a column of a
// column-major matrix). in, out: element i at in[i * stride]; cos, sin: [pair_end - pair_begin].
template <class T, class C>
void rotate_strided(const T* in, T* out, Eigen::Index stride, const C* cos, const C* sin,
                    int pair_begin, int pair_end, int rotary_dim, Pairing pairing) {
  static_assert(std::is_same_v<C, compute_t<T>>, "cos/sin must be in the arithmetic type of T");
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

// Rotates the rows of a matrix (or one column vector) in place: row r at position_of(r).
// Segment-0 sources only (RoPE, xPos, the KV-cache helpers).
template <class Derived, class Source, class PositionOf>
void rotate_matrix_rows(const Eigen::MatrixBase<Derived>& x, const Source& source,
                        Eigen::Index expected_rows, PositionOf&& position_of) {
  static_assert(Source::kind != SourceKind::RowFill, "per-head cos/sin need a 4-D tensor");
  using T = typename Derived::Scalar;
  using C = compute_t<T>;
  auto rows = head_rows(x);
  // A matrix is [rows, head_dim] with one head per row.
  source.check(ActivationShape({1, rows.count, 1, rows.head_dim}, TensorLayout::BSHD));
  if (expected_rows >= 0 && expected_rows != rows.count) {
    fail("positions.size()", expected_rows,
         "expected one position per row = " + std::to_string(rows.count));
  }
  std::vector<C> buffer;
  std::vector<double> scratch;
  const int rotary_dim = source.rotary_dim();
  const bool interleaved = source.pairing() == Pairing::Interleaved;
  // Rows that share a position (e.g. every head of one decode token) share one cos/sin.
  for (Eigen::Index first = 0; first < rows.count;) {
    const std::int64_t position = position_of(first);
    Eigen::Index last = first + 1;
    while (last < rows.count && position_of(last) == position) ++last;
    for_block_cos_sin<C>(
        source, &position, 1, buffer, scratch,
        [&](const C* const* cos, const C* const* sin, int begin, int end) {
          for (Eigen::Index r = first; r < last; ++r) {
            T* head = rows.data + r * rows.vector_stride;
            if (rows.element_stride == 1) {
              rotate_contiguous(head, head, cos[0], sin[0], begin, end, rotary_dim, interleaved);
            } else {
              rotate_strided(head, head, rows.element_stride, cos[0], sin[0], begin, end,
                             rotary_dim, source.pairing());
            }
          }
        });
    first = last;
  }
}

}  // namespace detail
}  // namespace posemb
