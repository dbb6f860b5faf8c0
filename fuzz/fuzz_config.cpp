// libFuzzer target for the config.json loader (config.hpp). Any JSON document must either load
// or throw posemb::Error; a loaded RoPE scheme must give a valid spec at any sequence length,
// and a RoPE or FoPE scheme its per-pair frequencies.
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
    if (model.kind == posemb::PositionKind::Rope) {
      for (const auto& seq_len : lengths) model.rope_spec_for(seq_len).validate();
    }
    if (model.kind == posemb::PositionKind::Rope || model.kind == posemb::PositionKind::Fope) {
      for (const auto& seq_len : lengths) posemb::pair_frequencies(model, seq_len);
    }
  } catch (const posemb::Error&) {
    // Rejected config: expected.
  }
  return 0;
}
