// Per-layer positions from config.json (config.hpp, families.hpp, rope_registry.hpp):
// every case of data/models (golden values from an independent float64 reference written from
// HuggingFace transformers' semantics, data/models/README.md) through the C++ API, the
// properties the families rely on, and one test per bad-input error.
#include "posemb/model/config.hpp"

#include <catch2/catch.hpp>

#include <Eigen/Core>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <tuple>
#include <set>
#include <string>
#include <vector>

#include "layer_check.hpp"
#include "reference.hpp"
#include "posemb/model/report.hpp"
#include "posemb/attention/scores.hpp"
#include "posemb/rotary/permute.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/scaled.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path models_dir = fs::path(POSEMB_TEST_DATA_DIR) / "models";
const fs::path example_configs =
    fs::path(POSEMB_TEST_DATA_DIR) / ".." / ".." / "examples" / "configs";

json read_json(const fs::path& path) {
  std::ifstream file(path);
  REQUIRE(file);
  return json::parse(file);
}

// A layer as the README's object, from the API's values (not from the tool).
json api_object(const posemb::LayerPositions& layer, std::optional<std::int64_t> seq_len) {
  json object;
  object["layer"] = layer.index;
  object["positions"] = posemb::to_string(layer.kind);
  object["head_dim"] = layer.head_dim;
  object["rope_type"] = nullptr;
  object["rotary_dim"] = 0;
  object["inv_freq"] = json::array();
  object["attention_scale"] = 1.0;
  object["pairing"] = nullptr;
  if (layer.rope) {
    const posemb::RopeSpec spec = layer.rope_spec(seq_len);
    object["rope_type"] = layer.rope->rope_type;
    object["rotary_dim"] = spec.rotary_dim;
    for (Eigen::Index i = 0; i < spec.inv_freq.size(); ++i)
      object["inv_freq"].push_back(spec.inv_freq[i]);
    object["attention_scale"] = spec.attention_scale;
    object["pairing"] = posemb::to_string(spec.pairing);
  }
  const posemb::LayerAttention& attention = layer.attention;
  object["softmax_scale"] = layer.softmax_attention() && attention.softmax_scale
                                ? json(*attention.softmax_scale)
                                : json(nullptr);
  object["sliding_window"] =
      attention.sliding_window ? json(*attention.sliding_window) : json(nullptr);
  object["attention_chunk_size"] =
      attention.attention_chunk_size ? json(*attention.attention_chunk_size) : json(nullptr);
  object["query_temperature"] = nullptr;
  if (attention.query_temperature) {
    object["query_temperature"] = {
        {"floor_scale", attention.query_temperature->floor_scale},
        {"attn_scale", attention.query_temperature->attn_scale},
        {"position_offset", attention.query_temperature->position_offset}};
  }
  object["logit_softcap"] =
      attention.logit_softcap ? json(*attention.logit_softcap) : json(nullptr);
  object["attention_sinks"] = attention.attention_sinks;
  object["bias_placement"] = layer.kind == posemb::PositionKind::Alibi
                                 ? json(posemb::to_string(attention.bias_placement))
                                 : json(nullptr);
  object["mrope_section"] = nullptr;
  object["mrope_layout"] = nullptr;
  return object;
}

posemb::ModelPositions parse(const std::string& text) {
  return posemb::model_positions_from_json(json::parse(text));
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const posemb::Error& error) {
    return error.what();
  }
  FAIL("no posemb::Error thrown for " << text);
  return "";
}

// Scores q_h . k_{h / group} of every query head at positions m (query) and n (key) after RoPE:
// Wq: [n_heads * head_dim, in], Wk: [n_kv_heads * head_dim, in], x: [in].
Eigen::VectorXd rope_scores(const Eigen::MatrixXd& wq, const Eigen::MatrixXd& wk,
                            const Eigen::VectorXd& xq, const Eigen::VectorXd& xk, int n_heads,
                            int n_kv_heads, std::int64_t m, std::int64_t n,
                            const posemb::RopeSpec& spec) {
  using RowMajorXd = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::VectorXd q = wq * xq, k = wk * xk;
  const Eigen::Index head_dim = q.size() / n_heads;
  Eigen::Map<RowMajorXd> q_heads(q.data(), n_heads, head_dim);     // [n_heads, head_dim]
  Eigen::Map<RowMajorXd> k_heads(k.data(), n_kv_heads, head_dim);  // [n_kv_heads, head_dim]
  posemb::rotate_inplace(q_heads, m, spec);
  posemb::rotate_inplace(k_heads, n, spec);
  Eigen::VectorXd scores(n_heads);
  for (int h = 0; h < n_heads; ++h) {
    scores[h] = q_heads.row(h).dot(k_heads.row(h / (n_heads / n_kv_heads)));
  }
  return scores;
}

const char* small_llama =
    R"({"hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 4, "max_position_embeddings": 4096)";

}  // namespace

TEST_CASE("every model conformance case matches through the C++ API", "[config][models]") {
  const std::string suffix = ".expected.json";
  int cases = 0, layers = 0;
  for (const auto& entry : fs::directory_iterator(models_dir)) {
    const std::string file = entry.path().filename().string();
    if (file.size() <= suffix.size() ||
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    std::string name = file.substr(0, file.size() - suffix.size());
    const std::size_t dot = name.rfind(".seq");
    if (dot != std::string::npos) name.resize(dot);
    const json expected = read_json(entry.path());
    std::optional<std::int64_t> seq_len;
    if (!expected.at("seq_len").is_null()) seq_len = expected.at("seq_len").get<std::int64_t>();
    INFO(file);
    const posemb::ModelPositions model =
        posemb::load_model_positions((models_dir / (name + ".json")).string());
    const json& want = expected.at("layers");
    REQUIRE(model.layers.size() == want.size());
    bool alike = true;
    for (std::size_t i = 0; i < want.size(); ++i) {
      const std::string mismatch =
          posemb_test::layer_mismatch(api_object(model.layers[i], seq_len), want[i]);
      INFO("layer " << i << ": " << mismatch);
      CHECK(mismatch.empty());
      json a = want[i], b = want[0];
      a.erase("layer");
      b.erase("layer");
      alike = alike && a == b;
      ++layers;
    }
    // layers_alike() is what decides whether `posemb freqs` needs --layer.
    CHECK(model.layers_alike() == alike);
    ++cases;
  }
  CHECK(cases >= 25);
  WARN("model conformance: " << cases << " cases, " << layers << " layers");
}

TEST_CASE("a config without num_hidden_layers is one layer", "[config][models]") {
  const auto m = posemb::load_model_positions(
      (fs::path(POSEMB_TEST_DATA_DIR) / "hf" / "yarn_hd64.json").string());
  REQUIRE(m.layers.size() == 1);
  CHECK(m.layers_alike());
  CHECK(m.layers[0].layer_type == "full_attention");
  CHECK(m.layer(0).rope_spec().inv_freq == m.rope_spec().inv_freq);
}

TEST_CASE("layers that differ: Gemma 3's sliding and global RoPE", "[config][models]") {
  const auto m = posemb::load_model_positions((models_dir / "gemma-3-1b-it.json").string());
  CHECK_FALSE(m.layers_alike());
  CHECK(m.kind() == posemb::PositionKind::Rope);
  CHECK(m.layers[4].rope->theta == 1e4);
  CHECK(m.layers[5].rope->theta == 1e6);
  CHECK_THROWS_WITH(m.rope_scheme(), Catch::Contains("layer = 5"));
  CHECK(posemb::report::layer_pattern(m) ==
        "layers 0-4 sliding (1e4, window 512), 5 global (1e6), repeating every 6 of 26");
  // Llama 4: the RoPE layers share one scheme, so the model has one RoPE spec.
  const auto llama4 =
      posemb::load_model_positions((models_dir / "llama-4-scout-17b-16e.json").string());
  CHECK_FALSE(llama4.layers_alike());
  CHECK(llama4.rope_scheme().rope_type == "llama3");
  CHECK(llama4.layers[3].kind == posemb::PositionKind::None);
}

TEST_CASE("proportional RoPE: zero pairs pass through, and it is not partial rotary",
          "[config][models][scaled]") {
  // syn-proportional's full layers: H 96, p 0.3 -> 14 rotating pairs, 34 zero pairs, factor 2.
  const posemb::ProportionalParams params{0.3, 2.0};
  const posemb::RopeSpec spec = posemb::proportional_rope_spec(96, 1e6, params);
  REQUIRE(spec.rotary_dim == 96);
  REQUIRE(spec.head_dim == 96);
  REQUIRE(posemb::proportional_rotating_pairs(96, params) == 14);
  // The partial rotary of the same fraction: int(96 * 0.3) = 28 features, exponents over 28.
  const posemb::RopeSpec partial = posemb::linear_rope_spec(posemb::RotaryDims{96, 28}, 1e6, 2.0);
  CHECK(spec.inv_freq[1] == Approx(std::pow(1e6, -2.0 / 96) / 2).epsilon(1e-15));
  CHECK(partial.inv_freq[1] == Approx(std::pow(1e6, -2.0 / 28) / 2).epsilon(1e-15));

  std::mt19937 rng(11);
  std::normal_distribution<double> normal(0.0, 1.0);
  Eigen::MatrixXd x(8, 96);  // [positions, head_dim]
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = normal(rng);
  for (std::int64_t p : {1, 77, 4096, 100003}) {
    Eigen::Matrix<double, 1, 96> proportional_row = x.row(p % 8);
    Eigen::Matrix<double, 1, 96> partial_row = x.row(p % 8);
    posemb::rotate_inplace(proportional_row, p, spec);
    posemb::rotate_inplace(partial_row, p, partial);
    // Rotate-half pairs (i, i + 48): pairs 14 .. 47 have frequency 0 and stay bit-identical.
    for (int i = 14; i < 48; ++i) {
      CHECK(proportional_row[i] == x(p % 8, i));
      CHECK(proportional_row[i + 48] == x(p % 8, i + 48));
    }
    CHECK(proportional_row[0] != x(p % 8, 0));
    CHECK((proportional_row - partial_row).norm() > 1e-3);
  }
}

TEST_CASE("DeepSeek-V3's softmax scale carries the YaRN m squared", "[config][models]") {
  const auto m =
      posemb::load_model_positions((example_configs / "deepseek_v3_mla_yarn.json").string());
  // (qk_nope 128 + qk_rope 64)^-0.5 * (0.1 * mscale_all_dim 1 * ln 40 + 1)^2.
  const double expected = std::pow(192.0, -0.5) * std::pow(0.1 * std::log(40.0) + 1.0, 2);
  for (const auto& layer : m.layers) {
    REQUIRE(layer.attention.softmax_scale);
    CHECK(*layer.attention.softmax_scale == Approx(0.1352337788608801).epsilon(1e-15));
    CHECK(*layer.attention.softmax_scale == Approx(expected).epsilon(1e-15));
    CHECK(layer.head_dim == 192);
  }
  CHECK(m.rope_scheme().rotary_dim == 64);
  CHECK(m.rope_scheme().pairing == posemb::Pairing::Interleaved);
  CHECK(m.rope_spec().attention_scale == 1.0);  // mscale == mscale_all_dim
}

// configuration_deepseek_v32.py (DeepseekV32Config: layer_types indexed_attention) and
// modeling_deepseek_v32.py (DeepseekV32Attention: apply_rotary_pos_emb_interleave on the last 64
// of q/k; DeepseekV32Indexer: apply_rotary_pos_emb, rotate-half, on the first 64 of 128).
TEST_CASE("DeepSeek-V3.2's indexed_attention layers: the indexer rotates half of its own heads",
          "[config][models]") {
  const std::string v32 = R"({"model_type": "deepseek_v32", "num_hidden_layers": 2,
      "num_attention_heads": 2, "hidden_size": 64, "qk_rope_head_dim": 64,
      "qk_nope_head_dim": 128, "max_position_embeddings": 163840, "rope_parameters": {
      "rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "beta_fast": 32.0,
      "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
      "original_max_position_embeddings": 4096})";
  const posemb::ModelPositions m = parse(v32 + "}");
  REQUIRE(m.layers.size() == 2);
  for (const posemb::LayerPositions& layer : m.layers) {
    CHECK(layer.layer_type == "indexed_attention");
    CHECK(layer.head_dim == 192);
    REQUIRE(layer.indexer);
    CHECK(layer.indexer->head_dim == 128);  // DeepseekV32Config's default index_head_dim
    CHECK(layer.indexer->rotary_offset == 0);
    const posemb::RopeSpec attention = layer.rope_spec(), indexer = layer.indexer_rope_spec();
    CHECK(attention.pairing == posemb::Pairing::Interleaved);
    CHECK(indexer.pairing == posemb::Pairing::RotateHalf);
    // The same cos / sin: YaRN's frequencies and attention factor at any length.
    for (const std::optional<std::int64_t> seq_len : {std::optional<std::int64_t>{}, {1 << 20}}) {
      CHECK(layer.indexer_rope_spec(seq_len).inv_freq == layer.rope_spec(seq_len).inv_freq);
      CHECK(layer.indexer_rope_spec(seq_len).attention_scale ==
            layer.rope_spec(seq_len).attention_scale);
    }
    REQUIRE(layer.attention.softmax_scale);
    CHECK(*layer.attention.softmax_scale ==
          Approx(std::pow(192.0, -0.5) * std::pow(0.1 * std::log(40.0) + 1.0, 2)).epsilon(1e-15));
    CHECK_FALSE(layer.attention.sliding_window);
  }
  // The indexer's scores depend on relative positions only, out to millions of tokens.
  const posemb::RopeSpec indexer = m.layers[0].indexer_rope_spec();
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  Eigen::VectorXd q(64), k(64);
  for (Eigen::Index i = 0; i < 64; ++i) q[i] = normal(rng), k[i] = normal(rng);
  const auto score = [&](std::int64_t at_q, std::int64_t at_k) {
    Eigen::VectorXd rq = q, rk = k;
    posemb::rotate_inplace(rq, at_q, indexer);
    posemb::rotate_inplace(rk, at_k, indexer);
    return rq.dot(rk);
  };
  CHECK(score(3000017, 3000000) == Approx(score(17, 0)).epsilon(1e-9));
  // Other families' indexed_attention layers and the other layers have no indexer.
  CHECK_FALSE(parse(std::string(small_llama) + R"(, "layer_types": ["indexed_attention",
      "full_attention", "full_attention", "full_attention"]})")
                  .layers[0]
                  .indexer);
  CHECK_THAT(error_of(v32 + R"(, "index_head_dim": 32})"),
             Catch::Contains("index_head_dim = 32") && Catch::Contains("qk_rope_head_dim = 64"));
  CHECK_THAT(error_of(v32 + R"(, "index_head_dim": 0})"), Catch::Contains("index_head_dim = 0"));
}

// configuration_hy_v4.py (HYV4Config: indexer_types) and modeling_hy_v4.py of transformers 5.25.0
// (HYV4Attention: MLA apply_rotary_pos_emb_interleave, sinks, the indexer only on "full" layers;
// HYV4Indexer: apply_rotary_pos_emb_interleave on the rope slice last; 5.24.0 rotated half).
TEST_CASE("HY V4: indexers on the full indexer layers, the rope slice last", "[config][models]") {
  const std::string hy = R"({"model_type": "hy_v4", "num_hidden_layers": 6,
      "num_attention_heads": 2, "hidden_size": 64, "qk_rope_head_dim": 64,
      "qk_nope_head_dim": 192, "index_head_dim": 128)";
  const posemb::ModelPositions m = parse(hy + "}");
  std::vector<int> indexed;
  for (const posemb::LayerPositions& layer : m.layers) {
    CHECK(layer.rope_spec().pairing == posemb::Pairing::Interleaved);
    CHECK(layer.attention.attention_sinks);
    CHECK(*layer.attention.softmax_scale == Approx(std::pow(256.0, -0.5)).epsilon(1e-15));
    if (!layer.indexer) continue;
    indexed.push_back(layer.index);
    CHECK(layer.indexer->rotary_offset == 128 - 64);
    CHECK(layer.indexer_rope_spec().pairing == posemb::Pairing::Interleaved);
  }
  CHECK(indexed == std::vector<int>{0, 1, 5});  // "full" iff i == 0 or (i - 1) % 4 == 0
  const auto given = parse(hy + R"(, "indexer_types": ["full", "shared", "shared", "full",
      "shared", "shared"]})");
  CHECK(given.layers[3].indexer);
  CHECK_FALSE(given.layers[1].indexer);
  CHECK_THAT(error_of(hy + R"(, "indexer_types": ["full", "sparse", "full", "full", "full",
      "full"]})"),
             Catch::Contains("indexer_types[1] = \"sparse\""));
  CHECK_THAT(error_of(hy + R"(, "indexer_types": ["full"]})"),
             Catch::Contains("indexer_types.size() = 1") && Catch::Contains("= 6"));
}

// configuration_glm_moe_dsa.py (GlmMoeDsaConfig: indexed_attention layers, indexer_types from
// index_topk_pattern / index_topk_freq / index_skip_topk_offset) and modeling_glm_moe_dsa.py
// (GlmMoeDsaAttention: MLA, apply_rotary_pos_emb_interleave, yarn_apply_mscale;
// GlmMoeDsaIndexer: interleaved on the first qk_rope_head_dim features). Expected values from
// transformers 5.25.0, run.
TEST_CASE("GLM-5: interleaved MLA, indexers interleaved on the leading slice of full layers",
          "[config][models]") {
  const std::string glm5 = R"({"model_type": "glm_moe_dsa", "num_hidden_layers": 6,
      "num_attention_heads": 2, "hidden_size": 64, "qk_rope_head_dim": 64,
      "qk_nope_head_dim": 192, "index_head_dim": 128, "max_position_embeddings": 202752,
      "rope_parameters": {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 40.0,
      "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
      "original_max_position_embeddings": 4096})";
  const posemb::ModelPositions m = parse(glm5 + "}");
  REQUIRE(m.layers.size() == 6);
  for (const posemb::LayerPositions& layer : m.layers) {
    CHECK(layer.layer_type == "indexed_attention");
    CHECK(layer.head_dim == 256);
    CHECK(layer.rope_spec().pairing == posemb::Pairing::Interleaved);
    REQUIRE(layer.attention.softmax_scale);
    CHECK(*layer.attention.softmax_scale == Approx(0.11711588794328916).epsilon(1e-15));
    REQUIRE(layer.indexer);  // index_topk_freq 1: every layer "full"
    CHECK(layer.indexer->head_dim == 128);
    CHECK(layer.indexer->rotary_offset == 0);
    CHECK(layer.indexer_rope_spec().pairing == posemb::Pairing::Interleaved);
    CHECK(layer.indexer_rope_spec().inv_freq == layer.rope_spec().inv_freq);
  }
  // q[i] = sin(0.37 i), k[i] = cos(0.23 i + 1) on the 64 rotated features, the trailing 64 of
  // the 256-wide head (the nope features zero): q·k after apply_rotary_pos_emb_interleave at
  // (p_q, p_k), float32 inv_freq (hence the tolerance).
  const posemb::RopeSpec spec = m.layers[0].rope_spec();
  Eigen::VectorXd q = Eigen::VectorXd::Zero(256), k = Eigen::VectorXd::Zero(256);
  for (Eigen::Index i = 0; i < 64; ++i) {
    q[192 + i] = std::sin(0.37 * i);
    k[192 + i] = std::cos(0.23 * i + 1);
  }
  const auto score = [&](std::int64_t at_q, std::int64_t at_k, const posemb::RopeSpec& s) {
    return posemb::rotated(q, at_q, s).dot(posemb::rotated(k, at_k, s));
  };
  posemb::RopeSpec half = spec;
  half.pairing = posemb::Pairing::RotateHalf;
  for (const auto& [at_q, at_k, want] : std::vector<std::tuple<int, int, double>>{
           {17, 0, 0.5933606322868971}, {40, 3, 0.9566321086084959}, {9, 30, 0.4534499950670281}}) {
    CAPTURE(at_q, at_k);
    CHECK(std::fabs(score(at_q, at_k, spec) - want) <= 1e-5);
    CHECK(std::fabs(score(at_q, at_k, half) - want) > 1e-3);  // the pairing matters
  }
  // indexer_types' default from GlmMoeDsaConfig.__post_init__'s keys, and indexer_types itself.
  const auto full_layers = [&](const std::string& extra) {
    std::vector<int> full;
    for (const posemb::LayerPositions& layer : parse(glm5 + extra + "}").layers) {
      if (layer.indexer) full.push_back(layer.index);
    }
    return full;
  };
  CHECK(full_layers(R"(, "index_topk_freq": 2)") == std::vector<int>{0, 1, 3, 5});
  CHECK(full_layers(R"(, "index_topk_freq": 3, "index_skip_topk_offset": 1)") ==
        std::vector<int>{0, 3});
  CHECK(full_layers(R"(, "index_topk_pattern": "FSSFFS")") == std::vector<int>{0, 3, 4});
  CHECK(full_layers(R"(, "index_topk_pattern": "FSSFFS", "indexer_types": ["shared", "full",
      "full", "full", "full", "full"])") == std::vector<int>{1, 2, 3, 4, 5});
  CHECK_THAT(error_of(glm5 + R"(, "index_topk_pattern": "FXSFFS"})"),
             Catch::Contains("index_topk_pattern = \"FXSFFS\""));
  CHECK_THAT(error_of(glm5 + R"(, "index_topk_pattern": "FS"})"),
             Catch::Contains("index_topk_pattern.size() = 2"));
}

TEST_CASE("Llama 4's NoPE layers carry the query temperature", "[config][models]") {
  const auto m = posemb::load_model_positions((models_dir / "llama-4-scout-17b-16e.json").string());
  REQUIRE(m.layers[3].attention.query_temperature);
  const posemb::QueryTemperature t = *m.layers[3].attention.query_temperature;
  CHECK(t.factor(8190) == 1.0);
  CHECK(t.factor(8191) == Approx(1.0693147180559945).epsilon(1e-15));
  CHECK(t.factor(131071) == Approx(1.2833213344056216).epsilon(1e-15));
  CHECK_FALSE(m.layers[0].attention.query_temperature);
  CHECK(m.layers[0].attention.attention_chunk_size == 8192);
}

TEST_CASE("interleaved families score as rotate-half after permuting Wq and Wk",
          "[config][models][permute]") {
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (const char* name : {"llama-4-scout-17b-16e", "ernie-4.5-0.3b-pt", "c4ai-command-r-v01",
                           "syn-cohere2-pattern", "syn-glm-partial-default", "gpt-j-6b"}) {
    INFO(name);
    const auto m =
        posemb::load_model_positions((models_dir / (std::string(name) + ".json")).string());
    const posemb::RopeSpec interleaved = m.rope_spec();
    REQUIRE(interleaved.pairing == posemb::Pairing::Interleaved);
    posemb::RopeSpec rotate_half = interleaved;
    rotate_half.pairing = posemb::Pairing::RotateHalf;
    const int head_dim = m.layers[0].head_dim, n_heads = 4, n_kv_heads = 2, in = 6;
    Eigen::MatrixXd wq(n_heads * head_dim, in), wk(n_kv_heads * head_dim, in);
    Eigen::VectorXd xq(in), xk(in);
    for (auto* matrix : {&wq, &wk}) {
      for (Eigen::Index i = 0; i < matrix->size(); ++i) matrix->data()[i] = normal(rng);
    }
    for (Eigen::Index i = 0; i < in; ++i) {
      xq[i] = normal(rng);
      xk[i] = normal(rng);
    }
    using posemb::Pairing;
    const Eigen::MatrixXd wq_half = posemb::permute_pairing(
        wq, n_heads, Pairing::Interleaved, Pairing::RotateHalf, interleaved.rotary_dim);
    const Eigen::MatrixXd wk_half = posemb::permute_pairing(
        wk, n_kv_heads, Pairing::Interleaved, Pairing::RotateHalf, interleaved.rotary_dim);
    for (auto [p, q] : {std::pair<std::int64_t, std::int64_t>{0, 0}, {17, 3}, {5000, 4093}}) {
      const Eigen::VectorXd want =
          rope_scores(wq, wk, xq, xk, n_heads, n_kv_heads, p, q, interleaved);
      const Eigen::VectorXd got =
          rope_scores(wq_half, wk_half, xq, xk, n_heads, n_kv_heads, p, q, rotate_half);
      CHECK((got - want).norm() <= 1e-10 * want.norm());
      // The other pairing without the permutation scores differently (the test can fail).
      if (p != q) {
        CHECK((rope_scores(wq, wk, xq, xk, n_heads, n_kv_heads, p, q, rotate_half) - want).norm() >
              1e-6 * want.norm());
      }
    }
  }
}

TEST_CASE("the shipped per-layer example configs", "[config][examples][models]") {
  const auto gemma =
      posemb::load_model_positions((example_configs / "gemma3_27b_sliding_global.json").string());
  REQUIRE(gemma.layers.size() == 62);
  CHECK(gemma.model_type == "gemma3_text");
  CHECK(gemma.layers[5].rope->rope_type == "linear");
  CHECK(gemma.layers[5].rope_spec().inv_freq[1] ==
        Approx(std::pow(1e6, -2.0 / 128) / 8).epsilon(1e-15));
  CHECK(gemma.layers[0].rope->rope_type == "default");
  CHECK(gemma.layers[0].attention.sliding_window == 1024);
  CHECK(*gemma.layers[0].attention.softmax_scale == Approx(1.0 / std::sqrt(168.0)).epsilon(1e-15));
  const auto oss =
      posemb::load_model_positions((example_configs / "gpt_oss_20b_sliding_yarn.json").string());
  CHECK(oss.layers[0].attention.sliding_window == 128);
  CHECK_FALSE(oss.layers[1].attention.sliding_window);
  CHECK(oss.rope_scheme().rope_type == "yarn");
  CHECK_FALSE(std::get<posemb::YarnParams>(oss.rope_scheme().params).truncate);
  const auto llama4 =
      posemb::load_model_positions((example_configs / "llama4_scout_nope_chunked.json").string());
  CHECK(llama4.layers.size() == 48);
}

TEST_CASE("per-layer config errors name the key", "[config][models][errors]") {
  const std::string head = small_llama;
  SECTION("layer_types of the wrong length") {
    CHECK_THAT(error_of(head + R"(, "layer_types": ["full_attention"]})"),
               Catch::Contains("layer_types.size() = 1") &&
                   Catch::Contains("num_hidden_layers = 4"));
  }
  SECTION("an unknown layer type") {
    CHECK_THAT(error_of(head + R"(, "layer_types": ["full_attention", "banded_attention",
                                   "full_attention", "full_attention"]})"),
               Catch::Contains("layer_types[1] = \"banded_attention\""));
  }
  SECTION("a sliding window <= 0") {
    CHECK_THAT(error_of(head + R"(, "model_type": "mistral", "sliding_window": 0})"),
               Catch::Contains("sliding_window = 0"));
    CHECK_THAT(error_of(head + R"(, "model_type": "gemma2", "sliding_window": -4})"),
               Catch::Contains("sliding_window = -4"));
  }
  SECTION("a logit softcap <= 0") {
    CHECK_THAT(error_of(head + R"(, "model_type": "gemma2", "attn_logit_softcapping": 0})"),
               Catch::Contains("attn_logit_softcapping = 0"));
    CHECK_THAT(error_of(R"({"model_type": "gemma3", "text_config": {"hidden_size": 256,
                            "num_attention_heads": 4, "attn_logit_softcapping": -2.5}})"),
               Catch::Contains("text_config.attn_logit_softcapping = -2.5"));
  }
  SECTION("GPT-Neo's window_size <= 0 and attention_types that do not cover the layers") {
    const std::string neo = R"({"model_type": "gpt_neo", "hidden_size": 256, "num_heads": 4,
                                "num_layers": 2, "attention_types": [[["global", "local"], 1]])";
    CHECK_THAT(error_of(neo + R"(, "window_size": 0})"), Catch::Contains("window_size = 0"));
    CHECK_THAT(error_of(R"({"model_type": "gpt_neo", "hidden_size": 256, "num_heads": 4,
                            "num_layers": 4, "attention_types": [[["global", "banded"], 2]]})"),
               Catch::Contains("attention_types"));
    CHECK_THAT(error_of(R"({"model_type": "gpt_neo", "hidden_size": 256, "num_heads": 4,
                            "num_layers": 3, "attention_types": [[["global", "local"], 2]]})"),
               Catch::Contains("attention_types (expanded) = 4") &&
                   Catch::Contains("num_layers = 3"));
  }
  SECTION("a layer list naming a layer that does not exist") {
    CHECK_THAT(error_of(R"({"model_type": "mllama", "text_config": {"hidden_size": 256,
                            "num_attention_heads": 4, "num_hidden_layers": 2,
                            "cross_attention_layers": [2]}})"),
               Catch::Contains("text_config.cross_attention_layers[0] = 2"));
  }
  SECTION("an attention chunk <= 0") {
    CHECK_THAT(error_of(head + R"(, "model_type": "llama4_text", "attention_chunk_size": 0})"),
               Catch::Contains("attention_chunk_size = 0"));
  }
  SECTION("no_rope_layers of the wrong length or with values other than 0 and 1") {
    CHECK_THAT(error_of(head + R"(, "model_type": "smollm3", "no_rope_layers": [1, 0, 1]})"),
               Catch::Contains("no_rope_layers.size() = 3"));
    CHECK_THAT(error_of(head + R"(, "model_type": "llama4_text", "no_rope_layers": [1, 2, 1, 0]})"),
               Catch::Contains("no_rope_layers[1] = 2"));
  }
  SECTION("a layer index out of range") {
    const auto m = parse(head + "}");
    CHECK_THROWS_WITH(m.layer(4), Catch::Contains("layer = 4") && Catch::Contains("[0, 4)"));
    CHECK_THROWS_WITH(m.layer(-1), Catch::Contains("layer = -1"));
  }
  SECTION("partial_rotary_factor outside (0, 1]") {
    CHECK_THAT(error_of(head + R"(, "partial_rotary_factor": 0})"),
               Catch::Contains("partial_rotary_factor = 0"));
    CHECK_THAT(
        error_of(
            head +
            R"(, "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 1.25}})"),
        Catch::Contains("rope_parameters.partial_rotary_factor = 1.25"));
  }
  SECTION("a proportional factor that leaves no rotating pair") {
    CHECK_THAT(error_of(head + R"(, "head_dim": 32, "rope_parameters": {"rope_type": "proportional",
                                   "partial_rotary_factor": 0.05}})"),
               Catch::Contains("partial_rotary_factor = 0.05") && Catch::Contains("rotating pair"));
  }
  SECTION("rope parameters per layer type must cover every layer type in use") {
    CHECK_THAT(error_of(head + R"(, "model_type": "gemma3_text", "sliding_window": 8,
                                   "rope_parameters": {"full_attention": {"rope_type": "default"}}})"),
               Catch::Contains("rope_parameters.sliding_attention: missing"));
  }
}

TEST_CASE("T5 configs: relative bias layers, encoder bidirectional, decoder causal",
          "[config][models][t5]") {
  const fs::path t5_dir = fs::path(POSEMB_TEST_DATA_DIR) / "t5";
  const auto flan = posemb::load_model_positions((t5_dir / "flan_t5_base.json").string());
  REQUIRE(flan.layers.size() == 24);
  CHECK(flan.n_heads == 12);
  CHECK(flan.kind() == posemb::PositionKind::RelativeBias);
  CHECK_FALSE(flan.layers_alike());
  for (const posemb::LayerPositions& layer : flan.layers) {
    const bool encoder = layer.index < 12;
    INFO("layer " << layer.index);
    CHECK(std::string(posemb::to_string(layer.kind)) == "relative_bias");
    CHECK(layer.stack == (encoder ? "encoder" : "decoder"));
    REQUIRE(layer.relative_bias);
    CHECK(layer.relative_bias->num_buckets == 32);
    CHECK(layer.relative_bias->max_distance == 128);
    CHECK(layer.relative_bias->bidirectional == encoder);
    CHECK(layer.relative_bias_table_layer == (encoder ? 0 : 12));
    CHECK(layer.head_dim == 64);
    CHECK(layer.attention.softmax_scale == 1.0);  // T5 does not scale q·kᵀ
    CHECK_FALSE(layer.rope);
  }
  // The buckets the layers carry give the edge values of modeling_t5.py.
  const posemb::T5Buckets encoder = *flan.layers[0].relative_bias,
                          decoder = *flan.layers[12].relative_bias;
  CHECK(posemb::t5_relative_position_bucket(-64, encoder.num_buckets, encoder.max_distance,
                                            encoder.bidirectional) == 14);
  CHECK(posemb::t5_relative_position_bucket(-64, decoder.num_buckets, decoder.max_distance,
                                            decoder.bidirectional) == 26);

  const auto encoder_only =
      posemb::load_model_positions((t5_dir / "t5_encoder_only.json").string());
  REQUIRE(encoder_only.layers.size() == 6);
  CHECK(encoder_only.layers_alike());
  CHECK(encoder_only.layers[5].relative_bias->bidirectional);
  CHECK(encoder_only.layers[5].stack.empty());

  const auto decoder_only = parse(R"({"model_type": "t5", "d_model": 64, "d_kv": 16, "num_heads": 4,
                                      "num_layers": 3, "is_encoder_decoder": false, "is_decoder": true})");
  REQUIRE(decoder_only.layers.size() == 3);
  CHECK_FALSE(decoder_only.layers[2].relative_bias->bidirectional);
  CHECK(decoder_only.layers[2].relative_bias->num_buckets == 32);  // T5Config's defaults
  CHECK(decoder_only.layers[2].relative_bias->max_distance == 128);

  // UMT5: every layer its own table.
  const auto umt5 = posemb::load_model_positions((t5_dir / "umt5_small.json").string());
  REQUIRE(umt5.layers.size() == 6);
  for (const auto& layer : umt5.layers) CHECK(layer.relative_bias_table_layer == layer.index);
}

TEST_CASE("T5 config errors name the key", "[config][models][t5][errors]") {
  const std::string head =
      R"({"model_type": "t5", "d_model": 64, "d_kv": 16, "num_heads": 4, "num_layers": 2)";
  CHECK_THAT(error_of(head + R"(, "relative_attention_num_buckets": 3})"),
             Catch::Contains("relative_attention_num_buckets = 3"));
  CHECK_THAT(error_of(head + R"(, "relative_attention_max_distance": 8})"),
             Catch::Contains("relative_attention_max_distance = 8"));
  CHECK_THAT(error_of(head + R"(, "num_decoder_layers": 0})"),
             Catch::Contains("num_decoder_layers = 0"));
}

TEST_CASE("the text, the file and the parsed JSON load the same model", "[config][models]") {
  // parse_model_positions (load.hpp) and model_positions_from_json (config.hpp) are the same
  // reader as load_model_positions: every layer of every model case agrees.
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(models_dir)) {
    const std::string file = entry.path().filename().string();
    if (entry.path().extension() != ".json" || file.find(".expected") != std::string::npos) {
      continue;
    }
    INFO(file);
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const posemb::ModelPositions from_file = posemb::load_model_positions(entry.path().string());
    const posemb::ModelPositions from_text = posemb::parse_model_positions(text);
    const posemb::ModelPositions from_json = posemb::model_positions_from_json(json::parse(text));
    REQUIRE(from_text.layers.size() == from_file.layers.size());
    REQUIRE(from_json.layers.size() == from_file.layers.size());
    for (std::size_t i = 0; i < from_file.layers.size(); ++i) {
      CHECK(posemb::same_positions(from_text.layers[i], from_file.layers[i]));
      CHECK(posemb::same_positions(from_json.layers[i], from_file.layers[i]));
    }
    CHECK(from_text.model_type == from_file.model_type);
    ++cases;
  }
  CHECK(cases >= 23);
  CHECK_THROWS_WITH(posemb::parse_model_positions("{\"num_attention_heads\": "),
                    Catch::Contains("malformed JSON"));
  CHECK_THROWS_WITH(posemb::parse_model_positions("[1, 2]"),
                    Catch::Contains("config") && Catch::Contains("expected a JSON object"));
}

TEST_CASE("the family tables: one row per model_type, each citing its transformers file",
          "[config][models][families]") {
  std::set<std::string> types;
  for (const posemb::ModelFamily& family : posemb::model_families()) {
    INFO(family.model_type);
    CHECK(types.insert(family.model_type).second);
    CHECK(std::string(family.source).find(".py") != std::string::npos);
  }
  std::set<std::string> wrappers;
  for (const posemb::MultimodalFamily& family : posemb::multimodal_families()) {
    INFO(family.model_type);
    CHECK(wrappers.insert(family.model_type).second);
    CHECK(std::string(family.source).find(".py") != std::string::npos);
    // The Qwen2-VL family's tower comes with its get_rope_index rules (GLM-4V's rules come
    // without a tower: its 2-D RoPE beside interpolated learned positions has no VisionTower).
    CHECK((family.vision != posemb::VisionTower::QwenMerge || family.mrope_index.has_value()));
  }
  // Unknown types get Llama's row; wrappers name their decoder's type.
  CHECK(std::string(posemb::model_family("no_such_model").model_type) == "llama");
  CHECK(std::string(posemb::default_text_model_type("gemma3")) == "gemma3_text");
  CHECK(std::string(posemb::default_text_model_type("qwen2_vl")).empty());
  CHECK(posemb::find_multimodal_family("llama") == nullptr);
  // Errors name the families that have a rule, from the rows.
  CHECK(posemb::mrope_model_types() ==
        "qwen2_vl, qwen2_5_vl, qwen3_vl, qwen3_vl_moe, qwen3_5, qwen3_5_moe, glm4v or glm4v_moe");
}

// Each row names only what differs from Llama's: the setters change one member of a copy.
TEST_CASE("a family row: Llama's rules but for its setters", "[config][models][families]") {
  const posemb::ModelFamily base("x", "x/modeling_x.py");
  const posemb::ModelFamily row = base.with_window(posemb::WindowRule::EveryLayer)
                                      .with_layer_types(posemb::LayerTypeRule::FixedPattern, 6)
                                      .with_head_dim(256)
                                      .with_attention_sinks();
  CHECK(row.window == posemb::WindowRule::EveryLayer);
  CHECK(row.layer_types == posemb::LayerTypeRule::FixedPattern);
  CHECK(row.pattern == 6);
  CHECK(row.defaults.head_dim == 256);
  CHECK(row.attention_sinks);
  CHECK(base.window == posemb::WindowRule::Never);  // the copy changed, not the base
  CHECK(base.defaults.head_dim == 0);
  const posemb::ModelFamily& llama = posemb::model_families().front();
  CHECK(std::string(llama.model_type) == "llama");
  CHECK(row.rope_theta == llama.rope_theta);
  CHECK(row.pairing == llama.pairing);
  CHECK(row.softmax == llama.softmax);
}

TEST_CASE("family-only keys are read for their families alone", "[config][models][families]") {
  // rope_interleave (deepseek_v3's interleave_key): false turns DeepSeek-V3 to rotate-half;
  // another family ignores the key.
  const auto pairing = [](const std::string& type) {
    return posemb::parse_model_positions(
               R"({"model_type": ")" + type +
               R"(", "hidden_size": 64, "num_attention_heads": 4, "rope_interleave": false})")
        .rope_spec()
        .pairing;
  };
  CHECK(pairing("deepseek_v3") == posemb::Pairing::RotateHalf);
  CHECK(pairing("deepseek_v2") == posemb::Pairing::Interleaved);
  // rotary_dim (gptj's and codegen's rotary_dim_key): read by GPT-J, ignored by Llama.
  const auto rotary_dim = [](const std::string& type) {
    return posemb::parse_model_positions(
               R"({"model_type": ")" + type +
               R"(", "hidden_size": 64, "num_attention_heads": 4, "rotary_dim": 8})")
        .rope_spec()
        .rotary_dim;
  };
  CHECK(rotary_dim("gptj") == 8);
  CHECK(rotary_dim("codegen") == 8);
  CHECK(rotary_dim("llama") == 16);
  // attn_config (mpt's PositionsRule): MPT without ALiBi and learned positions is RoPE; another
  // family ignores attn_config.
  const auto kind = [](const std::string& type) {
    return posemb::parse_model_positions(
               R"({"model_type": ")" + type +
               R"(", "hidden_size": 64, "num_attention_heads": 4, "max_seq_len": 64,
                   "attn_config": {"alibi": false}, "learned_pos_emb": false})")
        .kind();
  };
  CHECK(kind("mpt") == posemb::PositionKind::Rope);
  CHECK(kind("bloom") == posemb::PositionKind::Alibi);
}

// transformers 5.24.0 LlamaRotaryEmbedding.compute_default_rope_parameters takes dim = head_dim
// (run: LlamaConfig(hidden_size=256, num_attention_heads=4, head_dim=64, partial_rotary_factor=0.5)
// gives 32 inv_freq, the whole head of 64); the row says so (default_rope_whole_head), and a
// model_type without a row reads with Llama's row but takes the factor.
TEST_CASE("Llama's default rope rotates the whole head, a type without a row takes the factor",
          "[config][models][families]") {
  const auto rotary_dim = [](const std::string& type, const std::string& rope) {
    return parse(R"({"model_type": ")" + type +
                 R"(", "hidden_size": 256, "num_attention_heads": 4, "head_dim": 64,
                    "partial_rotary_factor": 0.5, "rope_scaling": {"rope_type": ")" +
                 rope + R"(", "factor": 2.0}})")
        .rope_spec()
        .rotary_dim;
  };
  CHECK(rotary_dim("llama", "default") == 64);
  CHECK(rotary_dim("no_such_model", "default") == 32);
  CHECK(rotary_dim("llama", "linear") == 32);  // the other rope types take the factor
  CHECK(posemb::model_family("llama").default_rope_whole_head);
  CHECK(&posemb::model_family("no_such_model") == &posemb::model_family("llama"));
  CHECK(posemb::find_model_family("no_such_model") == nullptr);
}

// An odd d = int(head_dim * partial) (head 30 x 0.5 = 15): HF's _compute_default_rope_parameters
// builds 1 / theta^(arange(0, 15, 2) / 15), 8 frequencies with the exponent over 15, and its
// apply_rotary_pos_emb rotates cos.shape[-1] = 16 features.
TEST_CASE("an odd partial rotary width rotates the next even width", "[config][models]") {
  const std::string head =
      R"({"hidden_size": 240, "num_attention_heads": 8, "head_dim": 30, "partial_rotary_factor": 0.5)";
  const auto plain = parse(head + R"(, "rope_theta": 10000})");
  const auto linear = parse(head + R"(, "rope_scaling": {"rope_type": "linear", "factor": 4}})");
  const posemb::RopeSpec p = plain.rope_spec(), l = linear.rope_spec();
  REQUIRE(p.rotary_dim == 16);
  REQUIRE(l.rotary_dim == 16);
  for (int i = 0; i < 8; ++i) {
    CHECK(p.inv_freq[i] == Approx(std::pow(10000.0, -2.0 * i / 15.0)).epsilon(1e-13));
    CHECK(l.inv_freq[i] == Approx(std::pow(10000.0, -2.0 * i / 15.0) / 4.0).epsilon(1e-13));
  }
}

TEST_CASE("class defaults apply when a key is absent, not when it is null", "[config][models]") {
  const auto oss =
      parse(R"({"model_type": "gpt_oss", "num_hidden_layers": 2, "sliding_window": null})");
  CHECK_FALSE(oss.layers[0].attention.sliding_window);
  CHECK(oss.layers[0].attention.attention_sinks);
  const auto gemma2 = parse(R"({"model_type": "gemma2", "num_hidden_layers": 2,
                                "attn_logit_softcapping": null})");
  CHECK_FALSE(gemma2.layers[0].attention.logit_softcap);
  CHECK(gemma2.layers[0].attention.sliding_window == 4096);
  // EXAONE 4 without a window: every layer full, with RoPE (configuration_exaone4.py).
  const auto exaone =
      parse(R"({"model_type": "exaone4", "num_hidden_layers": 4, "sliding_window": null})");
  for (const auto& layer : exaone.layers) {
    CHECK(layer.layer_type == "full_attention");
    CHECK(layer.kind == posemb::PositionKind::Rope);
  }
  // A rope block in the file replaces gpt-oss's default YaRN block.
  const auto oss_plain = parse(R"({"model_type": "gpt_oss", "num_hidden_layers": 2,
                                   "rope_parameters": {"rope_type": "default"}})");
  CHECK(oss_plain.rope_scheme().rope_type == "default");
  CHECK(oss_plain.rope_scheme().theta == 150000.0);
}

TEST_CASE("Ministral 3's and Llama 4's query temperatures", "[config][models]") {
  const auto ministral =
      posemb::load_model_positions((models_dir / "syn-ministral3-defaults.json").string());
  const posemb::QueryTemperature t = *ministral.layers[1].attention.query_temperature;
  // 1 + 0.1 ln(1 + floor(p / 16384)): 1 up to p = 16383, 1 + 0.1 ln 2 from 16384.
  CHECK(t.factor(16383) == 1.0);
  CHECK(t.factor(16384) == Approx(1.0 + 0.1 * std::log(2.0)).epsilon(1e-15));
  const auto llama4 =
      posemb::load_model_positions((models_dir / "syn-llama4-text-defaults.json").string());
  const posemb::QueryTemperature u = *llama4.layers[3].attention.query_temperature;
  CHECK(u.factor(8190) == 1.0);  // floor((p + 1) / 8192): the step comes one token earlier
  CHECK(u.factor(8191) == Approx(1.0 + 0.1 * std::log(2.0)).epsilon(1e-15));
}

// configuration_mistral4.py (Mistral4Config.__post_init__: head_dim = qk_nope + qk_rope, the
// default yarn block, partial_rotary_factor = qk_rope / head_dim) and modeling_mistral4.py
// (Mistral4Attention: yarn_apply_mscale, q * get_llama_4_attn_scale).
TEST_CASE("Mistral 4: MLA with its partial factor over the qk head and Llama 4's beta",
          "[config][models]") {
  const std::string mistral4 = R"({"model_type": "mistral4", "num_hidden_layers": 1,
      "num_attention_heads": 2, "hidden_size": 64, "qk_rope_head_dim": 64,
      "qk_nope_head_dim": 64)";
  for (const std::string& partial :
       {std::string(), std::string(R"(, "partial_rotary_factor": 0.5)")}) {
    const posemb::LayerPositions layer = parse(mistral4 + partial + "}").layers[0];
    const posemb::RopeSpec spec = layer.rope_spec();
    CHECK(layer.head_dim == 128);
    CHECK(spec.head_dim == 128);   // the whole qk head: [nope 64, rope 64]
    CHECK(spec.rotary_dim == 64);  // the qk_rope slice, rotated whole
    CHECK(spec.rotary_offset == 64);
    CHECK(spec.pairing == posemb::Pairing::Interleaved);
    CHECK(layer.rope->rope_type == "yarn");  // the class's default block: factor 128, L0 8192
    CHECK(*layer.attention.softmax_scale ==
          Approx(std::pow(128.0, -0.5) * std::pow(0.1 * std::log(128.0) + 1.0, 2)).epsilon(1e-15));
    const posemb::QueryTemperature t = *layer.attention.query_temperature;
    CHECK(t.factor(8191) == 1.0);
    CHECK(t.factor(3 * 8192) == Approx(1.0 + 0.1 * std::log(4.0)).epsilon(1e-15));
  }
  CHECK_THAT(error_of(mistral4 + R"(, "partial_rotary_factor": 0.25})"),
             Catch::Contains("partial_rotary_factor = 0.25") && Catch::Contains("64 / 128"));
}

TEST_CASE("Beam: NoPE full layers by their null rope parameters, with a power temperature",
          "[config][models]") {
  // configuration_beam.py: every 6th layer and the last full; rope_parameters
  // {"sliding_attention": default 1e4, "full_attention": None}; modeling_beam.py: no RoPE and
  // q * (1 + (p + 1) / 2048)^0.1 on the full layers (compute_attention_scaling).
  const std::string beam = R"({"model_type": "beam", "hidden_size": 256,
      "num_attention_heads": 2, "num_hidden_layers": 8)";
  for (const std::string& block :
       {std::string(), std::string(R"(, "rope_parameters": {"full_attention": null,
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})")}) {
    CAPTURE(block);
    const posemb::ModelPositions model = parse(beam + block + "}");
    for (const auto& layer : model.layers) {
      CAPTURE(layer.index);
      const bool full = layer.index == 5 || layer.index == 7;
      CHECK(layer.layer_type == (full ? "full_attention" : "sliding_attention"));
      CHECK(layer.head_dim == 128);
      if (!full) {
        CHECK(layer.rope_spec().inv_freq[1] == Approx(std::pow(1e4, -2.0 / 128)).epsilon(1e-15));
        CHECK(*layer.attention.sliding_window == 512);
        CHECK_FALSE(layer.attention.query_temperature);
        continue;
      }
      CHECK(layer.kind == posemb::PositionKind::None);
      const posemb::QueryTemperature t = *layer.attention.query_temperature;
      CHECK(t.form == posemb::TemperatureForm::Power);
      CHECK(t.factor(2047) == Approx(std::pow(2.0, 0.1)).epsilon(1e-15));
      CHECK(t.factor(3000000) == Approx(std::pow(1.0 + 3000001.0 / 2048.0, 0.1)).epsilon(1e-14));
    }
  }
  // A null block is a layer type's, checked as every nested key.
  CHECK_THAT(error_of(beam + R"(, "rope_parameters": {"global": null,
      "sliding_attention": {"rope_type": "default"}}})"),
             Catch::Contains("rope_parameters.global"));
}

TEST_CASE("Zaya: its own layer type names, in layer_types and as rope block keys",
          "[config][models]") {
  // configuration_zaya.py: layer_types "hybrid" / "hybrid_sliding" (default every layer
  // hybrid), rope_parameters nested by them (theta 5e6 / 1e4, partial_rotary_factor 0.5); the
  // released config.json also has a rope_type beside them, which convert_rope_params_to_dict
  // deletes. modeling_zaya.py: rotate_half on the first 64 of 128, the window on hybrid_sliding.
  const std::string zaya = R"({"model_type": "zaya", "hidden_size": 2048,
      "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128)";
  const std::string released = zaya + R"(, "num_hidden_layers": 2, "sliding_window": 1024,
      "layer_types": ["hybrid", "hybrid_sliding"],
      "rope_parameters": {"rope_type": "default",
        "hybrid": {"rope_type": "default", "rope_theta": 5000000.0, "partial_rotary_factor": 0.5},
        "hybrid_sliding": {"rope_type": "default", "rope_theta": 10000.0,
                           "partial_rotary_factor": 0.5}}})";
  const posemb::ModelPositions model = parse(released);
  CHECK(model.unused_keys.empty());
  REQUIRE(model.layers.size() == 2);
  CHECK(model.layers[0].layer_type == "full_attention");
  CHECK(model.layers[1].layer_type == "sliding_attention");
  CHECK_FALSE(model.layers[0].attention.sliding_window);
  CHECK(*model.layers[1].attention.sliding_window == 1024);
  for (const auto& layer : model.layers) {
    const posemb::RopeSpec spec = layer.rope_spec();
    CHECK(spec.rotary_dim == 64);
    CHECK(spec.pairing == posemb::Pairing::RotateHalf);
    const double theta = layer.index == 0 ? 5e6 : 1e4;
    CHECK(spec.inv_freq[1] == Approx(std::pow(theta, -2.0 / 64)).epsilon(1e-15));
  }
  // The class defaults: 40 hybrid layers at theta 5e6, partial 0.5.
  const posemb::ModelPositions defaults = parse(zaya + R"(, "num_hidden_layers": 40})");
  CHECK(defaults.layers[39].layer_type == "full_attention");
  CHECK(defaults.layers[39].rope_spec().inv_freq[1] ==
        Approx(std::pow(5e6, -2.0 / 64)).epsilon(1e-15));
  CHECK_THAT(error_of(zaya + R"(, "num_hidden_layers": 1, "layer_types": ["hybrid_local"]})"),
             Catch::Contains("layer_types[0] = \"hybrid_local\""));
  CHECK_THAT(error_of(zaya + R"(, "num_hidden_layers": 1, "layer_types": ["hybrid"],
      "rope_parameters": {"hybrid_sliding": {"rope_type": "default"}}})"),
             Catch::Contains("rope_parameters.hybrid: missing"));
}

TEST_CASE("Dory: layer_types in (attention, mlp) blocks, counted in num_hidden_layers",
          "[config][models]") {
  // configuration_dory.py: config.json lists each layer as (attention type, "mlp") and counts
  // blocks (DoryConfig.to_dict); __post_init__ halves both. Full iff (i + 1) % 4 == 0, rope
  // parameters by layer type (sliding 1e4, full 1e7), head_dim 256, window 1024.
  const std::string dory = R"({"model_type": "dory", "hidden_size": 2560,
      "num_attention_heads": 16, "num_key_value_heads": 4)";
  const posemb::ModelPositions blocks = parse(dory + R"(, "num_hidden_layers": 8,
      "layer_types": ["sliding_attention", "mlp", "sliding_attention", "mlp",
                      "sliding_attention", "mlp", "full_attention", "mlp"]})");
  const posemb::ModelPositions defaults = parse(dory + R"(, "num_hidden_layers": 4})");
  for (const auto* model : {&blocks, &defaults}) {
    REQUIRE(model->layers.size() == 4);
    for (const auto& layer : model->layers) {
      CAPTURE(layer.index);
      const bool full = layer.index == 3;
      CHECK(layer.layer_type == (full ? "full_attention" : "sliding_attention"));
      CHECK(layer.head_dim == 256);
      CHECK(layer.rope_spec().inv_freq[1] ==
            Approx(std::pow(full ? 1e7 : 1e4, -2.0 / 256)).epsilon(1e-15));
      CHECK(layer.attention.sliding_window ==
            (full ? std::nullopt : std::optional<std::int64_t>(1024)));
    }
  }
  CHECK_THAT(error_of(dory + R"(, "num_hidden_layers": 3,
      "layer_types": ["sliding_attention", "mlp", "full_attention"]})"),
             Catch::Contains("num_hidden_layers = 3: expected an even count of blocks"));
  CHECK_THAT(error_of(dory + R"(, "num_hidden_layers": 4,
      "layer_types": ["sliding_attention", "mlp", "mlp", "full_attention"]})"),
             Catch::Contains("layer_types[2] = \"mlp\": expected an attention type"));
}

TEST_CASE("layers without positions are none, never an error", "[config][models]") {
  const std::string granite = R"({"model_type": "granitemoehybrid", "hidden_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 2, "layer_types": ["mamba", "attention"])";
  const auto nope = parse(granite + "}");
  CHECK(nope.layers[0].kind == posemb::PositionKind::None);
  CHECK_FALSE(nope.layers[0].softmax_attention());
  CHECK(nope.layers[1].kind == posemb::PositionKind::None);
  CHECK(nope.layers[1].layer_type == "full_attention");
  const auto rope = parse(granite + R"(, "position_embedding_type": "rope"})");
  CHECK(rope.layers[0].kind == posemb::PositionKind::None);
  CHECK(rope.layers[1].kind == posemb::PositionKind::Rope);
  const auto jamba = parse(R"({"model_type": "jamba", "hidden_size": 256, "num_attention_heads": 4,
                               "num_hidden_layers": 16})");
  int attention = 0;
  for (const auto& layer : jamba.layers) {
    CHECK(layer.kind == posemb::PositionKind::None);
    attention += layer.softmax_attention() ? 1 : 0;
  }
  CHECK(attention == 2);  // layers 4 and 12: period 8, offset 4
  CHECK(jamba.layers[4].softmax_attention());
}

TEST_CASE("unused keys are listed", "[config][models][unused]") {
  const std::string head = small_llama;
  const auto llama3 = parse(head + R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8,
      "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 1024,
      "beta_fast": 32, "banana": 3}})");
  CHECK(llama3.unused_keys ==
        std::vector<std::string>{"rope_scaling.banana", "rope_scaling.beta_fast"});
  CHECK(llama3.warnings.empty());
  // Both blocks: rope_scaling wins (convert_rope_params_to_dict), rope_parameters is unused;
  // the block's rope_theta wins over the top level's.
  const auto both = parse(head + R"(, "rope_theta": 500000, "rope_scaling": {"rope_type": "linear",
      "factor": 2, "rope_theta": 20000}, "rope_parameters": {"rope_type": "default"}})");
  CHECK(both.rope_scheme().theta == 20000.0);
  CHECK(both.unused_keys == std::vector<std::string>{"rope_parameters", "rope_theta"});
  // A window on a family without one; Qwen2's window without use_sliding_window.
  CHECK(parse(head + R"(, "sliding_window": 4096})").unused_keys ==
        std::vector<std::string>{"sliding_window"});
  CHECK(parse(head + R"(, "model_type": "mistral", "sliding_window": 4096})").unused_keys.empty());
  CHECK(parse(head +
              R"(, "model_type": "qwen2", "sliding_window": 4096, "use_sliding_window": false})")
            .unused_keys == std::vector<std::string>{"sliding_window"});
  // Inside text_config, with the wrapper's own decoy.
  const auto wrapped = parse(R"({"model_type": "llama4", "rope_theta": 1, "text_config": {
      "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 4,
      "rope_parameters": {"rope_type": "default", "mscale": 1}}})");
  CHECK(wrapped.unused_keys ==
        std::vector<std::string>{"rope_theta", "text_config.rope_parameters.mscale"});
  // Nested by layer type: a layer type no layer has is unused as a whole.
  const auto nested = parse(
      head + R"(, "model_type": "gemma3_text", "sliding_window": 8, "sliding_window_pattern": 2,
      "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000, "x": 1},
                          "full_attention": {"rope_type": "default", "rope_theta": 1000000},
                          "chunked_attention": {"rope_type": "default"}}})");
  CHECK(nested.unused_keys == std::vector<std::string>{"rope_parameters.chunked_attention",
                                                       "rope_parameters.sliding_attention.x"});
}

TEST_CASE("what transformers warns about loads and is reported", "[config][models][unused]") {
  const auto scout =
      posemb::load_model_positions((models_dir / "syn-llama3-equal-freq-factors.json").string());
  REQUIRE(scout.warnings.size() == 1);
  CHECK_THAT(scout.warnings[0], Catch::Contains("rope_scaling.high_freq_factor = 1") &&
                                    Catch::Contains("low_freq_factor = 1"));
  CHECK(scout.unused_keys.empty());
}

TEST_CASE("Hunyuan's alpha: a static NTK base at every length", "[config][models][families]") {
  // modeling_hunyuan_v1_dense.py (transformers 5.24), HunYuanDenseV1RotaryEmbedding.__init__:
  // base = theta * alpha^(d / (d - 2)), d = head_dim, under rope_type "ntk_alpha", which
  // dynamic_rope_update (modeling_rope_utils.py) does not regrow past max_position_embeddings L.
  const std::string config = R"({"model_type": "hunyuan_v1_dense", "hidden_size": 1024,
      "num_attention_heads": 8, "head_dim": 64, "num_hidden_layers": 1, "rope_theta": 10000,
      "max_position_embeddings": 4096, "rope_scaling": {"type": "dynamic", "factor": 2.0,
      "alpha": 1000.0}})";
  const posemb::ModelPositions model = parse(config);
  CHECK(model.unused_keys.empty());
  const double d = 64.0;
  const double alpha_base = 10000.0 * std::pow(1000.0, d / (d - 2.0));
  // Up to L, past it and at a long context: the same base (no dynamic growth).
  for (const std::optional<std::int64_t> seq : std::vector<std::optional<std::int64_t>>{
           std::nullopt, 1, 4096, 4097, std::int64_t{1} << 20}) {
    const posemb::RopeSpec spec = model.layers[0].rope_spec(seq);
    REQUIRE(spec.inv_freq.size() == 32);
    for (int i = 0; i < 32; ++i) {
      CHECK(spec.inv_freq[i] == Approx(std::pow(alpha_base, -2.0 * i / d)).epsilon(1e-13));
    }
    CHECK(spec.attention_scale == 1.0);
  }
  // Pair 0 keeps frequency 1; the lowest frequency falls by alpha^(-(d - 2) / (d - 2)) = 1/alpha.
  const posemb::RopeSpec spec = model.layers[0].rope_spec();
  const posemb::RopeSpec plain = posemb::default_rope_spec(64, 10000.0);
  CHECK(spec.inv_freq[0] == 1.0);
  CHECK(spec.inv_freq[31] / plain.inv_freq[31] == Approx(1.0 / 1000.0).epsilon(1e-12));
  // Without alpha the same block is Llama's dynamic NTK (theta unchanged up to L); other
  // families do not read alpha (an unused key).
  const posemb::ModelPositions no_alpha = parse(R"({"model_type": "hunyuan_v1_moe",
      "hidden_size": 512, "num_attention_heads": 8, "head_dim": 64, "num_hidden_layers": 1,
      "max_position_embeddings": 4096, "rope_scaling": {"type": "dynamic", "factor": 2.0}})");
  CHECK(no_alpha.layers[0].rope_spec().inv_freq.isApprox(plain.inv_freq, 1e-15));
  const posemb::ModelPositions llama = parse(R"({"hidden_size": 512, "num_attention_heads": 8,
      "num_hidden_layers": 1, "max_position_embeddings": 4096, "rope_scaling": {"type": "dynamic",
      "factor": 2.0, "alpha": 1000.0}})");
  CHECK(llama.layers[0].rope_spec().inv_freq.isApprox(plain.inv_freq, 1e-15));
  CHECK(llama.unused_keys == std::vector<std::string>{"rope_scaling.alpha"});
  // Class defaults: head_dim 128, theta 1e4, max_position_embeddings 2048.
  const posemb::ModelPositions defaults = parse(R"({"model_type": "hunyuan_v1_dense",
      "num_hidden_layers": 1, "rope_scaling": {"type": "dynamic", "factor": 1.0, "alpha": 4.0}})");
  CHECK(defaults.layers[0].head_dim == 128);
  CHECK(defaults.max_position_embeddings == 2048);
  CHECK(defaults.layers[0].rope_spec(2048).inv_freq[63] ==
        Approx(std::pow(1e4 * std::pow(4.0, 128.0 / 126.0), -126.0 / 128.0)).epsilon(1e-13));
}

TEST_CASE("Hunyuan's alpha: bad values name the key", "[config][models][errors]") {
  const std::string head = R"({"model_type": "hunyuan_v1_dense", "num_hidden_layers": 1,
      "rope_scaling": {"type": "dynamic", "factor": 1.0, "alpha": )";
  CHECK_THAT(error_of(head + "0}}"), Catch::Contains("rope_scaling.alpha = 0"));
  CHECK_THAT(error_of(head + "-2.5}}"), Catch::Contains("rope_scaling.alpha = -2.5"));
  CHECK_THAT(error_of(head + "\"big\"}}"), Catch::Contains("rope_scaling.alpha"));
  // transformers' validation requires factor for a dynamic block.
  CHECK_THAT(error_of(R"({"model_type": "hunyuan_v1_dense", "num_hidden_layers": 1,
      "rope_scaling": {"type": "dynamic", "alpha": 1000.0}})"),
             Catch::Contains("rope_scaling.factor"));
}

TEST_CASE("PhiMoE's short_mscale / long_mscale replace the longrope attention factor",
          "[config][models][families]") {
  // PhimoeRotaryEmbedding.forward (modeling_phimoe.py): mscale = long_mscale if seq_len >
  // original_max_position_embeddings else short_mscale; cos, sin = emb.cos() * mscale, ...
  const std::string factors = R"("short_factor": [1, 1, 1, 1], "long_factor": [2, 2, 2, 2])";
  const std::string config = R"({"model_type": "phimoe", "hidden_size": 64,
      "num_attention_heads": 8, "num_hidden_layers": 1, "max_position_embeddings": 131072,
      "rope_parameters": {"rope_type": "longrope", "rope_theta": 10000.0, )" +
                             factors +
                             R"(, "short_mscale": 1.25, "long_mscale": 1.5,
      "original_max_position_embeddings": 4096}})";
  const posemb::ModelPositions model = parse(config);
  CHECK(model.unused_keys.empty());
  const posemb::RopeSpec plain = posemb::default_rope_spec(8, 10000.0);
  for (const std::optional<std::int64_t> seq :
       std::vector<std::optional<std::int64_t>>{std::nullopt, 32, 4096}) {
    const posemb::RopeSpec spec = model.layers[0].rope_spec(seq);
    CHECK(spec.attention_scale == 1.25);
    CHECK(spec.inv_freq.isApprox(plain.inv_freq, 1e-15));
  }
  const posemb::RopeSpec long_spec = model.layers[0].rope_spec(4097);
  CHECK(long_spec.attention_scale == 1.5);
  CHECK(long_spec.inv_freq.isApprox(plain.inv_freq / 2.0, 1e-15));
  // Phi-3 does not read them (transformers warns "Unrecognized keys"): the attention factor is
  // sqrt(1 + ln(s) / ln(L0)), s = 131072 / 4096 = 32.
  std::string phi3 = config;
  phi3.replace(phi3.find("phimoe"), 6, "phi3");
  const posemb::ModelPositions other = parse(phi3);
  CHECK(other.layers[0].rope_spec(32).attention_scale ==
        Approx(std::sqrt(1.0 + std::log(32.0) / std::log(4096.0))).epsilon(1e-15));
  CHECK(other.unused_keys ==
        std::vector<std::string>{"rope_parameters.long_mscale", "rope_parameters.short_mscale"});
  // configuration_phimoe.py requires both as numbers.
  std::string missing = config;
  missing.replace(missing.find(R"(, "long_mscale": 1.5)"), 20, "");
  CHECK_THAT(error_of(missing), Catch::Contains("rope_parameters.long_mscale"));
}

TEST_CASE("Falcon-H1's key_multiplier scales the scores, checked against a hand-written loop",
          "[config][models][families]") {
  // FalconH1Attention.forward (modular_falcon_h1.py): k = k_proj(x) * key_multiplier, RoPE
  // (rotate_half, theta 1e5 by default), then eager_attention_forward: softmax(q.k^T *
  // head_dim^-0.5 + causal mask).
  const posemb::ModelPositions model = parse(R"({"model_type": "falcon_h1", "hidden_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 3, "key_multiplier": 0.390625})");
  REQUIRE(model.layers.size() == 3);
  for (const posemb::LayerPositions& layer : model.layers) {
    CHECK(layer.kind == posemb::PositionKind::Rope);  // mamba runs beside attention, every layer
    CHECK(*layer.attention.softmax_scale == Approx(0.390625 / 8.0).epsilon(1e-15));
  }
  const posemb::LayerPositions& layer = model.layers[1];
  const int d = 64, seq = 6;
  std::mt19937_64 engine(11);
  std::normal_distribution<double> normal;
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> q(seq, d), k(seq, d);
  for (Eigen::Index i = 0; i < q.size(); ++i) q.data()[i] = 3.0 * normal(engine);
  for (Eigen::Index i = 0; i < k.size(); ++i) k.data()[i] = 3.0 * normal(engine);
  const std::int64_t first = 70000;  // long positions
  // The hand loop: rotate_half RoPE at positions first + t, keys times key_multiplier.
  const auto rotate = [&](const Eigen::RowVectorXd& x, std::int64_t p) {
    return test_reference::reference_rope(x.transpose(), p, d, 1e5, posemb::Pairing::RotateHalf);
  };
  Eigen::MatrixXd expected(seq, seq);
  for (int i = 0; i < seq; ++i) {
    Eigen::VectorXd logits(seq);
    for (int j = 0; j < seq; ++j) {
      logits[j] = j > i ? -std::numeric_limits<double>::infinity()
                        : rotate(q.row(i), first + i).dot(rotate(0.390625 * k.row(j), first + j)) /
                              std::sqrt(64.0);
    }
    const double top = logits.maxCoeff();
    const Eigen::VectorXd e = (logits.array() - top).exp();
    expected.row(i) = (e / e.sum()).transpose();
  }
  posemb::PositionVector positions(seq);
  for (int t = 0; t < seq; ++t) positions[t] = first + t;
  posemb::ScoreOptions options;
  options.rotation = layer.rope_spec();
  options.layer = layer.attention;
  options.causal = true;
  options.softmax = true;
  const auto got = posemb::attention_scores(q, positions, k, positions, options);
  REQUIRE(got.rows() == seq);
  CHECK(got.isApprox(expected, 1e-12));
  // Not vacuous: without the multiplier the probabilities differ.
  options.layer.softmax_scale = 1.0 / 8.0;
  CHECK_FALSE(
      posemb::attention_scores(q, positions, k, positions, options).isApprox(expected, 1e-3));
  // Bad values name the key.
  for (const char* bad : {"0", "-1.5", "\"x\""}) {
    CAPTURE(bad);
    CHECK_THAT(error_of(std::string(R"({"model_type": "falcon_h1", "num_hidden_layers": 1,
        "key_multiplier": )") +
                        bad + "}"),
               Catch::Contains(std::string("key_multiplier = ") + bad));
  }
}

TEST_CASE("keys transformers ignores too are set apart from the unused keys",
          "[config][models][unused]") {
  // Ministral3Config: ignore_keys_at_rope_validation={"llama_4_scaling_beta",
  // "max_position_embeddings"} (configuration_ministral3.py).
  const std::string block = R"("rope_parameters": {"rope_type": "yarn", "factor": 16.0,
      "original_max_position_embeddings": 16384, "llama_4_scaling_beta": 0.1,
      "max_position_embeddings": 262144, "banana": 1}})";
  const auto ministral = parse(R"({"model_type": "ministral3", "num_hidden_layers": 1, )" + block);
  CHECK(ministral.unused_keys == std::vector<std::string>{"rope_parameters.banana"});
  CHECK(ministral.unused_keys_transformers_ignores ==
        std::vector<std::string>{"rope_parameters.max_position_embeddings"});
  // Another family: the same key is plainly unused (transformers warns about it there).
  const auto mistral = parse(R"({"model_type": "mistral", "hidden_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 1, "max_position_embeddings": 4096, )" +
                             block);
  CHECK(mistral.unused_keys == std::vector<std::string>{"rope_parameters.banana",
                                                        "rope_parameters.llama_4_scaling_beta",
                                                        "rope_parameters.max_position_embeddings"});
  CHECK(mistral.unused_keys_transformers_ignores.empty());
  // Only rope-block keys: a top-level key of the same name is not set apart.
  const auto wrapped = posemb::load_model_positions(
      (fs::path(POSEMB_TEST_DATA_DIR) / ".." / "cli" / "data" / "ministral3_rope_max_position.json")
          .string());
  CHECK(wrapped.unused_keys.empty());
  CHECK(wrapped.unused_keys_transformers_ignores ==
        std::vector<std::string>{"text_config.rope_parameters.max_position_embeddings"});
}

TEST_CASE("v5 default thetas: Mixtral and MiniMax 1e6, MiniMax's odd layers linear",
          "[config][models][families]") {
  // MixtralConfig.default_theta, MiniMaxConfig.default_theta 1000000.0; MiniMaxConfig's
  // layer_types: full iff (i + 1) % 2 (modular_minimax.py).
  const auto mixtral = parse(R"({"model_type": "mixtral", "hidden_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 1})");
  CHECK(mixtral.rope_scheme().theta == 1e6);
  const auto minimax = parse(R"({"model_type": "minimax", "hidden_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 5})");
  for (const posemb::LayerPositions& layer : minimax.layers) {
    CAPTURE(layer.index);
    CHECK(layer.layer_type == (layer.index % 2 == 0 ? "full_attention" : "linear_attention"));
    CHECK(layer.kind ==
          (layer.index % 2 == 0 ? posemb::PositionKind::Rope : posemb::PositionKind::None));
    if (layer.rope) CHECK(layer.rope->theta == 1e6);
  }
  // An explicit layer_types list still wins.
  const auto listed = parse(R"({"model_type": "minimax", "hidden_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 2,
      "layer_types": ["linear_attention", "full_attention"]})");
  CHECK(listed.layers[0].kind == posemb::PositionKind::None);
  CHECK(listed.layers[1].kind == posemb::PositionKind::Rope);
}

TEST_CASE("Granite 4 hybrid without layer_types: every layer mamba", "[config][models][families]") {
  // GraniteMoeHybridConfig.layers_block_type (configuration_granitemoehybrid.py): layer_types,
  // else ["mamba"] * num_hidden_layers.
  const auto model = parse(R"({"model_type": "granitemoehybrid", "hidden_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 3, "position_embedding_type": "rope"})");
  for (const posemb::LayerPositions& layer : model.layers) {
    CHECK(layer.layer_type == "mamba");
    CHECK(layer.kind == posemb::PositionKind::None);
    CHECK_FALSE(layer.softmax_attention());
  }
  const auto listed = parse(R"({"model_type": "granitemoehybrid", "hidden_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 2, "position_embedding_type": "rope",
      "layer_types": ["attention", "mamba"]})");
  CHECK(listed.layers[0].kind == posemb::PositionKind::Rope);
  CHECK(listed.layers[1].kind == posemb::PositionKind::None);
}

namespace {

// Each layer's (layer_type, kind, sliding window) against a list written out from the
// configuration class's rule.
void check_layers(const posemb::ModelPositions& model, const std::vector<std::string>& types,
                  const std::vector<std::optional<std::int64_t>>& windows,
                  bool rope_on_full = true) {
  REQUIRE(model.layers.size() == types.size());
  for (std::size_t i = 0; i < types.size(); ++i) {
    const posemb::LayerPositions& layer = model.layers[i];
    CAPTURE(i);
    CHECK(layer.layer_type == types[i]);
    CHECK(layer.attention.sliding_window == windows[i]);
    const bool rope =
        types[i] == "sliding_attention" || (types[i] == "full_attention" && rope_on_full);
    CHECK(layer.kind == (rope ? posemb::PositionKind::Rope : posemb::PositionKind::None));
  }
}

const std::string S = "sliding_attention", F = "full_attention", L = "linear_attention";
const std::nullopt_t none = std::nullopt;

}  // namespace

TEST_CASE("AfMoE and CWM without layer_types: their patterns, windows and defaults",
          "[config][models][families]") {
  // AfmoeConfig: sliding iff (i + 1) % global_attn_every_n_layers (4), sliding_window 1024;
  // AfmoeAttention.forward applies RoPE on sliding layers only (modeling_afmoe.py).
  const std::string afmoe = R"({"model_type": "afmoe", "hidden_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 4)";
  check_layers(parse(afmoe + "}"), {S, S, S, F}, {1024, 1024, 1024, none}, false);
  check_layers(parse(afmoe + R"(, "global_attn_every_n_layers": 2, "sliding_window": 64})"),
               {S, F, S, F}, {64, none, 64, none}, false);
  CHECK(parse(afmoe + "}").layers[0].rope->head_dim == 128);  // head_dim 128
  // CwmConfig: full iff i % 4 == 0, sliding_window 8192, the llama3 block at 1e6 by default.
  const auto cwm = parse(R"({"model_type": "cwm", "hidden_size": 256, "num_attention_heads": 4,
      "num_hidden_layers": 5})");
  check_layers(cwm, {F, S, S, S, F}, {none, 8192, 8192, 8192, none});
  CHECK(cwm.layers[0].rope->rope_type == "llama3");
  CHECK(cwm.layers[0].rope->theta == 1e6);
}

TEST_CASE("ModernBERT, its decoder and UltraBERT: the window the attention is given",
          "[config][models][families]") {
  // ModernBertConfig: sliding iff i % global_attn_every_n_layers (3); ModernBertAttention's
  // sliding_window = local_attention // 2 + 1 (128 // 2 + 1 = 65); default_theta global 160000,
  // local 1e4 (configuration_modernbert.py, modeling_modernbert.py).
  const std::string bert = R"({"hidden_size": 256, "num_attention_heads": 4,
      "num_hidden_layers": 4)";
  const auto modernbert = parse(bert + R"(, "model_type": "modernbert"})");
  check_layers(modernbert, {F, S, S, F}, {none, 65, 65, none});
  CHECK(modernbert.layers[0].rope->theta == 160000.0);
  CHECK(modernbert.layers[1].rope->theta == 1e4);
  check_layers(parse(bert + R"(, "model_type": "modernbert", "local_attention": 255,
      "global_attn_every_n_layers": 2})"),
               {F, S, F, S}, {none, 128, none, 128});
  // ModernBertDecoderConfig: sliding_window = local_attention // 2, passed as is.
  check_layers(parse(bert + R"(, "model_type": "modernbert-decoder"})"), {F, S, S, F},
               {none, 64, 64, none});
  // UltrabertConfig: sliding iff (i + 1) % 3, sliding_window a radius (128), the attention's
  // window radius + 1; rope theta full 2560000, sliding 1e4 (configuration_ultrabert.py).
  const auto ultrabert = parse(bert + R"(, "model_type": "ultrabert"})");
  check_layers(ultrabert, {S, S, F, S}, {129, 129, none, 129});
  CHECK(ultrabert.layers[2].rope->theta == 2560000.0);
  CHECK(ultrabert.layers[0].rope->theta == 1e4);
}

TEST_CASE("EXAONE-MoE, Kolibri, LaRA-mini and VaultGemma without layer_types",
          "[config][models][families]") {
  const std::string base = R"({"hidden_size": 256, "num_attention_heads": 4,
      "num_hidden_layers": 5, "model_type": )";
  // ExaoneMoeConfig: sliding iff (i + 1) % 4, window 4096; Kolibri1Config: full iff
  // (i + 1) % 5 == 0, window 513; both attend full layers without RoPE when windowed.
  check_layers(parse(base + R"("exaone_moe"})"), {S, S, S, F, S}, {4096, 4096, 4096, none, 4096},
               false);
  check_layers(parse(base + R"("kolibri1"})"), {S, S, S, S, F}, {513, 513, 513, 513, none}, false);
  // LaraMiniConfig: [linear, sliding, linear, full, sliding] repeated, window 512;
  // LaraMiniModel.forward passes position_embeddings to sliding layers only.
  check_layers(parse(base + R"("lara_mini"})"), {L, S, L, F, S}, {none, 512, none, none, 512},
               false);
  // VaultGemmaConfig: sliding iff (i + 1) % 2, window 4096, softcap 50, scale 256^-0.5.
  const auto vault = parse(base + R"("vaultgemma"})");
  check_layers(vault, {S, F, S, F, S}, {4096, none, 4096, none, 4096});
  CHECK(vault.layers[1].attention.logit_softcap == 50.0);
  CHECK(vault.layers[1].attention.softmax_scale == 1.0 / 16.0);
}

TEST_CASE("MiniCPM3, Youtu and GLM-4-MoE-Lite: DeepSeek's MLA head and scale",
          "[config][models][families]") {
  // MiniCPM3Attention (modeling_minicpm3.py): scaling (qk_nope + qk_rope)^-0.5, RoPE over
  // qk_rope_head_dim with apply_rotary_pos_emb's rotate_half.
  const auto model = parse(R"({"model_type": "minicpm3", "hidden_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 1, "qk_nope_head_dim": 64,
      "qk_rope_head_dim": 32})");
  CHECK(model.layers[0].head_dim == 96);
  CHECK(model.layers[0].rope->rotary_dim == 32);
  CHECK(model.layers[0].rope->pairing == posemb::Pairing::RotateHalf);
  CHECK(model.layers[0].attention.softmax_scale == Approx(1.0 / std::sqrt(96.0)).epsilon(1e-15));
  // YoutuAttention, Glm4MoeLiteAttention: apply_rotary_pos_emb_interleave while rope_interleave
  // (default true), else rotate_half; yarn with mscale_all_dim scales by
  // (0.1 ln(factor) mscale_all_dim + 1)^2 (modeling_youtu.py, yarn_apply_mscale).
  for (const char* type : {"youtu", "glm4_moe_lite"}) {
    CAPTURE(type);
    const std::string mla = std::string(R"({"model_type": ")") + type + R"(", "hidden_size": 256,
        "num_attention_heads": 4, "num_hidden_layers": 1, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "max_position_embeddings": 16384)";
    const auto plain = parse(mla + "}");
    CHECK(plain.layers[0].head_dim == 192);
    CHECK(plain.layers[0].rope->rotary_dim == 64);
    CHECK(plain.layers[0].rope->pairing == posemb::Pairing::Interleaved);
    CHECK(parse(mla + R"(, "rope_interleave": false})").layers[0].rope->pairing ==
          posemb::Pairing::RotateHalf);
    const auto yarn = parse(mla + R"(, "rope_parameters": {"rope_type": "yarn", "factor": 4.0,
        "original_max_position_embeddings": 4096, "mscale_all_dim": 1.0}})");
    const double m = 0.1 * std::log(4.0) + 1.0;
    CHECK(yarn.layers[0].attention.softmax_scale ==
          Approx(m * m / std::sqrt(192.0)).epsilon(1e-13));
  }
}

TEST_CASE("JetMoE: the head is kv_channels wide (default 128)", "[config][models][families]") {
  // JetMoeConfig.attribute_map {"head_dim": "kv_channels"}, kv_channels 128; JetMoeAttention:
  // scaling kv_channels^-0.5, RoPE over kv_channels (modeling_jetmoe.py).
  const std::string jetmoe = R"({"model_type": "jetmoe", "hidden_size": 256,
      "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 1)";
  const auto given = parse(jetmoe + R"(, "kv_channels": 64})");
  CHECK(given.layers[0].head_dim == 64);
  CHECK(given.layers[0].rope->rotary_dim == 64);
  CHECK(given.layers[0].attention.softmax_scale == 0.125);
  const auto absent = parse(jetmoe + "}");
  CHECK(absent.layers[0].head_dim == 128);
  CHECK(absent.layers[0].attention.softmax_scale == Approx(1.0 / std::sqrt(128.0)).epsilon(1e-15));
}

TEST_CASE("GraniteSWA: a rope theta per layer, 0 for no RoPE", "[config][models][families]") {
  // GraniteSWAConfig (modular_granite_swa.py): full iff i % 4 == 0, sliding_window 128 on the
  // sliding layers, layer_rope_theta default [rope_theta] * num_hidden_layers; GraniteSWAModel
  // gives layer i the rotary embedding of {**rope_parameters, "rope_theta": layer_rope_theta[i]},
  // none when it is 0; GraniteSWAAttention: scaling = attention_multiplier (1), a sink per head.
  const std::string swa = R"({"hidden_size": 256, "num_attention_heads": 4,
      "num_hidden_layers": 4, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0})";
  for (const char* type : {"granite_swa", "granitemoe_swa"}) {
    CAPTURE(type);
    const std::string base = swa + R"(, "model_type": ")" + type + "\"";
    const auto model = parse(base + R"(, "layer_rope_theta": [10000.0, 0, 500000.0, 1000000.0]})");
    check_layers(parse(base + "}"), {F, S, S, S}, {none, 128, 128, 128});
    CHECK(model.layers[1].layer_type == S);
    CHECK(model.layers[1].kind == posemb::PositionKind::None);
    CHECK(model.layers[1].attention.sliding_window == 128);
    CHECK(model.layers[1].attention.softmax_scale == 1.0);
    CHECK(model.layers[1].attention.attention_sinks);
    // head_dim 64: inv_freq[i] = theta^(-2i / 64).
    CHECK(model.layers[0].rope->theta == 1e4);
    CHECK(model.layers[2].rope->theta == 5e5);
    CHECK(model.layers[3].rope->theta == 1e6);
    const posemb::RopeSpec spec = model.layers[2].rope_spec(std::nullopt);
    REQUIRE(spec.inv_freq.size() == 32);
    CHECK(spec.inv_freq[1] == Approx(std::pow(5e5, -2.0 / 64.0)).epsilon(1e-15));
    // Property: a layer with its own theta is the plain family's layer at that rope_theta.
    const auto plain = parse(R"({"hidden_size": 256, "num_attention_heads": 4,
        "num_hidden_layers": 1, "model_type": ")" +
                             std::string(type) +
                             R"(", "rope_parameters": {"rope_type": "default",
        "rope_theta": 500000.0}})");
    CHECK(plain.layers[0].rope_spec(std::nullopt).inv_freq == spec.inv_freq);
    // Without layer_rope_theta every layer has the block's theta.
    for (const posemb::LayerPositions& layer : parse(base + "}").layers) {
      REQUIRE(layer.rope);
      CHECK(layer.rope->theta == 1e4);
    }
    CHECK(
        parse(base + R"(, "attention_multiplier": 0.0078125})").layers[0].attention.softmax_scale ==
        0.0078125);
    CHECK_THAT(error_of(base + R"(, "layer_rope_theta": [10000.0, 0]})"),
               Catch::Contains("layer_rope_theta.size() = 2") &&
                   Catch::Contains("num_hidden_layers = 4"));
    CHECK_THAT(error_of(base + R"(, "layer_rope_theta": [10000.0, -5, 0, 0]})"),
               Catch::Contains("layer_rope_theta[1] = -5"));
    CHECK_THAT(error_of(base + R"(, "layer_rope_theta": [10000.0, "x", 0, 0]})"),
               Catch::Contains("layer_rope_theta") && Catch::Contains("a list of numbers"));
  }
  // Granite itself reads no layer_rope_theta.
  const auto granite = parse(swa + R"(, "model_type": "granite",
      "layer_rope_theta": [0, 0, 0, 0]})");
  for (const posemb::LayerPositions& layer : granite.layers) CHECK(layer.rope->theta == 1e4);
}

TEST_CASE("Granite Docling's text tower: attention_multiplier defaults to 0.015625",
          "[config][models][families]") {
  // GraniteDoclingTextConfig.attention_multiplier 0.015625 (configuration_granite_docling.py);
  // GraniteDoclingTextAttention: scaling = attention_multiplier. GraniteConfig's default is 1.
  const std::string text = R"({"hidden_size": 256, "num_attention_heads": 4,
      "num_hidden_layers": 2)";
  const auto absent = parse(text + R"(, "model_type": "granite_docling_text"})");
  for (const posemb::LayerPositions& layer : absent.layers) {
    CHECK(layer.attention.softmax_scale == 0.015625);
    CHECK(layer.rope->theta == 1e4);
    CHECK(layer.rope->rotary_dim == 64);
  }
  CHECK(parse(text + R"(, "model_type": "granite_docling_text", "attention_multiplier": 0.5})")
            .layers[0]
            .attention.softmax_scale == 0.5);
  CHECK(parse(text + R"(, "model_type": "granite"})").layers[0].attention.softmax_scale == 1.0);
  // GraniteDoclingConfig's text_config is a GraniteDoclingTextConfig when it names no type.
  const auto wrapped = parse(R"({"model_type": "granite_docling", "text_config": )" + text + "}}");
  CHECK(wrapped.model_type == "granite_docling_text");
  CHECK(wrapped.layers[0].attention.softmax_scale == 0.015625);
  // The class's head count applies when absent: 1024 / 16 = 64.
  CHECK(parse(R"({"model_type": "granite_docling_text"})").layers[0].head_dim == 64);
  CHECK_THAT(error_of(text + R"(, "model_type": "granite_docling_text",
      "attention_multiplier": -1})"),
             Catch::Contains("attention_multiplier = -1"));
}

TEST_CASE("Cohere2-MoE: RoPE on sliding layers and on the dense prefix",
          "[config][models][families]") {
  // Cohere2MoeConfig.__post_init__ (configuration_cohere2_moe.py): without layer_types, the first
  // first_k_dense_replace layers sliding iff (i + 1) % prefix_dense_sliding_window_pattern (1),
  // the rest iff (j + 1) % sliding_window_pattern (4), j from the prefix's end; mlp_layer_types
  // "dense" below first_k_dense_replace. Cohere2MoeAttention (modeling_cohere2_moe.py): RoPE iff
  // a sliding window or force_rope (a dense layer while the prefix pattern is 1); head_dim 128,
  // window 4096, scaling head_dim^-0.5, cohere's interleaved pairs.
  const std::string moe = R"({"model_type": "cohere2_moe", "hidden_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 5)";
  const auto prefix = parse(moe + R"(, "first_k_dense_replace": 1})");
  REQUIRE(prefix.layers.size() == 5);
  const std::vector<std::string> types = {F, S, S, S, F};
  const std::vector<std::optional<std::int64_t>> windows = {none, 4096, 4096, 4096, none};
  for (std::size_t i = 0; i < 5; ++i) {
    const posemb::LayerPositions& layer = prefix.layers[i];
    CAPTURE(i);
    CHECK(layer.layer_type == types[i]);
    CHECK(layer.attention.sliding_window == windows[i]);
    CHECK(layer.kind == (i < 4 ? posemb::PositionKind::Rope : posemb::PositionKind::None));
    CHECK(layer.head_dim == 128);
    CHECK(layer.attention.softmax_scale == Approx(1.0 / std::sqrt(128.0)).epsilon(1e-15));
    if (layer.rope) {
      CHECK(layer.rope->pairing == posemb::Pairing::Interleaved);
      CHECK(layer.rope->theta == 1e4);
    }
  }
  // Without a dense prefix it is Cohere2's rule: 3 sliding RoPE layers, 1 full without.
  check_layers(parse(moe + "}"), {S, S, S, F, S}, {4096, 4096, 4096, none, 4096}, false);
  // Property: the config transformers saves (layer_types and mlp_layer_types written out) loads
  // as the config it came from.
  const auto saved = parse(moe + R"(, "layer_types": ["full_attention", "sliding_attention",
      "sliding_attention", "sliding_attention", "full_attention"],
      "mlp_layer_types": ["dense", "sparse", "sparse", "sparse", "sparse"]})");
  for (std::size_t i = 0; i < 5; ++i) {
    CAPTURE(i);
    CHECK(saved.layers[i].kind == prefix.layers[i].kind);
    CHECK(saved.layers[i].layer_type == prefix.layers[i].layer_type);
    CHECK(saved.layers[i].attention.sliding_window == prefix.layers[i].attention.sliding_window);
  }
  // A prefix pattern other than 1: no force_rope; prefix layers sliding iff (i + 1) % 2 != 0.
  check_layers(parse(moe + R"(, "first_k_dense_replace": 2,
      "prefix_dense_sliding_window_pattern": 2})"),
               {S, F, S, S, S}, {4096, none, 4096, 4096, 4096}, false);
  // No window: no sliding layer rotates, the dense prefix still does.
  const auto unwindowed = parse(moe + R"(, "first_k_dense_replace": 1, "sliding_window": null})");
  CHECK(unwindowed.layers[0].kind == posemb::PositionKind::Rope);
  for (std::size_t i = 1; i < 5; ++i) {
    CHECK(unwindowed.layers[i].kind == posemb::PositionKind::None);
    CHECK_FALSE(unwindowed.layers[i].attention.sliding_window);
  }
  CHECK_THAT(error_of(moe + R"(, "first_k_dense_replace": 6})"),
             Catch::Contains("first_k_dense_replace = 6"));
  CHECK_THAT(error_of(moe + R"(, "mlp_layer_types": ["dense"]})"),
             Catch::Contains("mlp_layer_types.size() = 1"));
  CHECK_THAT(error_of(moe + R"(, "mlp_layer_types": ["dense", "moe", "sparse", "sparse",
      "sparse"]})"),
             Catch::Contains("mlp_layer_types[1] = \"moe\""));
  CHECK_THAT(error_of(moe + R"(, "prefix_dense_sliding_window_pattern": 0})"),
             Catch::Contains("prefix_dense_sliding_window_pattern = 0"));
  // Cohere2 reads neither key.
  const auto cohere2 = parse(R"({"model_type": "cohere2", "hidden_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 4, "sliding_window": 4096,
      "first_k_dense_replace": 1, "mlp_layer_types": ["dense", "x", "x", "x"]})");
  CHECK(cohere2.layers[3].kind == posemb::PositionKind::None);
}
