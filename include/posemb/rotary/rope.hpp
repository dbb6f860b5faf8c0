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
// Which features form pair i is the Pairing (tensor.hpp). rotary_dim 4 of head_dim 8, c the
// first feature of a pair, s the second, . passed through:
//   Interleaved  (GPT-J, Meta LLaMA checkpoints, ggml "normal"): (2i, 2i + 1)       [cscs....]
//   RotateHalf   (GPT-NeoX, HuggingFace LLaMA, ggml "neox"):   (i, i + rotary_dim/2) [ccss....]
// Partial rotary: only the first rotary_dim features of each head rotate; features
// rotary_dim .. head_dim - 1 pass through bit-identical. A spec knows the head_dim it was made
// for (RotaryDims), so partial rotary is always stated, never inferred from a wider tensor: a head
// of another width is an error naming both numbers.
//
// Angles are formed in double and reduced mod 2 pi before cos/sin (detail/cos_sin.hpp, the one
// generator of cos/sin); only cos/sin are rounded to the arithmetic type (float for
// float/half/bf16 storage, double for double). Float32 angles drift by 5e-4 rad at 2k positions
// and break down past 1e5. Every rotary scheme rotates through the engine of
// detail/rotary_engine.hpp; this header is RoPE's cos/sin source for it.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <cmath>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "posemb/detail/cos_sin.hpp"
#include "posemb/detail/rotary_engine.hpp"
#include "posemb/error.hpp"
#include "posemb/frequencies.hpp"
#include "posemb/rotary/rotate.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// The head a RoPE spec is made for: head_dim, the width of the head vectors it rotates (q and k
// must have exactly this last dimension), and rotary_dim <= head_dim, how many of their features
// rotate. rotary_dim < head_dim is partial rotary (GPT-NeoX's rotary_pct, Phi's
// partial_rotary_factor, GPT-J's rotary_dim, ChatGLM's half head): the first rotary_dim features
// rotate and the rest pass through. A single int is a whole head: RotaryDims(128) rotates all 128.
//
// Example:
//   posemb::default_rope_spec(128, 500000.0);                            // Llama 3: 128 of 128
//   posemb::default_rope_spec(posemb::RotaryDims{80, 32}, 10000.0);      // Phi-2: 32 of 80
struct RotaryDims {
  int head_dim = 0;
  int rotary_dim = 0;

  RotaryDims(int head_dim_) : head_dim(head_dim_), rotary_dim(head_dim_) {}  // NOLINT: implicit
  RotaryDims(int head_dim_, int rotary_dim_) : head_dim(head_dim_), rotary_dim(rotary_dim_) {}

  // Throws unless rotary_dim is even and >= 2 and fits in head_dim.
  void validate() const {
    detail::require_even_positive("rotary_dim", rotary_dim);
    if (head_dim < rotary_dim) {
      detail::fail("head_dim", head_dim,
                   "expected >= rotary_dim = " + std::to_string(rotary_dim) +
                       " (the features that rotate are part of the head)");
    }
  }
};

// Everything the rotation needs. Built by default_rope_spec() or by the scaled-RoPE functions
// (scaled.hpp); an immutable value with no hidden state.
struct RopeSpec {
  Eigen::VectorXd inv_freq;      // [rotary_dim / 2], radians per position
  double attention_scale = 1.0;  // multiplies cos and sin
  Pairing pairing = Pairing::RotateHalf;
  int rotary_dim = 0;     // number of rotated features per head (even)
  int rotary_offset = 0;  // the first rotated feature: [offset, offset + rotary_dim)
                          // rotate (DeepSeek-V4: head_dim - rotary_dim), the rest pass
  int head_dim = 0;       // the width of the heads this spec rotates; tensors and matrices
                          // of another head_dim are refused (partial rotary is stated
                          // here, as rotary_offset + rotary_dim < head_dim)

  int pairs() const { return rotary_dim / 2; }
  bool partial() const { return rotary_dim < head_dim; }

  // Throws posemb::Error unless the fields are consistent.
  void validate() const {
    detail::require_even_positive("rotary_dim", rotary_dim);
    if (rotary_offset < 0) detail::fail("rotary_offset", rotary_offset, "expected >= 0");
    if (head_dim < static_cast<long long>(rotary_offset) + rotary_dim) {
      detail::fail("head_dim", head_dim,
                   rotary_offset == 0
                       ? "expected >= rotary_dim = " + std::to_string(rotary_dim) +
                             " (set head_dim to the width of the heads the spec rotates)"
                       : "expected >= rotary_offset + rotary_dim = " +
                             std::to_string(rotary_offset) + " + " + std::to_string(rotary_dim) +
                             " (set head_dim to the width of the heads the spec rotates)");
    }
    if (inv_freq.size() != rotary_dim / 2) {
      detail::fail("inv_freq.size()", inv_freq.size(),
                   "expected rotary_dim / 2 = " + std::to_string(rotary_dim / 2));
    }
    for (Eigen::Index i = 0; i < inv_freq.size(); ++i) {
      if (!std::isfinite(inv_freq[i])) {
        detail::fail("inv_freq[" + std::to_string(i) + "]", inv_freq[i],
                     "expected a finite number");
      }
    }
    detail::require_positive_finite("attention_scale", attention_scale);
  }
};

// Plain RoPE: default frequencies base^(-2i/rotary_dim), attention_scale 1. `dims`: the head
// width, rotated whole (an int), or RotaryDims{head_dim, rotary_dim} for partial rotary.
//
// Example:
//   const posemb::RopeSpec spec = posemb::default_rope_spec(128, 500000.0);  // Llama 3, HF pairing
//   posemb::rotate_inplace(q, /*offset=*/0, spec);   // q: [batch, seq, heads, 128]
//   // GPT-NeoX-20B: rotary_pct 0.25 of head_dim 96 rotates 24 features, 72 pass through.
//   const posemb::RopeSpec neox = posemb::default_rope_spec(posemb::RotaryDims{96, 24}, 10000.0);
inline RopeSpec default_rope_spec(RotaryDims dims, double base = 10000.0,
                                  Pairing pairing = Pairing::RotateHalf) {
  dims.validate();
  RopeSpec spec;
  spec.inv_freq = default_inv_freq(dims.rotary_dim, base);
  spec.pairing = pairing;
  spec.rotary_dim = dims.rotary_dim;
  spec.head_dim = dims.head_dim;
  spec.validate();  // a base so small that base^(-2i/d) overflows: posemb::Error, not inf
  return spec;
}

// cos/sin of every pair at one position, exactly as the rotation uses them (scaled by
// attention_scale, rounded to C: float for float/half/bf16 storage, double for double): the same
// bits as a RopeTable<C> row and as the kernel forms them in the call.
// Returns {cos, sin}: each [rotary_dim / 2].
template <class C = double>
std::pair<Eigen::Matrix<C, Eigen::Dynamic, 1>, Eigen::Matrix<C, Eigen::Dynamic, 1>> rope_cos_sin(
    const RopeSpec& spec, std::int64_t position) {
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>, "C is float or double");
  spec.validate();
  Eigen::Matrix<C, Eigen::Dynamic, 1> cos(spec.pairs()), sin(spec.pairs());
  detail::cos_sin_at(spec.inv_freq.data(), static_cast<double>(position), spec.attention_scale,
                     spec.pairs(), cos.data(), sin.data());
  return {cos, sin};
}

// cos/sin rows for the positions [first_position, first_position + count): the storage and the
// position lookup shared by RopeTable and FopeTable. Row r holds position first_position + r.
// The cos and sin blocks start on 64-byte boundaries in every build (the AVX-512 kernels load
// 64 bytes at a time; Eigen's own allocation aligns to the build's vector width, 16 bytes in a
// default x86-64 build, where every such load of a row would straddle two cache lines).
// Immutable after construction: copies share the storage.
template <class C>
class CosSinRows {
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>,
                "a cos/sin table holds float or double");

 public:
  using Matrix = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  // A read-only view of the cos or the sin rows.
  using View = Eigen::Map<const Matrix>;

  std::int64_t first_position() const { return first_position_; }
  std::int64_t count() const { return count_; }
  bool contains(std::int64_t position) const {
    return position >= first_position_ && position - first_position_ < count();
  }
  // cos, sin: [count, width]
  View cos() const { return View(storage_.get(), count_, width_); }
  View sin() const { return View(storage_.get() + sin_offset_, count_, width_); }

  // Row pointers for one position; throws if the table does not cover it.
  const C* cos_row(std::int64_t position) const {
    return storage_.get() + row_of(position) * width_;
  }
  const C* sin_row(std::int64_t position) const {
    return storage_.get() + sin_offset_ + row_of(position) * width_;
  }

  CosSinRows(const CosSinRows&) = default;  // moves copy too: a moved-from table stays usable
  CosSinRows& operator=(const CosSinRows&) = default;

 protected:
  // table: the table's name in error messages ("RoPE", "FoPE").
  CosSinRows(const char* table, std::int64_t first_position, std::int64_t count, Eigen::Index width)
      : table_(table), first_position_(first_position), count_(count), width_(width) {
    detail::require_positive("count", count);
    detail::allocate_sized("count", count, 2.0L * count * width, sizeof(C), [&] {
      // sin starts at the first 64-byte boundary after the count * width cos values.
      constexpr Eigen::Index per_line = static_cast<Eigen::Index>(alignment / sizeof(C));
      sin_offset_ = (count * width + per_line - 1) / per_line * per_line;
      const std::size_t bytes = static_cast<std::size_t>(2 * sin_offset_) * sizeof(C);
      storage_.reset(static_cast<C*>(::operator new(bytes, std::align_val_t(alignment))),
                     [](C* p) { ::operator delete(p, std::align_val_t(alignment)); });
    });
  }

  // Row `row` (0 .. count - 1) of cos and of sin, for the constructors that fill them.
  C* cos_storage(std::int64_t row) { return storage_.get() + row * width_; }
  C* sin_storage(std::int64_t row) { return storage_.get() + sin_offset_ + row * width_; }

 private:
  static constexpr std::size_t alignment = 64;
  Eigen::Index row_of(std::int64_t position) const {
    if (!contains(position)) {
      detail::fail("position", position,
                   std::string("outside the ") + table_ + " table's range [" +
                       std::to_string(first_position_) + ", " +
                       std::to_string(first_position_ + count()) + ")");
    }
    return static_cast<Eigen::Index>(position - first_position_);
  }

  const char* table_;
  std::int64_t first_position_;
  Eigen::Index count_, width_;
  Eigen::Index sin_offset_ = 0;  // elements from the start of storage_ to the first sin value
  std::shared_ptr<C> storage_;   // cos [count, width], then sin [count, width]
};

namespace detail {
inline const RopeSpec& validated(const RopeSpec& spec) {
  spec.validate();
  return spec;
}
}  // namespace detail

// A precomputed cos/sin table for positions [first_position, first_position + count), for
// tensors of storage type T: it holds compute_t<T> (float for float/half/bf16, double for
// double), so RopeTable<float> also serves half and bf16 tensors.
// cos(), sin(): [count, rotary_dim / 2], row r is position first_position + r.
// Immutable after construction: build once, share across threads.
//
// Example:
//   const posemb::RopeTable<float> table(spec, /*first_position=*/0, /*count=*/8192);
//   posemb::rotate_inplace(q, /*offset=*/cache_length, table);
template <class T>
class RopeTable : public CosSinRows<compute_t<T>> {
 public:
  using compute_type = compute_t<T>;

  RopeTable(RopeSpec spec, std::int64_t first_position, std::int64_t count)
      : CosSinRows<compute_type>("RoPE", first_position, count, detail::validated(spec).pairs()),
        spec_(std::move(spec)) {
    detail::fill_cos_sin_table(spec_.inv_freq.data(), spec_.pairs(), spec_.attention_scale,
                               first_position, count, this->cos_storage(0), this->sin_storage(0));
  }

  const RopeSpec& spec() const { return spec_; }

 private:
  RopeSpec spec_;
};

namespace detail {

// Throws unless the tensor's heads are as wide as the heads the spec was made for: a wider head
// is not taken as partial rotary, a narrower one not as a slice.
inline void check_head_dim(const RopeSpec& spec, const ActivationShape& shape) {
  if (shape.head_dim == spec.head_dim) return;
  std::string expected = "expected " + std::to_string(spec.head_dim) +
                         ", the head_dim this RopeSpec was made for (rotary_dim " +
                         std::to_string(spec.rotary_dim);
  if (spec.rotary_offset != 0) expected += " from feature " + std::to_string(spec.rotary_offset);
  expected += ")";
  if (shape.head_dim > spec.head_dim && !spec.partial() && spec.rotary_offset == 0) {
    const std::string wide = std::to_string(shape.head_dim), dim = std::to_string(spec.rotary_dim);
    expected += "; to rotate only the first " + dim + " of " + wide +
                " features (partial rotary), make the spec with RotaryDims{" + wide + ", " + dim +
                "}";
  }
  fail("head_dim", shape.head_dim, expected);
}

// RoPE's cos/sin formed in the call (a Pairs source of the rotary engine).
struct RopeSpecSource {
  static constexpr SourceKind kind = SourceKind::Pairs;
  const RopeSpec& spec;
  const Positions& positions;

  int rotary_dim() const { return spec.rotary_dim; }
  int rotary_offset() const { return spec.rotary_offset; }
  Pairing pairing() const { return spec.pairing; }
  Eigen::Index head_group(Eigen::Index heads) const { return heads; }
  void check(const ActivationShape& shape) const {
    check_head_dim(spec, shape);
    positions.check(shape);
  }
  // Inverse: the same cos/sin with 1 / attention_scale and the sign of sin flipped.
  template <class C>
  void fill(Eigen::Index b, Eigen::Index s, int begin, int end, C* cos, C* sin,
            Rotation rotation) const {
    const bool inverse = rotation == Rotation::Inverse;
    cos_sin_at(spec.inv_freq.data() + begin, positions.at(b, s),
               inverse ? 1.0 / spec.attention_scale : spec.attention_scale, end - begin, cos, sin);
    if (inverse) {
      for (int i = 0; i < end - begin; ++i) sin[i] = -sin[i];
    }
  }
};

// Throws unless every token's position has a row in `table` (before any work starts).
template <class Table>
void check_table_positions(const Table& table, const Positions& positions,
                           const ActivationShape& shape) {
  positions.check(shape);
  for (Eigen::Index b = 0; b < shape.batch; ++b) {
    for (Eigen::Index s = 0; s < shape.seq; ++s) (void)table.cos_row(positions.integer_at(b, s));
  }
}

// RoPE's cos/sin read from a table (a Rows source); its spec was validated when it was built.
template <class TableT>
struct RopeTableSource {
  static constexpr SourceKind kind = SourceKind::Rows;
  const RopeTable<TableT>& table;
  const Positions& positions;

  int rotary_dim() const { return table.spec().rotary_dim; }
  int rotary_offset() const { return table.spec().rotary_offset; }
  Pairing pairing() const { return table.spec().pairing; }
  Eigen::Index head_group(Eigen::Index heads) const { return heads; }
  Eigen::Index row_width() const { return table.spec().pairs(); }
  void check(const ActivationShape& shape) const {
    check_head_dim(table.spec(), shape);
    check_table_positions(table, positions, shape);
  }
  template <class C>
  const C* cos_row(Eigen::Index b, Eigen::Index s) const {
    static_assert(std::is_same_v<C, compute_t<TableT>>,
                  "posemb: the table's arithmetic type differs from the tensor's; use "
                  "RopeTable<T> with T the tensor's storage type");
    return table.cos_row(positions.integer_at(b, s));
  }
  template <class C>
  const C* sin_row(Eigen::Index b, Eigen::Index s) const {
    return table.sin_row(positions.integer_at(b, s));
  }
  // The inverse's row: (cos, -sin) of the table when the scale is 1; otherwise formed as the
  // spec's inverse is (cos/sin at 1 / attention_scale, sin negated), so both agree bit for bit.
  template <class C>
  void inverse_row(Eigen::Index b, Eigen::Index s, C* cos, C* sin) const {
    const RopeSpec& spec = table.spec();
    if (spec.attention_scale == 1.0) {
      const C* forward_cos = cos_row<C>(b, s);
      const C* forward_sin = sin_row<C>(b, s);
      for (int i = 0; i < spec.pairs(); ++i) {
        cos[i] = forward_cos[i];
        sin[i] = -forward_sin[i];
      }
      return;
    }
    (void)cos_row<C>(b, s);  // the same range check as the forward rotation
    RopeSpecSource{spec, positions}.fill(b, s, 0, spec.pairs(), cos, sin, Rotation::Inverse);
  }
};

inline RopeSpecSource rotary_source(const RopeSpec& spec, const Positions& positions) {
  spec.validate();
  return RopeSpecSource{spec, positions};
}
template <class TableT>
RopeTableSource<TableT> rotary_source(const RopeTable<TableT>& table, const Positions& positions) {
  return RopeTableSource<TableT>{table, positions};
}

}  // namespace detail

// The rotate family's sources (rotate.hpp): a spec forms cos/sin in the call, a table reads them.
template <>
struct rotary_source_traits<RopeSpec> : rotary_source_base<RopeSpec> {
  template <class T>
  static detail::RopeSpecSource engine(const RopeSpec& spec, const Positions& positions) {
    return detail::rotary_source(spec, positions);
  }
};
template <class U>
struct rotary_source_traits<RopeTable<U>> : rotary_source_base<RopeSpec, Positions, compute_t<U>> {
  template <class T>
  static detail::RopeTableSource<U> engine(const RopeTable<U>& table, const Positions& positions) {
    return detail::rotary_source(table, positions);
  }
};

namespace detail {
// A readable compile error for a source that is neither a RopeSpec nor a RopeTable of the
// arithmetic type of storage type T.
template <class Source, class T>
constexpr bool require_rope_source() {
  constexpr bool rope = std::is_same_v<typename rotary_source_traits<Source>::scheme, RopeSpec>;
  static_assert(rope,
                "posemb: a source of another scheme: this call's source must be a "
                "posemb::RopeSpec or a posemb::RopeTable<T> (rotate_inplace, rotate and rotated "
                "take every source)");
  return rope && require_rotary_source<Source, T>();
}
}  // namespace detail

}  // namespace posemb
