// libFuzzer target for the GGUF reader (io/gguf_file.hpp) and llama.cpp's plan on top of it
// (model/gguf.hpp). Each input is written to a scratch file and read with read_gguf_positions at
// a few context sizes, which must either give a plan or throw posemb::Error; every RoPE layer's
// spec must be valid and its JSON object printable. Once per process, files that cannot be read
// (file_cases.hpp) must throw posemb::Error too.
#include <cstdint>
#include <optional>
#include <string>

#include "file_cases.hpp"
#include "posemb/error.hpp"
#include "posemb/model/gguf.hpp"
#include "posemb/model/layer_plan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool unreadable_checked = [] {
    posemb_fuzz::check_unreadable_files(
        [](const std::string& path) { posemb::read_gguf_positions(path); });
    return true;
  }();
  (void)unreadable_checked;
  static const std::string input_path = posemb_fuzz::scratch_path(".gguf");
  posemb_fuzz::write_file(input_path, data, size);
  const std::optional<std::int64_t> contexts[] = {std::nullopt, 1, 4096, 4097};
  for (const auto& n_ctx : contexts) {
    try {
      const posemb::GgufPositions plan = posemb::read_gguf_positions(input_path, n_ctx);
      for (const posemb::LayerPositions& layer : plan.model.layers) {
        if (layer.rope) layer.rope_spec().validate();
      }
      for (const posemb::LayerPlan& layer : posemb::gguf_layer_plans(plan)) {
        posemb::layer_plan_json(layer);
      }
    } catch (const posemb::Error&) {
      // Rejected file: expected.
    }
  }
  return 0;
}
