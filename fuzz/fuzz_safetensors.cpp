// libFuzzer target for the safetensors reader (io/safetensors.hpp). Each input is written to a
// scratch file and opened, which must either give its tensors or throw posemb::Error; every
// float tensor it accepted is converted (matrix) and viewed (f32_view). The input is also read
// as a model.safetensors.index.json whose every shard is the scratch file, and as a checkpoint
// whose FoPE coefficients and RoBERTa table (model/checkpoint_positions.hpp) are looked up and
// read. Once per process,
// files that cannot be read (file_cases.hpp) must throw posemb::Error too.
#include <cstdint>
#include <string>

#include "file_cases.hpp"
#include "posemb/error.hpp"
#include "posemb/io/safetensors.hpp"
#include "posemb/model/checkpoint_positions.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool unreadable_checked = [] {
    posemb_fuzz::check_unreadable_files(
        [](const std::string& path) { posemb::SafetensorsFile{path}; });
    return true;
  }();
  (void)unreadable_checked;
  static const std::string input_path = posemb_fuzz::scratch_path(".safetensors");
  posemb_fuzz::write_file(input_path, data, size);
  try {
    const posemb::SafetensorsFile file(input_path);
    for (const auto& [name, tensor] : file.tensors()) {
      if (tensor.dtype == "F32" || tensor.dtype == "F16" || tensor.dtype == "BF16") {
        file.matrix(name);
        file.f32_view(name);
      }
    }
  } catch (const posemb::Error&) {
    // Rejected file: expected.
  }
  try {
    const posemb::SafetensorsCheckpoint weights(input_path);
    posemb::fope_checkpoint_coefficients(weights, 0);
    posemb::learned_position_table(weights, "roberta", 1);
  } catch (const posemb::Error&) {
    // Missing, malformed or misshapen tensors: expected.
  }
  static const std::string index_path = posemb_fuzz::scratch_path(".index.json");
  posemb_fuzz::write_file(index_path, data, size);
  try {
    const posemb::SafetensorsCheckpoint weights(index_path);
    if (weights.contains("wpe.weight")) weights.matrix("wpe.weight");
  } catch (const posemb::Error&) {
    // Rejected index or shard: expected.
  }
  return 0;
}
