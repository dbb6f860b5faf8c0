// The one rotary engine: every rotary scheme (RoPE from a spec or a table, xPos, the KV-cache
// re-rotation and shift, FoPE from its coefficients or a table, M-RoPE) is a source of
// per-token cos/sin for this engine, and gets its token blocking, threads, half-precision
// storage, vectorized rotation, inverse direction and layout change on write from it.
//
// A source is a small adapter the rotate family (rotary/rotate.hpp: rotary_source_traits)
// builds around its argument and the tokens' positions; the engine asks it for the cos/sin of
// token (b, s) and never looks at a position itself:
//
//   int rotary_dim() const; int rotary_offset() const; Pairing pairing() const;
//       features [rotary_offset, rotary_offset + rotary_dim) rotate, paired as `pairing`
//   void check(const ActivationShape&) const;          throws posemb::Error for what it cannot
//                                                      rotate (head_dim, heads, positions)
//   Eigen::Index head_group(Eigen::Index heads) const; heads per cos/sin segment (below)
//   static constexpr SourceKind kind;                  how it provides cos/sin:
//     Rows:    const C* cos_row<C>(b, s), sin_row<C>(b, s), row_width()   (a table), and
//              inverse_row<C>(b, s, C* cos, C* sin): the inverse's row, written out
//     Pairs:   fill(b, s, begin, end, C* cos, C* sin, rotation)  (pairs [begin, end) at once)
//     RowFill: fill_row(b, s, C* cos, C* sin, double* scratch, rotation), row_width(),
//              scratch_size()
//
// A row holds one or more segments of rotary_dim / 2 values; head h of a tensor with `heads`
// heads uses segment h / head_group(heads). RoPE has one segment shared by all heads; FoPE one per
// key-value head (its per-head Fourier coefficients), so query head h uses segment
// h / (n_heads / n_kv_heads) as HuggingFace's repeat_kv groups them.
//
// The inverse rotation: a pair turned by (c, s) = m (cos t, sin t) is turned back by
// (c, -s) / (c^2 + s^2) = (cos t, -sin t) / m, each source computing that exactly where it can
// (RoPE: the same cos/sin with the sign of sin flipped, divided by the attention scale, so that
// the inverse at p is the forward rotation at -p bit for bit; FoPE: per slot).
//
// The transpose (Rotation::Transpose, the backward pass): every source is wrapped in
// TransposedSource, which answers the engine's inverse requests with the forward's own cos/sin and
// the sign of sin flipped; the engine then runs its inverse direction unchanged.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "posemb/detail/parallel.hpp"
#include "posemb/detail/rotate.hpp"
#include "posemb/error.hpp"
#include "posemb/machine/streaming_stores.hpp"
#include "posemb/tensor.hpp"

namespace posemb {
namespace detail {

enum class SourceKind { Rows, Pairs, RowFill };

// Pairs whose cos/sin are computed at once on the stack by a Pairs source.
inline constexpr int cos_sin_chunk = 64;

// Tokens per unit of work: their cos/sin are formed once and serve every head. BSHD visits the
// block token by token (all heads of a token are adjacent), so a small block suffices. BHSD
// visits it head-major (bhsd_heads_per_group below): each head's block is a contiguous run of
// block * head_dim values, and the longer the run the longer the heads' streams run before the
// next group's begin, while the block's cos/sin stay in L2 across all heads instead of each
// head streaming the cos/sin again. 512 tokens of float cos/sin at head_dim 128 are 256 KiB,
// half of the 512 KiB L2 of a Zen 2 or Zen 3 core. Out of place [1, 32, 8192, 128] float
// (128 MiB; 2-core Zen 4, 1 MiB L2, 32 MiB L3), BSHD's time over BHSD's, median (range) of
// 12-32 runs: 0.94 (0.77-1.06) with blocks of 64 tokens, 1.03 (0.88-1.08) with 256, 1.06
// (0.95-1.15) with 512, 1.13 (1.06-1.19) with 1024. Blocks are the units threads share, so
// bhsd_block_tokens shortens them when a sequence gives too few.
inline constexpr int bshd_tokens_per_block = 16;
inline constexpr int bhsd_max_tokens_per_block = 512;
inline constexpr int bhsd_min_tokens_per_block = 64;
inline constexpr int tokens_per_block = bhsd_max_tokens_per_block;  // the most any layout uses

// Tokens per BHSD block for `batch` rows of `seq` tokens shared among `parts` parts: the longest
// of 512, 256, 128, 64 that gives each part at least 4 blocks (one part takes the longest).
inline Eigen::Index bhsd_block_tokens(Eigen::Index batch, Eigen::Index seq, int parts) {
  Eigen::Index tokens = bhsd_max_tokens_per_block;
  while (parts > 1 && tokens > bhsd_min_tokens_per_block &&
         batch * ((seq + tokens - 1) / tokens) < 4 * Eigen::Index{parts}) {
    tokens /= 2;
  }
  return tokens;
}

// BHSD visits a block's heads in groups of this many, token by token within a group: a group
// reads and writes 2 * 4 runs at once, enough streams in flight to keep memory busy (one head
// at a time leaves it idle while each new run's prefetch ramps up) and few enough for the
// prefetchers to follow, and each token's cos/sin row serves the group from L1. With blocks of
// 512 tokens, BSHD's time over BHSD's out of place [1, 32, 8192, 128] float (2-core Zen 4, 32
// MiB L3): 0.46-0.56 one head at a time, 0.72-0.82 in groups of 2, 0.94-1.07 of 4, 0.98-1.11
// of 8; in place at 2048 tokens, 1.61-1.67 of memcpy's speed in groups of 4, 1.37-1.48 of 8.
inline constexpr int bhsd_heads_per_group = 4;

// With streaming stores, a token's heads go to the kernel at most this many per call. Out of
// place [1, 2048, 32, 128] float from a table, interleaved (Zen 4, 7 alternating runs): 0.90-1.03
// of a streaming copy with 8 (median 1.01), against 0.89-0.93 (median 0.91) with all 32 heads of
// a token in one call.
inline constexpr Eigen::Index stream_heads_per_call = 8;

// Head vectors handed to the rotation kernels per call.
inline constexpr int heads_per_batch = 64;

// Per-thread storage of for_block_cos_sin: RowFill rows, a Rows source's inverse rows, a Pairs
// source's rows of blocks too long for the stack, scratch.
template <class C>
struct CosSinScratch {
  std::vector<C> rows_storage;
  std::vector<double> scratch;

  // Room for `count` values starting on a 64-byte boundary.
  C* rows(std::size_t count) {
    constexpr std::size_t line = 64 / sizeof(C);
    rows_storage.resize(count + line);
    const std::size_t skip =
        (line - reinterpret_cast<std::uintptr_t>(rows_storage.data()) / sizeof(C) % line) % line;
    return rows_storage.data() + skip;
  }
};

// for_block_cos_sin (below) of a Pairs source with whole_rows: every pair of each token formed
// into `storage` ([2, pairs] per token: cos, then sin), one visit.
template <class C, class Source, class Visit>
void pairs_whole_rows(const Source& source, Eigen::Index b, Eigen::Index s0, int count,
                      Rotation rotation, CosSinScratch<C>& storage, Visit& visit) {
  const int pairs = source.rotary_dim() / 2;
  const C* cos_rows[tokens_per_block];
  const C* sin_rows[tokens_per_block];
  C* rows = storage.rows(static_cast<std::size_t>(2 * count * pairs));
  for (int t = 0; t < count; ++t) {
    C* cos = rows + 2 * t * pairs;
    for (int begin = 0; begin < pairs; begin += cos_sin_chunk) {
      const int end = std::min(begin + cos_sin_chunk, pairs);
      source.fill(b, s0 + t, begin, end, cos + begin, cos + pairs + begin, rotation);
    }
    cos_rows[t] = cos;
    sin_rows[t] = cos + pairs;
  }
  visit(cos_rows, sin_rows, 0, pairs);
}

// for_block_cos_sin of a Pairs source: a chunk of cos_sin_chunk pairs of every token at a time,
// one visit per chunk. Up to 64 tokens on the stack, a longer block in storage; on cache lines
// in every build (the kernels load 64 bytes at a time at level avx512; a default build would
// align the stack array to 16 bytes only).
template <class C, class Source, class Visit>
void pairs_in_chunks(const Source& source, Eigen::Index b, Eigen::Index s0, int count,
                     Rotation rotation, CosSinScratch<C>& storage, Visit& visit) {
  const int pairs = source.rotary_dim() / 2;
  const C* cos_rows[tokens_per_block];
  const C* sin_rows[tokens_per_block];
  constexpr int stack_tokens = 64;
  alignas(64) C stack_rows[2 * stack_tokens * cos_sin_chunk];
  C* rows = count <= stack_tokens
                ? stack_rows
                : storage.rows(static_cast<std::size_t>(2 * count * cos_sin_chunk));
  for (int t = 0; t < count; ++t) {
    cos_rows[t] = rows + 2 * t * cos_sin_chunk;
    sin_rows[t] = cos_rows[t] + cos_sin_chunk;
  }
  for (int begin = 0; begin < pairs; begin += cos_sin_chunk) {
    const int end = std::min(begin + cos_sin_chunk, pairs);
    for (int t = 0; t < count; ++t) {
      C* cos = rows + 2 * t * cos_sin_chunk;
      source.fill(b, s0 + t, begin, end, cos, cos + cos_sin_chunk, rotation);
    }
    visit(cos_rows, sin_rows, begin, end);
  }
}

// for_block_cos_sin of a Rows source (a table's rows, or the inverse's rows written into
// storage) or a RowFill source (rows formed into storage): one visit of all pairs.
template <class C, class Source, class Visit>
void rows_of_block(const Source& source, Eigen::Index b, Eigen::Index s0, int count,
                   Rotation rotation, CosSinScratch<C>& storage, Visit& visit) {
  const C* cos_rows[tokens_per_block];
  const C* sin_rows[tokens_per_block];
  const Eigen::Index width = source.row_width();
  const bool own_rows = Source::kind == SourceKind::RowFill || rotation == Rotation::Inverse;
  C* rows = own_rows ? storage.rows(static_cast<std::size_t>(2 * count * width)) : nullptr;
  if constexpr (Source::kind == SourceKind::RowFill) storage.scratch.resize(source.scratch_size());
  for (int t = 0; t < count; ++t) {
    C* cos = own_rows ? rows + 2 * t * width : nullptr;
    if constexpr (Source::kind == SourceKind::Rows) {
      if (rotation == Rotation::Inverse) {
        source.template inverse_row<C>(b, s0 + t, cos, cos + width);
      } else {
        cos_rows[t] = source.template cos_row<C>(b, s0 + t);
        sin_rows[t] = source.template sin_row<C>(b, s0 + t);
        continue;
      }
    } else {
      source.fill_row(b, s0 + t, cos, cos + width, storage.scratch.data(), rotation);
    }
    cos_rows[t] = cos;
    sin_rows[t] = cos + width;
  }
  visit(cos_rows, sin_rows, 0, source.rotary_dim() / 2);
}

// The cos/sin rows of tokens s0 .. s0 + count - 1 of batch row b, count <= tokens_per_block:
// calls visit(cos_rows, sin_rows, pair_begin, pair_end) where cos_rows[t], sin_rows[t] point at
// token t's values of pairs [pair_begin, pair_end) (segment 0; segment g starts g * pairs
// further, for Rows and RowFill sources), for `rotation`. A Pairs source is visited in chunks of
// cos_sin_chunk pairs (on the stack) unless whole_rows, which asks for one visit of all pairs
// (rows in `storage`).
template <class C, class Source, class Visit>
void for_block_cos_sin(const Source& source, Eigen::Index b, Eigen::Index s0, int count,
                       Rotation rotation, CosSinScratch<C>& storage, Visit&& visit,
                       bool whole_rows = false) {
  if constexpr (Source::kind == SourceKind::Pairs) {
    if (whole_rows) {
      pairs_whole_rows<C>(source, b, s0, count, rotation, storage, visit);
    } else {
      pairs_in_chunks<C>(source, b, s0, count, rotation, storage, visit);
    }
  } else {
    rows_of_block<C>(source, b, s0, count, rotation, storage, visit);
  }
}

// Head vectors rotated into a small staging buffer (it stays in L1) and streamed to their
// destination (posemb/machine/streaming_stores.hpp): heads whose destinations are adjacent form one
// run, moved by one streaming copy when the buffer is full or the next head lands elsewhere. Each
// head is rotated whole: pass-through features copied, pairs [0, rotary_dim / 2) rotated.
// Staged at the destination's offset within a cache line, so that both sides of the copy are
// aligned alike.
template <class T, class C>
class StagedHeads {
 public:
  // Bytes staged per run at most (or one head vector, if larger). Of 0.5 to 32 KiB, 2 KiB was
  // fastest on a Zen 4 core (out of place [1, 16384, 32, 128] float32: 0.79 of a streaming copy
  // against 0.51 with 8 KiB and 0.47 with 32 KiB).
  static constexpr std::size_t run_bytes = 2048;

  StagedHeads(Eigen::Index head_dim, int first, int rotary_dim, bool interleaved)
      : head_dim_(head_dim),
        first_(first),
        rotary_dim_(rotary_dim),
        interleaved_(interleaved),
        direct_(direct_kernel_runs(head_dim, first, rotary_dim)),
        capacity_(std::max<Eigen::Index>(head_dim, run_bytes / sizeof(T))),
        bytes_(static_cast<std::size_t>(capacity_) * sizeof(T) + 2 * cache_line_bytes) {}

  // Head vector `in` [head_dim], rotated by cos, sin [rotary_dim / 2], into `to` [head_dim].
  void add(const T* in, T* to, const C* cos, const C* sin) {
    if (direct_ && reinterpret_cast<std::uintptr_t>(to) % cache_line_bytes == 0) {
      if (direct_queued_ == heads_per_batch) flush_direct();
      direct_batch_[direct_queued_++] = {in, to, cos, sin};
      return;
    }
    if (queued_ > 0 &&
        (to != run_ + length_ || length_ + head_dim_ > capacity_ || queued_ == heads_per_batch)) {
      flush();
    }
    if (queued_ == 0) {
      run_ = to;
      const std::size_t offset = reinterpret_cast<std::uintptr_t>(to) % cache_line_bytes;
      const std::size_t aligned =
          (cache_line_bytes - reinterpret_cast<std::uintptr_t>(bytes_.data()) % cache_line_bytes) %
          cache_line_bytes;
      staged_ = reinterpret_cast<T*>(bytes_.data() + aligned + offset);
    }
    T* slot = staged_ + length_;
    if (rotary_dim_ < head_dim_) {  // features before and after the rotated slice
      std::copy(in, in + first_, slot);
      std::copy(in + first_ + rotary_dim_, in + head_dim_, slot + first_ + rotary_dim_);
    }
    batch_[queued_++] = {in + first_, slot + first_, cos, sin};
    length_ += head_dim_;
  }

  // `count` head vectors sharing cos, sin: head k from in + k * in_stride to
  // to + k * out_stride. Rotated and streamed at once by the direct kernel when it runs and every
  // destination is 64-byte aligned; otherwise added one by one.
  void add_strided(const T* in, Eigen::Index in_stride, T* to, Eigen::Index out_stride,
                   Eigen::Index count, const C* cos, const C* sin) {
#if POSEMB_ISA_DISPATCH
    if constexpr (std::is_same_v<T, float>) {
      if (direct_lines(to, count, out_stride)) {
        rotate_strided_heads_float_streaming_avx512(in, in_stride, to, out_stride, count, cos, sin,
                                                    rotary_dim_ / 2, interleaved_);
        return;
      }
    }
#endif
    for (Eigen::Index k = 0; k < count; ++k) add(in + k * in_stride, to + k * out_stride, cos, sin);
  }

  // Rotates the queued heads and streams the run to its destination.
  void flush() {
    flush_direct();
    if (queued_ == 0) return;
    rotate_heads(batch_, queued_, 0, rotary_dim_ / 2, rotary_dim_, interleaved_);
    stream_copy(run_, staged_, static_cast<std::size_t>(length_) * sizeof(T));
    queued_ = 0;
    length_ = 0;
  }

 private:
  // Whether the direct kernel writes `count` vectors from `to`, out_stride apart.
  bool direct_lines(const T* to, Eigen::Index count, Eigen::Index out_stride) const {
    return direct_ && reinterpret_cast<std::uintptr_t>(to) % cache_line_bytes == 0 &&
           (count == 1 ||
            (out_stride * Eigen::Index{sizeof(T)}) % Eigen::Index{cache_line_bytes} == 0);
  }

  // Float heads rotated whole, of whole lines (pairs a multiple of 16), at level avx512: they
  // go straight from the registers to their destination with streaming stores when it is
  // 64-byte aligned (detail/rotate_avx512.hpp), which measured 0.76-0.86 of a streaming copy
  // against 0.72-0.75 through the staging buffer ([1, 16384 or 2048, 32, 128] float32, Zen 4).
  static bool direct_kernel_runs(Eigen::Index head_dim, int first, int rotary_dim) {
#if POSEMB_ISA_DISPATCH
    return std::is_same_v<T, float> && isa_level() == IsaLevel::Avx512 && first == 0 &&
           rotary_dim == head_dim && head_dim % 32 == 0;
#else
    (void)head_dim, (void)first, (void)rotary_dim;
    return false;
#endif
  }

  void flush_direct() {
#if POSEMB_ISA_DISPATCH
    if constexpr (std::is_same_v<T, float>) {
      if (direct_queued_ > 0) {
        rotate_heads_float_streaming_avx512(direct_batch_, direct_queued_, rotary_dim_ / 2,
                                            interleaved_);
      }
    }
#endif
    direct_queued_ = 0;
  }

  Eigen::Index head_dim_;
  int first_, rotary_dim_;
  bool interleaved_;
  bool direct_;  // direct_kernel_runs
  HeadRotation<T, C> direct_batch_[heads_per_batch];
  int direct_queued_ = 0;
  Eigen::Index capacity_;             // elements
  std::vector<unsigned char> bytes_;  // the staging buffer, aligned within it
  T* staged_ = nullptr;               // the run's first element in the buffer
  T* run_ = nullptr;                  // the run's destination
  Eigen::Index length_ = 0;           // elements staged
  HeadRotation<T, C> batch_[heads_per_batch];
  int queued_ = 0;
};

inline void check_threads(const Threads& threads) {
  if (threads.count < 1) fail("threads.count", threads.count, "expected >= 1");
}

inline void check_rotation(Rotation rotation) {
  if (rotation != Rotation::Forward && rotation != Rotation::Inverse &&
      rotation != Rotation::Transpose) {
    fail("rotation", static_cast<int>(rotation),
         "expected Rotation::Forward, Rotation::Inverse or Rotation::Transpose");
  }
}

// A source's transpose as the engine's inverse direction: asked for the inverse, it gives the
// forward's (c, -s), the transpose of each pair's [[c, -s], [s, c]]. Forward requests pass through.
template <class Source>
struct TransposedSource {
  static constexpr SourceKind kind = Source::kind;
  const Source& source;

  int rotary_dim() const { return source.rotary_dim(); }
  int rotary_offset() const { return source.rotary_offset(); }
  Pairing pairing() const { return source.pairing(); }
  void check(const ActivationShape& shape) const { source.check(shape); }
  Eigen::Index head_group(Eigen::Index heads) const { return source.head_group(heads); }
  Eigen::Index row_width() const { return source.row_width(); }
  std::size_t scratch_size() const { return source.scratch_size(); }

  template <class C>
  const C* cos_row(Eigen::Index b, Eigen::Index s) const {
    return source.template cos_row<C>(b, s);
  }
  template <class C>
  const C* sin_row(Eigen::Index b, Eigen::Index s) const {
    return source.template sin_row<C>(b, s);
  }
  template <class C>
  void inverse_row(Eigen::Index b, Eigen::Index s, C* cos, C* sin) const {
    const C* forward_cos = cos_row<C>(b, s);
    const C* forward_sin = sin_row<C>(b, s);
    for (Eigen::Index j = 0; j < row_width(); ++j) {
      cos[j] = forward_cos[j];
      sin[j] = -forward_sin[j];
    }
  }
  template <class C>
  void fill(Eigen::Index b, Eigen::Index s, int begin, int end, C* cos, C* sin,
            Rotation rotation) const {
    source.fill(b, s, begin, end, cos, sin, Rotation::Forward);
    if (rotation == Rotation::Inverse) negate(sin, end - begin);
  }
  template <class C>
  void fill_row(Eigen::Index b, Eigen::Index s, C* cos, C* sin, double* scratch,
                Rotation rotation) const {
    source.fill_row(b, s, cos, sin, scratch, Rotation::Forward);
    if (rotation == Rotation::Inverse) negate(sin, row_width());
  }

 private:
  template <class C>
  static void negate(C* values, Eigen::Index count) {
    for (Eigen::Index j = 0; j < count; ++j) values[j] = -values[j];
  }
};

// Calls run(source, rotation) with the source and direction the engine runs: a Transpose as the
// TransposedSource's inverse, anything else unchanged.
template <class Source, class Run>
void with_direction(const Source& source, Rotation rotation, Run&& run) {
  check_rotation(rotation);
  if (rotation == Rotation::Transpose) {
    run(TransposedSource<Source>{source}, Rotation::Inverse);
  } else {
    run(source, rotation);
  }
}

// Throws unless `out` (out_shape) can receive `in` (in_shape) at out_seq_offset: the same
// batch, heads and head_dim, and room for every token.
inline void check_output(const ActivationShape& in, const ActivationShape& out,
                         Eigen::Index out_seq_offset) {
  const auto same = [](const char* what, Eigen::Index got, Eigen::Index expected) {
    if (got != expected) {
      fail(std::string("out ") + what, got,
           "expected the input's " + std::string(what) + " = " + std::to_string(expected));
    }
  };
  same("batch", out.batch, in.batch);
  same("heads", out.heads, in.heads);
  same("head_dim", out.head_dim, in.head_dim);
  if (out_seq_offset < 0 || out_seq_offset > out.seq || out.seq - out_seq_offset < in.seq) {
    fail("out_seq_offset", out_seq_offset,
         "expected 0 <= out_seq_offset and out_seq_offset + seq = " + std::to_string(in.seq) +
             " + out_seq_offset <= the output's seq = " + std::to_string(out.seq));
  }
}

// Heads queued for the rotation kernels and rotated a batch per call (detail/rotate.hpp:
// rotate_heads): pairs [pair_begin, pair_end) of each, rotated by its own cos/sin.
template <class T, class C>
class HeadBatch {
 public:
  HeadBatch(int pair_begin, int pair_end, int rotary_dim, bool interleaved)
      : pair_begin_(pair_begin),
        pair_end_(pair_end),
        rotary_dim_(rotary_dim),
        interleaved_(interleaved) {}

  // The rotated slice of one head: in, out point at its first rotated feature.
  void add(const T* in, T* out, const C* cos, const C* sin) {
    batch_[queued_++] = {in, out, cos, sin};
    if (queued_ == heads_per_batch) flush();
  }

  void flush() {
    rotate_heads(batch_, queued_, pair_begin_, pair_end_, rotary_dim_, interleaved_);
    queued_ = 0;
  }

 private:
  int pair_begin_, pair_end_, rotary_dim_;
  bool interleaved_;
  HeadRotation<T, C> batch_[heads_per_batch];
  int queued_ = 0;
};

// One rotation of a 4-D activation `in` (in_shape) into `out` (out_shape, tokens from
// out_seq_offset on), in named stages; in == out with the same shape rotates in place.
//   in:  [batch, seq, heads, head_dim] (BSHD) or [batch, heads, seq, head_dim] (BHSD)
//   out: the same heads in its own layout, seq >= out_seq_offset + in seq
// The constructor fixes the plan: the rotated slice, the cos/sin segment of each head, the
// blocks of tokens (see tokens_per_block) and whether to stream. rotate_blocks(begin, end) is
// one thread's contiguous run of blocks: each block gets its cos/sin once and rotates all its
// heads, with ordinary stores (rotate_block) or, out of place and large, streaming stores
// (stream_block, stream_block_overlapped). Nothing is checked here (rotate_tensor checks).
// stream: whether an out-of-place rotation streams; by default decided by this rotation's output
// size (posemb/machine/streaming_stores.hpp). A caller rotating a large output a piece at a time,
// or into its own small buffer (kv/append.hpp), decides for it.
enum class StreamChoice { BySize, Stream, NoStream };

template <class T, class Source>
class TensorRotation {
 public:
  using C = compute_t<T>;

  TensorRotation(const Source& source, const ActivationShape& in_shape, const T* in,
                 const ActivationShape& out_shape, Eigen::Index out_seq_offset, T* out, int parts,
                 Rotation rotation, StreamChoice stream = StreamChoice::BySize)
      : source_(source),
        in_shape_(in_shape),
        out_shape_(out_shape),
        in_(in),
        out_(out),
        out_seq_offset_(out_seq_offset),
        rotation_(rotation),
        rotary_dim_(source.rotary_dim()),
        first_(source.rotary_offset()),
        pairs_(rotary_dim_ / 2),
        interleaved_(source.pairing() == Pairing::Interleaved),
        group_(std::max<Eigen::Index>(source.head_group(in_shape.heads), 1)),
        block_tokens_(in_shape.bshd() ? Eigen::Index{bshd_tokens_per_block}
                                      : bhsd_block_tokens(in_shape.batch, in_shape.seq, parts)),
        blocks_per_row_((in_shape.seq + block_tokens_ - 1) / block_tokens_),
        stream_(out != in &&
                (stream == StreamChoice::BySize ? use_streaming_stores(static_cast<std::size_t>(
                                                      in_shape.size() * Eigen::Index{sizeof(T)}))
                                                : stream == StreamChoice::Stream)) {}

  Eigen::Index blocks() const { return in_shape_.batch * blocks_per_row_; }

  // Blocks [block_begin, block_end), in order; a streaming part fences at its end.
  void rotate_blocks(Eigen::Index block_begin, Eigen::Index block_end) const {
    CosSinScratch<C> storage;
    if (!stream_) {
      for (Eigen::Index i = block_begin; i < block_end; ++i) rotate_block(block(i), storage);
      return;
    }
    StagedHeads<T, C> staged(in_shape_.head_dim, first_, rotary_dim_, interleaved_);
    for (Eigen::Index i = block_begin; i < block_end; ++i) {
      if constexpr (Source::kind == SourceKind::Pairs) {
        if (out_shape_.bshd() && group_ >= in_shape_.heads) {
          stream_block_overlapped(block(i), staged, storage);
          continue;
        }
      }
      stream_block(block(i), staged, storage);
    }
    stream_fence();
  }

 private:
  // Tokens s0 .. s0 + count - 1 of batch row b.
  struct Block {
    Eigen::Index b, s0;
    int count;
  };

  Block block(Eigen::Index index) const {
    const Eigen::Index s0 = (index % blocks_per_row_) * block_tokens_;
    return {index / blocks_per_row_, s0,
            static_cast<int>(std::min<Eigen::Index>(block_tokens_, in_shape_.seq - s0))};
  }
  const T* in_head(const Block& block, int t, Eigen::Index h) const {
    return in_ + in_shape_.offset(block.b, block.s0 + t, h);
  }
  T* out_head(const Block& block, int t, Eigen::Index h) const {
    return out_ + out_shape_.offset(block.b, out_seq_offset_ + block.s0 + t, h);
  }
  Eigen::Index segment(Eigen::Index h) const { return (h / group_) * pairs_; }

  // Ordinary stores: the block's cos/sin (a Pairs source's a chunk of pairs at a time), then
  // every head; out of place, the features outside the rotated slice are copied.
  void rotate_block(const Block& block, CosSinScratch<C>& storage) const {
    for_block_cos_sin<C>(source_, block.b, block.s0, block.count, rotation_, storage,
                         [&](const C* const* cos_rows, const C* const* sin_rows, int begin,
                             int end) { rotate_heads_of(block, cos_rows, sin_rows, begin, end); });
    if (out_ != in_ && rotary_dim_ < in_shape_.head_dim) copy_pass_through(block);
  }

  // Pairs [begin, end) of every head of the block, visited in the input's memory order: BSHD
  // token-major; BHSD head-major, a group of bhsd_heads_per_group heads at a time, token-major
  // within the group.
  void rotate_heads_of(const Block& block, const C* const* cos_rows, const C* const* sin_rows,
                       int begin, int end) const {
    HeadBatch<T, C> batch(begin, end, rotary_dim_, interleaved_);
    const auto add = [&](int t, Eigen::Index h) {
      batch.add(in_head(block, t, h) + first_, out_head(block, t, h) + first_,
                cos_rows[t] + segment(h), sin_rows[t] + segment(h));
    };
    const Eigen::Index heads = in_shape_.heads;
    if (in_shape_.bshd()) {
      for (int t = 0; t < block.count; ++t)
        for (Eigen::Index h = 0; h < heads; ++h) add(t, h);
    } else {
      for (Eigen::Index h0 = 0; h0 < heads; h0 += bhsd_heads_per_group) {
        const Eigen::Index h1 = std::min<Eigen::Index>(h0 + bhsd_heads_per_group, heads);
        for (int t = 0; t < block.count; ++t)
          for (Eigen::Index h = h0; h < h1; ++h) add(t, h);
      }
    }
    batch.flush();
  }

  // Features before and after the rotated slice of every head of the block.
  void copy_pass_through(const Block& block) const {
    const Eigen::Index head_dim = in_shape_.head_dim;
    for (int t = 0; t < block.count; ++t) {
      for (Eigen::Index h = 0; h < in_shape_.heads; ++h) {
        const T* from = in_head(block, t, h);
        T* to = out_head(block, t, h);
        std::copy(from, from + first_, to);
        std::copy(from + first_ + rotary_dim_, from + head_dim, to + first_ + rotary_dim_);
      }
    }
  }

  // Streaming: the block's cos/sin once (whole rows), then every head through the staging
  // buffer in the output's memory order.
  void stream_block(const Block& block, StagedHeads<T, C>& staged,
                    CosSinScratch<C>& storage) const {
    for_block_cos_sin<C>(
        source_, block.b, block.s0, block.count, rotation_, storage,
        [&](const C* const* cos_rows, const C* const* sin_rows, int, int) {
          stream_heads_of(block, cos_rows, sin_rows, staged);
        },
        /*whole_rows=*/true);
  }

  // BSHD out: token by token, every head. BHSD out: a group of bhsd_heads_per_group heads at a
  // time, token by token within the group, so that several streams are in flight as with
  // ordinary stores. Each run of a token's heads that shares a cos/sin segment goes at once, up
  // to stream_heads_per_call heads.
  void stream_heads_of(const Block& block, const C* const* cos_rows, const C* const* sin_rows,
                       StagedHeads<T, C>& staged) const {
    const Eigen::Index heads = in_shape_.heads;
    const Eigen::Index heads_at_once = out_shape_.bshd() ? heads : bhsd_heads_per_group;
    for (Eigen::Index g0 = 0; g0 < heads; g0 += heads_at_once) {
      const Eigen::Index g1 = std::min(g0 + heads_at_once, heads);
      for (int t = 0; t < block.count; ++t) {
        for (Eigen::Index h0 = g0, h1 = g0; h0 < g1; h0 = h1) {
          h1 = std::min({(h0 / group_ + 1) * group_, g1, h0 + stream_heads_per_call});
          staged.add_strided(in_head(block, t, h0), in_shape_.head_stride(), out_head(block, t, h0),
                             out_shape_.head_stride(), h1 - h0, cos_rows[t] + segment(h0),
                             sin_rows[t] + segment(h0));
        }
      }
    }
    staged.flush();  // before the next call reuses the cos/sin rows
  }

  // BSHD out from a Pairs source (cos/sin formed in the call) whose heads share one segment:
  // token t + 1's cos/sin are formed a piece of lane_block pairs at a time between runs of
  // token t's heads, so that the arithmetic overlaps the memory traffic instead of stalling
  // it. The values are those of a whole-row fill: each pair is formed alone.
  void stream_block_overlapped(const Block& block, StagedHeads<T, C>& staged,
                               CosSinScratch<C>& storage) const {
    C* current = storage.rows(static_cast<std::size_t>(4 * pairs_));
    C* next = current + 2 * pairs_;
    for (int begin = 0; begin < pairs_; begin += cos_sin_chunk) {
      fill_pairs(current, block.b, block.s0, begin, std::min(begin + cos_sin_chunk, pairs_));
    }
    const Eigen::Index heads = in_shape_.heads;
    const int lane = static_cast<int>(lane_block);
    const int pieces = (pairs_ + lane - 1) / lane;
    for (int t = 0; t < block.count; ++t) {
      for (int piece = 0; piece < pieces; ++piece) {
        const Eigen::Index h0 = heads * piece / pieces, h1 = heads * (piece + 1) / pieces;
        if (h1 > h0) {
          staged.add_strided(in_head(block, t, h0), in_shape_.head_stride(), out_head(block, t, h0),
                             out_shape_.head_stride(), h1 - h0, current, current + pairs_);
        }
        if (t + 1 < block.count) {
          const int begin = piece * lane;
          fill_pairs(next, block.b, block.s0 + t + 1, begin, std::min(begin + lane, pairs_));
        }
      }
      staged.flush();  // before `current` is formed again
      std::swap(current, next);
    }
  }

  // Pairs [begin, end) of a Pairs source's row [2, pairs] (cos, then sin) for token (b, s).
  void fill_pairs(C* row, Eigen::Index b, Eigen::Index s, int begin, int end) const {
    if constexpr (Source::kind == SourceKind::Pairs) {
      source_.fill(b, s, begin, end, row + begin, row + pairs_ + begin, rotation_);
    }
  }

  const Source& source_;
  const ActivationShape &in_shape_, &out_shape_;
  const T* in_;
  T* out_;
  Eigen::Index out_seq_offset_;
  Rotation rotation_;
  int rotary_dim_, first_, pairs_;  // the rotated features [first_, first_ + rotary_dim_)
  bool interleaved_;
  Eigen::Index group_;  // heads per cos/sin segment
  Eigen::Index block_tokens_, blocks_per_row_;
  bool stream_;  // out of place with streaming stores
};

// rotate_tensor's body (below), for Forward or Inverse.
template <class T, class Source>
void rotate_tensor_in(const Source& source, const ActivationShape& in_shape, const T* in,
                      const ActivationShape& out_shape, Eigen::Index out_seq_offset, T* out,
                      const Threads& threads, Rotation rotation) {
  check_threads(threads);
  source.check(in_shape);
  if (out != in) {
    check_output(in_shape, out_shape, out_seq_offset);
  } else if (in_shape.layout != out_shape.layout || out_seq_offset != 0 ||
             in_shape.seq != out_shape.seq) {
    fail("out.data()", "x.data()",
         "expected separate buffers for a rotation that changes the layout or the position");
  }
  const int parts = parts_for(in_shape.size(), threads);
  const TensorRotation<T, Source> plan(source, in_shape, in, out_shape, out_seq_offset, out, parts,
                                       rotation);
  parallel_for(plan.blocks(), parts, threads,
               [&](Eigen::Index begin, Eigen::Index end) { plan.rotate_blocks(begin, end); });
}

// Rotates every head of `in` into `out` (TensorRotation above), after checking everything;
// Transpose as the inverse of its TransposedSource.
// Blocks are shared among up to threads.count threads or tasks of threads.pool (parts_for
// decides how many are worth it), which take contiguous runs of blocks in order
// (detail/parallel.hpp): a run's output is one contiguous range (BSHD out) or one per head (BHSD
// out), starting on a 64-byte boundary whenever out does, out_seq_offset is a multiple of 16 and a
// block of tokens is a multiple of 64 bytes (float and double always; half types when head_dim is
// even); otherwise two threads may share the line at a boundary, each writing its own bytes with
// ordinary stores. Out of place, an output of streaming_store_threshold() bytes or more is written
// with streaming stores (posemb/machine/streaming_stores.hpp), heads visited in the output's memory
// order (BHSD: a few heads at a time), each thread fencing at the end of each run.
template <class T, class Source>
void rotate_tensor(const Source& source, const ActivationShape& in_shape, const T* in,
                   const ActivationShape& out_shape, Eigen::Index out_seq_offset, T* out,
                   const Threads& threads, Rotation rotation = Rotation::Forward) {
  with_direction(source, rotation, [&](const auto& runs, Rotation direction) {
    rotate_tensor_in(runs, in_shape, in, out_shape, out_seq_offset, out, threads, direction);
  });
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

// rotate_matrix_rows's body, for Forward or Inverse.
template <class Derived, class Source>
void rotate_matrix_rows_in(const Eigen::MatrixBase<Derived>& x, const Source& source,
                           Rotation rotation) {
  using T = typename Derived::Scalar;
  using C = compute_t<T>;
  auto rows = head_rows(x);
  // A matrix is [rows, head_dim]: one sequence of rows tokens with one head each.
  source.check(ActivationShape({1, rows.count, 1, rows.head_dim}, TensorLayout::BSHD));
  CosSinScratch<C> storage;
  const int rotary_dim = source.rotary_dim();
  const int first = source.rotary_offset();
  const bool interleaved = source.pairing() == Pairing::Interleaved;
  for (Eigen::Index r0 = 0; r0 < rows.count; r0 += bshd_tokens_per_block) {
    const int count =
        static_cast<int>(std::min<Eigen::Index>(bshd_tokens_per_block, rows.count - r0));
    for_block_cos_sin<C>(
        source, 0, r0, count, rotation, storage,
        [&](const C* const* cos, const C* const* sin, int begin, int end) {
          for (int t = 0; t < count; ++t) {
            T* head = rows.data + (r0 + t) * rows.vector_stride + first * rows.element_stride;
            if (rows.element_stride == 1) {
              rotate_contiguous(head, head, cos[t], sin[t], begin, end, rotary_dim, interleaved);
            } else {
              rotate_strided(head, head, rows.element_stride, cos[t], sin[t], begin, end,
                             rotary_dim, source.pairing());
            }
          }
        });
  }
}

// Rotates the rows of a matrix (or one column vector) in place; `source` was built with
// positions for a [1, rows] grid (row r is token r). Segment-0 sources only (RoPE, xPos).
template <class Derived, class Source>
void rotate_matrix_rows(const Eigen::MatrixBase<Derived>& x, const Source& source,
                        Rotation rotation = Rotation::Forward) {
  static_assert(Source::kind != SourceKind::RowFill, "per-head cos/sin need a 4-D tensor");
  with_direction(source, rotation, [&](const auto& runs, Rotation direction) {
    rotate_matrix_rows_in(x, runs, direction);
  });
}

}  // namespace detail
}  // namespace posemb
