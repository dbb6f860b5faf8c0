// libFuzzer target for the .npy reader (npy.hpp). Each input is written to a scratch file and
// read with read_npy, which must either return an array whose bytes match its dtype and shape
// or throw posemb::Error. An accepted array is written back with write_npy and read again: the
// round trip must give the same dtype, shape and bytes.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "posemb/error.hpp"
#include "posemb/npy.hpp"

namespace {

// A scratch file per process (libFuzzer may run several jobs side by side).
std::string scratch_path(const char* suffix) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/posemb_fuzz_npy_" +
         std::to_string(::getpid()) + suffix;
}

template <class T>
void round_trip(const posemb::NpyArray& array, const std::string& path) {
  const std::vector<T> values = array.values<T>();
  posemb::write_npy(path, values.data(), array.shape);
  const posemb::NpyArray again = posemb::read_npy(path);
  if (again.dtype != array.dtype || again.shape != array.shape || again.bytes != array.bytes) {
    std::abort();  // the writer and the reader disagree
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string input_path = scratch_path(".in.npy");
  static const std::string output_path = scratch_path(".out.npy");
  std::FILE* file = std::fopen(input_path.c_str(), "wb");
  if (file == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, file) != size) std::abort();
  std::fclose(file);
  try {
    const posemb::NpyArray array = posemb::read_npy(input_path);
    const std::uint64_t item = array.dtype == "<f4" ? 4 : 8;
    if (array.bytes.size() != static_cast<std::uint64_t>(array.size()) * item) std::abort();
    if (array.dtype == "<f4") {
      round_trip<float>(array, output_path);
    } else if (array.dtype == "<f8") {
      round_trip<double>(array, output_path);
    } else {
      round_trip<std::int64_t>(array, output_path);
    }
  } catch (const posemb::Error&) {
    // Rejected input: expected.
  }
  return 0;
}
