// libFuzzer target for the .npy reader (npy.hpp). Each input is written to a scratch file and
// read with read_npy, which must either return an array whose bytes match its dtype and shape
// or throw posemb::Error. An accepted array is written back with write_npy and read again: the
// round trip must give the same dtype, shape and bytes. Once per process, files that cannot be
// read (file_cases.hpp) must throw posemb::Error too.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "file_cases.hpp"
#include "posemb/error.hpp"
#include "posemb/io/npy.hpp"

namespace {

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
  static const bool unreadable_checked = [] {
    posemb_fuzz::check_unreadable_files([](const std::string& path) { posemb::read_npy(path); });
    return true;
  }();
  (void)unreadable_checked;
  static const std::string input_path = posemb_fuzz::scratch_path(".in.npy");
  static const std::string output_path = posemb_fuzz::scratch_path(".out.npy");
  posemb_fuzz::write_file(input_path, data, size);
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
