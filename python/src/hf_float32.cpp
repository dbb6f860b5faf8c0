// The angle mode "hf-float32" (posemb/rotary/hf_float32.hpp): HfFloat32Rope, the rotation source
// with transformers' float32 arithmetic, and the calls that build it from a model's scheme
// (hf_float32_rope, rope_spec(angles="hf-float32")) or from a variant's parameters (the spec
// builders' angles="hf-float32").
#include <pybind11/stl.h>

#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

#include "bindings.hpp"

namespace posemb::python {

namespace {

std::string repr(const HfFloat32Rope& rope) {
  std::ostringstream scale;
  scale.precision(17);
  scale << rope.attention_scale;
  return "HfFloat32Rope(head_dim=" + std::to_string(rope.head_dim) +
         ", rotary_dim=" + std::to_string(rope.rotary_dim) + ", pairing='" +
         to_string(rope.pairing) + "', attention_scale=" + scale.str() +
         ", rotary_offset=" + std::to_string(rope.rotary_offset) + ")";
}

// An HfFloat32Rope from a given float32 inv_freq buffer (e.g. a model's rotary_emb.inv_freq).
HfFloat32Rope rope_from_buffer(const py::object& inv_freq, int head_dim, double attention_scale,
                               const std::string& pairing, int rotary_offset) {
  const py::object values = py::module_::import("numpy").attr("asarray")(inv_freq);
  const ArrayView v = view_of(values, "inv_freq");
  if (v.dtype != Dtype::Float32) {
    fail("inv_freq.dtype", v.dtype_text(), "expected float32 (HF's inv_freq buffer)");
  }
  if (v.rank() != 1) fail("inv_freq.shape", v.shape_text(), "expected [rotary_dim / 2]");
  Eigen::VectorXf inv(v.shape[0]);
  for (Eigen::Index i = 0; i < v.shape[0]; ++i) {
    inv[i] = static_cast<const float*>(v.data)[i * v.strides[0]];
  }
  const int rotary_dim = static_cast<int>(2 * v.shape[0]);
  HfFloat32Rope rope;
  rope.inv_freq = std::move(inv);
  rope.attention_scale = attention_scale;
  rope.pairing = pairing_of(pairing);
  rope.rotary_dim = rotary_dim;
  rope.rotary_offset = rotary_offset;
  rope.head_dim = head_dim;
  rope.validate();
  return rope;
}

// The RopeScheme of a RopeScheme, a LayerPositions (kind 'rope') or a ModelPositions (one
// scheme shared by its RoPE layers).
RopeScheme scheme_of(const py::object& source) {
  if (py::isinstance<RopeScheme>(source)) return source.cast<RopeScheme>();
  if (py::isinstance<LayerPositions>(source)) {
    return rope_scheme_of(source.cast<const LayerPositions&>());
  }
  if (py::isinstance<ModelPositions>(source)) {
    return source.cast<const ModelPositions&>().rope_scheme();
  }
  fail("scheme", std::string(py::str(py::type::handle_of(source).attr("__qualname__"))),
       "expected a RopeScheme, LayerPositions or ModelPositions");
}

constexpr const char* hf_float32_rope_doc = R"doc(The scheme with HuggingFace transformers' float32
arithmetic at seq_len: an HfFloat32Rope (the angle mode 'hf-float32', the CLI's
`--angles hf-float32`). scheme: a RopeScheme (its rotated slice), a LayerPositions (kind 'rope':
over the layer's whole head, features [rotary_offset, rotary_offset + rotary_dim) rotated, as
its exact rope_spec) or a ModelPositions whose RoPE layers share one scheme. seq_len: HF's max position + 1 (dynamic NTK and LongRoPE
depend on it; None: no length known). Rope types default, linear, dynamic, yarn, llama3 and
longrope; others (and M-RoPE) raise posemb.Error.

Example:
    >>> model = posemb.load_model("config.json")
    >>> rope = posemb.hf_float32_rope(model.layers[0], seq_len=4096)
    >>> q = torch.randn(1, 4096, 32, 128, dtype=torch.bfloat16)
    >>> posemb.apply_rope_(q, 0, rope)   # the bits transformers' forward gives, in bfloat16
)doc";

// HF's cos and sin [count, rotary_dim / 2] at positions first_position, ...,
// first_position + count - 1 (hf_float32_cos_sin, rotary/hf_float32.hpp: float32 angle, cos/sin,
// times the attention scale, cast to the storage type named `dtype`), held in float32.
std::pair<py::array_t<float>, py::array_t<float>> cos_sin_rows(const HfFloat32Rope& rope,
                                                               std::int64_t first_position,
                                                               std::int64_t count,
                                                               const std::string& dtype) {
  if (count < 1) fail("count", count, "expected >= 1");
  rope.validate();
  const std::int64_t pairs = rope.pairs();
  std::vector<float> cos(static_cast<std::size_t>(count * pairs)), sin(cos.size());
  with_storage_type(dtype, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_same_v<T, double>) {
      fail("dtype", "'float64'",
           "expected 'float32', 'float16' or 'bfloat16' for an HfFloat32Rope (transformers' "
           "float32 arithmetic)");
    } else {
      for (std::int64_t s = 0; s < count; ++s) {
        const std::size_t at = static_cast<std::size_t>(s * pairs);
        hf_float32_cos_sin<T>(rope, static_cast<double>(first_position + s), cos.data() + at,
                              sin.data() + at);
      }
    }
  });
  return {to_numpy(cos.data(), {count, pairs}), to_numpy(sin.data(), {count, pairs})};
}

}  // namespace

RopeScheme rope_scheme_of(const LayerPositions& layer) {
  if (!layer.rope) fail("kind", to_string(layer.kind), "expected rope for a RoPE spec");
  return *layer.rope;
}

py::object rope_in_mode(const RopeScheme& scheme, std::optional<std::int64_t> seq_len,
                        const std::string& angles) {
  if (parse_angle_mode(angles) == AngleMode::HfFloat32) {
    return py::cast(hf_float32_rope(scheme, seq_len));
  }
  return py::cast(scheme.spec(seq_len));
}

void bind_hf_float32(py::module_& m) {
  py::class_<HfFloat32Rope>(m, "HfFloat32Rope", R"doc(RoPE with HuggingFace transformers' float32
arithmetic, op by op (the angle mode 'hf-float32'): inv_freq is HF's float32 buffer; the angle is
float32(inv_freq * float32(position)), cos/sin of it rounded to float32, times attention_scale
in float32, cast to x's dtype; the rotation x * cos + rotate_half(x) * sin runs in x's dtype
(float32, float16 or bfloat16, each product and sum rounded as PyTorch's CPU kernels do).
A source of apply_rope_ / apply_rope and posemb.nn.Rotary: transpose=True (and a tensor's backward)
is what autograd gives through transformers' code; no inverse. Built by hf_float32_rope, rope_spec(...,
angles='hf-float32'), the spec builders' angles='hf-float32', or from a model's own inv_freq
buffer (its pow may differ from the correctly rounded one by an ulp on some builds).
rotary_offset: the first rotated feature of the head_dim-wide heads (MLA: qk_nope_head_dim).

Example:
    >>> rope = posemb.HfFloat32Rope(hf_model.model.rotary_emb.inv_freq.numpy(), head_dim=128)
    >>> posemb.apply_rope_(q, 0, rope)
)doc")
      .def(py::init(&rope_from_buffer), py::arg("inv_freq"), py::arg("head_dim"),
           py::arg("attention_scale") = 1.0, py::arg("pairing") = "rotate_half",
           py::arg("rotary_offset") = 0)
      .def_property_readonly(
          "inv_freq",
          [](const HfFloat32Rope& r) { return to_numpy(r.inv_freq.data(), {r.inv_freq.size()}); })
      .def_readonly("attention_scale", &HfFloat32Rope::attention_scale)
      .def_property_readonly("pairing", [](const HfFloat32Rope& r) { return to_string(r.pairing); })
      .def_readonly("rotary_dim", &HfFloat32Rope::rotary_dim)
      .def_readonly("rotary_offset", &HfFloat32Rope::rotary_offset)
      .def_readonly("head_dim", &HfFloat32Rope::head_dim)
      .def("__repr__", [](const HfFloat32Rope& r) { return repr(r); })
      .def("__eq__", [](const HfFloat32Rope& a, const HfFloat32Rope& b) {
        return a.inv_freq == b.inv_freq && a.attention_scale == b.attention_scale &&
               a.pairing == b.pairing && a.rotary_dim == b.rotary_dim &&
               a.rotary_offset == b.rotary_offset && a.head_dim == b.head_dim;
      });
  m.def(
      "hf_float32_rope",
      [](const py::object& scheme, std::optional<std::int64_t> seq_len) {
        if (py::isinstance<LayerPositions>(scheme)) {
          return hf_float32_rope(scheme.cast<const LayerPositions&>(), seq_len);
        }
        return hf_float32_rope(scheme_of(scheme), seq_len);
      },
      py::arg("scheme"), py::arg("seq_len") = py::none(), hf_float32_rope_doc);
  m.def("hf_float32_cos_sin", &cos_sin_rows, py::arg("rope"), py::arg("first_position"),
        py::arg("count"), py::arg("dtype") = "float32",
        R"doc(transformers' cos and sin rows [count, rotary_dim / 2] at positions first_position,
..., first_position + count - 1, as its forward forms them: float32 angle
float32(inv_freq * float32(position)), cos/sin rounded to float32, times float32(attention_scale),
cast to dtype ('float32', 'float16' or 'bfloat16': x's dtype), returned as float32 arrays.

Example:
    >>> cos, sin = posemb.hf_float32_cos_sin(rope, 0, 4096, dtype="bfloat16")
)doc");
}

}  // namespace posemb::python
