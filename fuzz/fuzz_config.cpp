// libFuzzer target for the config.json loader (config.hpp). Any JSON document must either load
// or throw posemb::Error; every loaded RoPE layer must give a valid spec and its per-pair bands
// at any sequence length.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>

#include "posemb/config.hpp"
#include "posemb/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json config = nlohmann::json::parse(data, data + size, nullptr, false);
  if (config.is_discarded()) return 0;  // not JSON: the loader reports a parse error
  const std::optional<std::int64_t> lengths[] = {std::nullopt, 0, 1, 4096, 4097, 1 << 20};
  try {
    const posemb::ModelPositions model = posemb::model_positions_from_json(config);
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
