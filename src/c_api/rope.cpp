// The C API's rotary sources: RoPE from explicit parameters or a layer, cos/sin tables, M-RoPE,
// and their rotations in place and out of place (rotate.hpp).
#include <algorithm>
#include <cstdint>
#include <string>

#include "boundary.hpp"
#include "handles.hpp"
#include "rotate.hpp"

using posemb::c_api::guarded;
using posemb::c_api::require_pointer;
using posemb::c_api::token_positions;

namespace {

posemb::Pairing pairing_of(posemb_pairing pairing) {
  if (pairing != POSEMB_PAIRING_INTERLEAVED && pairing != POSEMB_PAIRING_ROTATE_HALF) {
    posemb::detail::fail(
        "pairing", static_cast<int>(pairing),
        "expected POSEMB_PAIRING_INTERLEAVED (0) or POSEMB_PAIRING_ROTATE_HALF (1)");
  }
  return pairing == POSEMB_PAIRING_INTERLEAVED ? posemb::Pairing::Interleaved
                                               : posemb::Pairing::RotateHalf;
}

const posemb::RopeSpec& spec_of(const posemb_rope* rope) {
  return require_pointer(rope, "rope", "a posemb_rope")->spec;
}

auto mrope_positions(const int64_t* ids, int64_t rows) {
  return [ids, rows](const posemb::c_api::CheckedShape& shape, auto&& body) {
    posemb::c_api::with_mrope_positions(ids, rows, shape, body);
  };
}

}  // namespace

extern "C" {

posemb_status posemb_rope_create(const double* inv_freq, size_t n_inv_freq, double attention_scale,
                                 posemb_pairing pairing, int32_t head_dim, int32_t rotary_offset,
                                 posemb_rope** out) {
  return guarded([&] {
    require_pointer(inv_freq, "inv_freq", "a pointer to rotary_dim / 2 inverse frequencies");
    require_pointer(out, "out", "a posemb_rope* to write");
    if (n_inv_freq == 0 || n_inv_freq > (1u << 30)) {
      posemb::detail::fail("n_inv_freq", n_inv_freq, "expected 1 .. 2^30 frequencies");
    }
    posemb::RopeSpec spec;
    spec.inv_freq =
        Eigen::Map<const Eigen::VectorXd>(inv_freq, static_cast<Eigen::Index>(n_inv_freq));
    spec.attention_scale = attention_scale;
    spec.pairing = pairing_of(pairing);
    spec.rotary_dim = static_cast<int>(2 * n_inv_freq);
    spec.rotary_offset = rotary_offset;
    spec.head_dim = head_dim;
    spec.validate();
    *out = new posemb_rope{std::move(spec)};
  });
}

posemb_status posemb_rope_create_default(int32_t head_dim, int32_t rotary_dim, double base,
                                         posemb_pairing pairing, posemb_rope** out) {
  return guarded([&] {
    require_pointer(out, "out", "a posemb_rope* to write");
    *out = new posemb_rope{posemb::default_rope_spec(posemb::RotaryDims{head_dim, rotary_dim}, base,
                                                     pairing_of(pairing))};
  });
}

void posemb_rope_free(posemb_rope* rope) { delete rope; }

posemb_status posemb_rope_get_info(const posemb_rope* rope, posemb_rope_info* out) {
  return guarded([&] {
    const posemb::RopeSpec& spec = spec_of(rope);
    *require_pointer(out, "out", "a posemb_rope_info to write") = {
        spec.head_dim, spec.rotary_dim, spec.rotary_offset,
        spec.pairing == posemb::Pairing::Interleaved ? POSEMB_PAIRING_INTERLEAVED
                                                     : POSEMB_PAIRING_ROTATE_HALF,
        spec.attention_scale};
  });
}

posemb_status posemb_rope_inv_freq(const posemb_rope* rope, double* out, size_t capacity,
                                   size_t* count) {
  return guarded([&] {
    const posemb::RopeSpec& spec = spec_of(rope);
    require_pointer(out, "out", "a buffer of rotary_dim / 2 doubles");
    require_pointer(count, "count", "a size_t to write");
    const auto n = static_cast<size_t>(spec.inv_freq.size());
    if (capacity < n) {
      posemb::detail::fail("capacity", capacity,
                           "expected >= rotary_dim / 2 = " + std::to_string(n));
    }
    std::copy(spec.inv_freq.data(), spec.inv_freq.data() + n, out);
    *count = n;
  });
}

posemb_status posemb_rope_rotate_inplace(const posemb_rope* rope, posemb_dtype dtype, void* x,
                                         const posemb_shape* shape,
                                         const posemb_positions* positions,
                                         posemb_rotation rotation) {
  return guarded([&] {
    posemb::c_api::rotate_inplace_c(spec_of(rope), dtype, x, shape, rotation,
                                    token_positions(positions));
  });
}

posemb_status posemb_rope_rotate(const posemb_rope* rope, posemb_dtype dtype, const void* x,
                                 const posemb_shape* x_shape, void* out,
                                 const posemb_shape* out_shape, int64_t out_seq_offset,
                                 const posemb_positions* positions, posemb_rotation rotation) {
  return guarded([&] {
    posemb::c_api::rotate_c(spec_of(rope), dtype, x, x_shape, out, out_shape, out_seq_offset,
                            rotation, token_positions(positions));
  });
}

posemb_status posemb_rope_table_create(const posemb_rope* rope, int64_t first_position,
                                       int64_t count, posemb_rope_table** out) {
  return guarded([&] {
    const posemb::RopeSpec& spec = spec_of(rope);
    require_pointer(out, "out", "a posemb_rope_table* to write");
    *out = new posemb_rope_table{posemb::RopeTable<float>(spec, first_position, count)};
  });
}

void posemb_rope_table_free(posemb_rope_table* table) { delete table; }

posemb_status posemb_rope_table_data(const posemb_rope_table* table, const float** cos,
                                     const float** sin, int64_t* rows, int64_t* cols) {
  return guarded([&] {
    require_pointer(table, "table", "a posemb_rope_table");
    require_pointer(cos, "cos", "a const float* to write");
    require_pointer(sin, "sin", "a const float* to write");
    require_pointer(rows, "rows", "an int64_t to write");
    require_pointer(cols, "cols", "an int64_t to write");
    const posemb::RopeTable<float>& t = table->table;
    *cos = t.cos().data();
    *sin = t.sin().data();
    *rows = t.cos().rows();
    *cols = t.cos().cols();
  });
}

posemb_status posemb_rope_table_rotate_inplace(const posemb_rope_table* table, posemb_dtype dtype,
                                               void* x, const posemb_shape* shape,
                                               const posemb_positions* positions,
                                               posemb_rotation rotation) {
  return guarded([&] {
    require_pointer(table, "table", "a posemb_rope_table");
    posemb::c_api::rotate_inplace_c(table->table, dtype, x, shape, rotation,
                                    token_positions(positions));
  });
}

posemb_status posemb_rope_table_rotate(const posemb_rope_table* table, posemb_dtype dtype,
                                       const void* x, const posemb_shape* x_shape, void* out,
                                       const posemb_shape* out_shape, int64_t out_seq_offset,
                                       const posemb_positions* positions,
                                       posemb_rotation rotation) {
  return guarded([&] {
    require_pointer(table, "table", "a posemb_rope_table");
    posemb::c_api::rotate_c(table->table, dtype, x, x_shape, out, out_shape, out_seq_offset,
                            rotation, token_positions(positions));
  });
}

posemb_status posemb_mrope_create(const posemb_rope* rope, const int32_t* sections,
                                  posemb_mrope_layout layout, posemb_mrope** out) {
  return guarded([&] {
    const posemb::RopeSpec& spec = spec_of(rope);
    require_pointer(sections, "sections", "a pointer to 3 section sizes (t, h, w)");
    require_pointer(out, "out", "a posemb_mrope* to write");
    if (layout != POSEMB_MROPE_CHUNKED && layout != POSEMB_MROPE_INTERLEAVED) {
      posemb::detail::fail("layout", static_cast<int>(layout),
                           "expected POSEMB_MROPE_CHUNKED (0) or POSEMB_MROPE_INTERLEAVED (1)");
    }
    *out = new posemb_mrope{posemb::make_mrope_spec(spec, {sections[0], sections[1], sections[2]},
                                                    layout == POSEMB_MROPE_CHUNKED
                                                        ? posemb::MropeLayout::Chunked
                                                        : posemb::MropeLayout::Interleaved)};
  });
}

void posemb_mrope_free(posemb_mrope* mrope) { delete mrope; }

posemb_status posemb_mrope_rotate_inplace(const posemb_mrope* mrope, posemb_dtype dtype, void* x,
                                          const posemb_shape* shape, const int64_t* position_ids,
                                          int64_t rows, posemb_rotation rotation) {
  return guarded([&] {
    require_pointer(mrope, "mrope", "a posemb_mrope");
    posemb::c_api::rotate_inplace_c(mrope->spec, dtype, x, shape, rotation,
                                    mrope_positions(position_ids, rows));
  });
}

posemb_status posemb_mrope_rotate(const posemb_mrope* mrope, posemb_dtype dtype, const void* x,
                                  const posemb_shape* x_shape, void* out,
                                  const posemb_shape* out_shape, int64_t out_seq_offset,
                                  const int64_t* position_ids, int64_t rows,
                                  posemb_rotation rotation) {
  return guarded([&] {
    require_pointer(mrope, "mrope", "a posemb_mrope");
    posemb::c_api::rotate_c(mrope->spec, dtype, x, x_shape, out, out_shape, out_seq_offset,
                            rotation, mrope_positions(position_ids, rows));
  });
}

}  // extern "C"
