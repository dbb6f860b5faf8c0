// Files posemb reads (config.json, .npy): every way opening or reading one can fail is a
// posemb::Error naming the file and the reason, never a std::ios_base::failure or a silently
// short read:
//   "posemb: nope.json: cannot open config file: No such file or directory"
//   "posemb: models/: cannot read config file: Is a directory"
//   "posemb: empty.npy: empty file: expected a .npy file"
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <system_error>

#include "posemb/error.hpp"

namespace posemb::detail {

// The reason for errno value `error`, e.g. "Permission denied"; "read error" when errno says
// nothing.
inline std::string errno_reason(int error) {
  return error == 0 ? std::string("read error") : std::generic_category().message(error);
}

// A file opened for binary reading (std::FILE*: a directory fails on the first read with
// EISDIR, and pipes work), closed when it goes out of scope.
class InputFile {
 public:
  // Opens `path` and reads its first byte. `what` names the kind of file ("config file") and
  // `expected` what it should hold ("a JSON object"). Throws Error "<path>: cannot open <what>:
  // <reason>" (missing, no permission, a path through a regular file), "<path>: cannot read
  // <what>: <reason>" (a directory) or "<path>: empty file: expected <expected>".
  InputFile(const std::string& path, const std::string& what, const std::string& expected)
      : path_(path), what_(what) {
    errno = 0;
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) throw Error(path + ": cannot open " + what + ": " + errno_reason(errno));
    errno = 0;
    const int first = std::fgetc(file_);
    if (first == EOF) {
      const int error = errno;
      if (std::ferror(file_)) fail_read(error);
      throw Error(path + ": empty file: expected " + expected);
    }
    std::ungetc(first, file_);
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() { std::fclose(file_); }

  std::FILE* get() const { return file_; }
  const std::string& path() const { return path_; }

  // Reads up to `size` bytes into data; fewer only at the end of the file. Throws Error
  // "<path>: cannot read <what>: <reason>" on a read error.
  std::size_t read(void* data, std::size_t size) {
    errno = 0;
    const std::size_t count = std::fread(data, 1, size, file_);
    if (count < size && std::ferror(file_)) fail_read(errno);
    return count;
  }

  // The bytes from the current position to the end, when the file can seek (a regular file);
  // nothing for a pipe. The position is unchanged.
  std::optional<std::uint64_t> remaining() {
    const long here = std::ftell(file_);
    if (here < 0 || std::fseek(file_, 0, SEEK_END) != 0) return std::nullopt;
    const long end = std::ftell(file_);
    if (std::fseek(file_, here, SEEK_SET) != 0) fail_read(errno);
    if (end < here) return std::nullopt;
    return static_cast<std::uint64_t>(end - here);
  }

  // Throws "<path>: cannot read <what>: <reason>" for errno value `error`.
  [[noreturn]] void fail_read(int error) const {
    throw Error(path_ + ": cannot read " + what_ + ": " + errno_reason(error));
  }

 private:
  std::string path_, what_;
  std::FILE* file_ = nullptr;
};

}  // namespace posemb::detail
