// Intern-S1-Pro's FoPE (families.hpp, fope_keys; config/rope_block.hpp, read_fope_keys): its
// config.json (tests/data/interns1_pro/config.json) read by load_model, and a tiny config of
// the same family with coefficients in a safetensors file written by the safetensors package,
// rotated as vLLM 0.33.0's FourierRotaryEmbedding.forward_native does
// (tests/data/interns1_pro/make_tiny.py wrote x.npy and vLLM's y_vllm.npy).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "posemb/io/npy.hpp"
#include "posemb/model/checkpoint_positions.hpp"
#include "posemb/model/config.hpp"
#include "posemb/rotary/fope.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path data = fs::path(POSEMB_TEST_DATA_DIR) / "interns1_pro";

std::string error_of(const std::string& json) {
  try {
    posemb::parse_model_positions(json);
  } catch (const posemb::Error& error) {
    return error.what();
  }
  return "(no error)";
}

// Intern-S1-Pro's text_config with its rope_scaling replaced.
std::string intern_config(const std::string& rope_scaling) {
  return R"({"model_type": "interns1_pro_text", "head_dim": 128, "hidden_size": 4096,
             "num_attention_heads": 64, "num_key_value_heads": 4,
             "max_position_embeddings": 262144, "rope_theta": 5000000,
             "rope_scaling": )" +
         rope_scaling + "}";
}

}  // namespace

TEST_CASE("Intern-S1-Pro's config.json: FoPE from the default block's fope keys",
          "[config][fope]") {
  const posemb::ModelPositions model =
      posemb::load_model_positions((data / "config.json").string());
  CHECK(model.kind() == posemb::PositionKind::Fope);
  CHECK(model.layers.size() == 94);
  CHECK(model.unused_keys.end() ==
        std::find_if(model.unused_keys.begin(), model.unused_keys.end(), [](const auto& key) {
          return key.find("rope_scaling") != std::string::npos;
        }));
  REQUIRE(model.fope.has_value());
  const posemb::FopeConfig& f = *model.fope;
  CHECK(f.head_dim == 128);
  CHECK(f.n_heads == 64);
  CHECK(f.n_kv_heads == 4);
  CHECK(f.theta == 5e6);
  CHECK(f.train_length == 262144);
  CHECK(f.sigma == 0.5);  // fope_init_factor
  CHECK(f.num_inv_freq == 0);
  // 5e6^(-2k / 128) > 2 pi / 262144 iff k < 128 ln(262144 / 2 pi) / (2 ln 5e6) = 44.2...: k 0..44.
  CHECK(f.d_out == 45);
  CHECK(posemb::resolve_fope_config(f).second.d_in() == 45);
  for (int k : {0, 44, 45}) {
    INFO(k);
    CHECK((std::pow(5e6, -2.0 * k / 128) > 2 * M_PI / 262144) == (k < 45));
  }
}

TEST_CASE("Intern-S1-Pro's fope keys: num_inv_freq, and what is refused", "[config][fope]") {
  const posemb::ModelPositions first = posemb::parse_model_positions(
      intern_config(R"({"rope_type": "default", "fope_sep_head": true, "num_inv_freq": 20})"));
  REQUIRE(first.fope.has_value());
  CHECK(first.fope->num_inv_freq == 20);
  CHECK(first.fope->d_out == 20);
  CHECK(first.fope->sigma == 0.3);  // no fope_init_factor: FopeConfig's default
  const posemb::FopeFrequencies kept = posemb::resolve_fope_config(*first.fope).second;
  REQUIRE(kept.d_in() == 20);
  CHECK(kept.inv_freq[19] == posemb::default_inv_freq(128, 5e6)[19]);
  CHECK_THAT(error_of(intern_config(R"({"rope_type": "default", "fope_sep_head": false})")),
             Catch::Contains("rope_scaling.fope_sep_head = false: expected true"));
  CHECK_THAT(error_of(intern_config(R"({"rope_type": "default", "fope_init_factor": 0.5})")),
             Catch::Contains("rope_scaling.fope_sep_head = null: expected true"));
  CHECK_THAT(error_of(intern_config(
                 R"({"rope_type": "default", "fope_sep_head": true, "num_inv_freq": 65})")),
             Catch::Contains("num_inv_freq = 65"));
  // Without fope keys the family is plain RoPE; another family leaves the keys unused.
  CHECK(posemb::parse_model_positions(intern_config(R"({"rope_type": "default"})")).kind() ==
        posemb::PositionKind::Rope);
  const std::string qwen = R"({"model_type": "qwen3", "head_dim": 128, "hidden_size": 4096,
      "num_attention_heads": 64, "num_key_value_heads": 4, "max_position_embeddings": 4096,
      "rope_scaling": {"rope_type": "default", "fope_sep_head": true}})";
  const posemb::ModelPositions other = posemb::parse_model_positions(qwen);
  CHECK(other.kind() == posemb::PositionKind::Rope);
  CHECK(std::find(other.unused_keys.begin(), other.unused_keys.end(),
                  "rope_scaling.fope_sep_head") != other.unused_keys.end());
}

TEST_CASE("Intern-S1-Pro's coefficients from safetensors rotate as vLLM's FoPE", "[config][fope]") {
  const fs::path tiny = data / "tiny";
  const posemb::ModelPositions model =
      posemb::load_model_positions((tiny / "config.json").string());
  REQUIRE(model.fope.has_value());
  const posemb::SafetensorsCheckpoint weights((tiny / "coefficients.safetensors").string());
  const posemb::CheckpointFopeCoefficients coef = posemb::fope_checkpoint_coefficients(weights, 0);
  CHECK(coef.sin_name == "model.language_model.rotary_emb.sin_coef");
  CHECK(coef.sin_shape == std::vector<std::int64_t>{2, 4, 4});
  const posemb::Fope fope = posemb::fope_with_coefficients(
      *model.fope, coef.sin_coef.data(), coef.sin_shape, coef.cos_coef.data(), coef.cos_shape);
  const posemb::NpyArray x = posemb::read_npy((tiny / "x.npy").string());
  const posemb::NpyArray expected = posemb::read_npy((tiny / "y_vllm.npy").string());
  std::vector<float> y = x.values<float>();
  REQUIRE(x.shape == std::vector<std::int64_t>{1, 32, 4, 16});
  posemb::rotate_inplace(
      Eigen::TensorMap<Eigen::Tensor<float, 4, Eigen::RowMajor>>(y.data(), 1, 32, 4, 16), 0, fope);
  // vLLM forms float32 angles: per feature |delta| <= |x pair| A (8 u + 8 u p w_0), A the
  // mixture's gain (largest sum over D_in of |A_cos| + |A_sin|), u = 2^-24 (conformance/vllm).
  double gain = 0.0;
  for (std::size_t h = 0; h < 2; ++h) {
    for (std::size_t j = 0; j < 4; ++j) {
      double sum = 0.0;
      for (std::size_t k = 0; k < 4; ++k) {
        const std::size_t i = (h * 4 + k) * 4 + j;
        sum += std::fabs(coef.sin_coef[i]) + std::fabs(coef.cos_coef[i]);
      }
      gain = std::max(gain, sum);
    }
  }
  const std::vector<float> x_values = x.values<float>(), want = expected.values<float>();
  const double u = std::ldexp(1.0, -24);
  int beyond = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const std::size_t head = i / 16, slot = (i % 16) % 8, token = head / 4;
    const double a = x_values[head * 16 + slot], b = x_values[head * 16 + slot + 8];
    const double bound = std::hypot(a, b) * gain * (8 * u + 8 * u * static_cast<double>(token));
    beyond += !(std::fabs(static_cast<double>(y[i]) - want[i]) <= bound);
  }
  CHECK(beyond == 0);
}
