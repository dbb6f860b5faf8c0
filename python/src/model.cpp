// A model's positions from its config.json (load_model -> ModelPositions, layer by layer), the
// M-RoPE position builder of its prompt, and the checkpoint-side helpers: the q/k weight
// permutation between pairings and the positions of packed or context-parallel sequences.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "posemb/model/checkpoint_positions.hpp"
#include "posemb/model/config.hpp"

namespace posemb::python {

namespace {

using OptLength = std::optional<std::int64_t>;

void bind_attention(py::module_& m) {
  py::class_<QueryTemperature>(m, "QueryTemperature", R"doc(A query temperature, by form:
'floor_log': q *= log1p(floor((p + position_offset) / floor_scale)) * attn_scale + 1 (Llama 4's
layers without RoPE: position_offset 1; Ministral 3: 0); 'power': q *= (1 + (p + position_offset)
/ floor_scale) ** attn_scale (Beam's layers without RoPE: 2048, 0.1, 1).

Example:
    >>> model.layers[3].attention.query_temperature.factor(8191)
    1.0693147180559945
)doc")
      .def_readonly("floor_scale", &QueryTemperature::floor_scale)
      .def_readonly("attn_scale", &QueryTemperature::attn_scale)
      .def_readonly("position_offset", &QueryTemperature::position_offset)
      .def_property_readonly("form", [](const QueryTemperature& t) { return to_string(t.form); })
      .def("factor", &QueryTemperature::factor, py::arg("position"));
  py::class_<LayerAttention>(m, "LayerAttention", R"doc(One layer's attention-side parameters
(None: not used): softmax_scale (logits = softmax_scale * q k^T; None means 1 / sqrt(head_dim)),
sliding_window, attention_chunk_size, query_temperature, logit_softcap (logits = cap *
tanh(logits / cap) after scaling), attention_sinks (one extra logit per head in the softmax
denominator), bias_placement ('after_scale' or 'before_scale': where ALiBi enters).

Example:
    >>> attention = posemb.LayerAttention(softmax_scale=0.0625, sliding_window=4096)
)doc")
      .def(py::init([](std::optional<double> softmax_scale, OptLength sliding_window,
                       OptLength attention_chunk_size, std::optional<double> logit_softcap,
                       bool attention_sinks, const std::string& bias_placement) {
             LayerAttention a;
             a.softmax_scale = softmax_scale;
             a.sliding_window = sliding_window;
             a.attention_chunk_size = attention_chunk_size;
             a.logit_softcap = logit_softcap;
             a.attention_sinks = attention_sinks;
             if (bias_placement != "after_scale" && bias_placement != "before_scale") {
               fail("bias_placement", "'" + bias_placement + "'",
                    "expected 'after_scale' or 'before_scale'");
             }
             a.bias_placement = bias_placement == "before_scale" ? BiasPlacement::BeforeScale
                                                                 : BiasPlacement::AfterScale;
             return a;
           }),
           py::kw_only(), py::arg("softmax_scale") = py::none(),
           py::arg("sliding_window") = py::none(), py::arg("attention_chunk_size") = py::none(),
           py::arg("logit_softcap") = py::none(), py::arg("attention_sinks") = false,
           py::arg("bias_placement") = "after_scale")
      .def_readonly("softmax_scale", &LayerAttention::softmax_scale)
      .def_readonly("sliding_window", &LayerAttention::sliding_window)
      .def_readonly("attention_chunk_size", &LayerAttention::attention_chunk_size)
      .def_readonly("query_temperature", &LayerAttention::query_temperature)
      .def_readonly("logit_softcap", &LayerAttention::logit_softcap)
      .def_readonly("attention_sinks", &LayerAttention::attention_sinks)
      .def_property_readonly("bias_placement", [](const LayerAttention& a) {
        return std::string(to_string(a.bias_placement));
      });
}

void bind_scheme(py::module_& m) {
  py::class_<RopeScheme>(m, "RopeScheme", R"doc(A layer's RoPE scheme as the config states it:
rope_type, theta, head_dim, rotary_dim, pairing, mrope_section / mrope_layout (M-RoPE);
spec(seq_len=None) builds its RopeSpec, mrope_spec(seq_len=None) its MropeSpec.

Example:
    >>> model.layers[0].rope.rope_type
    'yarn'
)doc")
      .def_readonly("rope_type", &RopeScheme::rope_type)
      .def_readonly("theta", &RopeScheme::theta)
      .def_readonly("head_dim", &RopeScheme::head_dim)
      .def_readonly("rotary_dim", &RopeScheme::rotary_dim)
      .def_property_readonly("pairing", [](const RopeScheme& s) { return to_string(s.pairing); })
      .def_readonly("mrope_section", &RopeScheme::mrope_section)
      .def_property_readonly("mrope_layout",
                             [](const RopeScheme& s) -> py::object {
                               if (!s.mrope_section) return py::none();
                               return py::str(to_string(s.mrope_layout));
                             })
      .def("spec", &rope_in_mode, py::arg("seq_len") = py::none(), py::arg("angles") = "exact",
           R"doc(The scheme's RopeSpec at seq_len, or with angles='hf-float32' its HfFloat32Rope
(transformers' float32 arithmetic; the CLI's --angles).

Example:
    >>> spec = model.layers[0].rope.spec(seq_len=8192)
)doc")
      .def("mrope_spec", &RopeScheme::mrope_spec, py::arg("seq_len") = py::none());
}

void bind_indexer(py::module_& m) {
  py::class_<IndexerRope>(m, "IndexerRope", R"doc(The lightning indexer of an indexed_attention
layer (DeepSeek Sparse Attention): head_dim (index_head_dim, the indexer's q/k width),
rotary_offset (where its rotated slice starts), rope (RopeScheme over that slice: the layer's
frequencies with the indexer's pairing), key_block (0: a key per token; r > 0: Qwen4-Exp's QSA
keys, each the mean of r tokens' keys rotated at the block's first position). spec(seq_len=None)
builds its RopeSpec.

Example:
    >>> indexer = posemb.load_model("config.json").layers[0].indexer
    >>> indexer.rope.pairing, indexer.head_dim
    ('rotate_half', 128)
)doc")
      .def_readonly("head_dim", &IndexerRope::head_dim)
      .def_readonly("rotary_offset", &IndexerRope::rotary_offset)
      .def_readonly("rope", &IndexerRope::rope)
      .def_readonly("key_block", &IndexerRope::key_block)
      .def(
          "spec",
          [](const IndexerRope& i, OptLength seq_len, const std::string& angles) {
            return rope_in_mode(i.rope, seq_len, angles);
          },
          py::arg("seq_len") = py::none(), py::arg("angles") = "exact");
}

void bind_layer(py::module_& m) {
  py::class_<LayerPositions>(m, "LayerPositions", R"doc(What one layer does with positions: kind
('rope', 'fope', 'alibi', 'learned', 'sinusoidal', 'relative_bias', 'none': the CLI's
"positions"), layer_type, head_dim (the q/k width), rotary_offset (the first rotated feature
of the head: MLA's qk_nope_head_dim, else 0), rope (RopeScheme or None; its head_dim and
rotary_dim the rotated slice's), attention
(LayerAttention), indexer (IndexerRope of an indexed_attention layer, or None), and for T5
stack, relative_bias (T5Buckets), relative_bias_table_layer.

Example:
    >>> layer = posemb.load_model("config.json").layers[5]
    >>> spec = layer.rope_spec(seq_len=8192)
)doc")
      .def_readonly("index", &LayerPositions::index)
      .def_readonly("layer_type", &LayerPositions::layer_type)
      .def_property_readonly("kind", [](const LayerPositions& l) { return to_string(l.kind); })
      .def_readonly("head_dim", &LayerPositions::head_dim)
      .def_readonly("rotary_offset", &LayerPositions::rotary_offset)
      .def_readonly("rope", &LayerPositions::rope)
      .def_readonly("attention", &LayerPositions::attention)
      .def_readonly("stack", &LayerPositions::stack)
      .def_readonly("relative_bias", &LayerPositions::relative_bias)
      .def_readonly("relative_bias_table_layer", &LayerPositions::relative_bias_table_layer)
      .def_readonly("indexer", &LayerPositions::indexer)
      .def_property_readonly("softmax_attention", &LayerPositions::softmax_attention)
      .def(
          "rope_spec",
          [](const LayerPositions& l, OptLength seq_len, const std::string& angles) {
            if (parse_angle_mode(angles) == AngleMode::Exact) return py::cast(l.rope_spec(seq_len));
            return py::cast(hf_float32_rope(l, seq_len));
          },
          py::arg("seq_len") = py::none(), py::arg("angles") = "exact",
          R"doc(The layer's RopeSpec at seq_len (dynamic NTK and LongRoPE depend on it; None:
no length known). Raises posemb.Error unless kind == 'rope'. angles: 'exact' (angles in double,
a RopeSpec over the whole head: head_dim wide, features [rotary_offset, rotary_offset +
rotary_dim) rotated, so q and k are given whole) or 'hf-float32' (transformers' float32
arithmetic, an HfFloat32Rope over the same whole head and slice), the CLI's --angles.

Example:
    >>> spec = model.layers[0].rope_spec()
    >>> hf = model.layers[0].rope_spec(seq_len=8192, angles="hf-float32")  # HF's bits
)doc")
      .def(
          "mrope_spec",
          [](const LayerPositions& l, OptLength seq_len) {
            if (!l.rope) fail("kind", to_string(l.kind), "expected rope for an M-RoPE spec");
            return l.rope->mrope_spec(seq_len);
          },
          py::arg("seq_len") = py::none(),
          R"doc(The layer's MropeSpec at seq_len (M-RoPE models: the config has mrope_section).

Example:
    >>> spec = model.layers[0].mrope_spec()
)doc");
}

// The reader's unused keys of file (ModelPositions::unused_keys): a UserWarning naming them, or
// with strict a posemb::Error naming the first, as the tool's --strict.
void report_unused_keys(const std::string& file, const ModelPositions& model, bool strict) {
  if (model.unused_keys.empty()) return;
  if (strict) {
    Error error(model.unused_keys.front(),
                ": not used by posemb's reader; expected only keys posemb reads (strict)");
    error.add_context(file);
    throw error;
  }
  std::string keys;
  for (const std::string& key : model.unused_keys) keys += (keys.empty() ? "" : ", ") + key;
  const std::string message =
      file +
      ": keys that change positions or attention in transformers, not used by posemb: " + keys;
  if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) != 0) throw py::error_already_set();
}

void bind_model_positions(py::module_& m) {
  py::class_<ModelPositions>(m, "ModelPositions", R"doc(A model's positional scheme layer by layer,
as read from its config.json by load_model: model_type, n_heads, n_kv_heads,
max_position_embeddings, layers (list of LayerPositions), fope (FopeConfig or None),
mrope_index_rules (or None), vision (VisionRope or None), unused_keys (key paths of the rope
blocks and position-related keys the reader did not use, sorted),
unused_keys_transformers_ignores (unused rope-block keys transformers ignores too: the config
class's ignore_keys_at_rope_validation), warnings (what transformers would warn about, one
sentence each).

Example:
    >>> model = posemb.load_model("config.json")
    >>> [layer.kind for layer in model.layers][:2]
    ['rope', 'rope']
)doc")
      .def_readonly("model_type", &ModelPositions::model_type)
      .def_readonly("n_heads", &ModelPositions::n_heads)
      .def_readonly("n_kv_heads", &ModelPositions::n_kv_heads)
      .def_readonly("max_position_embeddings", &ModelPositions::max_position_embeddings)
      .def_readonly("layers", &ModelPositions::layers)
      .def_readonly("fope", &ModelPositions::fope)
      .def_readonly("mrope_index_rules", &ModelPositions::mrope_index)
      .def_readonly("vision", &ModelPositions::vision)
      .def_readonly("unused_keys", &ModelPositions::unused_keys)
      .def_readonly("unused_keys_transformers_ignores",
                    &ModelPositions::unused_keys_transformers_ignores)
      .def_readonly("warnings", &ModelPositions::warnings)
      .def_property_readonly("kind", [](const ModelPositions& m) { return to_string(m.kind()); })
      .def("layers_alike", &ModelPositions::layers_alike)
      .def("rope_scheme", &ModelPositions::rope_scheme, py::return_value_policy::copy)
      .def(
          "rope_spec",
          [](const ModelPositions& model, OptLength seq_len, const std::string& angles) {
            if (angles == "exact") return py::cast(model.rope_spec(seq_len));
            return rope_in_mode(model.rope_scheme(), seq_len, angles);
          },
          py::arg("seq_len") = py::none(), py::arg("angles") = "exact",
          R"doc(The RopeSpec of a model whose RoPE layers share one scheme, head and rotated slice
(else posemb.Error: use layers[i].rope_spec()), over the whole head as
LayerPositions.rope_spec; angles='hf-float32' gives its HfFloat32Rope (as
LayerPositions.rope_spec).

Example:
    >>> spec = posemb.load_model("config.json").rope_spec(seq_len=4096)
)doc")
      .def("xpos_spec", &ModelPositions::xpos_spec, py::arg("seq_len") = py::none(),
           R"doc(The XposSpec of an xPos model (xpos_rel_pos: true).

Example:
    >>> spec = model.xpos_spec()
)doc");
  m.def(
      "load_model",
      [](const py::object& path, std::optional<std::string> pairing, bool strict) {
        const std::string file = py::str(py::module_::import("os").attr("fspath")(path));
        ConfigOptions options;
        if (pairing) options.pairing = pairing_of(*pairing);
        ModelPositions model;
        {
          py::gil_scoped_release release;
          model = load_model_positions(file, options);
        }
        report_unused_keys(file, model, strict);
        return model;
      },
      py::arg("path"), py::arg("pairing") = py::none(), py::arg("strict") = false,
      R"doc(Reads a HuggingFace config.json: every layer's positional scheme (family defaults,
rope_scaling / rope_parameters, per_layer_config, per-layer bases, NoPE layers, sliding windows,
...). pairing overrides the pairing the model_type implies. Errors (missing keys, bad values)
raise posemb.Error naming the file and key. Keys that change positions or attention in
transformers and that the reader did not use (model.unused_keys) are reported by a
UserWarning naming them, or, with strict=True, refused by posemb.Error.

Example:
    >>> model = posemb.load_model("config.json")
    >>> spec = model.layers[0].rope_spec()
)doc");
}

// ---- M-RoPE positions of a prompt

MropeFamily family_of(const std::string& family) {
  for (MropeFamily f :
       {MropeFamily::Qwen2VL, MropeFamily::Qwen25VL, MropeFamily::Qwen3VL, MropeFamily::Glm4v}) {
    if (family == to_string(f)) return f;
  }
  fail("family", "'" + family + "'", "expected 'qwen2_vl', 'qwen2_5_vl', 'qwen3_vl' or 'glm4v'");
}

void bind_mrope_index(py::module_& m) {
  py::class_<MropeIndexRules>(m, "MropeIndexRules",
                              R"doc(get_rope_index's rules of a Qwen-VL family:
family ('qwen2_vl', 'qwen2_5_vl', 'qwen3_vl', 'glm4v'), spatial_merge_size, tokens_per_second, and
resume: where positions resume after a vision segment, 'past_largest' (past its largest
position on any axis: Qwen's own code and transformers <= 4.57, the default) or
'spatial_extent' (max(H, W) / merge past its start: transformers 5.x).

Example:
    >>> rules = posemb.MropeIndexRules("qwen2_vl", spatial_merge_size=2)
)doc")
      .def(py::init([](const std::string& family, int spatial_merge_size, double tokens_per_second,
                       const std::string& resume) {
             return MropeIndexRules{family_of(family), spatial_merge_size, tokens_per_second,
                                    mrope_resume_of(resume)};
           }),
           py::arg("family"), py::arg("spatial_merge_size") = 2, py::arg("tokens_per_second") = 4.0,
           py::arg("resume") = "past_largest")
      .def_property_readonly("resume", [](const MropeIndexRules& r) { return to_string(r.resume); })
      .def_property_readonly("family", [](const MropeIndexRules& r) { return to_string(r.family); })
      .def_readonly("spatial_merge_size", &MropeIndexRules::spatial_merge_size)
      .def_readonly("tokens_per_second", &MropeIndexRules::tokens_per_second);
  m.def(
      "mrope_index",
      [](const py::object& rules, const std::string& segments,
         const std::optional<std::string>& resume) {
        MropeIndexRules r;
        if (py::isinstance<ModelPositions>(rules)) {
          const auto& model = rules.cast<const ModelPositions&>();
          if (!model.mrope_index) {
            fail("model.model_type", "'" + model.model_type + "'",
                 "expected a model with M-RoPE position rules (" + mrope_model_types() + ")");
          }
          r = *model.mrope_index;
        } else {
          r = rules.cast<MropeIndexRules>();
        }
        if (resume) r.resume = mrope_resume_of(*resume);
        const MropeIndex index = mrope_position_ids(parse_mrope_segments(segments), r);
        return std::make_pair(to_numpy(index.positions.data(), {3, index.seq_len()}),
                              index.rope_delta);
      },
      py::arg("rules"), py::arg("segments"), py::arg("resume") = py::none(),
      R"doc(The M-RoPE positions int64 [3, seq] of a prompt laid out as
"text:N,image:TxHxW,video:TxHxW[@S]" (grids before the merge), by HF's get_rope_index rules of
`rules` (a ModelPositions or MropeIndexRules), and the rope delta: decode token at cache length
L sits at L + delta on every axis. resume ('past_largest', the default of the code the models
were trained with, or 'spatial_extent', transformers 5.x) replaces the rules' own.

Example:
    >>> positions, delta = posemb.mrope_index(model, "text:3,image:1x4x6,text:5")
    >>> positions.shape, delta
    ((3, 14), -3)
)doc");
}

// ---- weights and packed sequences

template <class T>
using RowMajorMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

py::object permute_impl(py::handle w, int n_heads, const std::string& from, const std::string& to,
                        std::optional<int> rotary_dim, bool in_place) {
  const ArrayView probe = view_of(w, "w");
  if (probe.rank() != 1 && probe.rank() != 2) {
    fail("w.shape", probe.shape_text(),
         "expected [n_heads * head_dim, in_features] or [n_heads * head_dim]");
  }
  const ArrayView in = activation(w, "w", static_cast<int>(probe.rank()), in_place);
  const ArrayView out = in_place ? in : new_array_like(in, in.dtype, in.shape);
  const Pairing a = pairing_of(from), b = pairing_of(to);
  const Eigen::Index rows = in.shape[0], cols = in.rank() == 2 ? in.shape[1] : 1;
  with_storage_type(in, [&](auto tag) {
    using T = decltype(tag);
    if (!in_place)
      std::copy_n(static_cast<const T*>(in.data), in.size(), static_cast<T*>(out.data));
    RowMajorMap<T> map(static_cast<T*>(out.data), rows, cols);
    py::gil_scoped_release release;
    permute_pairing_inplace(map, n_heads, a, b, rotary_dim);
    return 0;
  });
  return in_place ? py::reinterpret_borrow<py::object>(w) : out.object;
}

void bind_weights(py::module_& m) {
  const char* doc = R"doc(Reorders the rows of a q or k projection (weight [n_heads * head_dim,
in_features] or bias [n_heads * head_dim]) between the pairings: 'interleaved' -> 'rotate_half'
moves row 2i to i and 2i + 1 to i + rotary_dim / 2 in each head. n_heads: query heads for Wq,
key-value heads for Wk. permute_pairing_ works in place; permute_pairing returns a copy.

Example:
    >>> wk_hf = posemb.permute_pairing(wk_meta, 8, "interleaved", "rotate_half")
)doc";
  m.def(
      "permute_pairing_",
      [](const py::object& w, int n_heads, const std::string& from, const std::string& to,
         std::optional<int> rotary_dim) {
        return permute_impl(w, n_heads, from, to, rotary_dim, true);
      },
      py::arg("w"), py::arg("n_heads"), py::arg("from_pairing"), py::arg("to_pairing"),
      py::arg("rotary_dim") = py::none(), doc);
  m.def(
      "permute_pairing",
      [](const py::object& w, int n_heads, const std::string& from, const std::string& to,
         std::optional<int> rotary_dim) {
        return permute_impl(w, n_heads, from, to, rotary_dim, false);
      },
      py::arg("w"), py::arg("n_heads"), py::arg("from_pairing"), py::arg("to_pairing"),
      py::arg("rotary_dim") = py::none(), doc);
  m.def(
      "fope_checkpoint_coefficients",
      [](const std::string& path, int block) {
        const CheckpointFopeCoefficients c =
            fope_checkpoint_coefficients(SafetensorsCheckpoint(path), block);
        return std::make_pair(to_numpy(c.sin_coef.data(), c.sin_shape),
                              to_numpy(c.cos_coef.data(), c.cos_shape));
      },
      py::arg("path"), py::arg("block") = 0,
      R"doc(FoPE's coefficients (sin_coef, cos_coef), float32 [n_kv_heads, D_in, D_out], from a
safetensors checkpoint (model.safetensors or its .index.json): block `block`'s
transformer.blocks.<block>.pos_emb.{sin,cos}_coef (the FoPE authors' OLMo), else the model's one
pair model.language_model.rotary_emb.{sin,cos}_coef (Intern-S1-Pro). For fope_with_coefficients
with ModelPositions.fope.

Example:
    >>> model = posemb.load_model("config.json")
    >>> sin, cos = posemb.fope_checkpoint_coefficients("model.safetensors")
    >>> fope = posemb.fope_with_coefficients(model.fope, sin, cos)
)doc");
  m.def(
      "packed_positions",
      [](std::vector<std::int64_t> cu_seqlens, std::vector<std::int64_t> offsets,
         std::optional<std::int64_t> tokens) {
        const PositionMatrix p = tokens ? packed_positions(cu_seqlens, *tokens, offsets)
                                        : packed_positions(cu_seqlens, offsets);
        return to_numpy(p.data(), {p.rows(), p.cols()});
      },
      py::arg("cu_seqlens"), py::arg("offsets") = std::vector<std::int64_t>{},
      py::arg("tokens") = py::none(),
      R"doc(Positions int64 [1, T] of packed documents (flash-attention's cu_seqlens): token t of
document d is at offsets[d] + t - cu_seqlens[d] (offsets default to 0). tokens: the packed
tensor's T, checked against cu_seqlens[-1].

Example:
    >>> posemb.packed_positions([0, 3, 5, 9])
    array([[0, 1, 2, 0, 1, 0, 1, 2, 3]])
)doc");
  m.def(
      "context_parallel_positions",
      [](std::int64_t seq_len, int rank, int ranks, std::int64_t first_position) {
        const PositionMatrix p = context_parallel_positions(seq_len, rank, ranks, first_position);
        return to_numpy(p.data(), {p.rows(), p.cols()});
      },
      py::arg("seq_len"), py::arg("rank"), py::arg("ranks"), py::arg("first_position") = 0,
      R"doc(Positions int64 [1, seq_len / ranks] that context-parallel rank `rank` holds (chunk
rank and chunk 2 * ranks - 1 - rank of 2 * ranks chunks).

Example:
    >>> posemb.context_parallel_positions(8, 0, 2)
    array([[0, 1, 6, 7]])
)doc");
}

}  // namespace

void bind_model(py::module_& m) {
  bind_attention(m);
  bind_scheme(m);
  bind_indexer(m);
  bind_layer(m);
  bind_model_positions(m);
  bind_mrope_index(m);
  bind_weights(m);
}

}  // namespace posemb::python
