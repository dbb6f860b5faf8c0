// The array plumbing of the Python package: numpy arrays, PyTorch CPU tensors and DLPack producers
// seen as
// (pointer, dtype, shape, strides), activations mapped in place as Eigen::TensorMap of their
// storage type (float, double, Eigen::half, Eigen::bfloat16), positions read into posemb's
// position matrices, and new outputs of the caller's kind (numpy or torch).
//
// numpy arrays are read through the array interface pybind11 wraps (py::array); torch tensors
// through their data_ptr(), dtype, shape, strides and device (torch.bfloat16 has no numpy dtype,
// and that path costs less per call than torch's __dlpack__: bench/python_bench.py); any other
// object with __dlpack__ through its capsule (dlpack.hpp). Nothing is copied:
// in-place calls write the caller's memory and refuse what they cannot write in place.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "posemb/posemb.hpp"

namespace posemb::python {

namespace py = pybind11;

enum class Dtype { Float32, Float64, Float16, BFloat16, Int64, Other };

// "float32", "float64", "float16", "bfloat16", "int64", or the dtype's own name.
std::string dtype_name(Dtype dtype);

// What posemb sees of a numpy array, a CPU torch tensor or a DLPack producer's CPU tensor.
struct ArrayView {
  py::object object;  // the array or tensor (keeps the memory alive)
  py::object owner;   // a DLPack producer's capsule (keeps its memory alive), else None
  bool torch = false;
  bool dlpack = false;  // read through __dlpack__ (new arrays of its kind are numpy arrays)
  void* data = nullptr;
  Dtype dtype = Dtype::Other;
  py::object dtype_object;            // the caller's dtype object
  std::vector<Eigen::Index> shape;    // [rank]
  std::vector<Eigen::Index> strides;  // [rank], in elements
  bool writable = true;
  bool requires_grad = false;

  // The caller's spelling of the dtype, for messages ("int32", "torch.int32"); formed on demand
  // (str(dtype) costs more than a one-token rotation).
  std::string dtype_text() const { return py::str(dtype_object); }
  Eigen::Index rank() const { return static_cast<Eigen::Index>(shape.size()); }
  Eigen::Index size() const;
  bool contiguous() const;         // row-major (C) contiguous
  std::string shape_text() const;  // "[1, 32, 8, 64]"
};

// The view of x, a numpy array, a CPU torch tensor or any object with __dlpack__; a list or tuple
// is read as numpy reads it (read-only use only). Throws posemb::Error naming `name` for anything
// else (a CUDA tensor included).
ArrayView view_of(py::handle x, const std::string& name);

// An activation of `rank` dimensions, of float32 / float64 / float16 (/ bfloat16 for torch and
// DLPack; out of place a DLPack bfloat16 input is refused: its new array would be numpy's).
// in_place: it must be writable and C-contiguous and is used as it is (never copied); otherwise
// a non-contiguous input is read through a contiguous copy of it.
ArrayView activation(py::handle x, const std::string& name, int rank, bool in_place);

// A new C-contiguous array or tensor of `like`'s kind (torch for torch, else numpy), of `dtype`,
// `shape`.
ArrayView new_array_like(const ArrayView& like, Dtype dtype,
                         const std::vector<Eigen::Index>& shape);
// A new numpy array of `dtype` (not bfloat16: numpy has none), `shape`.
ArrayView new_numpy(Dtype dtype, const std::vector<Eigen::Index>& shape);

// Storage type of a float dtype, for dispatch: body(T{}) with T = float, double, Eigen::half or
// Eigen::bfloat16.
template <class Body>
decltype(auto) with_storage_type(const ArrayView& x, Body&& body) {
  switch (x.dtype) {
    case Dtype::Float32:
      return body(float{});
    case Dtype::Float64:
      return body(double{});
    case Dtype::Float16:
      return body(Eigen::half{});
    case Dtype::BFloat16:
      return body(Eigen::bfloat16{});
    default:
      fail("dtype", x.dtype_text(), "expected float32, float64, float16 or bfloat16");
  }
}

// The same for a dtype's name ("float32", "float64", "float16" or "bfloat16").
template <class Body>
decltype(auto) with_storage_type(const std::string& dtype, Body&& body) {
  if (dtype == "float32") return body(float{});
  if (dtype == "float64") return body(double{});
  if (dtype == "float16") return body(Eigen::half{});
  if (dtype == "bfloat16") return body(Eigen::bfloat16{});
  fail("dtype", "'" + dtype + "'", "expected 'float32', 'float64', 'float16' or 'bfloat16'");
}

// x as a rank-R row-major TensorMap of T (x's storage type).
template <class T, int R>
Eigen::TensorMap<Eigen::Tensor<T, R, Eigen::RowMajor>> tensor_map(const ArrayView& x) {
  Eigen::array<Eigen::Index, R> dims;
  for (int i = 0; i < R; ++i)
    dims[static_cast<std::size_t>(i)] = x.shape[static_cast<std::size_t>(i)];
  return Eigen::TensorMap<Eigen::Tensor<T, R, Eigen::RowMajor>>(static_cast<T*>(x.data), dims);
}

// ---- positions

// Per-token positions from an int offset or an int64 / float64 array or tensor [seq] or
// [batch, seq] (copied: positions are few next to the activations).
struct TokenPositions {
  std::int64_t offset = 0;
  bool matrix = false;
  bool fractional = false;
  PositionMatrix integers;             // [rows, seq]
  FractionalPositionMatrix fractions;  // [rows, seq]

  Positions view() const;
  // The largest position + 1, HuggingFace's seq_len for dynamic schemes (offset + seq for an
  // offset); -1 when there are no positions.
  std::int64_t length(Eigen::Index seq) const;
};

TokenPositions token_positions(py::handle positions, const std::string& name = "positions");
// Whole positions only (tables, biases): an int64 array [n] (or an int: that one position).
PositionVector position_vector(py::handle positions, const std::string& name);

// M-RoPE positions: three axes int64 / float64 [3, seq] or [3, batch, seq], or text positions as
// token_positions takes them ([seq], [batch, seq] whose first dimension is not 3, or an offset).
struct AxisPositions {
  TokenPositions text;
  int form = 0;  // 0 text, 1 [3, seq], 2 [3, batch, seq]
  bool fractional = false;
  PositionMatrix integers;                      // [3, seq]
  FractionalPositionMatrix fractions;           // [3, seq]
  MropePositionTensor integer_rows;             // [3, batch, seq]
  FractionalMropePositionTensor fraction_rows;  // [3, batch, seq]

  MropePositions view() const;
  std::int64_t length(Eigen::Index seq) const;
};

AxisPositions axis_positions(py::handle positions, const std::string& name = "positions");

// ---- enums from strings

TensorLayout layout_of(const std::string& layout);
Pairing pairing_of(const std::string& pairing);
Rotation rotation_of(bool inverse, bool transpose = false);
Threads threads_of(int threads);
Dtype table_dtype_of(const std::string& dtype);  // "float32" or "float64"

// ---- numpy results

template <class T>
py::array_t<T> to_numpy(const T* data, const std::vector<Eigen::Index>& shape) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::array_t<T> out(dims);
  std::copy(data, data + out.size(), out.mutable_data());
  return out;
}

inline py::array_t<double> to_numpy(const Eigen::VectorXd& v) {
  return to_numpy(v.data(), {v.size()});
}

}  // namespace posemb::python
