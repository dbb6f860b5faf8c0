// libFuzzer target for the config.json loader (config.hpp). Each input is written to a scratch
// file and read with load_model_positions, which must either load it or throw posemb::Error;
// every loaded RoPE layer must give a valid spec and its per-pair bands at any sequence length.
// Once per process, files that cannot be read (file_cases.hpp) must throw posemb::Error too.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "file_cases.hpp"
#include "posemb/model/config.hpp"
#include "posemb/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool unreadable_checked = [] {
    posemb_fuzz::check_unreadable_files(
        [](const std::string& path) { posemb::load_model_positions(path); });
    return true;
  }();
  (void)unreadable_checked;
  static const std::string input_path = posemb_fuzz::scratch_path(".config.json");
  posemb_fuzz::write_file(input_path, data, size);
  const std::optional<std::int64_t> lengths[] = {std::nullopt, 0, 1, 4096, 4097, 1 << 20};
  try {
    const posemb::ModelPositions model = posemb::load_model_positions(input_path);
    for (const posemb::LayerPositions& layer : model.layers) {
      if (!layer.rope) continue;
      for (const auto& seq_len : lengths) {
        const posemb::RopeSpec spec = layer.rope_spec(seq_len);
        spec.validate();
        posemb::rope_bands(*layer.rope, spec);
      }
    }
  } catch (const posemb::Error&) {
    // Rejected config: expected.
  }
  return 0;
}
