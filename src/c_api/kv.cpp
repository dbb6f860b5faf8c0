// The C API's KV-cache append: a posemb_kv_cache and posemb_kv_shape mapped onto
// posemb::append_rotated (posemb/kv/append.hpp) with the handle's source, no copy of the keys,
// values, slots or cache.
#include <cstdint>
#include <string>

#include "boundary.hpp"
#include "handles.hpp"
#include "posemb/kv/append.hpp"
#include "rotate.hpp"

using posemb::c_api::guarded;
using posemb::c_api::require_pointer;

namespace {

posemb::CacheDtype cache_dtype(posemb_cache_dtype dtype, const std::string& name) {
  if (dtype < POSEMB_CACHE_F32 || dtype > POSEMB_CACHE_Q8_0) {
    posemb::detail::fail(name, static_cast<int>(dtype),
                         "expected POSEMB_CACHE_F32 (0), POSEMB_CACHE_F16 (1), POSEMB_CACHE_BF16 "
                         "(2), POSEMB_CACHE_FP8_E4M3 (3) or POSEMB_CACHE_Q8_0 (4)");
  }
  return static_cast<posemb::CacheDtype>(dtype);
}

// The C++ buffer of one posemb_cache_buffer (its size checked later, against the geometry).
posemb::CacheBuffer buffer_of(const posemb_cache_buffer& b, const char* name,
                              std::int64_t head_dim) {
  require_pointer(b.data, (std::string(name) + ".data").c_str(), "a pointer to the cache buffer");
  return {b.data, cache_dtype(b.dtype, std::string(name) + ".dtype"), head_dim, b.scale};
}

posemb::KvCache cache_of(const posemb_kv_cache* c, const posemb_kv_shape& shape) {
  require_pointer(c, "cache", "a pointer to a posemb_kv_cache");
  const posemb::CacheBuffer keys = buffer_of(c->keys, "cache.keys", shape.head_dim);
  const posemb::CacheBuffer values = buffer_of(c->values, "cache.values", shape.v_head_dim);
  posemb::c_api::require_count("cache.slots", c->slots);
  if (c->layout == POSEMB_CACHE_PAGED) {
    return posemb::paged_kv_cache(c->slots, c->block_size, shape.kv_heads, keys, values);
  }
  if (c->layout != POSEMB_CACHE_BHSD && c->layout != POSEMB_CACHE_BSHD) {
    posemb::detail::fail(
        "cache.layout", static_cast<int>(c->layout),
        "expected POSEMB_CACHE_BHSD (0), POSEMB_CACHE_BSHD (1) or POSEMB_CACHE_PAGED (2)");
  }
  if (c->block_size != 0) {
    posemb::detail::fail("cache.block_size", c->block_size,
                         "expected 0 for a contiguous cache (POSEMB_CACHE_PAGED only)");
  }
  return posemb::kv_cache(c->layout == POSEMB_CACHE_BHSD ? posemb::CacheLayout::BHSD
                                                         : posemb::CacheLayout::BSHD,
                          shape.batch, c->slots, shape.kv_heads, keys, values);
}

// Throws unless the buffer holds the geometry's bytes (whose count must fit in int64), and for a
// q8_0 head_dim that is not a multiple of 32.
void require_bytes(const posemb::KvCache& cache, const posemb::CacheBuffer& buffer,
                   std::size_t bytes, const char* name, const char* head_dim_name) {
  const std::int64_t row = posemb::cache_row_bytes(buffer.dtype, buffer.head_dim, head_dim_name);
  const char* what = "cache bytes (rows * slots * kv_heads * row bytes)";
  std::int64_t need = posemb::c_api::checked_product(cache.rows, cache.slots, what);
  need = posemb::c_api::checked_product(need, cache.kv_heads, what);
  need = posemb::c_api::checked_product(need, row, what);
  if (static_cast<std::uint64_t>(need) > bytes) {
    posemb::detail::fail(name, bytes,
                         "expected >= " + std::to_string(need) + " (the cache's geometry)");
  }
}

// The whole call for an engine source: every C argument checked, then the C++ call.
template <class Source>
void append_c(const Source& source, const float* keys, const float* values,
              const posemb_kv_shape* shape, const posemb_positions* positions, const int64_t* slots,
              const posemb_kv_cache* cache, int32_t threads) {
  require_pointer(keys, "keys", "a pointer to the keys [batch, seq, kv_heads, head_dim]");
  require_pointer(values, "values", "a pointer to the values [batch, seq, kv_heads, v_head_dim]");
  require_pointer(shape, "shape", "a pointer to a posemb_kv_shape");
  require_pointer(slots, "slots", "a pointer to the slots [batch, seq]");
  const posemb_kv_shape s = *shape;
  posemb::c_api::require_count("shape.batch", s.batch);
  posemb::c_api::require_count("shape.seq", s.seq);
  posemb::c_api::require_count("shape.kv_heads", s.kv_heads);
  posemb::c_api::require_count("shape.head_dim", s.head_dim);
  posemb::c_api::require_count("shape.v_head_dim", s.v_head_dim);
  const char* count = "shape (batch * seq * kv_heads * head_dim)";
  const std::int64_t tokens = posemb::c_api::checked_product(s.batch, s.seq, count);
  const std::int64_t per_token = posemb::c_api::checked_product(s.kv_heads, 4, count);
  posemb::c_api::checked_product(posemb::c_api::checked_product(tokens, per_token, count),
                                 s.head_dim > s.v_head_dim ? s.head_dim : s.v_head_dim, count);
  if (threads < 1) posemb::detail::fail("threads", threads, "expected a number >= 1");
  const posemb::KvCache kv = cache_of(cache, s);
  require_bytes(kv, kv.keys, cache->keys.bytes, "cache.keys.bytes", "cache.keys.head_dim");
  require_bytes(kv, kv.values, cache->values.bytes, "cache.values.bytes", "cache.values.head_dim");
  const posemb::TensorMap4<const float> k(keys, s.batch, s.seq, s.kv_heads, s.head_dim);
  const posemb::TensorMap4<const float> v(values, s.batch, s.seq, s.kv_heads, s.v_head_dim);
  const posemb::c_api::CheckedShape grid{posemb::TensorLayout::BSHD,
                                         {s.batch, s.seq, s.kv_heads, s.head_dim},
                                         s.batch,
                                         s.seq,
                                         tokens * s.kv_heads * s.head_dim};
  posemb::c_api::with_positions(positions, grid, [&](const posemb::Positions& at) {
    posemb::append_rotated(k, v, at, source, posemb::SlotMapping(slots, s.batch, s.seq), kv,
                           posemb::Threads{threads});
  });
}

}  // namespace

extern "C" {

posemb_status posemb_rope_append_rotated(const posemb_rope* rope, const float* keys,
                                         const float* values, const posemb_kv_shape* shape,
                                         const posemb_positions* positions, const int64_t* slots,
                                         const posemb_kv_cache* cache, int32_t threads) {
  return guarded([&] {
    const posemb::RopeSpec& spec = require_pointer(rope, "rope", "a posemb_rope")->spec;
    append_c(spec, keys, values, shape, positions, slots, cache, threads);
  });
}

posemb_status posemb_rope_table_append_rotated(const posemb_rope_table* table, const float* keys,
                                               const float* values, const posemb_kv_shape* shape,
                                               const posemb_positions* positions,
                                               const int64_t* slots, const posemb_kv_cache* cache,
                                               int32_t threads) {
  return guarded([&] {
    const posemb::RopeTable<float>& t =
        require_pointer(table, "table", "a posemb_rope_table")->table;
    append_c(t, keys, values, shape, positions, slots, cache, threads);
  });
}

}  // extern "C"
