// A whole file mapped read-only into memory (mmap on POSIX), for the readers of large model files
// (GGUF, safetensors): only the pages a reader touches are ever read from disk, so reading the
// header of a 100 GB checkpoint costs a few kilobytes of I/O. Opening fails with posemb::Error
// naming the file and the reason, as detail/input_file.hpp does for the streamed readers:
//   "posemb: nope.gguf: cannot open model file: No such file or directory"
//   "posemb: models/: cannot read model file: Is a directory"
//   "posemb: empty.gguf: empty file: expected a GGUF file"
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>

#include "posemb/detail/input_file.hpp"
#include "posemb/error.hpp"

namespace posemb::detail {

class MappedFile {
 public:
  // what: the kind of file ("model file"); expected: what it should hold ("a GGUF file").
  MappedFile(const std::string& path, const std::string& what, const std::string& expected)
      : path_(path) {
    errno = 0;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(path + ": cannot open " + what + ": " + errno_reason(errno));
    struct stat info {};
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
      const int error = S_ISDIR(info.st_mode) ? EISDIR : errno;
      ::close(fd);
      throw Error(path + ": cannot read " + what + ": " +
                  errno_reason(error == 0 ? EINVAL : error));
    }
    size_ = static_cast<std::uint64_t>(info.st_size);
    if (size_ == 0) {
      ::close(fd);
      throw Error(path + ": empty file: expected " + expected);
    }
    void* data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int error = errno;
    ::close(fd);  // the mapping keeps the file open
    if (data == MAP_FAILED) throw Error(path + ": cannot map " + what + ": " + errno_reason(error));
    data_ = static_cast<const std::uint8_t*>(data);
  }
  MappedFile(MappedFile&& other) noexcept
      : path_(std::move(other.path_)),
        data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)) {}
  MappedFile& operator=(MappedFile&& other) noexcept {
    std::swap(path_, other.path_);
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
  }

  const std::string& path() const { return path_; }
  const std::uint8_t* data() const { return data_; }
  std::uint64_t size() const { return size_; }

 private:
  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::uint64_t size_ = 0;
};

}  // namespace posemb::detail
