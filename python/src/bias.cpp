// Additive schemes and the score helper: ALiBi slopes and biases, T5 buckets and biases,
// sinusoidal and learned absolute tables (and adding them to token embeddings), and
// attention_scores.
#include <pybind11/stl.h>

#include <algorithm>

#include "bindings.hpp"

namespace posemb::python {

namespace {

AlibiForm form_of(const std::string& form) {
  if (form == "causal") return AlibiForm::Causal;
  if (form == "symmetric") return AlibiForm::Symmetric;
  fail("form", "'" + form + "'", "expected 'causal' or 'symmetric'");
}

SinusoidalLayout sinusoidal_layout_of(const std::string& layout) {
  if (layout == "interleaved") return SinusoidalLayout::Interleaved;
  if (layout == "concat") return SinusoidalLayout::Concat;
  fail("layout", "'" + layout + "'", "expected 'interleaved' or 'concat'");
}

Eigen::VectorXd vector_of(py::handle values, const std::string& name) {
  const ArrayView v =
      view_of(py::module_::import("numpy").attr("asarray")(values, "float64"), name);
  if (v.rank() != 1) fail(name + ".shape", v.shape_text(), "expected one dimension");
  Eigen::VectorXd out(v.shape[0]);
  for (Eigen::Index i = 0; i < v.shape[0]; ++i)
    out[i] = static_cast<const double*>(v.data)[i * v.strides[0]];
  return out;
}

// body(T{}) for a table dtype 'float32' or 'float64'.
template <class Body>
py::object with_table_dtype(const std::string& dtype, Body&& body) {
  if (table_dtype_of(dtype) == Dtype::Float32) return body(float{});
  return body(double{});
}

template <class T>
py::object tensor3_to_numpy(const Eigen::Tensor<T, 3, Eigen::RowMajor>& t) {
  return to_numpy(t.data(), {t.dimension(0), t.dimension(1), t.dimension(2)});
}
template <class Matrix>
py::object matrix_to_numpy(const Matrix& m) {
  return to_numpy(m.data(), {m.rows(), m.cols()});
}

void bind_alibi(py::module_& m) {
  m.def(
      "alibi_slopes",
      [](int n_heads, double max_bias, std::optional<int> head_begin, std::optional<int> head_end,
         std::optional<std::string> round_to) {
        std::optional<HeadRange> range;
        if (head_begin || head_end)
          range = HeadRange{head_begin.value_or(0), head_end.value_or(n_heads)};
        AlibiSlopeRounding rounding = AlibiSlopeRounding::None;
        if (round_to) {
          if (*round_to != "bfloat16")
            fail("round_to", "'" + *round_to + "'", "expected None or 'bfloat16'");
          rounding = AlibiSlopeRounding::BFloat16;
        }
        return to_numpy(alibi_slopes(n_heads, max_bias, range, rounding));
      },
      py::arg("n_heads"), py::arg("max_bias") = 8.0, py::arg("head_begin") = py::none(),
      py::arg("head_end") = py::none(), py::arg("round_to") = py::none(),
      R"doc(ALiBi slopes float64 [n_heads] (or the heads [head_begin, head_end) of one rank), in
the reference code's head order, for any head count (not only powers of two).

round_to="bfloat16" rounds each slope to float32, then to bfloat16 (nearest even), as
Falcon's build_alibi_tensor (transformers modeling_falcon.py; Falcon-RW's modelling_RW.py)
does; its bias is then bfloat16(slope * bfloat16(k)) (torch promotes the positions to
bfloat16 and rounds the product).

Example:
    >>> posemb.alibi_slopes(4)
    array([0.25      , 0.0625    , 0.015625  , 0.00390625])
    >>> posemb.alibi_slopes(32, round_to="bfloat16")[2]  # 2^(-0.75) = 0.5946...
    0.59375
)doc");
  m.def(
      "alibi_bias",
      [](const py::object& slopes, const py::object& q_positions, const py::object& k_positions,
         const std::string& form, const std::string& dtype) {
        const Eigen::VectorXd s = vector_of(slopes, "slopes");
        const PositionVector q = position_vector(q_positions, "q_positions");
        const PositionVector k = position_vector(k_positions, "k_positions");
        const AlibiForm f = form_of(form);
        return with_table_dtype(dtype, [&](auto tag) {
          using T = decltype(tag);
          return tensor3_to_numpy(without_gil([&] { return alibi_bias<T>(s, q, k, f); }));
        });
      },
      py::arg("slopes"), py::arg("q_positions"), py::arg("k_positions"), py::arg("form") = "causal",
      py::arg("dtype") = "float32",
      R"doc(The ALiBi bias [heads, q_len, k_len] for query positions [q_len] and key positions
[k_len] (int64): -slope * (q - k), -inf where k > q ('causal'), or -slope * |q - k|
('symmetric').

Example:
    >>> bias = posemb.alibi_bias(posemb.alibi_slopes(16), np.arange(8), np.arange(8))
)doc");
  m.def(
      "alibi_bias_row",
      [](const py::object& slopes, std::int64_t q_position, const py::object& k_positions,
         const std::string& form, const std::string& dtype) {
        const Eigen::VectorXd s = vector_of(slopes, "slopes");
        const PositionVector k = position_vector(k_positions, "k_positions");
        const AlibiForm f = form_of(form);
        return with_table_dtype(dtype, [&](auto tag) {
          using T = decltype(tag);
          return matrix_to_numpy(
              without_gil([&] { return alibi_bias_row<T>(s, q_position, k, f); }));
        });
      },
      py::arg("slopes"), py::arg("q_position"), py::arg("k_positions"), py::arg("form") = "causal",
      py::arg("dtype") = "float32",
      R"doc(One decode query's ALiBi bias [heads, k_len] against every key position.

Example:
    >>> row = posemb.alibi_bias_row(posemb.alibi_slopes(16), 8, np.arange(9))  # [16, 9]
)doc");
}

void bind_t5(py::module_& m) {
  py::class_<T5Buckets>(m, "T5Buckets", R"doc(T5's relative-position buckets: num_buckets,
max_distance, bidirectional (encoder) or causal (decoder).

Example:
    >>> buckets = posemb.T5Buckets(32, 128, bidirectional=True)
)doc")
      .def(py::init([](int num_buckets, int max_distance, bool bidirectional) {
             return T5Buckets{num_buckets, max_distance, bidirectional};
           }),
           py::arg("num_buckets") = 32, py::arg("max_distance") = 128,
           py::arg("bidirectional") = true)
      .def_readonly("num_buckets", &T5Buckets::num_buckets)
      .def_readonly("max_distance", &T5Buckets::max_distance)
      .def_readonly("bidirectional", &T5Buckets::bidirectional);
  m.def("t5_relative_position_bucket", &t5_relative_position_bucket, py::arg("rel"),
        py::arg("num_buckets") = 32, py::arg("max_distance") = 128, py::arg("bidirectional") = true,
        R"doc(The T5 bucket of relative position rel = k - q (modeling_t5.py's rules).

Example:
    >>> posemb.t5_relative_position_bucket(-64, 32, 128, True)
    14
)doc");
  m.def(
      "t5_bucket_matrix",
      [](const T5Buckets& buckets, const py::object& q_positions, const py::object& k_positions) {
        const PositionVector q = position_vector(q_positions, "q_positions");
        const PositionVector k = position_vector(k_positions, "k_positions");
        return matrix_to_numpy(t5_bucket_matrix(buckets, q, k));
      },
      py::arg("buckets"), py::arg("q_positions"), py::arg("k_positions"),
      R"doc(Bucket ids int64 [q_len, k_len] of bucket(k_j - q_i).

Example:
    >>> ids = posemb.t5_bucket_matrix(posemb.T5Buckets(), np.arange(4), np.arange(4))
)doc");
}

void bind_t5_bias(py::module_& m) {
  py::class_<T5BiasTable<float>>(m, "T5BiasTable", R"doc(T5's learned bias table float32
[num_buckets, heads] (the checkpoint's relative_attention_bias.weight, copied) with its buckets.

Example:
    >>> table = posemb.T5BiasTable(posemb.T5Buckets(32, 128, False), weights)  # weights [32, 8]
)doc")
      .def(py::init([](const T5Buckets& buckets, const py::object& table) {
             const auto t = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(
                 py::module_::import("numpy").attr("asarray")(table));
             if (!t || t.ndim() != 2) {
               fail("table", "not a 2-D array", "expected float32 [num_buckets, heads]");
             }
             T5BiasTable<float>::Table values(t.shape(0), t.shape(1));
             std::copy_n(t.data(), t.size(), values.data());
             return T5BiasTable<float>(buckets, std::move(values));
           }),
           py::arg("buckets"), py::arg("table"))
      .def_property_readonly("buckets", &T5BiasTable<float>::buckets)
      .def_property_readonly("heads", &T5BiasTable<float>::heads)
      .def_property_readonly(
          "table", [](const T5BiasTable<float>& t) { return matrix_to_numpy(t.table()); });
  m.def(
      "t5_bias",
      [](const T5BiasTable<float>& table, const py::object& q_positions,
         const py::object& k_positions) {
        const PositionVector q = position_vector(q_positions, "q_positions");
        const PositionVector k = position_vector(k_positions, "k_positions");
        return tensor3_to_numpy(without_gil([&] { return t5_bias(table, q, k); }));
      },
      py::arg("table"), py::arg("q_positions"), py::arg("k_positions"),
      R"doc(T5's bias float32 [heads, q_len, k_len]: table[bucket(k_j - q_i), h] (no mask).

Example:
    >>> bias = posemb.t5_bias(table, np.arange(100, 116), np.arange(116))
)doc");
  m.def(
      "t5_bias_row",
      [](const T5BiasTable<float>& table, std::int64_t q_position, const py::object& k_positions) {
        const PositionVector k = position_vector(k_positions, "k_positions");
        return matrix_to_numpy(t5_bias_row(table, q_position, k));
      },
      py::arg("table"), py::arg("q_position"), py::arg("k_positions"),
      R"doc(One decode query's T5 bias float32 [heads, k_len].

Example:
    >>> row = posemb.t5_bias_row(table, 115, np.arange(116))
)doc");
}

// x [batch, seq, d] += table[positions], in place or into a copy of x.
py::object add_embeddings_impl(py::handle x, const py::object& positions, py::handle table,
                               bool in_place) {
  const ArrayView xv = activation(x, "x", 3, in_place);
  const ArrayView tv = activation(table, "table", 2, false);
  if (tv.dtype != xv.dtype) {
    fail("table.dtype", tv.dtype_text(), "expected x's dtype " + xv.dtype_text());
  }
  const TokenPositions p = token_positions(positions);
  const ArrayView out = in_place ? xv : new_array_like(xv, xv.dtype, xv.shape);
  with_storage_type(xv, [&](auto tag) {
    using T = decltype(tag);
    if (!in_place)
      std::copy_n(static_cast<const T*>(xv.data), xv.size(), static_cast<T*>(out.data));
    auto map = tensor_map<T, 3>(out);
    const Eigen::Map<const EmbeddingTable<T>> weights(static_cast<const T*>(tv.data), tv.shape[0],
                                                      tv.shape[1]);
    py::gil_scoped_release release;
    add_position_embeddings_inplace(map, p.view(), weights);
    return 0;
  });
  return in_place ? py::reinterpret_borrow<py::object>(x) : out.object;
}

void bind_absolute(py::module_& m) {
  m.def(
      "sinusoidal_table",
      [](std::int64_t max_len, int d, double base, const std::string& layout,
         const std::string& dtype) {
        const SinusoidalLayout l = sinusoidal_layout_of(layout);
        return with_table_dtype(dtype, [&](auto tag) {
          using T = decltype(tag);
          return matrix_to_numpy(
              without_gil([&] { return sinusoidal_table<T>(max_len, d, base, l); }));
        });
      },
      py::arg("max_len"), py::arg("d"), py::arg("base") = 10000.0,
      py::arg("layout") = "interleaved", py::arg("dtype") = "float32",
      R"doc(The sinusoidal table [max_len, d] (Vaswani et al. 2017): sin at 2i and cos at 2i + 1
('interleaved'), or sin at i and cos at d/2 + i ('concat', tensor2tensor / fairseq).

Example:
    >>> table = posemb.sinusoidal_table(2048, 512)
)doc");
  m.def(
      "sinusoidal_embedding",
      [](std::int64_t position, int d, double base, const std::string& layout) {
        return to_numpy(sinusoidal_embedding(position, d, base, sinusoidal_layout_of(layout)));
      },
      py::arg("position"), py::arg("d"), py::arg("base") = 10000.0,
      py::arg("layout") = "interleaved",
      R"doc(The sinusoidal embedding of one position, float64 [d].

Example:
    >>> e = posemb.sinusoidal_embedding(5, 8)
)doc");
  m.def(
      "learned_position_table",
      [](std::int64_t max_len, std::int64_t d, std::uint64_t seed, double init_std,
         const std::string& dtype) {
        return with_table_dtype(dtype, [&](auto tag) {
          using T = decltype(tag);
          const LearnedPositionTable<T> table(max_len, d, seed, init_std);
          return matrix_to_numpy(table.weights());
        });
      },
      py::arg("max_len"), py::arg("d"), py::arg("seed"), py::arg("init_std") = 0.02,
      py::arg("dtype") = "float32",
      R"doc(A learned position table [max_len, d] initialised N(0, init_std^2) from `seed` (a
checkpoint's table is its own weights: pass those to add_position_embeddings_ instead).

Example:
    >>> table = posemb.learned_position_table(1024, 768, seed=0)
)doc");
  const char* add_doc = R"doc(Adds table[positions] to token embeddings x [batch, seq, d]
(numpy or torch, the table of x's dtype [max_len, d]); positions as for apply_rope_ (whole).
add_position_embeddings_ works in place and returns x; add_position_embeddings returns a copy.

Example:
    >>> posemb.add_position_embeddings_(h, 0, posemb.sinusoidal_table(2048, 512))
)doc";
  m.def(
      "add_position_embeddings_",
      [](const py::object& x, const py::object& positions, const py::object& table) {
        return add_embeddings_impl(x, positions, table, true);
      },
      py::arg("x"), py::arg("positions"), py::arg("table"), add_doc);
  m.def(
      "add_position_embeddings",
      [](const py::object& x, const py::object& positions, const py::object& table) {
        return add_embeddings_impl(x, positions, table, false);
      },
      py::arg("x"), py::arg("positions"), py::arg("table"), add_doc);
}

// Rotation and bias are independent (attention/options.hpp): rope with one of alibi_slopes or
// relative_bias, or either alone.
ScoreOptions score_options(const std::optional<RopeSpec>& rope, const py::object& alibi_slopes,
                           const std::optional<T5BiasTable<float>>& relative_bias,
                           const py::object& sink_logits,
                           const std::optional<LayerAttention>& attention, bool causal,
                           bool softmax) {
  ScoreOptions options;
  if (!alibi_slopes.is_none() && relative_bias) {
    fail("alibi_slopes, relative_bias", "both given", "expected at most one bias");
  }
  if (rope) options.rotation = *rope;
  if (!alibi_slopes.is_none()) {
    options.bias = AlibiSlopes{vector_of(alibi_slopes, "alibi_slopes")};
  } else if (relative_bias) {
    options.bias = *relative_bias;
  }
  if (!sink_logits.is_none()) options.sink_logits = vector_of(sink_logits, "sink_logits");
  if (attention) options.layer = *attention;
  options.causal = causal;
  options.softmax = softmax;
  return options;
}

void bind_scores(py::module_& m) {
  m.def(
      "attention_scores",
      [](const py::object& q, const py::object& q_positions, const py::object& k,
         const py::object& k_positions, const std::optional<RopeSpec>& rope,
         const py::object& alibi_slopes, const std::optional<T5BiasTable<float>>& relative_bias,
         const py::object& sink_logits, const std::optional<LayerAttention>& attention, bool causal,
         bool softmax, const std::string& layout) {
        const ScoreOptions options = score_options(rope, alibi_slopes, relative_bias, sink_logits,
                                                   attention, causal, softmax);
        const ArrayView qv = activation(q, "q", 4, false), kv = activation(k, "k", 4, false);
        if (kv.dtype != qv.dtype)
          fail("k.dtype", kv.dtype_text(), "expected q's dtype " + qv.dtype_text());
        const TokenPositions qp = token_positions(q_positions, "q_positions");
        const TokenPositions kp = token_positions(k_positions, "k_positions");
        const TensorLayout l = layout_of(layout);
        const bool bshd = l == TensorLayout::BSHD;
        const std::vector<Eigen::Index> shape = {qv.shape[0], bshd ? qv.shape[2] : qv.shape[1],
                                                 bshd ? qv.shape[1] : qv.shape[2],
                                                 bshd ? kv.shape[1] : kv.shape[2]};
        const ArrayView out =
            new_array_like(qv, qv.dtype == Dtype::Float64 ? Dtype::Float64 : Dtype::Float32, shape);
        with_storage_type(qv, [&](auto tag) {
          using T = decltype(tag);
          const auto qm = tensor_map<T, 4>(qv);
          const auto km = tensor_map<T, 4>(kv);
          auto om = tensor_map<compute_t<T>, 4>(out);
          py::gil_scoped_release release;
          attention_scores(qm, qp.view(), km, kp.view(), om, options, l);
          return 0;
        });
        return out.object;
      },
      py::arg("q"), py::arg("q_positions"), py::arg("k"), py::arg("k_positions"), py::kw_only(),
      py::arg("rope") = py::none(), py::arg("alibi_slopes") = py::none(),
      py::arg("relative_bias") = py::none(), py::arg("sink_logits") = py::none(),
      py::arg("attention") = py::none(), py::arg("causal") = false, py::arg("softmax") = false,
      py::arg("layout") = "bshd",
      R"doc(Attention logits (or softmax probabilities) [batch, heads, seq_q, seq_k]: float32 for
float32 / float16 / bfloat16 q and k, float64 for float64; numpy or torch as q.

q: [batch, seq_q, heads, head_dim] ('bshd') or [batch, heads, seq_q, head_dim] ('bhsd'); k the
same with kv_heads dividing heads (grouped-query attention). Positions as for apply_rope_.
rope (a RopeSpec rotating q and k) and at most one bias, alibi_slopes [heads] or relative_bias (a
T5BiasTable), are independent. sink_logits [heads]: one extra logit per head in the softmax
denominator when attention.attention_sinks. attention: a LayerAttention (softmax scale, sliding
window, chunk, query temperature, logit softcap, sinks, ALiBi placement); causal masks k > q.

Example:
    >>> p = posemb.attention_scores(q, 12, k, 0, rope=spec, causal=True, softmax=True)
)doc");
}

}  // namespace

void bind_bias(py::module_& m) {
  bind_alibi(m);
  bind_t5(m);
  bind_t5_bias(m);
  bind_absolute(m);
  bind_scores(m);
}

}  // namespace posemb::python
