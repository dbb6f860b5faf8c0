// engine_vllm.hpp: vLLM 0.33.0's view of a config against transformers'. The expected vLLM
// frequencies are written here from vLLM's formulas (dynamic_ntk_scaling_rope.py: base *
// (factor * L / L - (factor - 1))^(d/(d-2)) = base; phi3_long_rope_scaled_rope.py: 1 /
// (factor_i * base^(2i/d))), not from posemb's; conformance/vllm/run.py checks the same configs'
// rotations against vLLM itself.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "posemb/model/engine_vllm.hpp"

namespace {

// Llama-2 7B with dynamic NTK 2 (head_dim 128, 4096 positions).
const char* dynamic_config = R"({"model_type": "llama", "hidden_size": 256,
  "num_attention_heads": 2, "num_hidden_layers": 2, "head_dim": 128,
  "max_position_embeddings": 4096,
  "rope_parameters": {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}})";

// LongRoPE over 8 pairs (head_dim 16), original 4096 of 131072 (Phi-3's layout, no mscales).
const char* longrope_config = R"({"model_type": "phi3", "hidden_size": 32,
  "num_attention_heads": 2, "num_hidden_layers": 1, "max_position_embeddings": 131072,
  "original_max_position_embeddings": 4096,
  "rope_parameters": {"rope_type": "longrope", "rope_theta": 10000.0,
    "short_factor": [1, 1, 1, 1, 1, 1, 1, 1],
    "long_factor": [1, 2, 4, 8, 16, 32, 64, 128], "original_max_position_embeddings": 4096}})";

const char* plain_config = R"({"model_type": "llama", "hidden_size": 256,
  "num_attention_heads": 2, "num_hidden_layers": 1, "head_dim": 128,
  "max_position_embeddings": 8192, "rope_parameters": {"rope_type": "default",
  "rope_theta": 500000.0}})";

std::vector<double> default_inv_freq(double base, int d, const std::vector<double>& factors = {}) {
  std::vector<double> inv(static_cast<std::size_t>(d / 2));
  for (int i = 0; i < d / 2; ++i) {
    const double f = factors.empty() ? 1.0 : factors[static_cast<std::size_t>(i)];
    inv[static_cast<std::size_t>(i)] = 1.0 / (f * std::pow(base, 2.0 * i / d));
  }
  return inv;
}

void check_inv_freq(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-12));
}

std::vector<std::string> fields(const std::vector<posemb::PlanDifference>& differences) {
  std::vector<std::string> out;
  for (const auto& d : differences) out.push_back(std::to_string(*d.layer) + " " + d.field);
  return out;
}

}  // namespace

TEST_CASE("vllm dynamic NTK runs the default frequencies at every length") {
  const auto config = posemb::parse_model_positions(dynamic_config);
  const auto plans = posemb::vllm_layer_plans(config, 8192);
  check_inv_freq(plans[0].inv_freq, default_inv_freq(10000.0, 128));
  // Within max_position_embeddings transformers runs the default frequencies too.
  CHECK(posemb::diff_vllm_plans(config, 4096, 4096).empty());
  // Past it transformers grows the base; vLLM's cache ends at max_position_embeddings.
  const auto differences = posemb::diff_vllm_plans(config, 8192, 8192);
  CHECK(fields(differences) == std::vector<std::string>{"0 inv_freq", "0 positions_cached",
                                                        "1 inv_freq", "1 positions_cached"});
  CHECK(differences[0].note.find("dynamic_ntk_scaling_rope.py") != std::string::npos);
  CHECK(differences[1].gguf == "4096");
  CHECK(differences[1].config == "8192");
}

TEST_CASE("vllm LongRoPE factors are fixed by max_model_len") {
  const auto config = posemb::parse_model_positions(longrope_config);
  const std::vector<double> longs = {1, 2, 4, 8, 16, 32, 64, 128};
  const auto plans = posemb::vllm_layer_plans(config, 131072);
  check_inv_freq(plans[0].inv_freq, default_inv_freq(10000.0, 16, longs));
  // Phi3LongRoPEScaledRotaryEmbedding: sqrt(1 + ln(131072 / 4096) / ln(4096)) for both factors.
  CHECK(plans[0].attention_scale == Approx(std::sqrt(1.0 + std::log(32.0) / std::log(4096.0))));
  // A short sequence: transformers runs short_factor, vLLM long_factor.
  const auto differences = posemb::diff_vllm_plans(config, 131072, 100);
  CHECK(fields(differences) == std::vector<std::string>{"0 inv_freq"});
  CHECK(differences[0].note.find("phi3_long_rope_scaled_rope.py") != std::string::npos);
  // A long one, or max_model_len within the original context: the same factors.
  CHECK(posemb::diff_vllm_plans(config, 131072, 8192).empty());
  CHECK(posemb::diff_vllm_plans(config, 4096, 100).empty());
  check_inv_freq(posemb::vllm_layer_plans(config, 4096)[0].inv_freq, default_inv_freq(10000.0, 16));
}

TEST_CASE("vllm agrees with transformers on plain RoPE") {
  const auto config = posemb::parse_model_positions(plain_config);
  CHECK(posemb::diff_vllm_plans(config, 8192, std::nullopt).empty());
  CHECK(posemb::diff_vllm_plans(config, 8192, 100000).empty());
}

TEST_CASE("vllm max_model_len must be positive") {
  const auto config = posemb::parse_model_positions(plain_config);
  CHECK_THROWS_WITH(posemb::vllm_layer_plans(config, 0),
                    Catch::Contains("max_model_len") && Catch::Contains("0") &&
                        Catch::Contains("expected a positive number"));
}

TEST_CASE("vllm differences as text and JSON name the engine") {
  const auto config = posemb::parse_model_positions(longrope_config);
  const auto differences = posemb::diff_vllm_plans(config, 131072, 100);
  const std::string text = posemb::differences_text(differences, "vllm");
  // The worst pair: the last, long_factor 128 against short 1.
  CHECK(text.find("layer 0 inv_freq: vllm ") != std::string::npos);
  CHECK(text.find("pair 7") != std::string::npos);
  CHECK(text.find("phi3_long_rope_scaled_rope.py") != std::string::npos);
  const std::string json = posemb::differences_json(differences, "vllm");
  CHECK(json.find("\"field\": \"inv_freq\", \"vllm\": [") != std::string::npos);
}
