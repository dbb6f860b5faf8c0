// append_rotated (posemb/kv/append.hpp): new keys rotated and values converted straight into a
// caller's numpy or torch KV cache, zero copy. Only the mapping of arrays to posemb's cache
// descriptors is done here.
#include <pybind11/stl.h>

#include <optional>

#include "bindings.hpp"
#include "posemb/kv/append.hpp"
#include "posemb/rotary/hf_float32.hpp"

namespace posemb::python {

namespace {

CacheLayout cache_layout_of(const std::string& layout) {
  if (layout == "bhsd") return CacheLayout::BHSD;
  if (layout == "bshd") return CacheLayout::BSHD;
  if (layout == "paged") return CacheLayout::Paged;
  fail("layout", layout, "expected 'bhsd', 'bshd' or 'paged'");
}

// The storage type of a cache array: float32 / float16 / bfloat16 / torch.float8_e4m3fn from its
// dtype, uint8 as `named` says ('fp8_e4m3' or 'q8_0'); a name that disagrees is refused.
CacheDtype cache_dtype_of(const ArrayView& cache, const std::string& name,
                          const std::optional<std::string>& named) {
  const std::string text = cache.dtype_text();
  std::optional<CacheDtype> found;
  if (cache.dtype == Dtype::Float32) found = CacheDtype::Float32;
  if (cache.dtype == Dtype::Float16) found = CacheDtype::Float16;
  if (cache.dtype == Dtype::BFloat16) found = CacheDtype::BFloat16;
  if (text == "torch.float8_e4m3fn") found = CacheDtype::Fp8E4m3;
  const bool bytes = text == "uint8" || text == "torch.uint8";
  if (!found && !bytes) {
    fail(name + ".dtype", text,
         "expected float32, float16, bfloat16, torch.float8_e4m3fn, or uint8 with cache_dtype "
         "'fp8_e4m3' or 'q8_0'");
  }
  if (named) {
    const std::string& n = *named;
    const std::optional<CacheDtype> wanted =
        n == "fp8_e4m3"   ? std::optional<CacheDtype>(CacheDtype::Fp8E4m3)
        : n == "q8_0"     ? std::optional<CacheDtype>(CacheDtype::Q8_0)
        : n == "float32"  ? std::optional<CacheDtype>(CacheDtype::Float32)
        : n == "float16"  ? std::optional<CacheDtype>(CacheDtype::Float16)
        : n == "bfloat16" ? std::optional<CacheDtype>(CacheDtype::BFloat16)
                          : std::nullopt;
    if (!wanted) {
      fail("cache_dtype", n, "expected 'float32', 'float16', 'bfloat16', 'fp8_e4m3' or 'q8_0'");
    }
    const bool fits =
        found ? *found == *wanted : (*wanted == CacheDtype::Fp8E4m3 || *wanted == CacheDtype::Q8_0);
    if (!fits) fail(name + ".dtype", text, "expected a " + n + " cache (cache_dtype)");
    return *wanted;
  }
  if (!found) fail("cache_dtype", "None", "expected 'fp8_e4m3' or 'q8_0' for a uint8 " + name);
  return *found;
}

// A writable C-contiguous cache array, its storage type and geometry [rows, slots, kv_heads,
// last] (a paged [num_slots, kv_heads, last] split by block_size).
struct CacheArray {
  ArrayView view;
  CacheDtype dtype;
  Eigen::Index rows, slots, kv_heads, last;
};

CacheArray cache_array(const py::object& x, const std::string& name, CacheLayout layout,
                       std::optional<std::int64_t> block_size,
                       const std::optional<std::string>& named) {
  CacheArray a{view_of(x, name), CacheDtype::Float32, 0, 0, 0, 0};
  a.dtype = cache_dtype_of(a.view, name, named);
  if (!a.view.writable) fail(name, "read-only", "expected a writable array");
  if (!a.view.contiguous()) fail(name, a.view.shape_text(), "expected a C-contiguous cache");
  const auto& s = a.view.shape;
  if (layout == CacheLayout::Paged && a.view.rank() == 3) {
    if (!block_size)
      fail("block_size", "None", "expected the block size of a [num_slots, ...] cache");
    const KvCache split = paged_kv_cache(s[0], *block_size, s[1], {}, {});
    a.rows = split.rows;
    a.slots = split.slots;
    a.kv_heads = s[1];
    a.last = s[2];
    return a;
  }
  if (a.view.rank() != 4) {
    fail(name + ".shape", a.view.shape_text(),
         layout == CacheLayout::BHSD   ? "expected [batch, kv_heads, max_seq, head_dim]"
         : layout == CacheLayout::BSHD ? "expected [batch, max_seq, kv_heads, head_dim]"
                                       : "expected [num_blocks, block_size, kv_heads, head_dim] "
                                         "or [num_slots, kv_heads, head_dim] with block_size");
  }
  if (layout == CacheLayout::Paged && block_size && *block_size != s[1]) {
    fail("block_size", *block_size, "expected " + name + ".shape[1] = " + std::to_string(s[1]));
  }
  a.rows = s[0];
  a.slots = layout == CacheLayout::BHSD ? s[2] : s[1];
  a.kv_heads = layout == CacheLayout::BHSD ? s[1] : s[2];
  a.last = s[3];
  return a;
}

// The cache buffer of `a` for head vectors of head_dim values (q8_0: the last axis holds their
// bytes, head_dim / 32 blocks of 34).
CacheBuffer buffer_of(const CacheArray& a, const std::string& name, Eigen::Index head_dim,
                      float scale) {
  const Eigen::Index bytes = cache_row_bytes(a.dtype, head_dim, (name + " head_dim").c_str());
  const Eigen::Index item = a.dtype == CacheDtype::Q8_0 || a.dtype == CacheDtype::Fp8E4m3 ? 1
                            : a.dtype == CacheDtype::Float32                              ? 4
                                                                                          : 2;
  if (a.last * item != bytes) {
    fail(name + ".shape[-1]", a.last,
         "expected " + std::to_string(bytes / item) + " for head_dim " + std::to_string(head_dim) +
             (a.dtype == CacheDtype::Q8_0 ? " (q8_0: head_dim / 32 blocks of 34 bytes)" : ""));
  }
  return CacheBuffer{a.view.data, a.dtype, head_dim, scale};
}

// Keys or values: float32, C-contiguous, [batch, seq, kv_heads, head_dim] or [tokens, kv_heads,
// head_dim] (one batch row).
TensorMap4<const float> projected(const py::object& x, const std::string& name) {
  const ArrayView v = view_of(x, name);
  if (v.dtype != Dtype::Float32) fail(name + ".dtype", v.dtype_text(), "expected float32");
  if (!v.contiguous()) fail(name, v.shape_text(), "expected a C-contiguous array");
  if (v.rank() == 3) {
    return TensorMap4<const float>(static_cast<const float*>(v.data), 1, v.shape[0], v.shape[1],
                                   v.shape[2]);
  }
  if (v.rank() != 4) {
    fail(name + ".shape", v.shape_text(),
         "expected [batch, seq, kv_heads, head_dim] or [tokens, kv_heads, head_dim]");
  }
  return TensorMap4<const float>(static_cast<const float*>(v.data), v.shape[0], v.shape[1],
                                 v.shape[2], v.shape[3]);
}

constexpr const char* append_doc = R"doc(Rotates new keys by `source` and writes them, with
the values (converted, not rotated), into a KV cache in one pass, in place (zero copy).

keys: float32 [batch, seq, kv_heads, head_dim] (or [tokens, kv_heads, head_dim]); values: float32
of the same [batch, seq, kv_heads] and its own head_dim. positions: as apply_rope takes them (an
offset, [seq] or [batch, seq]); for an MropeSpec as apply_mrope takes them. source: a RopeSpec
(a RopeTable of it rotates to the same bits), an HfFloat32Rope, an MropeSpec, or an XposSpec
(rotated as keys).
slots: int64 [batch, seq] (or [tokens]): the slot of each token, negative to skip it (vLLM's
slot_mapping). k_cache, v_cache (numpy arrays or CPU torch tensors, written in place):
  layout 'bhsd'  [batch, kv_heads, max_seq, head_dim], slot = index in the row's max_seq
  layout 'bshd'  [batch, max_seq, kv_heads, head_dim]
  layout 'paged' [num_blocks, block_size, kv_heads, head_dim], or [num_slots, kv_heads,
                 head_dim] with block_size; slot = block * block_size + offset
dtype float32, float16, bfloat16, torch.float8_e4m3fn (stored x / scale clamped to +-448, round
to nearest even), or uint8 with cache_dtype='fp8_e4m3' or 'q8_0' (llama.cpp's block_q8_0: the
last axis is head_dim / 32 * 34 bytes). Bit for bit rotate, then convert, then store.
Raises posemb.Error, writing nothing, for a slot out of range or used twice, a cache of the wrong
shape or dtype, a scale that is not finite and > 0, and overlapping buffers.

Example:
    >>> k_cache = torch.zeros(2048, 16, 8, 128, dtype=torch.float16)   # paged
    >>> posemb.append_rotated(k, v, positions, spec, slot_mapping, k_cache, v_cache,
    ...                       layout='paged')
)doc";

template <class Source, class P>
void run_append(const TensorMap4<const float>& k, const TensorMap4<const float>& v,
                const P& positions, const Source& source, const SlotMapping& slots,
                const KvCache& cache, int threads) {
  py::gil_scoped_release release;
  append_rotated(k, v, positions, source, slots, cache, threads_of(threads));
}

void append(const py::object& keys, const py::object& values, const py::object& positions,
            const py::object& source, const py::object& slots, const py::object& k_cache,
            const py::object& v_cache, const std::string& layout_name,
            std::optional<std::int64_t> block_size, const std::optional<std::string>& cache_dtype,
            float k_scale, float v_scale, int threads) {
  const auto k = projected(keys, "keys");
  const auto v = projected(values, "values");
  const CacheLayout layout = cache_layout_of(layout_name);
  const CacheArray kc = cache_array(k_cache, "k_cache", layout, block_size, cache_dtype);
  const CacheArray vc = cache_array(v_cache, "v_cache", layout, block_size, cache_dtype);
  if (kc.rows != vc.rows || kc.slots != vc.slots || kc.kv_heads != vc.kv_heads) {
    fail("v_cache.shape", vc.view.shape_text(),
         "expected the geometry of k_cache.shape = " + kc.view.shape_text());
  }
  const CacheBuffer kb = buffer_of(kc, "k_cache", k.dimension(3), k_scale);
  const CacheBuffer vb = buffer_of(vc, "v_cache", v.dimension(3), v_scale);
  const KvCache cache = layout == CacheLayout::Paged
                            ? paged_kv_cache(kc.rows * kc.slots, kc.slots, kc.kv_heads, kb, vb)
                            : kv_cache(layout, kc.rows, kc.slots, kc.kv_heads, kb, vb);
  const ArrayView s = view_of(slots, "slots");
  if (s.dtype != Dtype::Int64) fail("slots.dtype", s.dtype_text(), "expected int64");
  if (!s.contiguous() || s.rank() < 1 || s.rank() > 2) {
    fail("slots", s.shape_text(), "expected a C-contiguous int64 [batch, seq] or [tokens]");
  }
  const SlotMapping mapping(static_cast<const std::int64_t*>(s.data),
                            s.rank() == 2 ? s.shape[0] : 1, s.shape[s.rank() - 1]);
  if (py::isinstance<MropeSpec>(source)) {
    const AxisPositions axes = axis_positions(positions);
    return run_append(k, v, axes.view(), source.cast<const MropeSpec&>(), mapping, cache, threads);
  }
  const TokenPositions tokens = token_positions(positions);
  const Positions p = tokens.view();
  if (py::isinstance<RopeSpec>(source)) {
    return run_append(k, v, p, source.cast<const RopeSpec&>(), mapping, cache, threads);
  }
  if (py::isinstance<HfFloat32Rope>(source)) {
    return run_append(k, v, p, source.cast<const HfFloat32Rope&>(), mapping, cache, threads);
  }
  if (py::isinstance<XposSpec>(source)) {
    const Xpos xpos{source.cast<const XposSpec&>(), XposRole::Key};
    return run_append(k, v, p, xpos, mapping, cache, threads);
  }
  fail("source", std::string(py::str(py::type::handle_of(source).attr("__qualname__"))),
       "expected a RopeSpec, HfFloat32Rope, MropeSpec or XposSpec");
}

}  // namespace

void bind_kv_cache(py::module_& m) {
  m.def("append_rotated", &append, py::arg("keys"), py::arg("values"), py::arg("positions"),
        py::arg("source"), py::arg("slots"), py::arg("k_cache"), py::arg("v_cache"),
        py::arg("layout") = "bhsd", py::arg("block_size") = py::none(),
        py::arg("cache_dtype") = py::none(), py::arg("k_scale") = 1.0f, py::arg("v_scale") = 1.0f,
        py::arg("threads") = 1, append_doc);
}

}  // namespace posemb::python
