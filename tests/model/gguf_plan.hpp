// What the GGUF plan tests share (test_gguf_new_archs.cpp, test_gguf_arch_rows.cpp,
// test_gguf_arch_*.cpp): a file the test writes, read back as llama.cpp's plan or refused, and
// ggml's default frequencies written out again.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>

#include "io/gguf_writer.hpp"
#include "posemb/model/gguf.hpp"

namespace test_gguf {

inline std::string temp_gguf(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("posemb_" + name + ".gguf")).string();
}

// ggml_rope_cache_init's frequency of pair i for base b and n_rot rotated features:
// b^(-2i / n_rot).
inline double ggml_inv_freq(double base, int i, int n_rot) {
  return std::pow(base, -2.0 * i / static_cast<double>(n_rot));
}

// The writer's file, read by read_gguf_positions, then removed.
inline posemb::GgufPositions plan_of(const GgufWriter& writer, const std::string& name) {
  const std::string path = temp_gguf(name);
  writer.write(path);
  posemb::GgufPositions plan = posemb::read_gguf_positions(path);
  std::filesystem::remove(path);
  return plan;
}

// The message of the posemb::Error read_gguf_positions throws on the writer's file ("" when it
// reads the file; any other exception propagates).
inline std::string refusal_of(const GgufWriter& writer, const std::string& name) {
  const std::string path = temp_gguf(name);
  writer.write(path);
  std::string message;
  try {
    posemb::read_gguf_positions(path);
  } catch (const posemb::Error& error) {
    message = error.what();
  }
  std::filesystem::remove(path);
  return message;
}

// The writer's file is refused by read_gguf_positions: a posemb::Error whose message contains
// `message`.
inline void check_refused(const GgufWriter& writer, const std::string& name,
                          const std::string& message) {
  const std::string refusal = refusal_of(writer, name);
  CHECK_FALSE(refusal.empty());
  CHECK_THAT(refusal, Catch::Contains(message));
}

}  // namespace test_gguf
