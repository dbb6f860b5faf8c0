// Files that cannot be read, for the fuzz targets: each must make the reader throw
// posemb::Error (anything else escaping, or a hang, is a finding). Checked once per process.
//   a directory                    TMPDIR itself
//   an unreadable path             a path through a regular file (ENOTDIR): it fails for root
//                                  too, where a chmod 000 file would not (fuzzing runs as root in
//                                  CI)
//   an empty file, a missing file
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "posemb/error.hpp"

namespace posemb_fuzz {

// A scratch path per process (libFuzzer may run several jobs side by side).
inline std::string scratch_path(const std::string& suffix) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/posemb_fuzz_" + std::to_string(::getpid()) +
         suffix;
}

inline void write_file(const std::string& path, const void* data, std::size_t size) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, file) != size) std::abort();
  std::fclose(file);
}

// Calls read(path) on every unreadable case; aborts unless each throws posemb::Error.
template <class Read>
void check_unreadable_files(Read read) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string directory = tmp != nullptr ? tmp : "/tmp";
  const std::string empty = scratch_path(".empty");
  write_file(empty, nullptr, 0);
  for (const std::string& path :
       {directory, empty, empty + "/under_a_file", scratch_path(".missing")}) {
    bool refused = false;
    try {
      read(path);
    } catch (const posemb::Error&) {
      refused = true;
    }
    if (!refused) std::abort();
  }
  std::remove(empty.c_str());
}

}  // namespace posemb_fuzz
