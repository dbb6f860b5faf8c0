// Rotary schemes: RopeSpec and its builders, RopeTable, and the rotations of RoPE, M-RoPE,
// vision RoPE, xPos and FoPE, each in place (name_) and out of place (name).
#include <pybind11/stl.h>

#include <array>
#include <optional>
#include <sstream>
#include <type_traits>
#include <variant>

#include "bindings.hpp"

namespace posemb::python {

namespace {

using OptInt = std::optional<int>;

// A precomputed cos/sin table: float for float32 / float16 / bfloat16 tensors, double for float64.
struct RopeTableHolder {
  std::variant<RopeTable<float>, RopeTable<double>> table;
  const RopeSpec& spec() const {
    return std::visit([](const auto& t) -> const RopeSpec& { return t.spec(); }, table);
  }
};

RotaryDims dims_of(int head_dim, OptInt rotary_dim) {
  return RotaryDims{head_dim, rotary_dim.value_or(head_dim)};
}

// A builder's result in angle mode `angles` (the CLI's --angles): exact() a RopeSpec,
// hf() an HfFloat32Rope (transformers' float32 arithmetic).
template <class Exact, class Hf>
py::object in_mode(const std::string& angles, Exact&& exact, Hf&& hf) {
  if (parse_angle_mode(angles) == AngleMode::HfFloat32) return py::cast(hf());
  return py::cast(exact());
}

std::string repr(const RopeSpec& spec) {
  std::string text = "RopeSpec(head_dim=" + std::to_string(spec.head_dim) +
                     ", rotary_dim=" + std::to_string(spec.rotary_dim);
  if (spec.rotary_offset) text += ", rotary_offset=" + std::to_string(spec.rotary_offset);
  std::ostringstream scale;
  scale.precision(17);
  scale << spec.attention_scale;
  return text + ", pairing='" + to_string(spec.pairing) + "', attention_scale=" + scale.str() + ")";
}

// A rotation's source, resolved while the GIL is held: a RopeSpec, a RopeTable or an
// HfFloat32Rope.
struct RopeSource {
  const RopeSpec* spec = nullptr;
  const RopeTableHolder* table = nullptr;
  const HfFloat32Rope* hf = nullptr;
};

RopeSource rope_source_of(const py::object& source) {
  if (py::isinstance<RopeSpec>(source)) return {&source.cast<const RopeSpec&>(), nullptr, nullptr};
  if (py::isinstance<RopeTableHolder>(source)) {
    return {nullptr, &source.cast<const RopeTableHolder&>(), nullptr};
  }
  if (py::isinstance<HfFloat32Rope>(source)) {
    return {nullptr, nullptr, &source.cast<const HfFloat32Rope&>()};
  }
  fail("source", std::string(py::str(py::type::handle_of(source).attr("__qualname__"))),
       "expected a RopeSpec, a RopeTable or an HfFloat32Rope");
}

// x rotated by transformers' float32 arithmetic in x's storage type T (float, half, bfloat16;
// HF's float64 models are not covered), forward or its transpose (autograd's backward through
// HF's code), one thread.
template <class T, class X>
void rotate_hf_float32(const HfFloat32Rope& rope, X& in, X& out, const Positions& positions,
                       TensorLayout layout, Rotation rotation) {
  if constexpr (std::is_same_v<T, double>) {
    fail("x.dtype", "float64",
         "expected float32, float16 or bfloat16 for an HfFloat32Rope (transformers' float32 "
         "arithmetic)");
  } else {
    const RotateOptions options = RotateOptions().with_layouts(layout).with_rotation(rotation);
    in_or_out(
        in, out, [&](auto& y) { rotate_inplace(y, positions, rope, options); },
        [&](const auto& a, auto& b) { posemb::rotate(a, b, positions, rope, options); });
  }
}

// Calls body(spec) or body(table), the table's type checked against the tensor's storage type T
// (no Python call: runs without the GIL).
template <class T, class Body>
void with_rope_source(const RopeSource& source, Body&& body) {
  if (source.spec != nullptr) {
    body(*source.spec);
    return;
  }
  using TableT = compute_t<T>;
  const auto* table = std::get_if<RopeTable<TableT>>(&source.table->table);
  if (table == nullptr) {
    fail("source",
         std::string("a RopeTable of dtype ") +
             (std::is_same_v<TableT, float> ? "float64" : "float32"),
         std::string("expected dtype='") + (std::is_same_v<TableT, float> ? "float32" : "float64") +
             "' for this x (float32 tables serve float32, float16 and bfloat16 x; float64 tables "
             "float64 x)");
  }
  body(*table);
}

constexpr const char* apply_rope_doc = R"doc(Rotates x in place by RoPE and returns x.

x: a numpy array (float32, float64, float16) or a CPU torch tensor (also bfloat16),
   C-contiguous, [batch, seq, heads, head_dim] (layout='bshd') or [batch, heads, seq, head_dim]
   (layout='bhsd'); head_dim must be the source's head_dim. Written in place, never copied.
positions: an int offset (token s at offset + s), or int64 / float64 positions [seq] or
   [batch, seq] (numpy or torch).
source: a RopeSpec (cos/sin formed in double per call), a RopeTable, or an HfFloat32Rope
   (transformers' float32 arithmetic, rotating in x's dtype as PyTorch does; no inverse,
   float32 / float16 / bfloat16 x, one thread).
inverse: apply R(p)^T = R(-p) (undoes the rotation, attention scale included).
threads: up to this many threads for large tensors. The GIL is released during the rotation.

Example:
    >>> spec = posemb.default_rope_spec(64, 10000.0)
    >>> q = torch.randn(1, 16, 8, 64)
    >>> posemb.apply_rope_(q, 0, spec)  # q rotated in place, token s at position s
    >>> hf = posemb.default_rope_spec(64, 10000.0, angles="hf-float32")
    >>> k = posemb.apply_rope(q.bfloat16(), 0, hf)  # transformers' bits for a bfloat16 model
)doc";

constexpr const char* apply_rope_out_doc = R"doc(Returns a rotated copy of x (numpy in, numpy out;
torch in, torch out); x is not changed. Arguments as for apply_rope_; x may be non-contiguous.

Example:
    >>> k_rot = posemb.apply_rope(k, torch.arange(100, 116), spec)
)doc";

py::object apply_rope_impl(const py::object& x, const py::object& positions,
                           const py::object& source, const std::string& layout, Rotation r,
                           int threads, bool in_place) {
  const TokenPositions p = token_positions(positions);
  const TensorLayout l = layout_of(layout);
  const Threads t = threads_of(threads);
  const RopeSource resolved = rope_source_of(source);
  if (resolved.hf != nullptr && r == Rotation::Inverse) {
    fail("inverse", "True",
         "expected False for an HfFloat32Rope (transformers' rotation has no "
         "inverse; transpose=True is its backward)");
  }
  return rotate(x, in_place, [&](auto& in, auto& out) {
    using T = scalar_of_t<decltype(in)>;
    if (resolved.hf != nullptr) {
      rotate_hf_float32<T>(*resolved.hf, in, out, p.view(), l, r);
      return;
    }
    with_rope_source<T>(resolved, [&](const auto& src) {
      in_or_out(
          in, out,
          [&](auto& y) {
            rotate_inplace(y, p.view(), src, RotateOptions{l, t, r});
          },
          [&](const auto& a, auto& b) {
            rotate(a, b, p.view(), src, RotateOptions{l, t, r});
          });
    });
  });
}

void bind_rope_spec(py::module_& m) {
  py::class_<RopeSpec>(m, "RopeSpec", R"doc(Everything a RoPE rotation needs: an immutable value.

inv_freq (numpy float64 [rotary_dim / 2], radians per position), attention_scale (multiplies
cos and sin), pairing ('rotate_half' or 'interleaved'), rotary_dim, rotary_offset (the first
rotated feature), head_dim (the width of the heads it rotates; others are refused).

Example:
    >>> spec = posemb.RopeSpec(np.array([1.0, 0.01]), head_dim=4)
    >>> spec.rotary_dim
    4
)doc")
      .def(py::init([](const py::object& inv_freq, int head_dim, double attention_scale,
                       const std::string& pairing, int rotary_offset) {
             const ArrayView v = view_of(
                 py::module_::import("numpy").attr("asarray")(inv_freq, "float64"), "inv_freq");
             if (v.rank() != 1) fail("inv_freq.shape", v.shape_text(), "expected [rotary_dim / 2]");
             RopeSpec spec;
             spec.inv_freq.resize(v.shape[0]);
             for (Eigen::Index i = 0; i < v.shape[0]; ++i) {
               spec.inv_freq[i] = static_cast<const double*>(v.data)[i * v.strides[0]];
             }
             spec.rotary_dim = static_cast<int>(2 * v.shape[0]);
             spec.head_dim = head_dim;
             spec.attention_scale = attention_scale;
             spec.pairing = pairing_of(pairing);
             spec.rotary_offset = rotary_offset;
             spec.validate();
             return spec;
           }),
           py::arg("inv_freq"), py::arg("head_dim"), py::arg("attention_scale") = 1.0,
           py::arg("pairing") = "rotate_half", py::arg("rotary_offset") = 0)
      .def_property_readonly("inv_freq", [](const RopeSpec& s) { return to_numpy(s.inv_freq); })
      .def_readonly("attention_scale", &RopeSpec::attention_scale)
      .def_property_readonly("pairing", [](const RopeSpec& s) { return to_string(s.pairing); })
      .def_readonly("rotary_dim", &RopeSpec::rotary_dim)
      .def_readonly("rotary_offset", &RopeSpec::rotary_offset)
      .def_readonly("head_dim", &RopeSpec::head_dim)
      .def("__repr__", [](const RopeSpec& s) { return repr(s); })
      .def("__eq__", [](const RopeSpec& a, const RopeSpec& b) {
        return a.inv_freq == b.inv_freq && a.attention_scale == b.attention_scale &&
               a.pairing == b.pairing && a.rotary_dim == b.rotary_dim &&
               a.rotary_offset == b.rotary_offset && a.head_dim == b.head_dim;
      });
}

void bind_spec_builders(py::module_& m) {
  m.def(
      "default_rope_spec",
      [](int head_dim, double base, const std::string& pairing, OptInt rotary_dim,
         const std::string& angles) {
        const RotaryDims dims = dims_of(head_dim, rotary_dim);
        const Pairing pair = pairing_of(pairing);
        return in_mode(
            angles, [&] { return default_rope_spec(dims, base, pair); },
            [&] { return hf_float32_default(dims, base, pair); });
      },
      py::arg("head_dim"), py::arg("base") = 10000.0, py::arg("pairing") = "rotate_half",
      py::arg("rotary_dim") = py::none(), py::arg("angles") = "exact",
      R"doc(Plain RoPE (RoFormer): inv_freq[i] = base^(-2i / rotary_dim), attention scale 1.

rotary_dim < head_dim is partial rotary: the first rotary_dim features of each head rotate,
the rest pass through. angles='hf-float32' returns an HfFloat32Rope instead: transformers'
float32 arithmetic (so do the linear, dynamic NTK, YaRN, Llama 3 and LongRoPE builders).

Example:
    >>> spec = posemb.default_rope_spec(128, 500000.0)               # Llama 3
    >>> neox = posemb.default_rope_spec(96, 10000.0, rotary_dim=24)  # GPT-NeoX-20B
)doc");
  m.def(
      "linear_rope_spec",
      [](int head_dim, double base, double factor, const std::string& pairing, OptInt rotary_dim,
         const std::string& angles) {
        const RotaryDims dims = dims_of(head_dim, rotary_dim);
        const Pairing pair = pairing_of(pairing);
        return in_mode(
            angles, [&] { return linear_rope_spec(dims, base, factor, pair); },
            [&] { return hf_float32_linear(dims, base, factor, pair); });
      },
      py::arg("head_dim"), py::arg("base"), py::arg("factor"), py::arg("pairing") = "rotate_half",
      py::arg("rotary_dim") = py::none(), py::arg("angles") = "exact",
      R"doc(Linear position interpolation: the default inv_freq / factor.

Example:
    >>> spec = posemb.linear_rope_spec(128, 10000.0, factor=4.0)
)doc");
  m.def(
      "ntk_rope_spec",
      [](int head_dim, double base, double factor, const std::string& pairing, OptInt rotary_dim) {
        return ntk_rope_spec(dims_of(head_dim, rotary_dim), base, factor, pairing_of(pairing));
      },
      py::arg("head_dim"), py::arg("base"), py::arg("factor"), py::arg("pairing") = "rotate_half",
      py::arg("rotary_dim") = py::none(),
      R"doc(NTK-aware scaling: base * factor^(d / (d - 2)), d = rotary_dim.

Example:
    >>> spec = posemb.ntk_rope_spec(128, 10000.0, factor=2.0)
)doc");
  m.def(
      "dynamic_ntk_rope_spec",
      [](int head_dim, double base, double factor, std::int64_t max_position_embeddings,
         std::int64_t seq_len, const std::string& pairing, OptInt rotary_dim,
         const std::string& angles) {
        const RotaryDims dims = dims_of(head_dim, rotary_dim);
        const Pairing pair = pairing_of(pairing);
        const std::int64_t length = max_position_embeddings;
        return in_mode(
            angles,
            [&] { return dynamic_ntk_rope_spec(dims, base, factor, length, seq_len, pair); },
            [&] { return hf_float32_dynamic_ntk(dims, base, factor, length, seq_len, pair); });
      },
      py::arg("head_dim"), py::arg("base"), py::arg("factor"), py::arg("max_position_embeddings"),
      py::arg("seq_len"), py::arg("pairing") = "rotate_half", py::arg("rotary_dim") = py::none(),
      py::arg("angles") = "exact",
      R"doc(Dynamic NTK (HuggingFace's "dynamic"): the base grows with seq_len beyond
max_position_embeddings; the default frequencies up to it. No hidden state: pass seq_len.

Example:
    >>> spec = posemb.dynamic_ntk_rope_spec(128, 10000.0, 2.0, 4096, seq_len=8192)
)doc");
}

// The long-context variants with a ramp between frequency bands.
void bind_band_specs(py::module_& m) {
  m.def(
      "yarn_rope_spec",
      [](int head_dim, double base, double factor, std::int64_t original_max_position_embeddings,
         double beta_fast, double beta_slow, bool truncate, std::optional<double> attention_factor,
         std::optional<double> mscale, std::optional<double> mscale_all_dim,
         const std::string& pairing, OptInt rotary_dim, const std::string& angles) {
        YarnParams params;
        params.factor = factor;
        params.original_max_position_embeddings = original_max_position_embeddings;
        params.beta_fast = beta_fast;
        params.beta_slow = beta_slow;
        params.truncate = truncate;
        params.attention_factor = attention_factor;
        params.mscale = mscale;
        params.mscale_all_dim = mscale_all_dim;
        const RotaryDims dims = dims_of(head_dim, rotary_dim);
        const Pairing pair = pairing_of(pairing);
        return in_mode(
            angles, [&] { return yarn_rope_spec(dims, base, params, pair); },
            [&] { return hf_float32_yarn(dims, base, params, pair); });
      },
      py::arg("head_dim"), py::arg("base"), py::arg("factor"),
      py::arg("original_max_position_embeddings"), py::arg("beta_fast") = 32.0,
      py::arg("beta_slow") = 1.0, py::arg("truncate") = true,
      py::arg("attention_factor") = py::none(), py::arg("mscale") = py::none(),
      py::arg("mscale_all_dim") = py::none(), py::arg("pairing") = "rotate_half",
      py::arg("rotary_dim") = py::none(), py::arg("angles") = "exact",
      R"doc(YaRN (Peng et al. 2023; HuggingFace's _compute_yarn_parameters): a ramp between
the kept high frequencies and the interpolated low ones, and the attention factor
0.1 ln(factor) + 1 (or attention_factor / DeepSeek's mscale ratio) in attention_scale.

Example:
    >>> spec = posemb.yarn_rope_spec(64, 10000.0, factor=4.0, original_max_position_embeddings=4096)
    >>> round(spec.attention_scale, 6)
    1.138629
)doc");
  m.def(
      "llama3_rope_spec",
      [](int head_dim, double base, double factor, double low_freq_factor, double high_freq_factor,
         std::int64_t original_max_position_embeddings, const std::string& pairing,
         OptInt rotary_dim, const std::string& angles) {
        const Llama3Params params{factor, low_freq_factor, high_freq_factor,
                                  original_max_position_embeddings};
        const RotaryDims dims = dims_of(head_dim, rotary_dim);
        const Pairing pair = pairing_of(pairing);
        return in_mode(
            angles, [&] { return llama3_rope_spec(dims, base, params, pair); },
            [&] { return hf_float32_llama3(dims, base, params, pair); });
      },
      py::arg("head_dim"), py::arg("base"), py::arg("factor") = 8.0,
      py::arg("low_freq_factor") = 1.0, py::arg("high_freq_factor") = 4.0,
      py::arg("original_max_position_embeddings") = 8192, py::arg("pairing") = "rotate_half",
      py::arg("rotary_dim") = py::none(), py::arg("angles") = "exact",
      R"doc(Llama 3.1's frequency bands: high frequencies kept, low ones divided by factor,
a smooth ramp between (defaults: Llama 3.1's values).

Example:
    >>> spec = posemb.llama3_rope_spec(128, 500000.0)
)doc");
}

// The variants with per-pair factors or a rotating fraction of the pairs.
void bind_factor_specs(py::module_& m) {
  m.def(
      "longrope_rope_spec",
      [](int head_dim, double base, std::vector<double> short_factor,
         std::vector<double> long_factor, std::int64_t original_max_position_embeddings,
         double factor, std::optional<double> attention_factor, std::optional<std::int64_t> seq_len,
         const std::string& pairing, OptInt rotary_dim, const std::string& angles) {
        LongRopeParams params;
        params.short_factor = std::move(short_factor);
        params.long_factor = std::move(long_factor);
        params.original_max_position_embeddings = original_max_position_embeddings;
        params.factor = factor;
        params.attention_factor = attention_factor;
        const RotaryDims dims = dims_of(head_dim, rotary_dim);
        const Pairing pair = pairing_of(pairing);
        return in_mode(
            angles, [&] { return longrope_rope_spec(dims, base, params, seq_len, pair); },
            [&] { return hf_float32_longrope(dims, base, params, seq_len, pair); });
      },
      py::arg("head_dim"), py::arg("base"), py::arg("short_factor"), py::arg("long_factor"),
      py::arg("original_max_position_embeddings"), py::arg("factor") = 1.0,
      py::arg("attention_factor") = py::none(), py::arg("seq_len") = py::none(),
      py::arg("pairing") = "rotate_half", py::arg("rotary_dim") = py::none(),
      py::arg("angles") = "exact",
      R"doc(LongRoPE (Phi-3): inv_freq[i] / ext[i], ext = long_factor when seq_len exceeds
original_max_position_embeddings, else short_factor; attention factor
sqrt(1 + ln(factor) / ln(original_max_position_embeddings)) unless attention_factor is given.

Example:
    >>> spec = posemb.longrope_rope_spec(8, 10000.0, [1, 1, 1, 1], [1, 2, 4, 8], 4096, seq_len=8192)
)doc");
  m.def(
      "proportional_rope_spec",
      [](int head_dim, double base, double partial_rotary_factor, double factor,
         const std::string& pairing) {
        return proportional_rope_spec(
            head_dim, base, ProportionalParams{partial_rotary_factor, factor}, pairing_of(pairing));
      },
      py::arg("head_dim"), py::arg("base"), py::arg("partial_rotary_factor") = 1.0,
      py::arg("factor") = 1.0, py::arg("pairing") = "rotate_half",
      R"doc(Proportional RoPE: int(p * head_dim // 2) pairs rotate with the exponents of the
whole head (divided by factor); the other pairs have inv_freq 0.

Example:
    >>> spec = posemb.proportional_rope_spec(256, 1000000.0, partial_rotary_factor=0.25)
)doc");
}

void bind_rope_table(py::module_& m) {
  py::class_<RopeTableHolder>(m, "RopeTable", R"doc(Precomputed cos/sin rows of a RopeSpec for
positions [first_position, first_position + count): build once, share across calls and threads.
dtype 'float32' serves float32, float16 and bfloat16 x; 'float64' serves float64 x. The rotation
reads the same bits as the spec's own call.

Example:
    >>> table = posemb.RopeTable(spec, 0, 8192)
    >>> posemb.apply_rope_(q, cache_length, table)
)doc")
      .def(py::init([](const RopeSpec& spec, std::int64_t first_position, std::int64_t count,
                       const std::string& dtype) {
             py::gil_scoped_release release;
             if (table_dtype_of(dtype) == Dtype::Float32) {
               return RopeTableHolder{RopeTable<float>(spec, first_position, count)};
             }
             return RopeTableHolder{RopeTable<double>(spec, first_position, count)};
           }),
           py::arg("spec"), py::arg("first_position"), py::arg("count"),
           py::arg("dtype") = "float32")
      .def_property_readonly("spec", &RopeTableHolder::spec)
      .def_property_readonly(
          "dtype",
          [](const RopeTableHolder& h) { return h.table.index() == 0 ? "float32" : "float64"; })
      .def_property_readonly("first_position",
                             [](const RopeTableHolder& h) {
                               return std::visit([](const auto& t) { return t.first_position(); },
                                                 h.table);
                             })
      .def_property_readonly("count",
                             [](const RopeTableHolder& h) {
                               return std::visit([](const auto& t) { return t.count(); }, h.table);
                             })
      .def_property_readonly(
          "cos",
          [](const RopeTableHolder& h) {
            return std::visit(
                [](const auto& t) -> py::object {
                  return to_numpy(t.cos().data(), {t.count(), t.spec().pairs()});
                },
                h.table);
          },
          "cos rows [count, rotary_dim / 2] (attention scale included)")
      .def_property_readonly(
          "sin",
          [](const RopeTableHolder& h) {
            return std::visit(
                [](const auto& t) -> py::object {
                  return to_numpy(t.sin().data(), {t.count(), t.spec().pairs()});
                },
                h.table);
          },
          "sin rows [count, rotary_dim / 2] (attention scale included)");
}

void bind_rope(py::module_& m) {
  m.def(
      "apply_rope_",
      [](const py::object& x, const py::object& positions, const py::object& source,
         const std::string& layout, bool inverse, int threads, bool transpose) {
        return apply_rope_impl(x, positions, source, layout, rotation_of(inverse, transpose),
                               threads, true);
      },
      py::arg("x"), py::arg("positions"), py::arg("source"), py::arg("layout") = "bshd",
      py::arg("inverse") = false, py::arg("threads") = 1, py::arg("transpose") = false,
      apply_rope_doc);
  m.def(
      "apply_rope",
      [](const py::object& x, const py::object& positions, const py::object& source,
         const std::string& layout, bool inverse, int threads, bool transpose) {
        return apply_rope_impl(x, positions, source, layout, rotation_of(inverse, transpose),
                               threads, false);
      },
      py::arg("x"), py::arg("positions"), py::arg("source"), py::arg("layout") = "bshd",
      py::arg("inverse") = false, py::arg("threads") = 1, py::arg("transpose") = false,
      apply_rope_out_doc);
  m.def(
      "rope_cos_sin",
      [](const RopeSpec& spec, std::int64_t position) {
        const auto [cos, sin] = rope_cos_sin<double>(spec, position);
        return std::make_pair(to_numpy(cos), to_numpy(sin));
      },
      py::arg("spec"), py::arg("position"),
      R"doc(cos and sin of every pair at one position (attention scale included), in float64:
two arrays [rotary_dim / 2].

Example:
    >>> cos, sin = posemb.rope_cos_sin(spec, 100)
)doc");
}

// ---- M-RoPE and vision RoPE

MropeLayout mrope_layout_of(const std::string& layout) {
  if (layout == "chunked") return MropeLayout::Chunked;
  if (layout == "interleaved") return MropeLayout::Interleaved;
  fail("layout", "'" + layout + "'", "expected 'chunked' or 'interleaved'");
}

template <class Spec>
py::object apply_axes_impl(const py::object& x, const py::object& positions, const Spec& spec,
                           const std::string& layout, Rotation r, int threads, bool in_place,
                           bool allow_rank3) {
  const AxisPositions p = axis_positions(positions);
  const TensorLayout l = layout_of(layout);
  const Threads t = threads_of(threads);
  return rotate(
      x, in_place,
      [&](auto& in, auto& out) {
        in_or_out(
            in, out,
            [&](auto& y) {
              rotate_inplace(y, p.view(), spec, RotateOptions{l, t, r});
            },
            [&](const auto& a, auto& b) {
              rotate(a, b, p.view(), spec, RotateOptions{l, t, r});
            });
      },
      allow_rank3);
}

void bind_mrope(py::module_& m) {
  py::class_<MropeSpec>(m, "MropeSpec", R"doc(Multimodal RoPE (Qwen2-VL family): a RopeSpec whose
pairs turn at the t, h or w position of a token; sections (pairs per axis) and their layout
'chunked' (Qwen2-VL, Qwen2.5-VL) or 'interleaved' (Qwen3-VL).

Example:
    >>> spec = posemb.MropeSpec(posemb.default_rope_spec(128, 1e6), (16, 24, 24), "chunked")
)doc")
      .def(py::init([](RopeSpec rope, std::array<int, 3> sections, const std::string& layout) {
             return make_mrope_spec(std::move(rope), sections, mrope_layout_of(layout));
           }),
           py::arg("rope"), py::arg("sections"), py::arg("layout") = "chunked")
      .def_readonly("rope", &MropeSpec::rope)
      .def_property_readonly("sections", [](const MropeSpec& s) { return s.sections; })
      .def_property_readonly("layout", [](const MropeSpec& s) { return to_string(s.layout); })
      .def_property_readonly(
          "axes",
          [](const MropeSpec& s) {
            std::vector<int> axes(static_cast<std::size_t>(s.rope.pairs()));
            for (int j = 0; j < s.rope.pairs(); ++j)
              axes[static_cast<std::size_t>(j)] = mrope_axis(s, j);
            return axes;
          },
          "The axis (0 t, 1 h, 2 w) whose position turns each pair: [rotary_dim / 2]");

  const char* positions_doc = R"doc(
positions: int64 / float64 [3, seq] or [3, batch, seq] (axes t, h, w), or text positions as for
apply_rope_ (an int offset, [seq], or [batch, seq] whose first dimension is not 3).)doc";
  m.def(
      "apply_mrope_",
      [](const py::object& x, const py::object& positions, const MropeSpec& spec,
         const std::string& layout, bool inverse, int threads, bool transpose) {
        return apply_axes_impl(x, positions, spec, layout, rotation_of(inverse, transpose), threads,
                               true, false);
      },
      py::arg("x"), py::arg("positions"), py::arg("spec"), py::arg("layout") = "bshd",
      py::arg("inverse") = false, py::arg("threads") = 1, py::arg("transpose") = false,
      (std::string("Rotates x in place by M-RoPE and returns x (x as for apply_rope_).") +
       positions_doc + R"doc(

Example:
    >>> positions, delta = posemb.mrope_index(model, "text:3,image:1x4x6,text:5")
    >>> posemb.apply_mrope_(q, positions, model.layers[0].mrope_spec())
)doc")
          .c_str());
  m.def(
      "apply_mrope",
      [](const py::object& x, const py::object& positions, const MropeSpec& spec,
         const std::string& layout, bool inverse, int threads, bool transpose) {
        return apply_axes_impl(x, positions, spec, layout, rotation_of(inverse, transpose), threads,
                               false, false);
      },
      py::arg("x"), py::arg("positions"), py::arg("spec"), py::arg("layout") = "bshd",
      py::arg("inverse") = false, py::arg("threads") = 1, py::arg("transpose") = false,
      R"doc(Returns an M-RoPE-rotated copy of x (arguments as for apply_mrope_).

Example:
    >>> q_rot = posemb.apply_mrope(q, positions, spec)
)doc");
}

void bind_vision(py::module_& m) {
  py::class_<VisionRope>(m, "VisionRope", R"doc(The 2-D RoPE of a vision tower (Qwen2-VL family or
Pixtral): an M-RoPE over the patch's (row, column), and the order of the patches.

Example:
    >>> rope = posemb.qwen2_vl_vision_rope(80)
)doc")
      .def_readonly("spec", &VisionRope::spec)
      .def_property_readonly("head_dim", &VisionRope::head_dim)
      .def_readonly("spatial_merge_size", &VisionRope::spatial_merge_size)
      .def_property_readonly("order", [](const VisionRope& r) {
        return r.order == VisionPatchOrder::MergeBlocks ? "merge_blocks" : "row_major";
      });
  m.def(
      "qwen2_vl_vision_rope", &qwen2_vl_vision_rope, py::arg("head_dim"),
      py::arg("spatial_merge_size") = 2, py::arg("theta") = 10000.0,
      R"doc(The Qwen2-VL / Qwen2.5-VL / Qwen3-VL vision tower's 2-D RoPE (patches in merge blocks).

Example:
    >>> rope = posemb.qwen2_vl_vision_rope(80, spatial_merge_size=2)
)doc");
  m.def("pixtral_vision_rope", &pixtral_vision_rope, py::arg("head_dim"),
        py::arg("theta") = 10000.0,
        R"doc(Pixtral's vision 2-D RoPE (patches row-major, one image per grid).

Example:
    >>> rope = posemb.pixtral_vision_rope(64)
)doc");
  m.def(
      "vision_patch_positions",
      [](const VisionRope& rope, std::int64_t t, std::int64_t h, std::int64_t w) {
        const PositionMatrix p = vision_patch_positions(rope, t, h, w);
        return to_numpy(p.data(), {p.rows(), p.cols()});
      },
      py::arg("rope"), py::arg("t"), py::arg("h"), py::arg("w"),
      R"doc(The positions int64 [3, t * h * w] of a t x h x w patch grid in the tower's order.

Example:
    >>> positions = posemb.vision_patch_positions(rope, 1, 4, 6)  # [3, 24]
)doc");
  const char* vision_doc = R"doc(Rotates x in place by a vision tower's 2-D RoPE and returns x.

x: [patches, heads, head_dim] or [batch, patches, heads, head_dim] (layout 'bshd'), patches in
the tower's order; positions: vision_patch_positions(rope, t, h, w).

Example:
    >>> posemb.apply_vision_rope_(q, posemb.vision_patch_positions(rope, 1, 4, 6), rope)
)doc";
  m.def(
      "apply_vision_rope_",
      [](const py::object& x, const py::object& positions, const VisionRope& rope,
         const std::string& layout, bool inverse, int threads, bool transpose) {
        return apply_axes_impl(x, positions, rope.spec, layout, rotation_of(inverse, transpose),
                               threads, true, true);
      },
      py::arg("x"), py::arg("positions"), py::arg("rope"), py::arg("layout") = "bshd",
      py::arg("inverse") = false, py::arg("threads") = 1, py::arg("transpose") = false, vision_doc);
  m.def(
      "apply_vision_rope",
      [](const py::object& x, const py::object& positions, const VisionRope& rope,
         const std::string& layout, bool inverse, int threads, bool transpose) {
        return apply_axes_impl(x, positions, rope.spec, layout, rotation_of(inverse, transpose),
                               threads, false, true);
      },
      py::arg("x"), py::arg("positions"), py::arg("rope"), py::arg("layout") = "bshd",
      py::arg("inverse") = false, py::arg("threads") = 1, py::arg("transpose") = false,
      R"doc(Returns a copy of x rotated by a vision tower's 2-D RoPE (as apply_vision_rope_).

Example:
    >>> q_rot = posemb.apply_vision_rope(q, positions, rope)
)doc");
}

// ---- xPos

XposRole role_of(const std::string& role) {
  if (role == "query") return XposRole::Query;
  if (role == "key") return XposRole::Key;
  fail("role", "'" + role + "'", "expected 'query' or 'key'");
}

py::object apply_xpos_impl(const py::object& x, const py::object& positions, const XposSpec& spec,
                           const std::string& role, const std::string& layout, Rotation r,
                           int threads, bool in_place) {
  const TokenPositions p = token_positions(positions);
  const XposRole who = role_of(role);
  const TensorLayout l = layout_of(layout);
  const Threads t = threads_of(threads);
  return rotate(x, in_place, [&](auto& in, auto& out) {
    in_or_out(
        in, out,
        [&](auto& y) {
          rotate_inplace(y, p.view(), Xpos{spec, who}, RotateOptions{l, t, r});
        },
        [&](const auto& a, auto& b) {
          rotate(a, b, p.view(), Xpos{spec, who}, RotateOptions{l, t, r});
        });
  });
}

// cos and sin [count, rotary_dim / 2] in double at positions first_position, ...,
// first_position + count - 1: the rotary engine's own values (XposSource::fill, rotary/xpos.hpp;
// attention scale and the role's decay included, divided out and sin negated for inverse),
// after the range check of the storage type named `dtype`.
std::pair<py::array_t<double>, py::array_t<double>> xpos_cos_sin(
    const XposSpec& spec, const std::string& role, std::int64_t first_position, std::int64_t count,
    const std::string& dtype, bool inverse) {
  if (count < 1) fail("count", count, "expected >= 1");
  const XposRole who = role_of(role);
  with_storage_type(dtype, [&](auto t) {
    detail::check_xpos_range<decltype(t)>(spec, who, static_cast<double>(first_position),
                                          static_cast<double>(first_position + count - 1));
  });
  const Positions positions(first_position);
  const detail::XposSource<double> source{spec, who, positions};
  const int pairs = spec.rope.pairs();
  std::vector<double> cos(static_cast<std::size_t>(count * pairs)), sin(cos.size());
  for (std::int64_t s = 0; s < count; ++s) {
    for (int begin = 0; begin < pairs; begin += detail::cos_sin_chunk) {
      const int end = std::min(pairs, begin + detail::cos_sin_chunk);
      const std::size_t at = static_cast<std::size_t>(s * pairs + begin);
      source.fill(0, s, begin, end, cos.data() + at, sin.data() + at,
                  inverse ? Rotation::Inverse : Rotation::Forward);
    }
  }
  return {to_numpy(cos.data(), {count, pairs}), to_numpy(sin.data(), {count, pairs})};
}

void bind_xpos(py::module_& m) {
  py::class_<XposSpec>(m, "XposSpec", R"doc(xPos (Sun et al. 2022): a RoPE rotation plus a per-pair
decay zeta_i^((p - centre) / scale_base), zeta_i = (2i/d + gamma) / (1 + gamma), applied with
+ to queries and - to keys.

Example:
    >>> spec = posemb.XposSpec(posemb.default_rope_spec(64), scale_base=512.0)
)doc")
      .def(py::init([](RopeSpec rope, double gamma, double scale_base, std::int64_t centre) {
             XposSpec spec{std::move(rope), XposParams{gamma, scale_base, centre}};
             spec.validate();
             return spec;
           }),
           py::arg("rope"), py::arg("gamma") = 0.4, py::arg("scale_base") = 512.0,
           py::arg("centre") = 0)
      .def_readonly("rope", &XposSpec::rope)
      .def_property_readonly("gamma", [](const XposSpec& s) { return s.params.gamma; })
      .def_property_readonly("scale_base", [](const XposSpec& s) { return s.params.scale_base; })
      .def_property_readonly("centre", [](const XposSpec& s) { return s.params.centre; });
  m.def(
      "apply_xpos_",
      [](const py::object& x, const py::object& positions, const XposSpec& spec,
         const std::string& role, const std::string& layout, bool inverse, int threads,
         bool transpose) {
        return apply_xpos_impl(x, positions, spec, role, layout, rotation_of(inverse, transpose),
                               threads, true);
      },
      py::arg("x"), py::arg("positions"), py::arg("spec"), py::arg("role"),
      py::arg("layout") = "bshd", py::arg("inverse") = false, py::arg("threads") = 1,
      py::arg("transpose") = false,
      R"doc(Rotates and scales x in place by xPos and returns x. role: 'query' or 'key'
(the scale's sign differs); other arguments as for apply_rope_.

Example:
    >>> posemb.apply_xpos_(q, 0, spec, "query"); posemb.apply_xpos_(k, 0, spec, "key")
)doc");
  m.def(
      "apply_xpos",
      [](const py::object& x, const py::object& positions, const XposSpec& spec,
         const std::string& role, const std::string& layout, bool inverse, int threads,
         bool transpose) {
        return apply_xpos_impl(x, positions, spec, role, layout, rotation_of(inverse, transpose),
                               threads, false);
      },
      py::arg("x"), py::arg("positions"), py::arg("spec"), py::arg("role"),
      py::arg("layout") = "bshd", py::arg("inverse") = false, py::arg("threads") = 1,
      py::arg("transpose") = false,
      R"doc(Returns an xPos-rotated copy of x (arguments as for apply_xpos_).

Example:
    >>> k_rot = posemb.apply_xpos(k, 0, spec, "key")
)doc");
  m.def("xpos_cos_sin", &xpos_cos_sin, py::arg("spec"), py::arg("role"), py::arg("first_position"),
        py::arg("count"), py::arg("dtype") = "float64", py::arg("inverse") = false,
        R"doc(xPos's cos and sin rows [count, rotary_dim / 2] in float64 at positions
first_position, ..., first_position + count - 1: the values the rotation multiplies by (attention
scale and the role's decay zeta^(+-(p - centre) / scale_base) included; inverse=True: divided by
that magnitude, sin negated). dtype: the storage type whose range the scales must fit ('float32',
'float64', 'float16', 'bfloat16'), as apply_xpos checks it.

Example:
    >>> cos, sin = posemb.xpos_cos_sin(spec, "query", 0, 128, dtype="float32")
)doc");
}

// ---- FoPE

std::vector<float> coefficient_values(py::handle a, const std::string& name,
                                      std::vector<std::int64_t>& shape) {
  const py::array_t<float, py::array::c_style | py::array::forcecast> values =
      py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(
          py::module_::import("numpy").attr("asarray")(a));
  if (!values) fail(name, "not an array", "expected float32 [n_kv_heads, D_in, D_out]");
  shape.assign(values.shape(), values.shape() + values.ndim());
  return std::vector<float>(values.data(), values.data() + values.size());
}

py::object apply_fope_impl(const py::object& x, const py::object& positions,
                           const FopeHolder& holder, const std::string& layout, Rotation r,
                           int threads, bool in_place) {
  const TokenPositions p = token_positions(positions);
  const TensorLayout l = layout_of(layout);
  const Threads t = threads_of(threads);
  return rotate(x, in_place, [&](auto& in, auto& out) {
    in_or_out(
        in, out,
        [&](auto& y) {
          rotate_inplace(y, p.view(), holder.fope, RotateOptions{l, t, r});
        },
        [&](const auto& a, auto& b) {
          rotate(a, b, p.view(), holder.fope, RotateOptions{l, t, r});
        });
  });
}

void bind_fope_config(py::module_& m) {
  py::class_<FopeConfig>(m, "FopeConfig", R"doc(The settings of a FoPE layer (Hua et al. 2024):
head_dim, n_heads, n_kv_heads, theta, train_length, floor_ratio, drop_clipped, d_out, sigma,
seed, padding_sin, num_inv_freq (> 0: the first num_inv_freq frequencies, no clip floor).
ModelPositions.fope holds a model's.

Example:
    >>> config = posemb.FopeConfig(head_dim=64, n_heads=8, train_length=512)
)doc")
      .def(py::init([](int head_dim, int n_heads, int n_kv_heads, double theta,
                       std::int64_t train_length, double floor_ratio, bool drop_clipped, int d_out,
                       double sigma, std::uint64_t seed, double padding_sin, int num_inv_freq) {
             return FopeConfig{head_dim,     n_heads,     n_kv_heads,   theta,
                               train_length, floor_ratio, drop_clipped, d_out,
                               sigma,        seed,        padding_sin,  num_inv_freq};
           }),
           py::kw_only(), py::arg("head_dim"), py::arg("n_heads"), py::arg("n_kv_heads") = 0,
           py::arg("theta") = 10000.0, py::arg("train_length"), py::arg("floor_ratio") = 1.0,
           py::arg("drop_clipped") = true, py::arg("d_out") = 0, py::arg("sigma") = 0.3,
           py::arg("seed") = 0, py::arg("padding_sin") = 1.0, py::arg("num_inv_freq") = 0)
      .def_readwrite("head_dim", &FopeConfig::head_dim)
      .def_readwrite("n_heads", &FopeConfig::n_heads)
      .def_readwrite("n_kv_heads", &FopeConfig::n_kv_heads)
      .def_readwrite("theta", &FopeConfig::theta)
      .def_readwrite("train_length", &FopeConfig::train_length)
      .def_readwrite("floor_ratio", &FopeConfig::floor_ratio)
      .def_readwrite("drop_clipped", &FopeConfig::drop_clipped)
      .def_readwrite("d_out", &FopeConfig::d_out)
      .def_readwrite("sigma", &FopeConfig::sigma)
      .def_readwrite("seed", &FopeConfig::seed)
      .def_readwrite("padding_sin", &FopeConfig::padding_sin)
      .def_readwrite("num_inv_freq", &FopeConfig::num_inv_freq);
}

void bind_fope(py::module_& m) {
  bind_fope_config(m);
  py::class_<FopeHolder>(m, "Fope", R"doc(A FoPE layer: its retained frequencies and the per-head
Fourier coefficients. Built by make_fope (initialised as the reference does) or
fope_with_coefficients (a checkpoint's).

Example:
    >>> fope = posemb.make_fope(model.fope)
)doc")
      .def_property_readonly("head_dim", [](const FopeHolder& h) { return h.fope.head_dim(); })
      .def_property_readonly("n_heads", [](const FopeHolder& h) { return h.fope.n_heads(); })
      .def_property_readonly("n_kv_heads", [](const FopeHolder& h) { return h.fope.n_kv_heads(); })
      .def_property_readonly("d_in", [](const FopeHolder& h) { return h.fope.d_in(); })
      .def_property_readonly("d_out", [](const FopeHolder& h) { return h.fope.d_out(); })
      .def_property_readonly("inv_freq",
                             [](const FopeHolder& h) { return to_numpy(h.fope.inv_freq()); })
      .def_property_readonly(
          "sin_coef",
          [](const FopeHolder& h) {
            const auto& c = h.fope.sin_coef();
            return to_numpy(c.data(), {c.dimension(0), c.dimension(1), c.dimension(2)});
          })
      .def_property_readonly("cos_coef", [](const FopeHolder& h) {
        const auto& c = h.fope.cos_coef();
        return to_numpy(c.data(), {c.dimension(0), c.dimension(1), c.dimension(2)});
      });
  m.def(
      "make_fope",
      [](const FopeConfig& config) {
        return FopeHolder{nullptr, make_fope(config)};
      },
      py::arg("config"), R"doc(A FoPE layer with the coefficients initialised as the reference
code does (an identity-like step plus sigma-scaled noise from the seed).

Example:
    >>> fope = posemb.make_fope(posemb.load_model("config.json").fope)
)doc");
  m.def(
      "fope_with_coefficients",
      [](const FopeConfig& config, const py::object& sin_coef, const py::object& cos_coef) {
        std::vector<std::int64_t> sin_shape, cos_shape;
        std::vector<float> sin_values = coefficient_values(sin_coef, "sin_coef", sin_shape);
        std::vector<float> cos_values = coefficient_values(cos_coef, "cos_coef", cos_shape);
        auto storage = std::make_shared<std::vector<float>>(std::move(sin_values));
        const std::size_t sin_size = storage->size();
        storage->insert(storage->end(), cos_values.begin(), cos_values.end());
        Fope fope = fope_with_coefficients(config, storage->data(), sin_shape,
                                           storage->data() + sin_size, cos_shape);
        return FopeHolder{storage, std::move(fope)};
      },
      py::arg("config"), py::arg("sin_coef"), py::arg("cos_coef"),
      R"doc(A FoPE layer with a checkpoint's coefficients sin_coef, cos_coef: float32
[n_kv_heads, D_in, D_out] each (copied).

Example:
    >>> fope = posemb.fope_with_coefficients(model.fope, np.load("sin_coef.npy"), np.load("cos_coef.npy"))
)doc");
}

void bind_apply_fope(py::module_& m) {
  m.def(
      "apply_fope_",
      [](const py::object& x, const py::object& positions, const FopeHolder& fope,
         const std::string& layout, bool inverse, int threads, bool transpose) {
        return apply_fope_impl(x, positions, fope, layout, rotation_of(inverse, transpose), threads,
                               true);
      },
      py::arg("x"), py::arg("positions"), py::arg("fope"), py::arg("layout") = "bshd",
      py::arg("inverse") = false, py::arg("threads") = 1, py::arg("transpose") = false,
      R"doc(Rotates x in place by FoPE and returns x; heads = n_heads (queries) or n_kv_heads
(keys); other arguments as for apply_rope_.

Example:
    >>> posemb.apply_fope_(q, positions, fope)
)doc");
  m.def(
      "apply_fope",
      [](const py::object& x, const py::object& positions, const FopeHolder& fope,
         const std::string& layout, bool inverse, int threads, bool transpose) {
        return apply_fope_impl(x, positions, fope, layout, rotation_of(inverse, transpose), threads,
                               false);
      },
      py::arg("x"), py::arg("positions"), py::arg("fope"), py::arg("layout") = "bshd",
      py::arg("inverse") = false, py::arg("threads") = 1, py::arg("transpose") = false,
      R"doc(Returns a FoPE-rotated copy of x (arguments as for apply_fope_).

Example:
    >>> y = posemb.apply_fope(x, positions, fope)
)doc");
}

}  // namespace

void bind_rotary(py::module_& m) {
  bind_rope_spec(m);
  bind_spec_builders(m);
  bind_band_specs(m);
  bind_factor_specs(m);
  bind_rope_table(m);
  bind_rope(m);
  bind_mrope(m);
  bind_vision(m);
  bind_xpos(m);
  bind_fope(m);
  bind_apply_fope(m);
}

}  // namespace posemb::python
