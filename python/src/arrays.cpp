// numpy arrays and PyTorch CPU tensors as ArrayView; positions; enums from strings.
#include "arrays.hpp"

#include "dlpack.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace posemb::python {

namespace {

// torch's module and dtypes, looked up once torch has been imported by the caller (posemb never
// imports torch itself: a numpy-only user does not pay for it).
struct Torch {
  py::object tensor_type;
  py::object strided;                // the dense layout
  std::array<py::object, 5> dtypes;  // float32, float64, float16, bfloat16, int64

  static Torch* get() {
    static Torch* torch = nullptr;
    if (torch != nullptr) return torch;
    PyObject* module = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");  // borrowed
    if (module == nullptr) return nullptr;
    py::module_ m = py::reinterpret_borrow<py::module_>(module);
    if (!py::hasattr(m, "Tensor") || !py::hasattr(m, "bfloat16")) return nullptr;  // importing
    torch = new Torch{m.attr("Tensor"),
                      m.attr("strided"),
                      {m.attr("float32"), m.attr("float64"), m.attr("float16"), m.attr("bfloat16"),
                       m.attr("int64")}};
    return torch;
  }

  Dtype dtype_of(py::handle dtype) const {
    const Dtype kinds[5] = {Dtype::Float32, Dtype::Float64, Dtype::Float16, Dtype::BFloat16,
                            Dtype::Int64};
    for (std::size_t i = 0; i < dtypes.size(); ++i) {
      if (dtype.is(dtypes[i])) return kinds[i];
    }
    return Dtype::Other;
  }
  py::handle dtype_object(Dtype dtype) const {
    switch (dtype) {
      case Dtype::Float32:
        return dtypes[0];
      case Dtype::Float64:
        return dtypes[1];
      case Dtype::Float16:
        return dtypes[2];
      case Dtype::BFloat16:
        return dtypes[3];
      default:
        return dtypes[4];
    }
  }
};

bool is_torch_tensor(py::handle x) {
  const Torch* torch = Torch::get();
  return torch != nullptr && PyObject_IsInstance(x.ptr(), torch->tensor_type.ptr()) == 1;
}

ArrayView torch_view(py::handle x, const std::string& name) {
  const Torch& torch = *Torch::get();
  if (!x.attr("is_cpu").cast<bool>()) {
    const std::string device = py::str(x.attr("device").attr("type"));
    fail(name + ".device", device, "expected a CPU tensor (posemb runs on the CPU; use x.cpu())");
  }
  const py::object layout = x.attr("layout");
  if (!layout.is(torch.strided)) {
    fail(name + ".layout", std::string(py::str(layout)), "expected a dense (strided) tensor");
  }
  ArrayView view;
  view.object = py::reinterpret_borrow<py::object>(x);
  view.torch = true;
  view.dtype_object = x.attr("dtype");
  view.dtype = torch.dtype_of(view.dtype_object);
  view.data = reinterpret_cast<void*>(x.attr("data_ptr")().cast<std::uintptr_t>());
  const py::tuple shape = x.attr("shape"), strides = x.attr("stride")();
  view.shape.reserve(shape.size());
  view.strides.reserve(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    view.shape.push_back(shape[d].cast<Eigen::Index>());
    view.strides.push_back(strides[d].cast<Eigen::Index>());
  }
  view.requires_grad = x.attr("requires_grad").cast<bool>();
  return view;
}

Dtype numpy_dtype(const py::dtype& dtype) {
  const char kind = dtype.kind();
  // numpy's own attribute: pybind11 2.10's descriptor proxy predates numpy 2's PyArray_Descr
  // layout (elsize moved) and reads 0 there.
  const py::ssize_t size = dtype.attr("itemsize").cast<py::ssize_t>();
  const char order = py::detail::array_descriptor_proxy(dtype.ptr())->byteorder;
  if (order == '>') return Dtype::Other;  // non-native (big-endian) order
  if (kind == 'f' && size == 4) return Dtype::Float32;
  if (kind == 'f' && size == 8) return Dtype::Float64;
  if (kind == 'f' && size == 2) return Dtype::Float16;
  if (kind == 'i' && size == 8) return Dtype::Int64;
  return Dtype::Other;
}

ArrayView numpy_view(const py::array& a) {
  ArrayView view;
  view.object = a;
  view.dtype = numpy_dtype(a.dtype());
  view.dtype_object = a.dtype();
  view.data = const_cast<void*>(a.data());
  view.writable = a.writeable();
  const py::ssize_t item = a.dtype().attr("itemsize").cast<py::ssize_t>();
  view.shape.reserve(static_cast<std::size_t>(a.ndim()));
  view.strides.reserve(static_cast<std::size_t>(a.ndim()));
  for (py::ssize_t i = 0; i < a.ndim(); ++i) {
    view.shape.push_back(a.shape(i));
    if (a.strides(i) % item != 0) fail("strides", a.strides(i), "expected whole elements");
    view.strides.push_back(a.strides(i) / item);
  }
  return view;
}

std::string python_type_name(py::handle x) {
  return py::str(py::type::handle_of(x).attr("__qualname__"));
}

std::string dtype_expected(const ArrayView& x) {
  if (x.torch) return "expected torch.float32, torch.float64, torch.float16 or torch.bfloat16";
  if (x.dlpack) {
    return "expected float32, float64, float16 or (in place) bfloat16 (a new array of a DLPack "
           "input is numpy's, which has no bfloat16)";
  }
  return "expected float32, float64 or float16";
}

// A contiguous copy of x (out-of-place calls only).
py::object contiguous_copy(const ArrayView& x) {
  if (x.torch) return x.object.attr("contiguous")();
  const py::module_ numpy = py::module_::import("numpy");
  return numpy.attr("ascontiguousarray")(x.dlpack ? numpy.attr("from_dlpack")(x.object) : x.object);
}

// Reads element i (row-major order) of an int64 or float64 view of any strides as T.
template <class T>
void copy_elements(const ArrayView& p, T* out) {
  const Eigen::Index n = p.size();
  std::vector<Eigen::Index> index(p.shape.size(), 0);
  for (Eigen::Index i = 0; i < n; ++i) {
    Eigen::Index offset = 0;
    for (std::size_t d = 0; d < index.size(); ++d) offset += index[d] * p.strides[d];
    out[i] = p.dtype == Dtype::Int64
                 ? static_cast<T>(static_cast<const std::int64_t*>(p.data)[offset])
                 : static_cast<T>(static_cast<const double*>(p.data)[offset]);
    for (std::size_t d = index.size(); d-- > 0;) {
      if (++index[d] < p.shape[d]) break;
      index[d] = 0;
    }
  }
}

bool is_offset(py::handle p) {
  return !py::isinstance<py::array>(p) && !is_torch_tensor(p) && PyIndex_Check(p.ptr()) &&
         !PyFloat_Check(p.ptr());
}

std::int64_t offset_of(py::handle p, const std::string& name) {
  if (PyBool_Check(p.ptr()))
    fail(name, "a bool", "expected an int offset or an array of positions");
  try {
    return py::int_(py::reinterpret_borrow<py::object>(p)).cast<std::int64_t>();
  } catch (const py::cast_error&) {
    fail(name, std::string(py::str(p)), "expected an offset that fits in int64");
  }
}

// A positions array or tensor of int64 or float64.
ArrayView position_array(py::handle p, const std::string& name) {
  const ArrayView view = view_of(p, name);
  if (view.dtype != Dtype::Int64 && view.dtype != Dtype::Float64) {
    fail(name + ".dtype", view.dtype_text(),
         "expected int64 or float64 positions (an int offset, or [seq] / [batch, seq])");
  }
  return view;
}

template <class Matrix>
Matrix matrix_of(const ArrayView& p, Eigen::Index rows, Eigen::Index cols) {
  Matrix m(rows, cols);
  copy_elements(p, m.data());
  return m;
}

// Fractional positions are held to the range of whole ones, |p| < 2^63 (NaN and inf are refused
// by Positions::check): past it an angle's reduction mod 2 pi has no precision left.
void require_position_range(const double* p, Eigen::Index n, const std::string& name) {
  for (Eigen::Index i = 0; i < n; ++i) {
    if (std::fabs(p[i]) >= 9.2e18)
      fail(name + "[" + std::to_string(i) + "]", p[i], "expected |position| < 2^63");
  }
}

}  // namespace

std::string dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::Float32:
      return "float32";
    case Dtype::Float64:
      return "float64";
    case Dtype::Float16:
      return "float16";
    case Dtype::BFloat16:
      return "bfloat16";
    case Dtype::Int64:
      return "int64";
    default:
      return "other";
  }
}

Eigen::Index ArrayView::size() const {
  Eigen::Index n = 1;
  for (Eigen::Index d : shape) n *= d;
  return n;
}

bool ArrayView::contiguous() const {
  if (size() == 0) return true;  // no element to place (numpy gives empty arrays strides of 0)
  Eigen::Index expected = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

std::string ArrayView::shape_text() const {
  std::string text = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

ArrayView view_of(py::handle x, const std::string& name) {
  if (is_torch_tensor(x)) return torch_view(x, name);
  if (py::isinstance<py::array>(x)) return numpy_view(py::reinterpret_borrow<py::array>(x));
  if (speaks_dlpack(x)) return dlpack_view(x, name);
  if (py::isinstance<py::list>(x) || py::isinstance<py::tuple>(x)) {
    ArrayView view = numpy_view(py::module_::import("numpy").attr("asarray")(x));
    view.writable = false;
    return view;
  }
  fail(name, python_type_name(x), "expected a numpy array, a torch tensor or a DLPack producer");
}

ArrayView activation(py::handle x, const std::string& name, int rank, bool in_place) {
  ArrayView view = view_of(x, name);
  if (view.dtype == Dtype::Other || view.dtype == Dtype::Int64 ||
      (view.dtype == Dtype::BFloat16 && !view.torch && !(view.dlpack && in_place))) {
    fail(name + ".dtype", view.dtype_text(), dtype_expected(view));
  }
  if (view.rank() != rank) {
    fail(name + ".shape", view.shape_text(),
         "expected " + std::to_string(rank) + " dimensions" +
             (rank == 4   ? " [batch, seq, heads, head_dim] (layout 'bshd') or [batch, heads, seq, "
                            "head_dim] (layout 'bhsd')"
              : rank == 3 ? " [batch, seq, d]"
                          : ""));
  }
  if (view.requires_grad) {
    fail(name + ".requires_grad", "True",
         "expected a tensor without autograd history (posemb records no gradient): pass "
         "x.detach() or call under torch.no_grad() on a tensor that does not require grad");
  }
  if (in_place) {
    if (!view.contiguous()) {
      fail(
          name,
          "a non-contiguous " + std::string(view.torch ? "tensor" : "array") + " of strides " +
              [&] {
                std::string s = "[";
                for (std::size_t d = 0; d < view.strides.size(); ++d)
                  s += (d ? ", " : "") + std::to_string(view.strides[d]);
                return s + "]";
              }(),
          "expected a C-contiguous one for an in-place call (x.contiguous() / "
          "np.ascontiguousarray(x) copies; or call the out-of-place form)");
    }
    if (!view.writable)
      fail(name, "a read-only array", "expected a writable array for an in-place call");
    return view;
  }
  if (!view.contiguous()) {
    ArrayView copy = view_of(contiguous_copy(view), name);
    return copy;
  }
  return view;
}

ArrayView new_array_like(const ArrayView& like, Dtype dtype,
                         const std::vector<Eigen::Index>& shape) {
  if (!like.torch) return new_numpy(dtype, shape);
  const Torch& torch = *Torch::get();
  py::tuple dims(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) dims[d] = py::int_(shape[d]);
  py::object empty = py::module_::import("torch").attr("empty");
  return view_of(empty(dims, py::arg("dtype") = torch.dtype_object(dtype)), "out");
}

// numpy.empty, not py::array(dtype, shape): pybind11 2.10 derives that constructor's strides from
// the same descriptor proxy, all 0 under numpy 2 (every element aliasing the first).
ArrayView new_numpy(Dtype dtype, const std::vector<Eigen::Index>& shape) {
  py::tuple dims(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) dims[d] = py::int_(shape[d]);
  const char* names[] = {"float32", "float64", "float16", "bfloat16", "int64"};
  const py::object empty = py::module_::import("numpy").attr("empty");
  return numpy_view(empty(dims, py::arg("dtype") = names[static_cast<int>(dtype)]));
}

// ---- positions

Positions TokenPositions::view() const {
  if (!matrix) return Positions(offset);
  return fractional ? Positions(fractions) : Positions(integers);
}

std::int64_t TokenPositions::length(Eigen::Index seq) const {
  if (!matrix) return seq == 0 ? -1 : offset + seq;
  const double max = fractional ? (fractions.size() ? fractions.maxCoeff() : -1.0)
                                : (integers.size() ? double(integers.maxCoeff()) : -1.0);
  if (max < 0) return -1;
  const double ceiling = std::ceil(max);
  return ceiling >= 9.2e18 ? std::numeric_limits<std::int64_t>::max()
                           : static_cast<std::int64_t>(ceiling) + 1;
}

TokenPositions token_positions(py::handle positions, const std::string& name) {
  TokenPositions out;
  if (is_offset(positions)) {
    out.offset = offset_of(positions, name);
    return out;
  }
  const ArrayView p = position_array(positions, name);
  if (p.rank() != 1 && p.rank() != 2) {
    fail(name + ".shape", p.shape_text(),
         "expected [seq] or [batch, seq] (or an int offset: token s at offset + s)");
  }
  const Eigen::Index rows = p.rank() == 2 ? p.shape[0] : 1, cols = p.shape.back();
  out.matrix = true;
  out.fractional = p.dtype == Dtype::Float64;
  if (out.fractional) {
    out.fractions = matrix_of<FractionalPositionMatrix>(p, rows, cols);
    require_position_range(out.fractions.data(), out.fractions.size(), name);
  } else {
    out.integers = matrix_of<PositionMatrix>(p, rows, cols);
  }
  return out;
}

PositionVector position_vector(py::handle positions, const std::string& name) {
  if (is_offset(positions)) return PositionVector::Constant(1, offset_of(positions, name));
  const ArrayView p = view_of(positions, name);
  if (p.dtype != Dtype::Int64)
    fail(name + ".dtype", p.dtype_text(), "expected int64 positions [n]");
  if (p.rank() != 1) fail(name + ".shape", p.shape_text(), "expected one dimension [n]");
  PositionVector v(p.shape[0]);
  copy_elements(p, v.data());
  return v;
}

MropePositions AxisPositions::view() const {
  if (form == 1) return fractional ? MropePositions(fractions) : MropePositions(integers);
  if (form == 2) return fractional ? MropePositions(fraction_rows) : MropePositions(integer_rows);
  return MropePositions::text(text.view());
}

std::int64_t AxisPositions::length(Eigen::Index seq) const {
  if (form == 0) return text.length(seq);
  const double* f = form == 1 ? fractions.data() : fraction_rows.data();
  const std::int64_t* i = form == 1 ? integers.data() : integer_rows.data();
  const Eigen::Index n = form == 1 ? (fractional ? fractions.size() : integers.size())
                                   : (fractional ? fraction_rows.size() : integer_rows.size());
  if (n == 0) return -1;
  const double max = fractional ? *std::max_element(f, f + n) : double(*std::max_element(i, i + n));
  if (max < 0) return -1;
  const double ceiling = std::ceil(max);
  return ceiling >= 9.2e18 ? std::numeric_limits<std::int64_t>::max()
                           : static_cast<std::int64_t>(ceiling) + 1;
}

AxisPositions axis_positions(py::handle positions, const std::string& name) {
  AxisPositions out;
  if (is_offset(positions)) {
    out.text = token_positions(positions, name);
    return out;
  }
  const ArrayView p = position_array(positions, name);
  const bool three_axes = p.rank() == 3 || (p.rank() == 2 && p.shape[0] == 3);
  if (!three_axes) {
    out.text = token_positions(positions, name);
    return out;
  }
  if (p.shape[0] != 3) {
    fail(name + ".shape", p.shape_text(), "expected [3, seq] or [3, batch, seq] (axes t, h, w)");
  }
  out.fractional = p.dtype == Dtype::Float64;
  if (p.rank() == 2) {
    out.form = 1;
    if (out.fractional) {
      out.fractions = matrix_of<FractionalPositionMatrix>(p, 3, p.shape[1]);
      require_position_range(out.fractions.data(), out.fractions.size(), name);
    } else {
      out.integers = matrix_of<PositionMatrix>(p, 3, p.shape[1]);
    }
    return out;
  }
  out.form = 2;
  if (out.fractional) {
    out.fraction_rows.resize(3, p.shape[1], p.shape[2]);
    copy_elements(p, out.fraction_rows.data());
    require_position_range(out.fraction_rows.data(), out.fraction_rows.size(), name);
  } else {
    out.integer_rows.resize(3, p.shape[1], p.shape[2]);
    copy_elements(p, out.integer_rows.data());
  }
  return out;
}

// ---- enums

TensorLayout layout_of(const std::string& layout) {
  if (layout == "bshd") return TensorLayout::BSHD;
  if (layout == "bhsd") return TensorLayout::BHSD;
  fail("layout", "'" + layout + "'",
       "expected 'bshd' [batch, seq, heads, head_dim] or 'bhsd' [batch, heads, seq, head_dim]");
}

Pairing pairing_of(const std::string& pairing) {
  if (pairing == "rotate_half") return Pairing::RotateHalf;
  if (pairing == "interleaved") return Pairing::Interleaved;
  fail("pairing", "'" + pairing + "'", "expected 'rotate_half' or 'interleaved'");
}

Rotation rotation_of(bool inverse, bool transpose) {
  if (inverse && transpose) {
    fail("transpose", "True", "expected False with inverse=True (one direction per call)");
  }
  return inverse ? Rotation::Inverse : transpose ? Rotation::Transpose : Rotation::Forward;
}

Threads threads_of(int threads) {
  if (threads < 1 || threads > 1024) fail("threads", threads, "expected 1 .. 1024");
  return Threads{threads, {}};
}

Dtype table_dtype_of(const std::string& dtype) {
  if (dtype == "float32") return Dtype::Float32;
  if (dtype == "float64") return Dtype::Float64;
  fail("dtype", "'" + dtype + "'", "expected 'float32' or 'float64'");
}

}  // namespace posemb::python
