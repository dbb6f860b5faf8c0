// A small reader/writer for NumPy .npy files (format versions 1.0, 2.0 and 3.0).
//
// Format (numpy.lib.format): magic "\x93NUMPY", major and minor version bytes, a little-endian
// header length (uint16 for 1.0, uint32 for 2.0/3.0), then an ASCII Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a newline, then the raw data. posemb reads and writes little-endian
// float32 ('<f4'), float64 ('<f8') and int64 ('<i8') in C order; anything else is an Error.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "posemb/detail/input_file.hpp"
#include "posemb/error.hpp"

namespace posemb {

// An array read from a .npy file: its dtype ("<f4", "<f8" or "<i8"), shape and raw bytes.
struct NpyArray {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::vector<char> bytes;

  std::int64_t size() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }

  // The values as T (float, double or std::int64_t); throws if the dtype is not T's.
  template <class T>
  std::vector<T> values() const;
};

namespace detail {

template <class T>
constexpr const char* npy_dtype() {
  if constexpr (std::is_same_v<T, float>) {
    return "<f4";
  } else if constexpr (std::is_same_v<T, double>) {
    return "<f8";
  } else {
    static_assert(std::is_same_v<T, std::int64_t>, "npy supports float, double and int64");
    return "<i8";
  }
}

inline std::size_t npy_item_size(const std::string& dtype) { return dtype == "<f4" ? 4 : 8; }

// Returns the text of a dict entry `'key': VALUE`, VALUE up to the next ',' or '}' at depth 0.
inline std::string npy_header_value(const std::string& header, const std::string& key,
                                    const std::string& file) {
  const std::string quoted = "'" + key + "'";
  const auto at = header.find(quoted);
  if (at == std::string::npos) throw Error(file + ": npy header has no '" + key + "' entry");
  auto pos = header.find(':', at + quoted.size());
  if (pos == std::string::npos) throw Error(file + ": npy header entry '" + key + "' has no value");
  ++pos;
  int depth = 0;
  std::string value;
  for (; pos < header.size(); ++pos) {
    const char c = header[pos];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
    value += c;
  }
  const auto first = value.find_first_not_of(" ");
  const auto last = value.find_last_not_of(" ");
  return first == std::string::npos ? std::string() : value.substr(first, last - first + 1);
}

inline std::vector<std::int64_t> npy_parse_shape(const std::string& text, const std::string& file) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') {
    throw Error(file + ": npy shape = " + text + ": expected a tuple such as (2, 3)");
  }
  // Comma-separated items; "()" is a scalar and only the last item may be empty ("(5,)").
  std::vector<std::string> items(1);
  for (std::size_t i = 1; i + 1 < text.size(); ++i) {
    if (text[i] == ',') {
      items.emplace_back();
    } else {
      items.back() += text[i];
    }
  }
  for (std::string& item : items) {  // trim spaces
    const auto first = item.find_first_not_of(' ');
    item = first == std::string::npos ? std::string()
                                      : item.substr(first, item.find_last_not_of(' ') - first + 1);
  }
  if (items.back().empty()) items.pop_back();
  std::vector<std::int64_t> shape;
  for (const std::string& digits : items) {
    if (digits.empty() || digits.size() > 15 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      throw Error(file + ": npy shape = " + text + ": expected non-negative integer dimensions");
    }
    shape.push_back(std::stoll(digits));
  }
  return shape;
}

}  // namespace detail

// Reads a .npy file (a regular file or a pipe). Throws posemb::Error naming the file for a
// file that cannot be opened or read (missing, a directory, no permission), an empty file, bad
// magic, unsupported dtype, Fortran order, malformed shape or truncated data.
inline NpyArray read_npy(const std::string& path) {
  detail::InputFile in(path, ".npy file", "a .npy file");
  const auto read_all = [&](void* data, std::size_t size) { return in.read(data, size) == size; };
  char magic[8];
  if (!read_all(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    throw Error(path + ": not a .npy file (bad magic; expected \\x93NUMPY)");
  }
  const int major = static_cast<unsigned char>(magic[6]);
  std::uint32_t header_len = 0;
  if (major == 1) {
    unsigned char len[2];
    if (!read_all(len, 2)) throw Error(path + ": truncated npy header");
    header_len = static_cast<std::uint32_t>(len[0] | (len[1] << 8));
  } else if (major == 2 || major == 3) {
    unsigned char len[4];
    if (!read_all(len, 4)) throw Error(path + ": truncated npy header");
    header_len = static_cast<std::uint32_t>(len[0] | (len[1] << 8) | (len[2] << 16)) |
                 (static_cast<std::uint32_t>(len[3]) << 24);
  } else {
    throw Error(path + ": npy format version = " + std::to_string(major) + ": expected 1, 2 or 3");
  }
  if (header_len > (1u << 20)) {
    throw Error(path + ": npy header length = " + std::to_string(header_len) +
                ": expected at most 1 MiB");
  }
  std::string header(header_len, '\0');
  if (!read_all(header.data(), header_len)) throw Error(path + ": truncated npy header");

  NpyArray array;
  std::string descr = detail::npy_header_value(header, "descr", path);
  if (descr.size() >= 2 && (descr.front() == '\'' || descr.front() == '"')) {
    descr = descr.substr(1, descr.size() - 2);
  }
  if (descr != "<f4" && descr != "<f8" && descr != "<i8") {
    throw Error(path + ": npy dtype = " + descr +
                ": expected <f4 (float32), <f8 (float64) or <i8 (int64)");
  }
  array.dtype = descr;
  const std::string fortran = detail::npy_header_value(header, "fortran_order", path);
  if (fortran != "False") {
    throw Error(path + ": npy fortran_order = " + fortran + ": expected False (C order)");
  }
  array.shape = detail::npy_parse_shape(detail::npy_header_value(header, "shape", path), path);

  const std::size_t item = detail::npy_item_size(descr);
  std::uint64_t count = 1;
  for (auto d : array.shape) {
    if (d != 0 && count > (std::uint64_t(1) << 40) / static_cast<std::uint64_t>(d)) {
      throw Error(path + ": npy shape is too large (over 2^40 elements)");
    }
    count *= static_cast<std::uint64_t>(d);
  }
  const std::uint64_t data_size = count * item;
  const auto truncated = [&](std::uint64_t have) {
    return Error(path + ": truncated npy data: " + std::to_string(have) + " bytes, expected " +
                 std::to_string(data_size));
  };
  // A regular file is sized before the data is allocated (a header may claim 2^40 elements);
  // a pipe is read in growing steps, so memory follows the bytes that actually arrive.
  if (const std::optional<std::uint64_t> remaining = in.remaining()) {
    if (*remaining < data_size) throw truncated(*remaining);
    array.bytes.resize(static_cast<std::size_t>(data_size));
    const std::size_t got = in.read(array.bytes.data(), array.bytes.size());
    if (got < array.bytes.size()) throw truncated(got);
  } else {
    std::size_t have = 0;
    while (have < data_size) {
      const std::size_t step = static_cast<std::size_t>(std::min<std::uint64_t>(
          data_size - have, std::max<std::size_t>(have, std::size_t(1) << 20)));
      array.bytes.resize(have + step);
      const std::size_t got = in.read(array.bytes.data() + have, step);
      have += got;
      if (got < step) throw truncated(have);
    }
  }
  return array;
}

template <class T>
std::vector<T> NpyArray::values() const {
  if (dtype != detail::npy_dtype<T>()) {
    throw Error("npy dtype = " + dtype + ": expected " + detail::npy_dtype<T>());
  }
  std::vector<T> out(static_cast<std::size_t>(size()));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

// Writes data (C order, `shape`) as a version 1.0 .npy file of T's dtype.
template <class T>
void write_npy(const std::string& path, const T* data, const std::vector<std::int64_t>& shape) {
  std::string dims;
  std::int64_t count = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) detail::fail("shape[" + std::to_string(i) + "]", shape[i], "expected >= 0");
    dims += (i ? ", " : "") + std::to_string(shape[i]);
    count *= shape[i];
  }
  if (shape.size() == 1) dims += ",";  // a 1-tuple is written "(5,)"
  std::string header = std::string("{'descr': '") + detail::npy_dtype<T>() +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Pad so that magic + length + header is a multiple of 64, ending in '\n'.
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 0xffff) {  // the 1.0 header length is a uint16
    detail::fail("shape.size()", shape.size(), "too many dimensions for a version 1.0 .npy header");
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path + ": cannot open for writing");
  const unsigned char prefix[10] = {0x93,
                                    'N',
                                    'U',
                                    'M',
                                    'P',
                                    'Y',
                                    1,
                                    0,
                                    static_cast<unsigned char>(header.size() & 0xff),
                                    static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<const char*>(prefix), 10);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(T)));
  if (!out) throw Error(path + ": write failed");
}

}  // namespace posemb
