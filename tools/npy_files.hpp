// .npy files for the posemb tool: typed reading that names the file at fault, and atomic writing
// (a temporary file in the output's directory, renamed over the output once it is complete), so
// that a failed run leaves --output untouched.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "posemb/error.hpp"
#include "posemb/io/npy.hpp"

namespace posemb::tool {

// A bad command line (exit status 2); the message names the argument.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "[2, 3, 4]"
inline std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Reads path and checks its dtype against `dtypes` ("<f4", "<f8", "<i8") and its rank against
// `ranks`; `what` describes the expected array for the message, e.g. "float32 [heads, D_in,
// D_out]".
inline NpyArray read_npy_checked(const std::string& path, const std::vector<std::string>& dtypes,
                                 const std::vector<std::size_t>& ranks, const std::string& what) {
  NpyArray array;
  try {
    array = read_npy(path);
  } catch (const Error& error) {
    // read_npy refuses the dtypes it cannot read ("<path>: npy dtype = <i4: expected <f4
    // (float32), ..."); say what this argument takes instead.
    const std::string message = error.message(), prefix = path + ": npy dtype = ";
    const std::size_t end = message.find(": expected", prefix.size());
    if (message.compare(0, prefix.size(), prefix) != 0 || end == std::string::npos) throw;
    throw Error(path + ": dtype = " + message.substr(prefix.size(), end - prefix.size()) +
                ": expected " + what);
  }
  bool dtype_ok = false;
  for (const std::string& dtype : dtypes) dtype_ok = dtype_ok || array.dtype == dtype;
  if (!dtype_ok) throw Error(path + ": dtype = " + array.dtype + ": expected " + what);
  bool rank_ok = false;
  for (std::size_t rank : ranks) rank_ok = rank_ok || array.shape.size() == rank;
  if (!rank_ok) {
    throw Error(path + ": shape = " + shape_string(array.shape) + ": expected " + what);
  }
  return array;
}

// Writes data (C order, `shape`) to `path` as .npy, atomically: the file is written under a
// temporary name in the same directory and renamed to `path` only when complete. On failure
// nothing at `path` changes and the temporary file is removed.
template <class T>
void write_npy_atomic(const std::string& path, const T* data,
                      const std::vector<std::int64_t>& shape) {
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty()) throw Error(path + ": cannot write: expected a file name, not a directory");
  std::string temp = dir + (slash == std::string::npos ? "/" : "") + "." + base + ".XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) throw Error(path + ": cannot write: " + std::strerror(errno));
  // mkstemp creates the file 0600; give it the permissions a plain open() would (0666 & ~umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  ::close(fd);
  try {
    write_npy(temp, data, shape);
    // Read it back: a write that failed only when the file was closed (a full disk) shows here
    // as a truncated file.
    if (read_npy(temp).shape != shape) throw Error(temp + ": shape differs after writing");
  } catch (const Error& error) {
    std::remove(temp.c_str());
    throw Error(path + ": write failed: " + error.message());
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temp.c_str());
    throw Error(path + ": cannot write: " + std::strerror(error));
  }
}

}  // namespace posemb::tool
