// Rotate new keys straight into a KV cache: one pass from projected keys and values (float32) to
// a caller's cache, contiguous or paged, in any storage type of kv/storage.hpp.
//
//   cache.keys[slot of token (b, s)]   = convert(R(position of (b, s)) k[b, s])   every kv head
//   cache.values[slot of token (b, s)] = convert(v[b, s])                          (not rotated)
//
// bit for bit what rotate (rotary/rotate.hpp) of the whole keys, then the conversion, then a
// copy into the slots give, for every source, layout, storage type and thread count: the keys go
// through the one engine (detail/rotary_engine.hpp) a run of tokens at a time, float32 keys
// straight into their slots, other types into a per-thread buffer that stays in L2 and is
// converted from there into the slots (kv/convert.hpp, vectors at the active instruction-set
// level); the values are converted from the caller's array into theirs. Engines do the same in
// two passes: llama.cpp's graph runs ggml_rope_ext and then ggml_set_rows into the cache
// (llama_kv_cache::cpy_k / cpy_v; older versions ggml_cpy into a view); vLLM runs its rotary
// kernel and then reshape_and_cache with its slot_mapping.
//
// Layouts of each cache buffer (last axis: head_dim values, or their bytes for q8_0):
//   CacheLayout::BHSD   [batch, kv_heads, max_seq, head_dim]     slot = sequence index in row b
//   CacheLayout::BSHD   [batch, max_seq, kv_heads, head_dim]     slot = sequence index in row b
//   CacheLayout::Paged  [num_blocks, block_size, kv_heads, head_dim]
//                       slot = block * block_size + offset (vLLM's slot_mapping)
// A negative slot skips its token (vLLM's padding tokens).
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "posemb/detail/parallel.hpp"
#include "posemb/detail/rotary_engine.hpp"
#include "posemb/detail/stream_copy.hpp"
#include "posemb/error.hpp"
#include "posemb/kv/convert.hpp"
#include "posemb/kv/storage.hpp"
#include "posemb/rotary/rotate.hpp"
#include "posemb/machine/streaming_stores.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

enum class CacheLayout { BHSD, BSHD, Paged };

inline const char* to_string(CacheLayout layout) {
  switch (layout) {
    case CacheLayout::BHSD:
      return "bhsd";
    case CacheLayout::BSHD:
      return "bshd";
    case CacheLayout::Paged:
      return "paged";
  }
  return "unknown";
}

// One cache buffer (the keys' or the values'): a view of the caller's memory.
struct CacheBuffer {
  void* data = nullptr;
  CacheDtype dtype = CacheDtype::Float32;
  Eigen::Index head_dim = 0;  // values per head vector
  float scale = 1.0f;         // Fp8E4m3 only: the stored value is x / scale
};

// The geometry both buffers share, and the buffers. Build it with kv_cache or paged_kv_cache.
struct KvCache {
  CacheLayout layout = CacheLayout::BHSD;
  Eigen::Index rows = 0;   // BHSD, BSHD: batch; Paged: num_blocks
  Eigen::Index slots = 0;  // BHSD, BSHD: max_seq; Paged: block_size
  Eigen::Index kv_heads = 0;
  CacheBuffer keys, values;

  // Slots a token may address: max_seq per row, or num_blocks * block_size.
  Eigen::Index slot_space() const { return layout == CacheLayout::Paged ? rows * slots : slots; }
  // Bytes of one buffer.
  Eigen::Index bytes(const CacheBuffer& buffer) const {
    return rows * slots * kv_heads * cache_row_bytes(buffer.dtype, buffer.head_dim);
  }
};

// A contiguous cache: [batch, kv_heads, max_seq, head_dim] (BHSD) or [batch, max_seq, kv_heads,
// head_dim] (BSHD) per buffer.
inline KvCache kv_cache(CacheLayout layout, Eigen::Index batch, Eigen::Index max_seq,
                        Eigen::Index kv_heads, const CacheBuffer& keys, const CacheBuffer& values) {
  if (layout != CacheLayout::BHSD && layout != CacheLayout::BSHD) {
    detail::fail("layout", to_string(layout), "expected CacheLayout::BHSD or CacheLayout::BSHD");
  }
  return KvCache{layout, batch, max_seq, kv_heads, keys, values};
}

// A paged cache of num_slots slots in blocks of block_size: [num_slots / block_size, block_size,
// kv_heads, head_dim] per buffer. Throws unless block_size > 0 divides num_slots.
inline KvCache paged_kv_cache(Eigen::Index num_slots, Eigen::Index block_size,
                              Eigen::Index kv_heads, const CacheBuffer& keys,
                              const CacheBuffer& values) {
  if (block_size <= 0) detail::fail("block_size", block_size, "expected > 0");
  if (num_slots < 0 || num_slots % block_size != 0) {
    detail::fail("num_slots", num_slots,
                 "expected a multiple of block_size = " + std::to_string(block_size));
  }
  return KvCache{CacheLayout::Paged, num_slots / block_size, block_size, kv_heads, keys, values};
}

// The slot of every token: [batch, seq] int64, row-major (a view). A PositionMatrix converts.
struct SlotMapping {
  const std::int64_t* data = nullptr;
  Eigen::Index batch = 0, seq = 0;

  SlotMapping(const std::int64_t* data_, Eigen::Index batch_, Eigen::Index seq_)
      : data(data_), batch(batch_), seq(seq_) {}
  SlotMapping(const PositionMatrix& slots)  // NOLINT: implicit
      : data(slots.data()), batch(slots.rows()), seq(slots.cols()) {}
  std::int64_t at(Eigen::Index b, Eigen::Index s) const { return data[b * seq + s]; }
};

namespace detail {

// An engine source seen through a window of tokens s0 .. of batch row b: the engine rotates a
// [1, n, heads, head_dim] piece of the keys and asks for token (0, t); the source answers for
// (b, s0 + t). Forwards every member of the three source kinds (rotary_engine.hpp).
template <class Source>
struct TokenWindow {
  static constexpr SourceKind kind = Source::kind;
  const Source& source;
  Eigen::Index b, s0;

  int rotary_dim() const { return source.rotary_dim(); }
  int rotary_offset() const { return source.rotary_offset(); }
  Pairing pairing() const { return source.pairing(); }
  Eigen::Index head_group(Eigen::Index heads) const { return source.head_group(heads); }
  auto row_width() const { return source.row_width(); }
  auto scratch_size() const { return source.scratch_size(); }
  template <class C>
  const C* cos_row(Eigen::Index, Eigen::Index s) const {
    return source.template cos_row<C>(b, s0 + s);
  }
  template <class C>
  const C* sin_row(Eigen::Index, Eigen::Index s) const {
    return source.template sin_row<C>(b, s0 + s);
  }
  template <class C>
  void inverse_row(Eigen::Index, Eigen::Index s, C* cos, C* sin) const {
    source.template inverse_row<C>(b, s0 + s, cos, sin);
  }
  template <class... Args>
  void fill(Eigen::Index, Eigen::Index s, Args&&... args) const {
    source.fill(b, s0 + s, std::forward<Args>(args)...);
  }
  template <class... Args>
  void fill_row(Eigen::Index, Eigen::Index s, Args&&... args) const {
    source.fill_row(b, s0 + s, std::forward<Args>(args)...);
  }
};

// Tokens s0 .. s0 + count - 1 of batch row b, bound for consecutive slots from `slot` (within
// one row of a contiguous cache, or one block of a paged one).
struct AppendRun {
  Eigen::Index b, s0, slot;
  int count;
};

// Tokens per run at most. Float32 keys are rotated straight into the cache, so a run is as long
// as the engine's BHSD blocks at their shortest (each head's slots a contiguous stream); other
// key types are rotated into a per-thread buffer of at most 64 KiB of float, which stays in L2
// while it is converted into the cache (an L1-sized 16 KiB buffer, runs of 4 tokens at 8 heads of
// 128, measured 10-40% slower at prefill [1, 2048, 8, 128], bench_kv).
inline int run_tokens(Eigen::Index kv_heads, Eigen::Index head_dim, bool float32_keys) {
  if (float32_keys) return bhsd_min_tokens_per_block;
  const Eigen::Index per_token = std::max<Eigen::Index>(1, kv_heads * head_dim);
  return static_cast<int>(std::clamp<Eigen::Index>(16384 / per_token, 1, tokens_per_block));
}

// Where a cache buffer holds token slot `slot` of row b (BHSD, BSHD) or of the cache (Paged):
// the bytes of its head 0, and the bytes between heads and between consecutive slots.
struct SlotAddress {
  Eigen::Index offset, head_stride, slot_stride;
};

inline SlotAddress slot_address(const KvCache& cache, Eigen::Index row_bytes, Eigen::Index b,
                                Eigen::Index slot) {
  const Eigen::Index token = cache.kv_heads * row_bytes;
  switch (cache.layout) {
    case CacheLayout::BHSD:
      return {(b * cache.kv_heads * cache.slots + slot) * row_bytes, cache.slots * row_bytes,
              row_bytes};
    case CacheLayout::BSHD:
      return {(b * cache.slots + slot) * token, row_bytes, token};
    default:
      return {slot * token, row_bytes, token};  // blocks follow each other
  }
}

// The runs of the tokens with a slot, in order, into `runs`; each at most max_tokens long.
inline void append_runs(const SlotMapping& slots, const KvCache& cache, int max_tokens,
                        std::vector<AppendRun>& runs) {
  runs.clear();
  const bool paged = cache.layout == CacheLayout::Paged;
  for (Eigen::Index b = 0; b < slots.batch; ++b) {
    for (Eigen::Index s = 0; s < slots.seq; ++s) {
      const std::int64_t slot = slots.at(b, s);
      if (slot < 0) continue;
      if (!runs.empty()) {
        AppendRun& last = runs.back();
        const bool next =
            last.b == b && last.s0 + last.count == s && last.slot + last.count == slot;
        const bool same_block = !paged || slot % cache.slots != 0;
        if (next && same_block && last.count < max_tokens) {
          ++last.count;
          continue;
        }
      }
      runs.push_back({b, s, slot, 1});
    }
  }
}

// ---- checks (all before anything is written)

inline void check_buffer(const CacheBuffer& buffer, const char* name, Eigen::Index head_dim) {
  const auto field = [&](const char* member) { return std::string("cache.") + name + member; };
  if (buffer.data == nullptr) fail(field(".data"), "null", "expected the cache's memory");
  if (buffer.head_dim != head_dim) {
    fail(field(".head_dim"), buffer.head_dim,
         "expected the " + std::string(name) + "' head_dim = " + std::to_string(head_dim));
  }
  if (buffer.dtype == CacheDtype::Q8_0 && buffer.head_dim % q8_0_block_values != 0) {
    (void)cache_row_bytes(buffer.dtype, buffer.head_dim, field(".head_dim").c_str());
  }
  if (buffer.dtype == CacheDtype::Fp8E4m3 && !(std::isfinite(buffer.scale) && buffer.scale > 0)) {
    fail(field(".scale"), buffer.scale, "expected a finite scale > 0 for an fp8 cache");
  }
  (void)cache_row_bytes(buffer.dtype, buffer.head_dim);  // an unknown dtype
}

inline void check_geometry(const KvCache& cache, const ActivationShape& keys) {
  if (cache.layout != CacheLayout::BHSD && cache.layout != CacheLayout::BSHD &&
      cache.layout != CacheLayout::Paged) {
    fail("cache.layout", static_cast<int>(cache.layout), "expected a CacheLayout");
  }
  if (cache.kv_heads != keys.heads) {
    fail("cache.kv_heads", cache.kv_heads,
         "expected the keys' kv heads = " + std::to_string(keys.heads));
  }
  if (cache.layout != CacheLayout::Paged && cache.rows != keys.batch) {
    fail("cache batch", cache.rows, "expected the keys' batch = " + std::to_string(keys.batch));
  }
  if (cache.rows < 0 || cache.slots <= 0) {
    fail(cache.layout == CacheLayout::Paged ? "cache block_size" : "cache max_seq", cache.slots,
         "expected > 0");
  }
}

// Every slot in [0, slot_space) or negative, no slot twice (two writers of one slot). `used` is
// the caller's buffer for the sorted slots.
inline void check_slots(const SlotMapping& slots, const KvCache& cache, const ActivationShape& keys,
                        std::vector<std::int64_t>& used) {
  if (slots.batch != keys.batch || slots.seq != keys.seq) {
    fail("slots shape", "[" + std::to_string(slots.batch) + ", " + std::to_string(slots.seq) + "]",
         "expected the keys' [batch, seq] = [" + std::to_string(keys.batch) + ", " +
             std::to_string(keys.seq) + "]");
  }
  const Eigen::Index space = cache.slot_space();
  used.clear();
  for (Eigen::Index b = 0; b < slots.batch; ++b) {
    for (Eigen::Index s = 0; s < slots.seq; ++s) {
      const std::int64_t slot = slots.at(b, s);
      if (slot >= space) {
        fail("slots[" + std::to_string(b) + ", " + std::to_string(s) + "]", slot,
             "expected < " + std::to_string(space) + " (" +
                 (cache.layout == CacheLayout::Paged ? "num_blocks * block_size" : "max_seq") +
                 "), or negative to skip the token");
      }
      if (slot >= 0) used.push_back(slot + (cache.layout == CacheLayout::Paged ? 0 : b * space));
    }
  }
  std::sort(used.begin(), used.end());
  const auto twice = std::adjacent_find(used.begin(), used.end());
  if (twice != used.end()) {
    fail("slots", *twice % space, "expected every slot once (two tokens write this slot)");
  }
}

// Throws if a written byte range overlaps another range (ranges only read may share memory: the
// same array as keys and values).
struct ByteRange {
  const char* name;
  const void* data;
  Eigen::Index bytes;
  bool written;
};
inline void check_disjoint(std::initializer_list<ByteRange> ranges) {
  for (auto a = ranges.begin(); a != ranges.end(); ++a) {
    for (auto b = a + 1; b != ranges.end(); ++b) {
      if (!a->written && !b->written) continue;
      const auto a0 = reinterpret_cast<std::uintptr_t>(a->data);
      const auto b0 = reinterpret_cast<std::uintptr_t>(b->data);
      if (a->bytes > 0 && b->bytes > 0 && a0 < b0 + static_cast<std::uintptr_t>(b->bytes) &&
          b0 < a0 + static_cast<std::uintptr_t>(a->bytes)) {
        fail(std::string(a->name) + ".data", b->name,
             std::string("expected separate buffers (") + a->name + " overlaps " + b->name + ")");
      }
    }
  }
}

// ---- one run

// A thread's buffers: rotated keys [count, kv_heads, head_dim] float, and converted rows in the
// cache's order before they are stored.
struct AppendScratch {
  std::vector<float> rotated;
  std::vector<unsigned char> converted;
};

// `n` values from `in` converted into `bytes` bytes of the cache at `to`: straight there
// (ordinary stores), or, with streaming stores, streamed from `in` (float32) or converted into
// `staged` and streamed from there.
inline void write_span(const float* in, Eigen::Index n, const CacheBuffer& buffer,
                       unsigned char* to, Eigen::Index bytes, bool stream,
                       std::vector<unsigned char>& staged) {
  if (!stream) {
    convert_row(in, n, buffer.dtype, buffer.scale, to);
  } else if (buffer.dtype == CacheDtype::Float32) {
    stream_copy(to, in, static_cast<std::size_t>(bytes));
  } else {
    staged.resize(static_cast<std::size_t>(bytes));
    convert_row(in, n, buffer.dtype, buffer.scale, staged.data());
    stream_copy(to, staged.data(), static_cast<std::size_t>(bytes));
  }
}

// Converts rows of `count` tokens (row (t, h) at in + (t * heads + h) * head_dim) into buffer's
// slots from run.slot (kv/convert.hpp, at the active level). BSHD and Paged: the run's rows follow
// each other in `in` and in the cache, one span (a decode step's token: one call). BHSD: each
// head's slots are a span of the cache; `in` is read in its own order, token by token (its rows
// of one head are heads * head_dim floats apart, 4 KiB at 8 heads of 128: a page per row, which
// the hardware prefetchers do not follow), each token's heads going to their spans. Streaming:
// float32 rows are streamed from `in`, other types converted into `staged` ([heads, count] rows)
// and each head's span streamed from there.
inline void store_rows(const KvCache& cache, const CacheBuffer& buffer, const AppendRun& run,
                       const float* in, bool stream, std::vector<unsigned char>& staged) {
  const Eigen::Index heads = cache.kv_heads, head_dim = buffer.head_dim;
  const Eigen::Index row_bytes = cache_row_bytes(buffer.dtype, head_dim);
  const SlotAddress at = slot_address(cache, row_bytes, run.b, run.slot);
  auto* base = static_cast<unsigned char*>(buffer.data) + at.offset;
  if (cache.layout != CacheLayout::BHSD) {
    const Eigen::Index rows = run.count * heads;
    write_span(in, rows * head_dim, buffer, base, rows * row_bytes, stream, staged);
    return;
  }
  const Eigen::Index token_values = heads * head_dim;
  if (!stream || buffer.dtype == CacheDtype::Float32) {
    for (int t = 0; t < run.count; ++t) {
      for (Eigen::Index h = 0; h < heads; ++h) {
        write_span(in + t * token_values + h * head_dim, head_dim, buffer,
                   base + h * at.head_stride + t * row_bytes, row_bytes, stream, staged);
      }
    }
    return;
  }
  const Eigen::Index span = run.count * row_bytes;  // a head's slots of the run
  staged.resize(static_cast<std::size_t>(heads * span));
  for (int t = 0; t < run.count; ++t) {
    convert_rows(in + t * token_values, head_dim, staged.data() + t * row_bytes, span, heads,
                 head_dim, buffer.dtype, buffer.scale);
  }
  for (Eigen::Index h = 0; h < heads; ++h) {
    stream_copy(base + h * at.head_stride, staged.data() + h * span,
                static_cast<std::size_t>(span));
  }
}

// Where a run's rotated keys go: `out` seen as `shape` (batch 1), token t of the run at sequence
// index seq + t.
struct RunTarget {
  float* out;
  ActivationShape shape;
  Eigen::Index seq;
};

// A float32 key buffer as the engine's output for `run`: the cache itself, row b of a contiguous
// cache ([1, kv_heads, max_seq, head_dim] BHSD or [1, max_seq, kv_heads, head_dim] BSHD), or the
// paged cache as one sequence of num_blocks * block_size slots (BSHD).
inline RunTarget cache_target(const KvCache& cache, const AppendRun& run) {
  auto* base = static_cast<float*>(cache.keys.data);
  const Eigen::Index d = cache.keys.head_dim, heads = cache.kv_heads;
  switch (cache.layout) {
    case CacheLayout::BHSD:
      return {base + run.b * heads * cache.slots * d,
              ActivationShape({1, heads, cache.slots, d}, TensorLayout::BHSD), run.slot};
    case CacheLayout::BSHD:
      return {base + run.b * cache.slots * heads * d,
              ActivationShape({1, cache.slots, heads, d}, TensorLayout::BSHD), run.slot};
    default:
      return {base, ActivationShape({1, cache.slot_space(), heads, d}, TensorLayout::BSHD),
              run.slot};
  }
}

// The keys of a run rotated into `to` by the engine, through a window of the source (engine
// sources), or, for a source with its own rotation (HfFloat32Rope), by that rotation at the run's
// positions. stream: whether the engine writes `to` with streaming stores (the cache, when the
// call's output is large; never a thread's own buffer, which is read back at once).
template <class Traits, class EngineSource, class Source, class P>
void rotate_run(const EngineSource& engine, const Source& source, const P& positions,
                const ActivationShape& keys_shape, const float* keys, const AppendRun& run,
                const RunTarget& to, StreamChoice stream) {
  const ActivationShape window({1, run.count, keys_shape.heads, keys_shape.head_dim},
                               TensorLayout::BSHD);
  const float* in = keys + keys_shape.offset(run.b, run.s0, 0);
  if constexpr (has_own_rotation<Traits>::value) {
    (void)engine, (void)stream;
    FractionalPositionMatrix at(1, run.count);
    for (int t = 0; t < run.count; ++t) at(0, t) = positions.at(run.b, run.s0 + t);
    Traits::template rotate_tensor<float>(source, Positions(at), window, in, to.shape, to.seq,
                                          to.out, RotateOptions{});
  } else {
    (void)source, (void)positions;
    const TokenWindow<EngineSource> piece{engine, run.b, run.s0};
    const TensorRotation<float, TokenWindow<EngineSource>> plan(
        piece, window, in, to.shape, to.seq, to.out, /*parts=*/1, Rotation::Forward, stream);
    plan.rotate_blocks(0, plan.blocks());
  }
}

// The engine adapter of an engine source, checked against the keys; a source with its own
// rotation is checked by a rotation of no tokens (its adapter is unused).
template <class Source, class P>
auto checked_engine(const Source& source, const P& positions, const ActivationShape& keys) {
  using Traits = rotary_source_traits<Source>;
  if constexpr (has_own_rotation<Traits>::value) {
    static_assert(std::is_same_v<P, Positions>, "posemb: own rotations read Positions");
    positions.check(keys);
    const ActivationShape none({keys.batch, 0, keys.heads, keys.head_dim}, TensorLayout::BSHD);
    Traits::template rotate_tensor<float>(source, Positions(0), none, nullptr, none, 0, nullptr,
                                          RotateOptions{});
    return 0;
  } else {
    auto engine = engine_source<float>(source, positions);
    engine.check(keys);
    return engine;
  }
}

}  // namespace detail

// keys: [batch, seq, kv_heads, head_dim] float32 (BSHD, a Tensor or TensorMap), the projected
// keys; values: [batch, seq, kv_heads, v_head_dim] float32. positions: what the source reads for
// the keys (Positions, or MropePositions for M-RoPE). slots: [batch, seq], the slot of each token
// (negative: skipped). cache: kv_cache(...) or paged_kv_cache(...) over the caller's buffers.
// Writes each token's rotated key and its value, converted to each buffer's dtype, into its slot;
// nothing else of the cache is touched. Throws posemb::Error (nothing written) for a slot out of
// range or used twice, a cache whose kv_heads, batch, head_dim or dtype do not fit, a q8_0
// head_dim not a multiple of 32, an fp8 scale that is not finite and > 0, buffers that overlap,
// and whatever the source refuses. Sources: every rotary source of rotate.hpp that rotates
// tensors forward (RopeSpec, RopeTable<float>, Xpos{spec, Key}, MropeSpec, MropeTable<float>,
// Fope, HfFloat32Rope, ...). Up to threads.count threads share the runs of tokens.
//
// Example (decode: one token per sequence into a paged fp16 cache, vLLM's slot_mapping):
//   const auto cache = posemb::paged_kv_cache(32768, 16, 8,
//       {k_cache.data(), posemb::CacheDtype::Float16, 128},
//       {v_cache.data(), posemb::CacheDtype::Float16, 128});
//   posemb::append_rotated(k, v, positions, table, posemb::SlotMapping(slots.data(), batch, 1),
//                          cache);
template <class K, class V, class Source>
void append_rotated(const K& keys, const V& values,
                    const typename rotary_source_traits<Source>::positions_type& positions,
                    const Source& source, const SlotMapping& slots, const KvCache& cache,
                    const Threads& threads = {}) {
  static_assert(detail::require_tensor_source<K, Source>());
  static_assert(std::is_same_v<scalar_of_t<K>, float> && std::is_same_v<scalar_of_t<V>, float>,
                "posemb: append_rotated reads float32 keys and values");
  using Traits = rotary_source_traits<Source>;
  const ActivationShape k_shape(keys.dimensions(), TensorLayout::BSHD);
  const ActivationShape v_shape(values.dimensions(), TensorLayout::BSHD);
  detail::check_threads(threads);
  if (v_shape.batch != k_shape.batch || v_shape.seq != k_shape.seq ||
      v_shape.heads != k_shape.heads) {
    detail::fail("values shape",
                 "[" + std::to_string(v_shape.batch) + ", " + std::to_string(v_shape.seq) + ", " +
                     std::to_string(v_shape.heads) + ", ...]",
                 "expected the keys' [batch, seq, kv_heads] = [" + std::to_string(k_shape.batch) +
                     ", " + std::to_string(k_shape.seq) + ", " + std::to_string(k_shape.heads) +
                     "]");
  }
  detail::check_geometry(cache, k_shape);
  detail::check_buffer(cache.keys, "keys", k_shape.head_dim);
  detail::check_buffer(cache.values, "values", v_shape.head_dim);
  // Buffers kept per thread across calls: a decode step allocates nothing.
  // (The lambda below reads the caller's runs through a reference: a thread_local named in it
  // would be each worker's own.)
  thread_local std::vector<std::int64_t> used_slots;
  thread_local std::vector<detail::AppendRun> caller_runs;
  std::vector<detail::AppendRun>& runs = caller_runs;
  detail::check_slots(slots, cache, k_shape, used_slots);
  const Eigen::Index k_bytes = cache.bytes(cache.keys), v_bytes = cache.bytes(cache.values);
  detail::check_disjoint({{"cache.keys", cache.keys.data, k_bytes, true},
                          {"cache.values", cache.values.data, v_bytes, true},
                          {"keys", keys.data(), k_shape.size() * 4, false},
                          {"values", values.data(), v_shape.size() * 4, false},
                          {"slots", slots.data, slots.batch * slots.seq * 8, false}});
  const auto engine = detail::checked_engine(source, positions, k_shape);

  const bool float32_keys = cache.keys.dtype == CacheDtype::Float32;
  detail::append_runs(slots, cache,
                      detail::run_tokens(k_shape.heads, k_shape.head_dim, float32_keys), runs);
  Eigen::Index tokens = 0;
  for (const auto& run : runs) tokens += run.count;
  const Eigen::Index written = tokens * k_shape.heads *
                               (cache_row_bytes(cache.keys.dtype, k_shape.head_dim) +
                                cache_row_bytes(cache.values.dtype, v_shape.head_dim));
  const bool stream = detail::use_streaming_stores(static_cast<std::size_t>(written));
  const int parts =
      detail::parts_for(tokens * k_shape.heads * (k_shape.head_dim + v_shape.head_dim), threads);
  detail::parallel_for(
      static_cast<Eigen::Index>(runs.size()), parts, threads,
      [&](Eigen::Index begin, Eigen::Index end) {
        thread_local detail::AppendScratch scratch;
        for (Eigen::Index i = begin; i < end; ++i) {
          const detail::AppendRun& run = runs[static_cast<std::size_t>(i)];
          if (float32_keys) {  // straight into the cache
            detail::rotate_run<Traits>(engine, source, positions, k_shape, keys.data(), run,
                                       detail::cache_target(cache, run),
                                       stream ? detail::StreamChoice::Stream
                                              : detail::StreamChoice::NoStream);
          } else {  // into the thread's buffer, then converted into the cache
            scratch.rotated.resize(
                static_cast<std::size_t>(run.count * k_shape.heads * k_shape.head_dim));
            const ActivationShape window({1, run.count, k_shape.heads, k_shape.head_dim},
                                         TensorLayout::BSHD);
            detail::rotate_run<Traits>(engine, source, positions, k_shape, keys.data(), run,
                                       {scratch.rotated.data(), window, 0},
                                       detail::StreamChoice::NoStream);
            detail::store_rows(cache, cache.keys, run, scratch.rotated.data(), stream,
                               scratch.converted);
          }
          detail::store_rows(cache, cache.values, run,
                             values.data() + v_shape.offset(run.b, run.s0, 0), stream,
                             scratch.converted);
        }
        if (stream) detail::stream_fence();
      });
}

}  // namespace posemb
