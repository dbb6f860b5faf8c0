// DLPack producers as ArrayView (dlpack.hpp).
#include "dlpack.hpp"

namespace posemb::python {

namespace {

// "float32", "bfloat16", "int64", "uint8", ... (DLPack's code and bits), for dispatch and messages.
std::string dtype_text(const dlpack::DataType& t) {
  static const char* const codes[] = {"int",    "uint",    "float", "opaque",
                                      "bfloat", "complex", "bool"};
  std::string text = t.code < 7 ? codes[t.code] : "code" + std::to_string(t.code);
  text += std::to_string(t.bits);
  return t.lanes == 1 ? text : text + "x" + std::to_string(t.lanes);
}

Dtype dtype_of(const dlpack::DataType& t) {
  if (t.lanes != 1) return Dtype::Other;
  if (t.code == 2 && t.bits == 32) return Dtype::Float32;
  if (t.code == 2 && t.bits == 64) return Dtype::Float64;
  if (t.code == 2 && t.bits == 16) return Dtype::Float16;
  if (t.code == 4 && t.bits == 16) return Dtype::BFloat16;
  if (t.code == 0 && t.bits == 64) return Dtype::Int64;
  return Dtype::Other;
}

// x.__dlpack__(max_version=(1, 0), copy=False); x.__dlpack__() for a pre-1.0 producer that takes
// no keywords (a TypeError). Whatever else the producer raises becomes posemb::Error.
py::object capsule_of(py::handle x, const std::string& name) {
  const py::object method = x.attr("__dlpack__");
  try {
    try {
      return method(py::arg("max_version") = py::make_tuple(1, 0), py::arg("copy") = false);
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_TypeError)) throw;
    }
    return method();
  } catch (py::error_already_set& e) {
    fail(name, "an object whose __dlpack__ raised " + std::string(e.what()),
         "expected a CPU array the DLPack protocol exports without a copy");
  }
}

}  // namespace

bool speaks_dlpack(py::handle x) { return PyObject_HasAttrString(x.ptr(), "__dlpack__") == 1; }

ArrayView dlpack_view(py::handle x, const std::string& name) {
  const py::object capsule = capsule_of(x, name);
  const dlpack::Tensor* t = nullptr;
  std::uint64_t flags = 0;
  if (PyCapsule_IsValid(capsule.ptr(), "dltensor_versioned")) {
    const auto* m = static_cast<const dlpack::ManagedTensorVersioned*>(
        PyCapsule_GetPointer(capsule.ptr(), "dltensor_versioned"));
    if (m->version.major != 1) {
      fail(name + ".__dlpack__ version", std::to_string(m->version.major), "expected DLPack 1.x");
    }
    t = &m->dl_tensor;
    flags = m->flags;
  } else if (PyCapsule_IsValid(capsule.ptr(), "dltensor")) {
    t = &static_cast<const dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"))
             ->dl_tensor;
  } else {
    fail(name + ".__dlpack__()",
         std::string(py::str(py::type::handle_of(capsule).attr("__name__"))),
         "expected a DLPack capsule ('dltensor' or 'dltensor_versioned')");
  }
  if (t->device.device_type != 1) {
    fail(name + ".device", "DLPack device type " + std::to_string(t->device.device_type),
         "expected a CPU tensor (DLPack device type 1; posemb runs on the CPU)");
  }
  ArrayView view;
  view.object = py::reinterpret_borrow<py::object>(x);
  view.owner = capsule;  // unrenamed: its destructor calls the producer's deleter
  view.dlpack = true;
  view.dtype = dtype_of(t->dtype);
  view.dtype_object = py::str(dtype_text(t->dtype));
  view.data = static_cast<char*>(t->data) + t->byte_offset;
  // A copy (a producer ignoring copy=False) is refused for writing like read-only memory: an
  // in-place call on it would not reach the caller's buffer.
  view.writable = (flags & (dlpack::flag_read_only | dlpack::flag_is_copied)) == 0;
  view.shape.assign(t->shape, t->shape + t->ndim);
  view.strides.resize(static_cast<std::size_t>(t->ndim));
  Eigen::Index compact = 1;
  for (std::size_t d = view.shape.size(); d-- > 0;) {
    view.strides[d] = t->strides != nullptr ? t->strides[d] : compact;
    compact *= view.shape[d];
  }
  return view;
}

}  // namespace posemb::python
