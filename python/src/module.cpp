// The extension module posemb._posemb: posemb::Error as posemb.Error, the version, and the
// bindings of every part (rotary.cpp, model.cpp, bias.cpp). A thin layer over posemb's C++ calls:
// no formula is computed here.
#include <chrono>

#include "bindings.hpp"

namespace posemb::python {
namespace {

// Seconds per call of the C++ in-place rotation on x, timed in C++ over `repeats` calls: the
// baseline bench/python_bench.py compares the Python call with.
double time_apply_rope(py::handle x, std::int64_t offset, const RopeSpec& spec, int repeats) {
  const ArrayView view = activation(x, "x", 4, true);
  if (view.dtype != Dtype::Float32) fail("x.dtype", view.dtype_text(), "expected float32");
  if (repeats < 1) fail("repeats", repeats, "expected >= 1");
  auto map = tensor_map<float, 4>(view);
  py::gil_scoped_release release;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) rotate_inplace(map, offset, spec);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / repeats;
}

}  // namespace
}  // namespace posemb::python

PYBIND11_MODULE(_posemb, m) {
  namespace py = pybind11;
  using namespace posemb::python;
  m.doc() = "posemb: positional embeddings for transformer models (the C++ library's bindings)";
  m.attr("__version__") = posemb::version_string;
  // posemb::Error -> posemb.Error (a ValueError) with the same message.
  static py::exception<posemb::Error> error(m, "Error", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised) std::rethrow_exception(raised);
    } catch (const posemb::Error& e) {
      py::set_error(error, e.what());
    }
  });
  error.doc() =
      "Bad input to posemb: the message names the parameter, the value and what was expected.";
  bind_rotary(m);
  bind_model(m);
  bind_bias(m);
  bind_hf_float32(m);
  bind_kv_cache(m);
  bind_backward(m);
  m.def(
      "_time_apply_rope_", &time_apply_rope, py::arg("x"), py::arg("offset"), py::arg("spec"),
      py::arg("repeats"),
      "Seconds per call of the C++ in-place RoPE on float32 x (bench/python_bench.py's baseline).");
}
