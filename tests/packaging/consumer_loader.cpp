// The loader called through posemb/model/load.hpp with posemb::config (the reader compiled once
// in the library): this translation unit compiles with a stand-in nlohmann/json.hpp that fails
// to compile ahead of the include path (no_nlohmann/), so it cannot have included the parser.
// Exit status 0 when the frequencies read equal the ones worked out by hand.
#include <posemb/model/load.hpp>

#include <cmath>
#include <cstdio>
#include <string>

#ifndef POSEMB_CONFIG_COMPILED
#error "posemb::config must define POSEMB_CONFIG_COMPILED"
#endif

int main() {
  // head_dim = hidden_size / num_attention_heads = 4, rope_theta 100: inv_freq = 1, 0.1.
  const posemb::ModelPositions model = posemb::parse_model_positions(
      R"({"model_type": "llama", "hidden_size": 8, "num_attention_heads": 2,
          "num_hidden_layers": 3, "rope_theta": 100.0})");
  const posemb::RopeSpec spec = model.rope_spec();
  const double expected[2] = {1.0, 0.1};
  double max_error = spec.inv_freq.size() == 2 && model.layers.size() == 3 ? 0.0 : 1.0;
  for (int i = 0; i < 2 && i < spec.inv_freq.size(); ++i) {
    max_error = std::fmax(max_error, std::fabs(spec.inv_freq[i] - expected[i]));
  }
  bool malformed_refused = false;
  try {
    posemb::parse_model_positions("{\"num_attention_heads\": ");
  } catch (const posemb::Error& error) {
    malformed_refused = std::string(error.what()).find("malformed JSON") != std::string::npos;
  }
  std::printf(
      "posemb::config, compiled reader: %zu layer(s), inv_freq max error %.1e, "
      "malformed JSON refused: %s\n",
      model.layers.size(), max_error, malformed_refused ? "yes" : "no");
  return max_error <= 1e-15 && malformed_refused ? 0 : 1;
}
