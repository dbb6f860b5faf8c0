// config.hpp: HuggingFace config.json -> positional scheme. The golden values in data/hf come from
// HuggingFace transformers' own rope init functions (see data/hf/README.md).
#include "posemb/model/config.hpp"
#include "posemb/io/npy.hpp"

#include "posemb/model/report.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path hf_dir = fs::path(POSEMB_TEST_DATA_DIR) / "hf";

json read_json(const fs::path& path) {
  std::ifstream file(path);
  REQUIRE(file);
  return json::parse(file);
}

// Checks the README's pass criterion; returns the largest relative error seen.
double check_case(const fs::path& config, const fs::path& expected_path) {
  const json expected = read_json(expected_path);
  std::optional<std::int64_t> seq_len;
  if (!expected.at("seq_len").is_null()) seq_len = expected.at("seq_len").get<std::int64_t>();
  const posemb::RopeSpec got = posemb::load_model_positions(config.string()).rope_spec(seq_len);
  INFO(expected_path.filename().string());
  REQUIRE(got.rotary_dim == expected.at("rotary_dim").get<int>());
  const auto& inv = expected.at("inv_freq");
  REQUIRE(got.inv_freq.size() == static_cast<Eigen::Index>(inv.size()));
  double worst = 0.0;
  for (std::size_t i = 0; i < inv.size(); ++i) {
    const double want = inv[i].get<double>();
    const double err = std::fabs(got.inv_freq[static_cast<Eigen::Index>(i)] - want);
    INFO("pair " << i << " got " << got.inv_freq[static_cast<Eigen::Index>(i)] << " expected "
                 << want);
    CHECK(err <= 1e-6 * std::fabs(want));
    worst = std::max(worst, err / std::fabs(want));
  }
  const double want_scale = expected.at("attention_scale").get<double>();
  CHECK(std::fabs(got.attention_scale - want_scale) <= 1e-6 * std::fabs(want_scale));
  return std::max(worst, std::fabs(got.attention_scale - want_scale) / std::fabs(want_scale));
}

posemb::ModelPositions parse(const std::string& text, const posemb::ConfigOptions& options = {}) {
  return posemb::model_positions_from_json(json::parse(text), options);
}

// The Error message thrown by parsing `text`.
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const posemb::Error& error) {
    return error.what();
  }
  FAIL("no posemb::Error thrown for " << text);
  return "";
}

const char* llama_like =
    R"({"hidden_size": 256, "num_attention_heads": 8, "max_position_embeddings": 4096)";

}  // namespace

TEST_CASE("every HF conformance case matches to relative 1e-6", "[config][hf]") {
  const std::string suffix = ".expected.json";
  std::map<std::string, int> expected_per_config;
  int cases = 0;
  double worst = 0.0;
  for (const auto& entry : fs::directory_iterator(hf_dir)) {
    // NAME.expected.json or NAME.seqN.expected.json
    const std::string file = entry.path().filename().string();
    if (file.size() <= suffix.size() ||
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    std::string name = file.substr(0, file.size() - suffix.size());
    const std::size_t dot = name.rfind('.');
    if (dot != std::string::npos && name.compare(dot, 4, ".seq") == 0) name.resize(dot);
    const fs::path config = hf_dir / (name + ".json");
    REQUIRE(fs::exists(config));
    worst = std::max(worst, check_case(config, entry.path()));
    ++expected_per_config[name];
    ++cases;
  }
  // Every config has at least its no-seq-len case; the shipped directory holds 17 configs, 23
  // cases.
  int configs = 0;
  for (const auto& entry : fs::directory_iterator(hf_dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".json" || name.find(".expected.") != std::string::npos)
      continue;
    ++configs;
    CHECK(fs::exists(hf_dir / (entry.path().stem().string() + ".expected.json")));
  }
  CHECK(configs >= 17);
  CHECK(cases >= 23);
  CHECK(static_cast<int>(expected_per_config.size()) == configs);
  WARN("HF conformance: " << cases << " cases, max relative error " << worst);
}

TEST_CASE("config fields: head_dim, rotary_dim, heads, theta", "[config]") {
  const auto m = posemb::load_model_positions((hf_dir / "alias_gpt_neox.json").string());
  CHECK(m.kind() == posemb::PositionKind::Rope);
  CHECK(m.model_type == "gpt_neox");
  CHECK(m.layers[0].head_dim == 64);
  CHECK(m.rope_scheme().rotary_dim == 16);
  CHECK(m.n_heads == 12);
  CHECK(m.n_kv_heads == 12);
  CHECK(m.rope_scheme().rope_type == "default");
  CHECK(m.rope_scheme().pairing == posemb::Pairing::RotateHalf);
  CHECK(m.max_position_embeddings == 2048);

  const auto v5 = posemb::load_model_positions((hf_dir / "v5_rope_parameters_yarn.json").string());
  CHECK(v5.rope_scheme().rope_type == "yarn");
  CHECK(v5.rope_scheme().theta == 1000000.0);
  const auto& v5_yarn = std::get<posemb::YarnParams>(v5.rope_scheme().params);
  CHECK(v5_yarn.factor == 4.0);
  CHECK(v5_yarn.original_max_position_embeddings == 8192);

  const auto gqa = parse(R"({"hidden_size": 4096, "num_attention_heads": 32,
                             "num_key_value_heads": 8, "rope_theta": 500000})");
  CHECK(gqa.n_kv_heads == 8);
  CHECK(gqa.layers[0].head_dim == 128);
  CHECK(gqa.rope_scheme().theta == 500000.0);
  CHECK_FALSE(gqa.max_position_embeddings.has_value());
}

TEST_CASE("pairing follows the model family and can be overridden", "[config]") {
  const std::string gptj = R"({"model_type": "gptj", "n_embd": 4096, "n_head": 16,
                              "n_positions": 2048, "rotary_dim": 64})";
  const auto m = parse(gptj);
  CHECK(m.rope_scheme().pairing == posemb::Pairing::Interleaved);
  CHECK(m.layers[0].head_dim == 256);
  CHECK(m.rope_scheme().rotary_dim == 64);
  CHECK(m.max_position_embeddings == 2048);
  CHECK(m.rope_spec().pairing == posemb::Pairing::Interleaved);

  posemb::ConfigOptions options;
  options.pairing = posemb::Pairing::RotateHalf;
  CHECK(parse(gptj, options).rope_scheme().pairing == posemb::Pairing::RotateHalf);
  CHECK(parse(R"({"model_type": "codegen", "n_embd": 1024, "n_head": 16, "rotary_dim": 32})")
            .rope_scheme()
            .pairing == posemb::Pairing::Interleaved);
  CHECK(parse(std::string(llama_like) + "}").rope_scheme().pairing == posemb::Pairing::RotateHalf);
  options.pairing = posemb::Pairing::Interleaved;
  CHECK(parse(std::string(llama_like) + "}", options).rope_spec().pairing ==
        posemb::Pairing::Interleaved);
}

TEST_CASE("models without RoPE are recognised", "[config]") {
  using posemb::PositionKind;
  CHECK(parse(R"({"model_type": "bloom", "n_head": 32, "hidden_size": 4096})").kind() ==
        PositionKind::Alibi);
  CHECK(
      parse(
          R"({"model_type": "falcon", "alibi": true, "num_attention_heads": 8, "hidden_size": 512})")
          .kind() == PositionKind::Alibi);
  CHECK(
      parse(
          R"({"model_type": "falcon", "alibi": false, "num_attention_heads": 8, "hidden_size": 512})")
          .kind() == PositionKind::Rope);
  const auto mpt =
      parse(R"({"model_type": "mpt", "n_heads": 32, "d_model": 4096, "max_seq_len": 2048,
                             "attn_config": {"alibi": true, "alibi_bias_max": 8}})");
  CHECK(mpt.kind() == PositionKind::Alibi);
  CHECK(mpt.n_heads == 32);
  CHECK(parse(R"({"model_type": "mpt", "n_heads": 8, "max_seq_len": 2048,
                  "attn_config": {"alibi": false}})")
            .kind() == PositionKind::Learned);
  const auto gpt2 =
      parse(R"({"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_positions": 1024})");
  CHECK(gpt2.kind() == PositionKind::Learned);
  CHECK(gpt2.max_position_embeddings == 1024);
  CHECK(parse(R"({"model_type": "xglm", "num_attention_heads": 16, "d_model": 1024})").kind() ==
        PositionKind::Sinusoidal);
  CHECK_THROWS_WITH(gpt2.rope_spec(), Catch::Contains("kind = learned"));
  CHECK_THROWS_WITH(parse(R"({"model_type": "gpt2", "n_head": 12})"),
                    Catch::Contains("n_positions"));
}

TEST_CASE("dynamic NTK and LongRoPE specs depend on seq_len", "[config]") {
  const auto dyn = posemb::load_model_positions((hf_dir / "dynamic_legacy_type.json").string());
  const auto base = dyn.rope_spec();
  CHECK(dyn.rope_spec(2048).inv_freq == base.inv_freq);
  CHECK(dyn.rope_spec(2049).inv_freq[1] < base.inv_freq[1]);
  const auto lr = posemb::load_model_positions((hf_dir / "longrope_phi3_style.json").string());
  const auto& longrope = std::get<posemb::LongRopeParams>(lr.rope_scheme().params);
  CHECK(longrope.original_max_position_embeddings == 4096);
  CHECK(longrope.factor == 8.0);
  CHECK(lr.rope_spec(4096).inv_freq == lr.rope_spec().inv_freq);
  CHECK(lr.rope_spec(4097).inv_freq[7] < lr.rope_spec(4096).inv_freq[7]);
}

TEST_CASE("the legacy rope type su is LongRoPE", "[config]") {
  const auto m =
      parse(R"({"hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 8192,
                           "original_max_position_embeddings": 2048, "rope_scaling": {"type": "su",
                           "short_factor": [1, 1, 1, 1, 1, 1, 1, 1], "long_factor": [1, 2, 3, 4, 5, 6, 7, 8]}})");
  CHECK(m.rope_scheme().rope_type == "longrope");
  CHECK(m.rope_spec(2049).inv_freq[7] == Approx(std::pow(1e4, -14.0 / 16) / 8).epsilon(1e-15));
  // By hand: factor 8192/2048 = 4, attention sqrt(1 + ln 4 / ln 2048) = sqrt(1 + 2/11).
  CHECK(m.rope_spec().attention_scale == Approx(std::sqrt(1.0 + 2.0 / 11.0)).epsilon(1e-15));
}

TEST_CASE("the shipped example configs", "[config][examples]") {
  const fs::path dir = fs::path(POSEMB_TEST_DATA_DIR) / ".." / ".." / "examples" / "configs";
  const auto bands = [](const posemb::ModelPositions& m, double s) {
    const Eigen::VectorXd base =
        posemb::default_inv_freq(m.rope_scheme().rotary_dim, m.rope_scheme().theta);
    const Eigen::VectorXd inv = m.rope_spec().inv_freq;
    std::array<int, 3> count{};  // kept, ramp, interpolated
    for (Eigen::Index i = 0; i < inv.size(); ++i) {
      const double divisor = base[i] / inv[i];
      ++count[std::fabs(divisor - 1) < 1e-12 ? 0 : std::fabs(divisor - s) < 1e-12 * s ? 2 : 1];
    }
    return count;
  };
  // Llama 3.1 8B: d 128, theta 5e5: wl_i < 2048 for i <= 28, wl_i > 8192 for i >= 35.
  const auto llama = posemb::load_model_positions((dir / "llama3.1_8b_llama3.json").string());
  CHECK(llama.rope_scheme().rope_type == "llama3");
  CHECK(llama.n_kv_heads == 8);
  CHECK(bands(llama, 8.0) == std::array<int, 3>{29, 6, 29});
  // Qwen2.5-7B YaRN: d 128, theta 1e6, L0 32768: floor(dim(32)) = 23, ceil(dim(1)) = 40.
  const auto qwen = posemb::load_model_positions((dir / "qwen2.5_7b_yarn.json").string());
  CHECK(std::get<posemb::YarnParams>(qwen.rope_scheme().params).original_max_position_embeddings ==
        32768);
  CHECK(bands(qwen, 4.0) == std::array<int, 3>{24, 16, 24});
  CHECK(qwen.rope_spec().attention_scale == Approx(0.1 * std::log(4.0) + 1).epsilon(1e-15));
  // Phi-3 128k: factor 131072/4096 = 32, attention sqrt(1 + ln 32 / ln 4096) = sqrt(1 + 5/12).
  const auto phi3 = posemb::load_model_positions((dir / "phi3_128k_longrope.json").string());
  CHECK(phi3.rope_scheme().rotary_dim == 96);
  CHECK(phi3.rope_spec().attention_scale == Approx(std::sqrt(1.0 + 5.0 / 12.0)).epsilon(1e-15));
  CHECK(phi3.rope_spec(4097).inv_freq[47] < phi3.rope_spec(4096).inv_freq[47] / 20);
  // GPT-NeoX-20B: head_dim 6144/64 = 96, rotary_pct 0.25 -> 24.
  const auto neox = posemb::load_model_positions((dir / "gpt_neox_20b_partial.json").string());
  CHECK(neox.layers[0].head_dim == 96);
  CHECK(neox.rope_scheme().rotary_dim == 24);
  CHECK(neox.rope_scheme().pairing == posemb::Pairing::RotateHalf);
  const auto gptj = posemb::load_model_positions((dir / "gptj_6b_interleaved.json").string());
  CHECK(gptj.rope_scheme().rotary_dim == 64);
  CHECK(gptj.rope_scheme().pairing == posemb::Pairing::Interleaved);
}

TEST_CASE("a config's spec knows its head_dim: partial rotary is the config's, not the tensor's",
          "[config]") {
  const fs::path dir = fs::path(POSEMB_TEST_DATA_DIR) / ".." / ".." / "examples" / "configs";
  // GPT-NeoX-20B: rotary_pct 0.25 of head_dim 96; GPT-J-6B: rotary_dim 64 of 256; Phi-3: whole
  // heads of 96; DeepSeek-V3: RoPE runs over q_pe, the qk_rope_head_dim = 64 features, the last
  // 64 of its 192-wide heads (modeling_deepseek_v3.py: q split [qk_nope 128, qk_rope 64]).
  // {head_dim, rotary_dim, rotary_offset}
  const std::pair<const char*, std::array<int, 3>> cases[] = {
      {"gpt_neox_20b_partial.json", {96, 24, 0}},
      {"gptj_6b_interleaved.json", {256, 64, 0}},
      {"phi3_128k_longrope.json", {96, 96, 0}},
      {"deepseek_v3_mla_yarn.json", {192, 64, 128}},
  };
  for (const auto& [file, dims] : cases) {
    INFO(file);
    const auto model = posemb::load_model_positions((dir / file).string());
    const posemb::RopeSpec spec = model.rope_spec();
    CHECK(model.layers[0].head_dim == dims[0]);
    CHECK(spec.head_dim == dims[0]);
    CHECK(spec.rotary_offset == dims[2]);
    CHECK(spec.rotary_dim == dims[1]);
    CHECK(spec.partial() == (dims[1] < dims[0]));
    posemb::Tensor4<float> x(1, 3, 2, dims[0]);
    x.setConstant(1.0f);
    CHECK_NOTHROW(posemb::rotate_inplace(x, 7, spec));
    // A head of the rotary width only is not the model's head: refused.
    if (dims[1] < dims[0]) {
      posemb::Tensor4<float> rotary_only(1, 3, 2, dims[1]);
      CHECK_THROWS_WITH(posemb::rotate_inplace(rotary_only, 7, spec),
                        "posemb: head_dim = " + std::to_string(dims[1]) + ": expected " +
                            std::to_string(dims[0]) +
                            ", the head_dim this RopeSpec was made for (rotary_dim " +
                            std::to_string(dims[1]) +
                            (dims[2] != 0 ? " from feature " + std::to_string(dims[2]) : "") + ")");
    }
  }
  // head_dim, else hidden_size / num_attention_heads; partial_rotary_factor gives rotary_dim.
  const auto phi2 = parse(R"({"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32,
                              "partial_rotary_factor": 0.4})");
  CHECK(phi2.rope_spec().head_dim == 80);
  CHECK(phi2.rope_spec().rotary_dim == 32);
  const auto explicit_head = parse(R"({"hidden_size": 2048, "num_attention_heads": 8,
                                       "head_dim": 128})");
  CHECK(explicit_head.rope_spec().head_dim == 128);
  CHECK(explicit_head.rope_spec().rotary_dim == 128);
}

TEST_CASE("xPos parameters are read from torchscale-style keys", "[config]") {
  const auto m =
      parse(std::string(llama_like) + R"(, "xpos_rel_pos": true, "xpos_scale_base": 256})");
  REQUIRE(m.xpos.has_value());
  CHECK(m.xpos->scale_base == 256.0);
  CHECK(m.xpos->gamma == 0.4);
  CHECK(m.xpos_spec().rope.rotary_dim == 32);
  CHECK_FALSE(parse(std::string(llama_like) + "}").xpos.has_value());
  CHECK_THROWS_WITH(parse(std::string(llama_like) + "}").xpos_spec(),
                    Catch::Contains("xpos_rel_pos"));
}

TEST_CASE("bad configs throw posemb::Error naming the key", "[config][errors]") {
  const std::string head = llama_like;
  CHECK_THAT(error_of(head + R"(, "rope_scaling": {"rope_type": "wavy", "factor": 2}})"),
             Catch::Contains("rope_scaling.rope_type") && Catch::Contains("wavy"));
  // Rope type, a wrongly typed value, a missing key.
  CHECK_THAT(error_of(head + R"(, "rope_scaling": {"type": "wavy"}})"),
             Catch::Contains("rope_scaling.type"));
  CHECK_THAT(error_of(head + R"(, "rope_scaling": {"rope_type": "linear"}})"),
             Catch::Contains("rope_scaling.factor: missing"));
  CHECK_THAT(error_of(head + R"(, "rope_scaling": {"rope_type": "linear", "factor": "4"}})"),
             Catch::Contains("rope_scaling.factor") && Catch::Contains("expected a number"));
  CHECK_THAT(error_of(head + R"(, "rope_theta": "1e4"})"), Catch::Contains("rope_theta"));
  CHECK_THAT(error_of(R"({"hidden_size": 256})"), Catch::Contains("num_attention_heads: missing"));
  CHECK_THAT(error_of(R"({"num_attention_heads": 8})"), Catch::Contains("hidden_size: missing"));
  CHECK_THAT(error_of(R"({"num_attention_heads": 8.5, "hidden_size": 256})"),
             Catch::Contains("num_attention_heads") && Catch::Contains("an integer"));
  CHECK_THAT(error_of(R"({"num_attention_heads": 8, "hidden_size": 256, "rope_scaling": [1]})"),
             Catch::Contains("rope_scaling") && Catch::Contains("an object"));
  CHECK_THAT(error_of(head + R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8,
                                 "low_freq_factor": 1, "original_max_position_embeddings": 8192}})"),
             Catch::Contains("rope_scaling.high_freq_factor: missing"));
  CHECK_THAT(error_of(head + R"(, "rope_scaling": {"rope_type": "longrope", "short_factor": [1, 2],
                                 "long_factor": [1, 2]}})"),
             Catch::Contains("short_factor.size()"));
  CHECK_THAT(error_of(head + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4,
                                 "beta_fast": 1, "beta_slow": 32}})"),
             Catch::Contains("rope_scaling: beta_fast = 1"));
  CHECK_THAT(error_of(head + R"(, "rope_scaling": {"rope_type": "linear", "factor": 0}})"),
             Catch::Contains("factor = 0"));
  CHECK_THAT(error_of(R"({"num_attention_heads": 8, "hidden_size": 256, "rope_scaling":
                           {"rope_type": "dynamic", "factor": 2}})"),
             Catch::Contains("max_position_embeddings: missing"));
  CHECK_THAT(error_of(head + R"(, "partial_rotary_factor": 1.5})"),
             Catch::Contains("partial_rotary_factor"));
  // An odd rotary width loads for default and linear RoPE (test_model_layers.cpp), not for the
  // variants whose ramps depend on it.
  CHECK_THAT(error_of(head + R"(, "head_dim": 30, "partial_rotary_factor": 0.5,
                                 "rope_scaling": {"rope_type": "yarn", "factor": 4}})"),
             Catch::Contains("rotary_dim = 15"));
  CHECK_THAT(
      error_of(head + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4, "truncate": "no"}})"),
      Catch::Contains("rope_scaling.truncate"));
  CHECK_THAT(error_of("[1, 2]"), Catch::Contains("JSON object"));
  CHECK_THAT(error_of(head + R"(, "xpos_rel_pos": true, "xpos_scale_base": -1})"),
             Catch::Contains("xpos_scale_base = -1"));
  CHECK_THAT(error_of(head + R"(, "rope_parameters": {"full_attention": {"rope_type": "default"},
                                 "global_attention": {"rope_type": "default"}}})"),
             Catch::Contains("rope_parameters.global_attention") &&
                 Catch::Contains("per layer type"));
}

TEST_CASE("a config's size is bounded: layers and the layers' rotary pairs", "[config][errors]") {
  // positions.hpp: at most 4096 layers and 2^17 rotary pairs in all, named by the layer count.
  const auto config = [](std::int64_t layers, int head_dim) {
    return R"({"model_type": "llama", "num_attention_heads": 1, "hidden_size": )" +
           std::to_string(head_dim) + R"(, "num_hidden_layers": )" + std::to_string(layers) + "}";
  };
  CHECK(parse(config(4096, 64)).layers.size() == 4096);  // 131072 pairs: the bound itself
  CHECK_THAT(error_of(config(4097, 2)),
             Catch::Contains("num_hidden_layers = 4097") && Catch::Contains("[1, 4096]"));
  CHECK_THAT(error_of(config(4096, 66)),
             Catch::Contains("num_hidden_layers = 4096") && Catch::Contains("at most 131072"));
  CHECK_THAT(error_of(config(5, 65536)),
             Catch::Contains("num_hidden_layers = 5") && Catch::Contains("(163840 or more)"));
  // NoPE layers carry no pairs; T5's two stacks share the layer bound.
  CHECK(parse(R"({"model_type": "t5", "num_layers": 2048, "num_decoder_layers": 2048,
                  "d_model": 64, "num_heads": 1, "d_kv": 64})")
            .layers.size() == 4096);
  CHECK_THAT(error_of(R"({"model_type": "t5", "num_layers": 2048, "num_decoder_layers": 2049,
                          "d_model": 64, "num_heads": 1, "d_kv": 64})"),
             Catch::Contains("num_layers + num_decoder_layers = 4097"));
}

TEST_CASE("errors from a file name the file", "[config][errors]") {
  const fs::path dir = fs::temp_directory_path() / "posemb_test_config";
  fs::create_directories(dir);
  const fs::path bad = dir / "bad_config.json";
  {
    std::ofstream out(bad);
    out << std::string(llama_like) + R"(, "rope_scaling": {"rope_type": "wavy"}})";
  }
  CHECK_THROWS_WITH(posemb::load_model_positions(bad.string()),
                    Catch::Contains("bad_config.json") &&
                        Catch::Contains("rope_scaling.rope_type"));
  CHECK_THROWS_WITH(posemb::load_model_positions(bad.string()).rope_spec(),
                    Catch::Contains("bad_config.json"));
  const fs::path broken = dir / "broken.json";
  {
    std::ofstream out(broken);
    out << "{\"hidden_size\": ";
  }
  CHECK_THROWS_WITH(posemb::load_model_positions(broken.string()),
                    Catch::Contains("broken.json") && Catch::Contains("malformed JSON"));
  CHECK_THROWS_AS(posemb::load_model_positions((dir / "absent.json").string()), posemb::Error);
  fs::remove_all(dir);
}

// Every file a caller can name is a posemb::Error that names the file and says why, never a
// std::ios_base::failure. "Unreadable" is a path through a regular file (ENOTDIR): it fails for
// root too, where a chmod 000 file would not.
TEST_CASE("config files that cannot be read throw an Error naming the file", "[config][errors]") {
  const fs::path dir = fs::temp_directory_path() / "posemb_test_config_files";
  fs::remove_all(dir);
  fs::create_directories(dir / "a_directory.json");
  const std::string directory = (dir / "a_directory.json").string();
  CHECK_THROWS_AS(posemb::load_model_positions(directory), posemb::Error);
  CHECK_THROWS_WITH(posemb::load_model_positions(directory),
                    "posemb: " + directory + ": cannot read config file: Is a directory");

  const fs::path empty = dir / "empty.json";
  std::ofstream(empty).close();
  CHECK_THROWS_WITH(posemb::load_model_positions(empty.string()),
                    "posemb: " + empty.string() + ": empty file: expected a JSON object");

  const std::string under_file = (empty / "config.json").string();
  CHECK_THROWS_AS(posemb::load_model_positions(under_file), posemb::Error);
  CHECK_THROWS_WITH(posemb::load_model_positions(under_file),
                    "posemb: " + under_file + ": cannot open config file: Not a directory");

  const std::string missing = (dir / "absent.json").string();
  CHECK_THROWS_WITH(posemb::load_model_positions(missing),
                    "posemb: " + missing + ": cannot open config file: No such file or directory");

  // nlohmann-json reports a number beyond double as out_of_range, not parse_error.
  const fs::path overflow = dir / "overflow.json";
  std::ofstream(overflow)
      << R"({"hidden_size": 64, "num_attention_heads": 1, "rope_theta": 1e400})";
  CHECK_THROWS_AS(posemb::load_model_positions(overflow.string()), posemb::Error);
  CHECK_THROWS_WITH(posemb::load_model_positions(overflow.string()),
                    Catch::Contains(overflow.string() + ": malformed JSON: ") &&
                        Catch::Contains("number overflow"));
  fs::remove_all(dir);
}

TEST_CASE("FoPE configs (rope_type fope) give the authors' settings", "[config][fope]") {
  // The FoPE conformance configs: head_dim 64, N = 512 keeps 16 of 32 pairs; N = 4096 keeps 23.
  const fs::path fope_dir = fs::path(POSEMB_TEST_DATA_DIR) / "fope";
  const posemb::ModelPositions a =
      posemb::load_model_positions((fope_dir / "a_hd64_h8_N512_S32" / "config.json").string());
  CHECK(a.kind() == posemb::PositionKind::Fope);
  REQUIRE(a.fope.has_value());
  CHECK(a.fope->head_dim == 64);
  CHECK(a.fope->n_heads == 8);
  CHECK(a.fope->n_kv_heads == 8);
  CHECK(a.fope->theta == 10000.0);
  CHECK(a.fope->train_length == 512);
  CHECK(a.fope->sigma == 0.3);
  CHECK(a.fope->d_out == 16);
  CHECK(a.fope->drop_clipped);
  CHECK(a.fope->padding_sin == 1.0);
  CHECK_THROWS_WITH(a.rope_spec(), Catch::Contains("kind = fope"));

  // freqs: the default frequencies with the clipped ones (below 2 pi / N) set to 0.
  const posemb::report::PairFrequencies f = posemb::report::pair_frequencies(a);
  const Eigen::VectorXd base = posemb::default_inv_freq(64, 10000.0);
  REQUIRE(f.pairs.size() == 32);
  CHECK(f.rotary_dim == 64);
  int rotating = 0;
  for (int k = 0; k < 32; ++k) {
    CHECK(f.pairs[k].inv_freq == (base[k] < posemb::two_pi / 512 ? 0.0 : base[k]));
    rotating += f.pairs[k].inv_freq > 0.0;
  }
  CHECK(rotating == 16);

  const posemb::report::PairFrequencies pairs =
      posemb::report::pair_frequencies(posemb::load_model_positions(
          (fope_dir / "c2_stepeye_hd64_h4_N4096_S48" / "config.json").string()));
  int clipped = 0;
  for (const auto& pair : pairs.pairs) clipped += pair.band == "clipped";
  CHECK(clipped == 32 - 23);
  CHECK(pairs.pairs[22].band == "kept");
  CHECK(pairs.pairs[23].band == "clipped");

  const std::string fope_head =
      R"({"num_attention_heads": 8, "head_dim": 64, "rope_scaling": {"rope_type": "fope")";
  CHECK_THAT(error_of(fope_head + "}}"), Catch::Contains("rope_scaling.train_length: missing"));
  CHECK(
      posemb::model_positions_from_json(
          json::parse(R"({"num_attention_heads": 8, "head_dim": 64, "max_position_embeddings": 1024,
                            "rope_scaling": {"rope_type": "fope"}})"))
          .fope->train_length == 1024);
  CHECK_THAT(error_of(fope_head + R"(, "train_length": 512, "clip_floor_to_zero": false}})"),
             Catch::Contains("rope_scaling.clip_floor_to_zero"));
  CHECK_THAT(error_of(fope_head + R"(, "train_length": 512, "sigma": -1}})"),
             Catch::Contains("rope_scaling.sigma = -1"));
  CHECK_THAT(error_of(fope_head + R"(, "train_length": 512, "d_out": 40}})"),
             Catch::Contains("d_out = 40"));
  CHECK_THAT(error_of(fope_head + R"(, "train_length": 512}, "partial_rotary_factor": 0.5})"),
             Catch::Contains("FoPE rotates whole heads"));
  CHECK_THROWS_WITH(
      posemb::model_positions_from_json(json::parse(fope_head + R"(, "train_length": 512}})"),
                                        {posemb::Pairing::Interleaved}),
      Catch::Contains("FoPE rotates whole heads"));
}

TEST_CASE("every rope variant has its reader, in the same row", "[config][registry]") {
  // rope_variants() (rope_scheme.hpp, no JSON) and rope_readers() (rope_registry.hpp) are one
  // table in two halves: row i of each is RopeParams' alternative i.
  const auto& variants = posemb::detail::rope_variants();
  REQUIRE(variants.size() == posemb::detail::rope_readers().size());
  for (const posemb::detail::RopeVariant& variant : variants) {
    CHECK(std::string(posemb::detail::rope_reader(variant).rope_type) == variant.rope_type);
  }
  CHECK(posemb::rope_type_names() ==
        "default, linear, dynamic, yarn, llama3, longrope, proportional");
}

TEST_CASE("pair_frequencies names each pair's band", "[config]") {
  // Llama 3.1 (d 128, theta 5e5, factor 8, low 1, high 4, L0 8192): 29 kept, 6 ramp, 29
  // interpolated, the same split as llama3_band.
  const posemb::ModelPositions llama = posemb::model_positions_from_json(json::parse(R"({
      "num_attention_heads": 32, "hidden_size": 4096, "rope_theta": 500000.0,
      "max_position_embeddings": 131072,
      "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})"));
  const posemb::report::PairFrequencies f = posemb::report::pair_frequencies(llama);
  std::map<std::string, int> bands;
  for (const auto& pair : f.pairs) ++bands[pair.band];
  CHECK(bands["kept"] == 29);
  CHECK(bands["ramp"] == 6);
  CHECK(bands["interpolated"] == 29);
  CHECK(f.original_context == 8192);
  const posemb::RopeSpec spec = llama.rope_spec();
  for (int i = 0; i < 64; ++i) CHECK(f.pairs[i].inv_freq == spec.inv_freq[i]);
  CHECK_THROWS_WITH(posemb::report::pair_frequencies(posemb::model_positions_from_json(
                        json::parse(R"({"model_type": "bloom", "n_head": 8, "hidden_size": 64})"))),
                    Catch::Contains("not rotary"));
}

TEST_CASE("an absurd head_dim is refused before anything is allocated", "[config][errors]") {
  CHECK_THAT(error_of(R"({"num_attention_heads": 1, "head_dim": 1073741824})"),
             Catch::Contains("head_dim = 1073741824"));
}

// ---------------------------------------------------------------------------------------------
// Multimodal configs (tests/data/multimodal, "Reading the config"): M-RoPE sections and layout,
// "mrope" = default frequencies, get_rope_index's rules and the vision tower; every apply case
// through the loaded spec.

namespace {

const fs::path multimodal_dir = fs::path(POSEMB_TEST_DATA_DIR) / "multimodal";

template <class T>
posemb::Tensor4<T> tensor4_of(const posemb::NpyArray& array) {
  REQUIRE(array.shape.size() == 4);
  posemb::Tensor4<T> x(array.shape[0], array.shape[1], array.shape[2], array.shape[3]);
  const auto values = array.values<T>();
  std::copy(values.begin(), values.end(), x.data());
  return x;
}

}  // namespace

TEST_CASE("multimodal: the freqs cases (sections, layout, default frequencies of type mrope)") {
  for (const char* name : {"freqs_chunked_hd16", "freqs_partial_interleaved_hd64"}) {
    CAPTURE(name);
    const auto model =
        posemb::load_model_positions((multimodal_dir / name / "config.json").string());
    std::ifstream in(multimodal_dir / name / "case.json");
    const auto expect = nlohmann::json::parse(in).at("expect");
    const posemb::RopeScheme& scheme = model.rope_scheme();
    const posemb::MropeSpec spec = scheme.mrope_spec();
    CHECK(spec.rope.rotary_dim == expect.at("rotary_dim").get<int>());
    const auto inv_freq = expect.at("inv_freq").get<std::vector<double>>();
    REQUIRE(spec.rope.inv_freq.size() == static_cast<Eigen::Index>(inv_freq.size()));
    for (std::size_t i = 0; i < inv_freq.size(); ++i) {
      CHECK(spec.rope.inv_freq[Eigen::Index(i)] == Approx(inv_freq[i]).epsilon(1e-6));
    }
    CHECK(spec.rope.attention_scale == expect.at("attention_scale").get<double>());
    const auto sections = expect.at("mrope_section").get<std::vector<int>>();
    CHECK(spec.sections == posemb::MropeSections{sections[0], sections[1], sections[2]});
    CHECK(posemb::to_string(spec.layout) == expect.at("mrope_layout").get<std::string>());
  }
  // A 1-D model has no M-RoPE.
  const auto plain = posemb::load_model_positions((hf_dir / "default_hd64.json").string());
  CHECK_FALSE(plain.rope_scheme().mrope_section.has_value());
  CHECK_FALSE(plain.mrope_index.has_value());
  CHECK_FALSE(plain.vision.has_value());
}

TEST_CASE("multimodal: every apply case through the loaded M-RoPE spec") {
  for (const char* name :
       {"apply_chunked_text_hd16", "apply_chunked_mixed_hd16", "apply_interleaved_mixed_hd32",
        "apply_partial_interleaved_hd64", "apply_batch2_bhsd_hd32"}) {
    CAPTURE(name);
    const fs::path dir = multimodal_dir / name;
    const auto model = posemb::load_model_positions((dir / "config.json").string());
    const posemb::MropeSpec spec = model.rope_scheme().mrope_spec();
    std::ifstream in(dir / "case.json");
    const auto layout = nlohmann::json::parse(in).at("layout").get<std::string>() == "bhsd"
                            ? posemb::TensorLayout::BHSD
                            : posemb::TensorLayout::BSHD;
    const auto x = tensor4_of<float>(posemb::read_npy((dir / "X.npy").string()));
    const auto expected = tensor4_of<double>(posemb::read_npy((dir / "Y.npy").string()));
    const auto p = posemb::read_npy((dir / "P.npy").string());
    const auto values = p.values<std::int64_t>();
    posemb::PositionVector text;
    posemb::PositionMatrix thw;
    posemb::MropePositionTensor per_row;
    posemb::MropePositions positions = posemb::MropePositions::text(0);
    if (p.shape.size() == 1) {
      text = Eigen::Map<const posemb::PositionVector>(values.data(), p.shape[0]);
      positions = posemb::MropePositions::text(text);
    } else if (p.shape.size() == 2) {
      thw = Eigen::Map<const posemb::PositionMatrix>(values.data(), p.shape[0], p.shape[1]);
      positions = thw;
    } else {
      per_row.resize(p.shape[0], p.shape[1], p.shape[2]);
      std::copy(values.begin(), values.end(), per_row.data());
      positions = per_row;
    }
    const auto y =
        posemb::rotated(x, positions, spec, posemb::RotateOptions().with_layouts(layout));
    double worst = 0.0;
    for (Eigen::Index i = 0; i < y.size(); ++i) {
      worst = std::max(worst, std::fabs(double(y.data()[i]) - expected.data()[i]));
    }
    CHECK(worst <= 1e-5);
  }
}

TEST_CASE("multimodal: get_rope_index rules and vision towers from the config") {
  const auto read = [](const char* name) {
    return posemb::load_model_positions((multimodal_dir / name / "config.json").string());
  };
  const auto qwen2 = read("mrope_index_qwen2vl_image");
  REQUIRE(qwen2.mrope_index);
  CHECK(qwen2.mrope_index->family == posemb::MropeFamily::Qwen2VL);
  CHECK(qwen2.mrope_index->spatial_merge_size == 2);
  REQUIRE(qwen2.vision);
  CHECK(qwen2.vision->head_dim() == 16);  // embed_dim 64 / num_heads 4
  CHECK(qwen2.vision->order == posemb::VisionPatchOrder::MergeBlocks);
  const auto qwen25 = read("mrope_index_qwen25vl_video_fractional");
  CHECK(qwen25.mrope_index->family == posemb::MropeFamily::Qwen25VL);
  CHECK(qwen25.mrope_index->tokens_per_second == 1.0);
  CHECK(qwen25.vision->head_dim() == 32);  // hidden_size 64 / num_heads 2
  CHECK(read("mrope_index_qwen3vl_video").mrope_index->family == posemb::MropeFamily::Qwen3VL);
  CHECK(read("apply_partial_interleaved_hd64").mrope_index->family == posemb::MropeFamily::Qwen3VL);
  const auto pixtral = read("vision_pixtral_1x3x5");
  CHECK_FALSE(pixtral.mrope_index);
  REQUIRE(pixtral.vision);
  CHECK(pixtral.vision->head_dim() == 16);
  CHECK(pixtral.vision->order == posemb::VisionPatchOrder::RowMajor);

  // Sections that do not sum to rotary_dim / 2 are named with their block.
  nlohmann::json bad =
      nlohmann::json::parse(std::ifstream(multimodal_dir / "freqs_chunked_hd16" / "config.json"));
  bad["rope_scaling"]["mrope_section"] = {2, 3, 2};
  CHECK_THROWS_WITH(posemb::model_positions_from_json(bad),
                    Catch::Contains("rope_scaling") &&
                        Catch::Contains("mrope_section = [2, 3, 2] (sum 7)"));
  bad["rope_scaling"]["mrope_section"] = {2, 6};
  CHECK_THROWS_WITH(posemb::model_positions_from_json(bad),
                    Catch::Contains("expected three integers"));
  bad["rope_scaling"]["mrope_section"] = {2, 3, 3};
  bad["vision_config"]["spatial_merge_size"] = 0;
  CHECK_THROWS_WITH(posemb::model_positions_from_json(bad),
                    Catch::Contains("vision_config.spatial_merge_size = 0"));
}

// GLM-4.1V (transformers 5.25.0 glm4v/modeling_glm4v.py): the text decoder pairs interleaved
// (apply_rotary_pos_emb: rotate_half_llm on repeat_interleave'd cos/sin), takes mrope_section
// [8, 12, 12] when the block has none (Glm4vTextRotaryEmbedding.__init__), and get_rope_index
// places a video's frames one by one (Glm4vModel.get_rope_index).
TEST_CASE("multimodal: GLM-4V's text rotation and positions against transformers 5.25.0") {
  const auto model = parse(R"({"model_type": "glm4v", "vision_config": {"spatial_merge_size": 2},
      "text_config": {"hidden_size": 256, "num_attention_heads": 2, "head_dim": 64,
                      "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}})");
  const posemb::RopeScheme& scheme = model.rope_scheme();
  CHECK(scheme.pairing == posemb::Pairing::Interleaved);
  REQUIRE(scheme.mrope_section);
  CHECK(*scheme.mrope_section == posemb::MropeSections{8, 12, 12});
  CHECK(scheme.mrope_layout == posemb::MropeLayout::Chunked);
  CHECK(model.max_position_embeddings == 32768);  // Glm4vTextConfig's default

  // x[k][f] = sin((64 * (k + 1) + f) * 0.37), tokens k at (t, h, w) = (5, 3, 4) and (7, 40, 9);
  // want: Glm4vTextRotaryEmbedding.recomposition_frequencies of float64 cos/sin through
  // apply_rotary_pos_emb (the float32 path differs from it by 3.1e-7).
  posemb::Tensor4<double> x(1, 2, 1, 64);
  for (int token = 0; token < 2; ++token) {
    for (int f = 0; f < 64; ++f) x(0, token, 0, f) = std::sin((64 * (token + 1) + f) * 0.37);
  }
  posemb::PositionMatrix thw(3, 2);
  thw << 5, 7, 3, 40, 4, 9;
  const std::vector<double> want{
      -1.12865429874033,  0.701706129728082,  0.344830924326823,  0.649332946148797,
      -0.151113717719189, -0.357201559689761, -1.13495200894152,  0.131446588383822,
      -0.963677229202148, 0.988068356334111,  -0.171031308275602, 0.91074756028949,
      0.263033151038585,  -0.015466337526427, 0.070711280003913,  -0.983632914861121,
      -0.633558151126026, -1.23458398352991,  -0.713137055490499, -0.828704943926419,
      -0.330684196869599, -0.021765088652454, 0.30182412120641,   0.743073863451021,
      0.8116598666203,    1.08013401508492,   0.893798335915414,  0.841167888199899,
      0.486184197881988,  0.173155907336327,  -0.198139398256096, -0.566798801440424,
      -0.791094855331234, -0.995914416557763, -0.97136830573855,  -0.898852041616896,
      -0.637994310602567, -0.334012802820996, 0.035820560998164,  0.399908869250965,
      0.692304303803044,  0.921956936945077,  0.989706356239834,  0.958637367322581,
      0.767691243389282,  0.494265107336642,  0.141451075450862,  -0.226540236509331,
      -0.560758434417905, -0.826736898676486, -0.970347916458951, -0.99333940803092,
      -0.872038197795569, -0.640270319753181, -0.316826248452927, 0.047150409249568,
      0.404765066077041,  0.709247120232772,  0.914935266981316,  0.999939930891318,
      0.946494539249753,  0.767504843932508,  0.48276425356635,   0.133747663050235,
      0.197914033632213,  -0.583163127446218, -1.26135974331501,  0.213196784280249,
      0.072011785125027,  1.31566967223002,   0.68020023127815,   0.185327456961107,
      -0.362342292966684, -0.203281582231581, -0.978486005533449, 0.628892592969268,
      -0.57502018843926,  1.24929574857452,   0.070448503297784,  0.896517408179921,
      -0.264881754199057, 0.061317035033226,  0.68724884145121,   0.742323786544228,
      1.38232212863343,   -0.139638053171853, 0.723848389931205,  -0.788285457246198,
      -0.149931017992115, -0.271230087103033, -0.339972481462313, 0.758381259196702,
      0.045322721635655,  1.35860794978075,   0.42620455389309,   1.13198131774471,
      0.386967960876004,  0.293860202835452,  -0.06449455040313,  -0.627917160819662,
      -0.596730565305009, -1.1396164603972,   -0.828443923554448, -1.01685155384178,
      -0.613725448011537, -0.314882098527313, 0.059024617046509,  0.425618724351974,
      0.708129729550694,  0.935351123074304,  0.988386856828753,  0.952208496150366,
      0.749336104323465,  0.471595802457107,  0.114912515906884,  -0.252979335194426,
      -0.582100236094892, -0.84256108915583,  -0.975464704243072, -0.990002848951514,
      -0.858122202121602, -0.61953409775048,  -0.290935744660028, 0.074270680116446,
      0.429258040582029,  0.728387214367383,  0.925283942668078,  1.00098585168416};
  const auto y = posemb::rotated(x, posemb::MropePositions(thw), scheme.mrope_spec());
  double worst = 0.0;
  for (int token = 0; token < 2; ++token) {
    for (int f = 0; f < 64; ++f) {
      worst = std::max(worst, std::fabs(y(0, token, 0, f) - want[std::size_t(64 * token + f)]));
    }
    // Interleaved pairs: each rotation keeps the norm of features (2i, 2i + 1).
    for (int i = 0; i < 32; ++i) {
      const double before = std::hypot(x(0, token, 0, 2 * i), x(0, token, 0, 2 * i + 1));
      CHECK(std::hypot(y(0, token, 0, 2 * i), y(0, token, 0, 2 * i + 1)) ==
            Approx(before).epsilon(1e-12));
    }
  }
  CHECK(worst <= 1e-12);

  // transformers' split of 32 frequencies by [8, 12, 12] refuses other rotary widths; so does
  // posemb, naming the sections.
  CHECK_THROWS_WITH(parse(R"({"model_type": "glm4v_text", "hidden_size": 256,
      "num_attention_heads": 2, "head_dim": 128})"),
                    Catch::Contains("mrope_section"));

  // get_rope_index of text:3, image 1x4x6, text:2, a video of two 4x4 frames with one timestamp
  // token between them, text:3 (video_grid_thw [[2, 4, 4]]), run: delta -7.
  REQUIRE(model.mrope_index);
  CHECK(model.mrope_index->family == posemb::MropeFamily::Glm4v);
  const posemb::MropeIndex index = posemb::mrope_position_ids(
      posemb::parse_mrope_segments(
          "text:3,image:1x4x6,text:2,video:1x4x4,text:1,video:1x4x4,text:3"),
      *model.mrope_index);
  posemb::PositionMatrix positions(3, 23);
  positions << 0, 1, 2, 3, 3, 3, 3, 3, 3, 6, 7, 8, 8, 8, 8, 10, 11, 11, 11, 11, 13, 14, 15,  //
      0, 1, 2, 3, 3, 3, 4, 4, 4, 6, 7, 8, 8, 9, 9, 10, 11, 11, 12, 12, 13, 14, 15,           //
      0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7, 8, 9, 8, 9, 10, 11, 12, 11, 12, 13, 14, 15;
  CHECK(index.positions == positions);
  CHECK(index.rope_delta == -7);
  // A video of two frames given as one segment is the same two frames back to back.
  const posemb::MropeIndex video = posemb::mrope_position_ids(
      posemb::parse_mrope_segments("text:1,video:2x4x4"), *model.mrope_index);
  posemb::PositionMatrix frames(3, 9);
  frames << 0, 1, 1, 1, 1, 3, 3, 3, 3,  //
      0, 1, 1, 2, 2, 3, 3, 4, 4,        //
      0, 1, 2, 1, 2, 3, 4, 3, 4;
  CHECK(video.positions == frames);
}

// GLM-4.5V (transformers 5.25.0 glm4v_moe/modeling_glm4v_moe.py): the MoE text decoder pairs
// rotate-half (Glm4vMoeTextRotaryEmbedding: cat(freq, freq); rotate_half), partial rotary 0.5 and
// mrope_section [8, 12, 12] by default, get_rope_index as GLM-4V's.
TEST_CASE("multimodal: GLM-4.5V's text rotation against transformers 5.25.0") {
  const auto model = parse(R"({"model_type": "glm4v_moe", "text_config": {"hidden_size": 256,
      "num_attention_heads": 2, "head_dim": 128, "rope_parameters": {"rope_type": "default",
      "rope_theta": 10000.0}}})");
  const posemb::RopeScheme& scheme = model.rope_scheme();
  CHECK(scheme.pairing == posemb::Pairing::RotateHalf);
  CHECK(scheme.rotary_dim == 64);
  REQUIRE(scheme.mrope_section);
  CHECK(*scheme.mrope_section == posemb::MropeSections{8, 12, 12});
  CHECK(model.max_position_embeddings == 65536);
  REQUIRE(model.mrope_index);
  CHECK(model.mrope_index->family == posemb::MropeFamily::Glm4v);
  // x[f] = sin(0.37 (128 + f)) at (t, h, w) = (7, 40, 9): the 64 rotated features (the other 64
  // pass unchanged), float64 cos/sin through apply_rotary_pos_emb.
  posemb::Tensor4<double> x(1, 1, 1, 128);
  for (int f = 0; f < 128; ++f) x(0, 0, 0, f) = std::sin(0.37 * (128 + f));
  posemb::PositionMatrix thw(3, 1);
  thw << 7, 40, 9;
  const std::vector<double> want{
      -0.485700568294497, -0.188267310302542, 0.403785846027758,   1.0669049827103,
      1.26217852196057,   1.05140897036857,   0.73265211079307,    0.509225362839315,
      -0.506679570208196, -0.365656553926653, -0.500874948221381,  -0.527720555603332,
      -0.388507421000534, -0.200027265986841, -0.0751078391593369, -0.0674931420926353,
      -0.176717039279693, -0.367150873819967, -0.586019731949442,  -0.777713744128254,
      -0.959278593804698, -0.970307861636989, -0.8509773770229,    -0.615874437302575,
      -0.296038497157447, 0.0654571288440271, 0.419547668870646,   0.717994225831552,
      0.920040818865349,  0.998010607512035,  0.941091811331932,   0.756811879327913,
      0.201295171246028,  0.550888238519695,  0.764305046466621,   0.386560891875933,
      -0.290926043519569, -0.779610172414518, -0.915924614664666,  -0.763097341498617,
      0.365613657274915,  0.352594316141141,  0.512718225901076,   0.863325710679171,
      1.17067814883406,   1.30624701735958,   1.25505381780401,    1.05212140761518,
      0.743417872761866,  0.373002025423913,  -0.0179583325900702, -0.389844467375587,
      -0.613903501072589, -0.86050732217037,  -0.992961063113508,  -0.993756505528863,
      -0.862581194110441, -0.616661607696523, -0.288656916017429,  0.0776169694804328,
      0.433043471076401,  0.729830926198159,  0.927991988094061,   1.00078365659062};
  const auto y = posemb::rotated(x, posemb::MropePositions(thw), scheme.mrope_spec());
  double worst = 0.0;
  for (int f = 0; f < 64; ++f) worst = std::max(worst, std::fabs(y(0, 0, 0, f) - want[f]));
  CHECK(worst <= 1e-12);
  for (int f = 64; f < 128; ++f) CHECK(y(0, 0, 0, f) == x(0, 0, 0, f));
}
