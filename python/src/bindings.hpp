// What the binding files share: their registration functions and the rotation driver every
// rotary entry point (RoPE, M-RoPE, vision, xPos, FoPE) runs through.
#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "posemb/model/hf_float32_scheme.hpp"
#include "posemb/model/positions.hpp"

namespace posemb::python {

void bind_rotary(py::module_& m);
void bind_model(py::module_& m);
void bind_bias(py::module_& m);
void bind_hf_float32(py::module_& m);
void bind_kv_cache(py::module_& m);
void bind_backward(py::module_& m);

// The layer's RoPE scheme (kind 'rope'), else posemb.Error.
RopeScheme rope_scheme_of(const LayerPositions& layer);
// The scheme at seq_len in angle mode `angles` ("exact": a RopeSpec; "hf-float32": an
// HfFloat32Rope), the CLI's --angles.
py::object rope_in_mode(const RopeScheme& scheme, std::optional<std::int64_t> seq_len,
                        const std::string& angles);

// A FoPE object with the coefficients it reads (the C++ Fope maps them; the holder owns them).
struct FopeHolder {
  std::shared_ptr<const std::vector<float>> coefficients;  // sin then cos, or null (owned by fope)
  Fope fope;
};

// f() run with the GIL released (posemb's kernels touch no Python object); its result is
// returned after the GIL is taken back.
template <class F>
auto without_gil(F&& f) {
  py::gil_scoped_release release;
  return f();
}

// Rotates x (a numpy array or torch tensor, `rank` 4, or 3 when `allow_rank3` reads
// [tokens, heads, head_dim] as [1, tokens, heads, head_dim]) in place or into a new array of x's
// kind, without the GIL. kernel(in, out) is called with TensorMaps of x's storage type T:
// in place, in and out are the same map; out of place, `in` maps x (read only) and `out` the new
// array. Returns x (in place) or the new array.
template <class Kernel>
py::object rotate(const py::object& x, bool in_place, Kernel&& kernel, bool allow_rank3 = false) {
  const int rank = allow_rank3 && view_of(x, "x").rank() == 3 ? 3 : 4;
  const ArrayView in = activation(x, "x", rank, in_place);
  const ArrayView fresh = in_place ? ArrayView{} : new_array_like(in, in.dtype, in.shape);
  const ArrayView& out = in_place ? in : fresh;
  // [batch, seq, heads, head_dim] (or the layout's order); rank 3 is one batch row.
  std::array<Eigen::Index, 4> dims{1, 1, 1, 1};
  std::copy(in.shape.begin(), in.shape.end(), dims.begin() + (4 - rank));
  with_storage_type(in, [&](auto tag) {
    using T = decltype(tag);
    TensorMap4<T> in_map(static_cast<T*>(in.data), dims[0], dims[1], dims[2], dims[3]);
    TensorMap4<T> out_map(static_cast<T*>(out.data), dims[0], dims[1], dims[2], dims[3]);
    py::gil_scoped_release release;
    kernel(in_map, out_map);
    return 0;
  });
  return in_place ? x : out.object;
}

// The in-place call when in and out are one map, else the out-of-place one:
//   run(x, out, [&](auto& y) { in_place(y); }, [&](const auto& a, auto& b) { out_of_place(a, b); })
template <class X, class InPlace, class OutOfPlace>
void in_or_out(X& in, X& out, InPlace&& in_place, OutOfPlace&& out_of_place) {
  if (in.data() == out.data()) {
    in_place(in);
  } else {
    out_of_place(in, out);
  }
}

}  // namespace posemb::python
