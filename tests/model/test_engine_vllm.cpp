// engine_vllm.hpp: vLLM 0.33.0's view of a config against transformers'. The expected vLLM
// frequencies are written here from vLLM's formulas (dynamic_ntk_scaling_rope.py: base *
// (factor * L / L - (factor - 1))^(d/(d-2)) = base; phi3_long_rope_scaled_rope.py: 1 /
// (factor_i * base^(2i/d)); glm4.py: partial_rotary_factor 0.5 when the config has none;
// deepseek_v32/attention.py: the indexer rotate-half unless indexer_rope_interleave), not from
// posemb's; conformance/vllm/run.py checks the same configs' rotations against vLLM itself.
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
  const auto config = posemb::parse_vllm_view(dynamic_config);
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
  const auto config = posemb::parse_vllm_view(longrope_config);
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
  const auto config = posemb::parse_vllm_view(plain_config);
  CHECK(posemb::diff_vllm_plans(config, 8192, std::nullopt).empty());
  CHECK(posemb::diff_vllm_plans(config, 8192, 100000).empty());
}

TEST_CASE("vllm max_model_len must be positive") {
  const auto config = posemb::parse_vllm_view(plain_config);
  CHECK_THROWS_WITH(posemb::vllm_layer_plans(config, 0),
                    Catch::Contains("max_model_len") && Catch::Contains("0") &&
                        Catch::Contains("expected a positive number"));
}

TEST_CASE("vllm differences as text and JSON name the engine") {
  const auto config = posemb::parse_vllm_view(longrope_config);
  const auto differences = posemb::diff_vllm_plans(config, 131072, 100);
  const std::string text = posemb::differences_text(differences, "vllm");
  // The worst pair: the last, long_factor 128 against short 1.
  CHECK(text.find("layer 0 inv_freq: vllm ") != std::string::npos);
  CHECK(text.find("pair 7") != std::string::npos);
  CHECK(text.find("phi3_long_rope_scaled_rope.py") != std::string::npos);
  const std::string json = posemb::differences_json(differences, "vllm");
  CHECK(json.find("\"field\": \"inv_freq\", \"vllm\": [") != std::string::npos);
}

namespace {

// GLM-4V's text without partial_rotary_factor or mrope_section: head_dim 64.
std::string glm4v_config(const std::string& rope_keys) {
  return R"({"model_type": "glm4v", "text_config": {"model_type": "glm4v_text",
    "hidden_size": 128, "num_attention_heads": 2, "num_key_value_heads": 2,
    "num_hidden_layers": 2, "max_position_embeddings": 32768,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0)" +
         rope_keys + "}}}";
}

// GLM-5's MLA with its indexer on every layer (index_topk_freq 1), rope slice 64.
std::string glm5_config(const std::string& extra_keys) {
  return R"({"model_type": "glm_moe_dsa", "num_hidden_layers": 2,
    "num_attention_heads": 2, "hidden_size": 64, "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 192, "index_head_dim": 128, "max_position_embeddings": 202752,
    "rope_parameters": {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 40.0,
    "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
    "original_max_position_embeddings": 4096})" +
         extra_keys + "}";
}

std::string deepseek_v32_config(const std::string& extra_keys) {
  return R"({"model_type": "deepseek_v32", "num_hidden_layers": 2,
    "num_attention_heads": 2, "hidden_size": 64, "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128, "max_position_embeddings": 163840, "rope_parameters": {
    "rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "beta_fast": 32.0,
    "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
    "original_max_position_embeddings": 4096})" +
         extra_keys + "}";
}

}  // namespace

TEST_CASE("vllm rotates half of GLM-4V's text head when the config gives no factor") {
  const auto view = posemb::parse_vllm_view(glm4v_config(""));
  // vLLM: rotary_dim int(64 * 0.5) = 32, 1 / 10000^(2i / 32), no M-RoPE sections.
  const auto plans = posemb::vllm_layer_plans(view, 32768);
  CHECK(plans[0].rotary_dim == 32);
  check_inv_freq(plans[0].inv_freq, default_inv_freq(10000.0, 32));
  CHECK_FALSE(plans[0].mrope_section);
  // transformers: the whole 64 with its [8, 12, 12] default.
  const auto& config = view.config.layers[0].rope;
  REQUIRE(config);
  CHECK(config->rotary_dim == 64);
  const auto differences = posemb::diff_vllm_plans(view, 32768, std::nullopt);
  CHECK(fields(differences) == std::vector<std::string>{"0 rotary_dim", "0 inv_freq",
                                                        "0 mrope_section", "0 mrope_layout",
                                                        "1 rotary_dim", "1 inv_freq",
                                                        "1 mrope_section", "1 mrope_layout"});
  CHECK(differences[0].gguf == "32");
  CHECK(differences[0].config == "64");
  CHECK(differences[2].gguf == "null");
  CHECK(differences[2].config == "[8, 12, 12]");
  for (const auto& d : differences) CHECK(d.note.find("glm4.py") != std::string::npos);
  // Property: vLLM's pairs are transformers' with the exponent over 32 in place of 64, so
  // vLLM's pair i is transformers' pair 2i.
  const auto hf = posemb::config_layer_plans(view.config, std::nullopt);
  for (std::size_t i = 0; i < 16; ++i) {
    CHECK(plans[0].inv_freq[i] == Approx(hf[0].inv_freq[2 * i]).epsilon(1e-15));
  }
}

TEST_CASE("vllm agrees on GLM-4V's text when the config gives the factor and sections") {
  // zai-org/GLM-4.1V-9B-Thinking's text: partial_rotary_factor 0.5, mrope_section [8, 12, 12].
  const auto given = posemb::parse_vllm_view(
      glm4v_config(R"(, "partial_rotary_factor": 0.5, "mrope_section": [4, 6, 6])"));
  CHECK(posemb::diff_vllm_plans(given, 32768, std::nullopt).empty());
  CHECK(posemb::vllm_layer_plans(given, 32768)[0].rotary_dim == 32);
  // Sections of the whole head without a factor: transformers runs it, vLLM's MRotaryEmbedding
  // asserts sum(mrope_section) == rotary_dim // 2 (mrope.py) and so does posemb's reading.
  const std::string whole = glm4v_config(R"(, "mrope_section": [8, 12, 12])");
  CHECK(posemb::parse_model_positions(whole).layers[0].rope->rotary_dim == 64);
  CHECK_THROWS_WITH(posemb::parse_vllm_view(whole),
                    Catch::Contains("as vLLM 0.33.0 reads it") && Catch::Contains("mrope_section"));
}

TEST_CASE("vllm has no M-RoPE for GLM-4.5V's text without mrope_section") {
  // Glm4vMoeTextConfig and vLLM's Glm4MoeAttention both take partial 0.5: only the sections move.
  const std::string text = R"({"model_type": "glm4v_moe", "text_config": {
    "model_type": "glm4v_moe_text", "hidden_size": 256, "num_attention_heads": 2,
    "num_key_value_heads": 2, "num_hidden_layers": 1, "max_position_embeddings": 65536,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0)";
  const auto absent = posemb::parse_vllm_view(text + "}}}");
  const auto differences = posemb::diff_vllm_plans(absent, 65536, std::nullopt);
  CHECK(fields(differences) == std::vector<std::string>{"0 mrope_section", "0 mrope_layout"});
  CHECK(differences[0].config == "[8, 12, 12]");
  CHECK(posemb::vllm_layer_plans(absent, 65536)[0].rotary_dim == 64);
  const auto given = posemb::parse_vllm_view(text + R"(, "mrope_section": [8, 12, 12]}}})");
  CHECK(posemb::diff_vllm_plans(given, 65536, std::nullopt).empty());
}

TEST_CASE("vllm pairs GLM-5's indexer by indexer_rope_interleave") {
  // Absent: vLLM rotates half where transformers' GlmMoeDsaIndexer interleaves.
  const auto absent = posemb::parse_vllm_view(glm5_config(""));
  REQUIRE(absent.vllm.layers[0].indexer);
  CHECK(absent.vllm.layers[0].indexer->rope.pairing == posemb::Pairing::RotateHalf);
  CHECK(absent.config.layers[0].indexer->rope.pairing == posemb::Pairing::Interleaved);
  const auto differences = posemb::diff_vllm_plans(absent, 202752, std::nullopt);
  CHECK(fields(differences) == std::vector<std::string>{"0 indexer_pairing", "1 indexer_pairing"});
  CHECK(differences[0].gguf == "\"rotate_half\"");
  CHECK(differences[0].config == "\"interleaved\"");
  CHECK(differences[0].note.find("deepseek_v32/attention.py") != std::string::npos);
  // Property: only the pairing moves; the indexer's frequencies are the attention's in both.
  CHECK(absent.vllm.layers[0].indexer_rope_spec().inv_freq.isApprox(
      absent.config.layers[0].indexer_rope_spec().inv_freq, 0.0));
  // GLM-5's config.json sets it true: no departure.
  const auto set = posemb::parse_vllm_view(glm5_config(R"(, "indexer_rope_interleave": true)"));
  CHECK(posemb::diff_vllm_plans(set, 202752, std::nullopt).empty());
}

TEST_CASE("vllm pairs DeepSeek-V3.2's indexer interleaved only when the key says so") {
  const auto absent = posemb::parse_vllm_view(deepseek_v32_config(""));
  CHECK(posemb::diff_vllm_plans(absent, 163840, std::nullopt).empty());
  const auto set =
      posemb::parse_vllm_view(deepseek_v32_config(R"(, "indexer_rope_interleave": true)"));
  const auto differences = posemb::diff_vllm_plans(set, 163840, std::nullopt);
  CHECK(fields(differences) == std::vector<std::string>{"0 indexer_pairing", "1 indexer_pairing"});
  CHECK(differences[0].gguf == "\"interleaved\"");
  CHECK(differences[0].config == "\"rotate_half\"");
  // The attention itself is interleaved MLA in both.
  CHECK(set.vllm.layers[0].rope->pairing == set.config.layers[0].rope->pairing);
}
