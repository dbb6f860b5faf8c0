// The C API's rotations: a C buffer description (dtype, posemb_shape, posemb_positions) mapped
// onto posemb::rotate / rotate_inplace with the handle's source, no copy of the activations.
#pragma once

#include <unsupported/Eigen/CXX11/Tensor>
#include <cstdint>
#include <string>

#include "boundary.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/rotate.hpp"

namespace posemb::c_api {

template <class T>
using ActivationMap = Eigen::TensorMap<Eigen::Tensor<T, 4, Eigen::RowMajor>>;

inline TensorLayout tensor_layout(posemb_layout layout, const std::string& name) {
  if (layout != POSEMB_LAYOUT_BSHD && layout != POSEMB_LAYOUT_BHSD) {
    detail::fail(name + ".layout", static_cast<int>(layout),
                 "expected POSEMB_LAYOUT_BSHD (0) or POSEMB_LAYOUT_BHSD (1)");
  }
  return layout == POSEMB_LAYOUT_BSHD ? TensorLayout::BSHD : TensorLayout::BHSD;
}

inline Rotation rotation_of(posemb_rotation rotation) {
  switch (rotation) {
    case POSEMB_FORWARD:
      return Rotation::Forward;
    case POSEMB_INVERSE:
      return Rotation::Inverse;
    case POSEMB_TRANSPOSE:
      return Rotation::Transpose;
    default:
      detail::fail("rotation", static_cast<int>(rotation),
                   "expected POSEMB_FORWARD (0), POSEMB_INVERSE (1) or POSEMB_TRANSPOSE (2)");
  }
}

// A checked shape: every dimension >= 1, the element count within int64.
struct CheckedShape {
  TensorLayout layout;
  Eigen::array<Eigen::Index, 4> dims;  // in the buffer's order
  std::int64_t batch, seq, elements;
};

inline CheckedShape checked_shape(const posemb_shape* shape, const std::string& name) {
  require_pointer(shape, name.c_str(), "a pointer to the buffer's posemb_shape");
  const TensorLayout layout = tensor_layout(shape->layout, name);
  require_count((name + ".batch").c_str(), shape->batch);
  require_count((name + ".seq").c_str(), shape->seq);
  require_count((name + ".heads").c_str(), shape->heads);
  require_count((name + ".head_dim").c_str(), shape->head_dim);
  const char* count = "shape (batch * seq * heads * head_dim)";
  std::int64_t elements = checked_product(shape->batch, shape->seq, count);
  elements = checked_product(elements, shape->heads, count);
  elements = checked_product(elements, shape->head_dim, count);
  checked_product(elements, 4, count);  // the bytes of a float32 buffer
  const bool bshd = layout == TensorLayout::BSHD;
  return {layout,
          {shape->batch, bshd ? shape->seq : shape->heads, bshd ? shape->heads : shape->seq,
           shape->head_dim},
          shape->batch,
          shape->seq,
          elements};
}

inline std::size_t dtype_size(posemb_dtype dtype) {
  if (dtype != POSEMB_F32 && dtype != POSEMB_F16 && dtype != POSEMB_BF16) {
    detail::fail("dtype", static_cast<int>(dtype),
                 "expected POSEMB_F32 (0), POSEMB_F16 (1) or POSEMB_BF16 (2)");
  }
  return dtype == POSEMB_F32 ? 4 : 2;
}

// Calls body(T*) with the buffer as T = float, Eigen::half or Eigen::bfloat16.
template <class Body>
void with_dtype(posemb_dtype dtype, void* data, Body&& body) {
  dtype_size(dtype);
  if (dtype == POSEMB_F32) body(static_cast<float*>(data));
  if (dtype == POSEMB_F16) body(static_cast<Eigen::half*>(data));
  if (dtype == POSEMB_BF16) body(static_cast<Eigen::bfloat16*>(data));
}

// Calls body(const T*) with a read-only buffer as T = float, Eigen::half or Eigen::bfloat16.
template <class Body>
void with_dtype(posemb_dtype dtype, const void* data, Body&& body) {
  dtype_size(dtype);
  if (dtype == POSEMB_F32) body(static_cast<const float*>(data));
  if (dtype == POSEMB_F16) body(static_cast<const Eigen::half*>(data));
  if (dtype == POSEMB_BF16) body(static_cast<const Eigen::bfloat16*>(data));
}

// Calls body(const Positions&) with the token positions of a [batch, seq] grid.
template <class Body>
void with_positions(const posemb_positions* p, const CheckedShape& shape, Body&& body) {
  require_pointer(p, "positions", "a pointer to a posemb_positions");
  if (p->ids == nullptr) {
    if (p->offset < 0) detail::fail("positions.offset", p->offset, "expected >= 0");
    if (p->offset > std::numeric_limits<std::int64_t>::max() - (shape.seq - 1)) {
      detail::fail("positions.offset", p->offset, "expected offset + seq - 1 to fit in int64");
    }
    body(Positions(p->offset));
    return;
  }
  if (p->offset != 0) {
    detail::fail("positions.offset", p->offset, "expected 0 when positions.ids is given");
  }
  if (p->rows != 1 && p->rows != shape.batch) {
    detail::fail("positions.rows", p->rows, "expected 1 or batch = " + std::to_string(shape.batch));
  }
  // A per-thread buffer: a decode loop of one shape allocates once, not per call.
  thread_local PositionMatrix ids;
  ids = Eigen::Map<const PositionMatrix>(p->ids, p->rows, shape.seq);
  body(Positions(ids));
}

// Positions of a posemb_positions, as the rotations below take them.
inline auto token_positions(const posemb_positions* positions) {
  return [positions](const CheckedShape& shape, auto&& body) {
    with_positions(positions, shape, body);
  };
}

// Calls body(const MropePositions&) with position_ids [3, rows, seq].
template <class Body>
void with_mrope_positions(const std::int64_t* ids, std::int64_t rows, const CheckedShape& shape,
                          Body&& body) {
  require_pointer(ids, "position_ids", "a pointer to [3, rows, seq] positions");
  if (rows != 1 && rows != shape.batch) {
    detail::fail("rows", rows, "expected 1 or batch = " + std::to_string(shape.batch));
  }
  thread_local MropePositionTensor thw;  // as with_positions' buffer
  if (thw.dimension(1) != rows || thw.dimension(2) != shape.seq) thw.resize(3, rows, shape.seq);
  std::copy(ids, ids + thw.size(), thw.data());
  body(MropePositions(thw));
}

// Throws when the byte ranges [x, x + x_bytes) and [out, out + out_bytes) overlap.
inline void require_apart(const void* x, std::int64_t x_bytes, const void* out,
                          std::int64_t out_bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(x);
  const auto b = reinterpret_cast<std::uintptr_t>(out);
  if (a < b + static_cast<std::uintptr_t>(out_bytes) &&
      b < a + static_cast<std::uintptr_t>(x_bytes)) {
    detail::fail("out", "a buffer overlapping x",
                 "expected separate buffers (rotate in place with the _inplace function)");
  }
}

// x rotated in place by source, at positions made by with_pos(shape, body).
template <class Source, class WithPositions>
void rotate_inplace_c(const Source& source, posemb_dtype dtype, void* x, const posemb_shape* shape,
                      posemb_rotation rotation, WithPositions&& with_pos) {
  require_pointer(x, "x", "a pointer to the activation buffer");
  const CheckedShape s = checked_shape(shape, "shape");
  RotateOptions options;  // set in place: no copies of its Threads' std::function per call
  options.layouts = s.layout;
  options.rotation = rotation_of(rotation);
  with_dtype(dtype, x, [&](auto* data) {
    using T = std::remove_pointer_t<decltype(data)>;
    ActivationMap<T> map(data, s.dims);
    with_pos(s, [&](const auto& positions) { rotate_inplace(map, positions, source, options); });
  });
}

// x rotated into out (layouts of their own, out's tokens from out_seq_offset).
template <class Source, class WithPositions>
void rotate_c(const Source& source, posemb_dtype dtype, const void* x, const posemb_shape* x_shape,
              void* out, const posemb_shape* out_shape, std::int64_t out_seq_offset,
              posemb_rotation rotation, WithPositions&& with_pos) {
  require_pointer(x, "x", "a pointer to the input buffer");
  require_pointer(out, "out", "a pointer to the output buffer");
  const CheckedShape in = checked_shape(x_shape, "x_shape");
  const CheckedShape to = checked_shape(out_shape, "out_shape");
  const auto bytes = static_cast<std::int64_t>(dtype_size(dtype));
  require_apart(x, in.elements * bytes, out, to.elements * bytes);
  RotateOptions options;
  options.layouts = Layouts(in.layout, to.layout, out_seq_offset);
  options.rotation = rotation_of(rotation);
  with_dtype(dtype, out, [&](auto* data) {
    using T = std::remove_pointer_t<decltype(data)>;
    const Eigen::TensorMap<const Eigen::Tensor<T, 4, Eigen::RowMajor>> input(
        static_cast<const T*>(x), in.dims);
    ActivationMap<T> output(data, to.dims);
    with_pos(in, [&](const auto& positions) { rotate(input, output, positions, source, options); });
  });
}

}  // namespace posemb::c_api
