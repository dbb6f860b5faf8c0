// Any object that speaks DLPack (`__dlpack__`, the Python array API's exchange protocol) seen as
// an ArrayView of its own memory: the producer's capsule is kept alive with the view, its memory
// is read (and, in place, written) where it lies, never copied.
//
// The structs are DLPack's C ABI (dmlc/dlpack include/dlpack/dlpack.h, v1.0), of which posemb
// reads only the CPU, dense, single-lane cases. Protocol: data-apis.org array-api,
// "Data interchange mechanisms" (`__dlpack__(*, stream, max_version, dl_device, copy)`).
#pragma once

#include <cstdint>
#include <string>

#include "arrays.hpp"

namespace posemb::python {

namespace dlpack {

struct Device {
  std::int32_t device_type;  // 1: kDLCPU
  std::int32_t device_id;
};
struct DataType {
  std::uint8_t code;  // 0 kDLInt, 1 kDLUInt, 2 kDLFloat, 4 kDLBfloat
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct Tensor {
  void* data;
  Device device;
  std::int32_t ndim;
  DataType dtype;
  std::int64_t* shape;    // [ndim]
  std::int64_t* strides;  // [ndim] in elements, or null: row-major compact
  std::uint64_t byte_offset;
};
// The capsule "dltensor" (DLPack < 1.0): no flags.
struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor*);
};
struct Version {
  std::uint32_t major;
  std::uint32_t minor;
};
// The capsule "dltensor_versioned" (DLPack >= 1.0).
struct ManagedTensorVersioned {
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned*);
  std::uint64_t flags;
  Tensor dl_tensor;
};
constexpr std::uint64_t flag_read_only = 1;  // DLPACK_FLAG_BITMASK_READ_ONLY
constexpr std::uint64_t flag_is_copied = 2;  // DLPACK_FLAG_BITMASK_IS_COPIED

}  // namespace dlpack

// Whether x has a __dlpack__ method.
bool speaks_dlpack(py::handle x);

// The view of x's memory through x.__dlpack__(max_version=(1, 0), copy=False) (or
// x.__dlpack__() for a producer that takes no keywords). Throws posemb::Error naming `name` for
// a tensor not on the CPU, with lanes, or of a dtype posemb does not read.
ArrayView dlpack_view(py::handle x, const std::string& name);

}  // namespace posemb::python
