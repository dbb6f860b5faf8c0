// The program a user of the config.json loader writes, linked to posemb::config (the reader
// compiled once) or to posemb::config_header_only, either of which must bring nlohmann-json: read
// a model's config and check its RoPE frequencies against values worked out by hand. The build
// says which route it expects (POSEMB_EXPECT_COMPILED 1 or 0). Exit status 0 when they agree.
#include <posemb/model/config.hpp>

#include <cmath>
#include <cstdio>

#if defined(POSEMB_CONFIG_COMPILED) != POSEMB_EXPECT_COMPILED
#error "posemb::config must define POSEMB_CONFIG_COMPILED, posemb::config_header_only must not"
#endif
#if POSEMB_EXPECT_COMPILED
static const char* const route = "compiled";
#else
static const char* const route = "header-only";
#endif

int main() {
  // head_dim = hidden_size / num_attention_heads = 4, rope_theta 100:
  // inv_freq = 100^(-2i/4) = 1, 0.1.
  const nlohmann::json config = nlohmann::json::parse(
      R"({"model_type": "llama", "hidden_size": 8, "num_attention_heads": 2,
          "num_hidden_layers": 1, "rope_theta": 100.0})");
  const posemb::ModelPositions model = posemb::model_positions_from_json(config);
  const posemb::RopeSpec spec = model.rope_spec();
  const double expected[2] = {1.0, 0.1};
  double max_error = spec.inv_freq.size() == 2 ? 0.0 : 1.0;
  for (int i = 0; i < 2 && i < spec.inv_freq.size(); ++i) {
    max_error = std::fmax(max_error, std::fabs(spec.inv_freq[i] - expected[i]));
  }
  std::printf(
      "posemb config.json reader (%s): %zu layer(s), rotary_dim %d, inv_freq max error "
      "%.1e\n",
      route, model.layers.size(), spec.rotary_dim, max_error);
  return max_error <= 1e-15 ? 0 : 1;
}
