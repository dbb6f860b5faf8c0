// model/rope_variants.hpp: every registered rope variant implements every facet (at compile time
// in the header, and here again at run time on a config.json block of each), and the derived
// tables (names, GGUF spelling, diff notes, float32 refusals) read the facets.
#include "posemb/model/rope_variants.hpp"

#include "posemb/model/config.hpp"
#include "posemb/model/diff.hpp"
#include "posemb/model/hf_float32_scheme.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>
#include <string>

using nlohmann::json;

namespace {

// A struct that is not a variant: the facet check names what it lacks.
struct NotAVariant {
  using Params = posemb::DefaultRopeParams;
  static constexpr const char* name = "not_a_variant";
  static constexpr const char* legacy_name = nullptr;
};
static_assert(!posemb::detail::implements_every_facet<NotAVariant>);
static_assert(!posemb::detail::has_spec<NotAVariant>);

// A float32 transcription and a reason for its absence at once: refused too.
struct BothWays : posemb::DefaultRope {
  static constexpr const char* no_hf_float32 = "contradicts hf_float32";
};
static_assert(posemb::detail::implements_every_facet<posemb::DefaultRope>);
static_assert(!posemb::detail::implements_every_facet<BothWays>);

// A variant without a GGUF spelling states why instead.
static_assert(!posemb::detail::has_gguf<posemb::ProportionalRope>);
static_assert(posemb::detail::has_no_gguf<posemb::ProportionalRope>);

constexpr int head_dim = 64;

// One config.json rope block per registered variant (a variant without one fails below).
std::map<std::string, json> sample_blocks() {
  json longrope = {{"rope_type", "longrope"}, {"original_max_position_embeddings", 1024}};
  for (int i = 0; i < head_dim / 2; ++i) {
    longrope["short_factor"].push_back(1.0 + 0.01 * i);
    longrope["long_factor"].push_back(1.0 + 0.5 * i);
  }
  return {
      {"default", {{"rope_type", "default"}}},
      {"linear", {{"rope_type", "linear"}, {"factor", 4.0}}},
      {"dynamic", {{"rope_type", "dynamic"}, {"factor", 2.0}}},
      {"yarn",
       {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 1024}}},
      {"llama3",
       {{"rope_type", "llama3"},
        {"factor", 8.0},
        {"low_freq_factor", 1.0},
        {"high_freq_factor", 4.0},
        {"original_max_position_embeddings", 1024}}},
      {"longrope", longrope},
      {"proportional", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}}},
  };
}

posemb::RopeScheme scheme_of(json block) {
  block["rope_theta"] = 10000.0;
  const json config = {{"num_attention_heads", 4},
                       {"hidden_size", 4 * head_dim},
                       {"max_position_embeddings", 4096},
                       {"rope_parameters", block}};
  return *posemb::model_positions_from_json(config).layers.at(0).rope;
}

}  // namespace

TEST_CASE("every registered rope variant implements every facet", "[rope_variants]") {
  const auto& rows = posemb::detail::rope_variants();
  const auto blocks = sample_blocks();
  REQUIRE(rows.size() == posemb::rope_variant_list::size);
  REQUIRE(rows.size() == std::variant_size_v<posemb::RopeParams>);
  std::set<std::string> names;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const posemb::detail::RopeVariant& row = rows[k];
    const std::string name = row.rope_type;
    INFO(name);
    CHECK(names.insert(name).second);
    CHECK(posemb::detail::find_rope_variant(name) == &row);
    if (row.legacy_name != nullptr) {
      CHECK(posemb::detail::find_rope_variant(row.legacy_name) == &row);
    }
    CHECK(std::string(posemb::detail::rope_readers()[k].rope_type) == name);
    // Exactly one of each pair, and a reason is a sentence, not an empty string.
    CHECK((row.hf_float32 != nullptr) != (row.no_hf_float32 != nullptr));
    CHECK((row.gguf_runs != nullptr) != (row.no_gguf != nullptr));
    if (row.no_hf_float32 != nullptr) CHECK(std::string(row.no_hf_float32).size() > 20);
    if (row.no_gguf != nullptr) CHECK(std::string(row.no_gguf).size() > 20);

    REQUIRE(blocks.count(name) == 1);
    const posemb::RopeScheme scheme = scheme_of(blocks.at(name));
    REQUIRE(scheme.rope_type == name);
    REQUIRE(scheme.params.index() == k);  // the reader gave the row's own alternative

    // Exact frequencies: finite, non-negative, as many as the bands.
    const posemb::RopeSpec spec = scheme.spec(std::nullopt);
    CHECK(spec.inv_freq.allFinite());
    CHECK(spec.inv_freq.minCoeff() >= 0.0);
    CHECK(spec.attention_scale > 0.0);
    const posemb::RopeBands bands = posemb::rope_bands(scheme, spec);
    CHECK(static_cast<int>(bands.pairs.size()) == spec.pairs());

    // HF's float32 steps land within a few float32 ulps of the exact frequencies (the
    // transcription's property), or the refusal names the reason.
    if (row.hf_float32 != nullptr) {
      const posemb::HfFloat32Rope hf = posemb::hf_float32_rope(scheme, 4096);
      const posemb::RopeSpec exact = scheme.spec(4096);
      REQUIRE(hf.inv_freq.size() == exact.inv_freq.size());
      for (Eigen::Index i = 0; i < exact.inv_freq.size(); ++i) {
        CHECK(std::abs(hf.inv_freq[i] - exact.inv_freq[i]) <= 1e-6 * exact.inv_freq[i]);
      }
      CHECK(hf.attention_scale == Approx(exact.attention_scale).epsilon(1e-6));
    } else {
      CHECK_THROWS_WITH(posemb::hf_float32_rope(scheme), Catch::Contains(row.no_hf_float32));
    }
    const double steps = row.float32_steps(scheme.params, 4096);
    CHECK(std::isfinite(steps));
    CHECK(steps >= 0.0);
    // The factor facet gives back what the block said.
    if (blocks.at(name).contains("factor")) {
      CHECK(row.factor(scheme.params) == blocks.at(name).at("factor").get<double>());
    }
    // No variant departs from transformers on a field it does not set.
    CHECK(row.diff_note({name, name, 4096, 1024}, "head_dim").empty());
  }
}

TEST_CASE("a GGUF layer is run as exactly one variant", "[rope_variants][gguf]") {
  // llama.cpp (src/llama-model.cpp, llama_model::get_rope_factors; ggml rope_yarn): YaRN when
  // rope.scaling.type is yarn, else the rope tensor's variant, else linear when the frequency
  // scale is not 1, else the plain default.
  const auto expected = [](const posemb::GgufRopeKey& k) -> std::string {
    if (k.scaling_type == "yarn") return "yarn";
    if (k.factors == "rope_freqs.weight") return "llama3";
    if (!k.factors.empty()) return "longrope";
    return k.freq_scale != 1.0 ? "linear" : "default";
  };
  for (const char* type : {"none", "linear", "yarn", "longrope"}) {
    for (const char* factors :
         {"", "rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight"}) {
      for (double scale : {1.0, 0.25}) {
        const posemb::GgufRopeKey key{type, factors, scale};
        INFO(type << " " << factors << " " << scale);
        int running = 0;
        for (const auto& row : posemb::detail::rope_variants()) {
          running += row.gguf_runs != nullptr && row.gguf_runs(key);
        }
        CHECK(running == 1);
        CHECK(posemb::detail::gguf_rope_type(key) == expected(key));
      }
    }
  }
  // llama.cpp's LLAMA_ROPE_SCALING_TYPES (src/llama-hparams.h): none, linear, yarn, longrope.
  CHECK(posemb::detail::gguf_scaling_types() == "none, linear, yarn or longrope");
  CHECK_FALSE(posemb::detail::gguf_scaling_type_known("dynamic"));
}

TEST_CASE("diff notes come from the variants of both sides", "[rope_variants][diff]") {
  using posemb::detail::rope_diff_note;
  CHECK_THAT(rope_diff_note({"longrope", "longrope", 8192, 4096}, "inv_freq"),
             Catch::Equals("llama.cpp picks LongRoPE factors once by context size (8192 > 4096), "
                           "HF per call by sequence length"));
  // The GGUF side's note first: longrope against a dynamic config.
  CHECK_THAT(rope_diff_note({"longrope", "dynamic", 4096, 4096}, "inv_freq"),
             Catch::StartsWith("llama.cpp picks LongRoPE factors once by context size (4096 <= "));
  CHECK(rope_diff_note({"default", "dynamic", 4096, 4096}, "inv_freq") ==
        "dynamic NTK has no llama.cpp counterpart");
  CHECK(rope_diff_note({"yarn", "yarn", 4096, 4096}, "attention_scale") ==
        "llama.cpp's YaRN floors the ramp with beta 32/1 and uses the magnitude 0.1 ln s + 1");
  CHECK(rope_diff_note({"yarn", "default", 4096, 4096}, "attention_scale").empty());
  CHECK(rope_diff_note({"", "", 4096, 4096}, "inv_freq").empty());
}

TEST_CASE("hf-float32 refusals state the variant's reason", "[rope_variants][hf_float32]") {
  const posemb::RopeScheme proportional = scheme_of(sample_blocks().at("proportional"));
  CHECK_THROWS_WITH(posemb::hf_float32_rope(proportional),
                    Catch::Contains("rope_type = \"proportional\": expected default, linear, "
                                    "dynamic, yarn, llama3 or longrope for hf-float32 angles "
                                    "(proportional: no float32 transcription"));
}

TEST_CASE("Hunyuan's alpha has its float32 transcription", "[rope_variants][hf_float32]") {
  // HunYuanDenseV1RotaryEmbedding.compute_ntk_alpha_rope_parameters: the static base
  // theta * alpha^(d / (d - 2)), then the default's float32 steps; within float32 rounding of the
  // exact NTK frequencies at every length (the growth of plain dynamic NTK never applies).
  const json config = {
      {"model_type", "hunyuan_v1_dense"},
      {"num_attention_heads", 4},
      {"hidden_size", 4 * 128},
      {"head_dim", 128},
      {"max_position_embeddings", 4096},
      {"rope_parameters",
       {{"rope_type", "dynamic"}, {"rope_theta", 10000.0}, {"factor", 1.0}, {"alpha", 1000.0}}}};
  const posemb::RopeScheme scheme = *posemb::model_positions_from_json(config).layers.at(0).rope;
  REQUIRE(std::get<posemb::DynamicNtkParams>(scheme.params).alpha == 1000.0);
  for (std::int64_t seq_len : {16, 4096, 100000}) {
    const posemb::HfFloat32Rope hf = posemb::hf_float32_rope(scheme, seq_len);
    const Eigen::VectorXd exact =
        posemb::default_inv_freq(128, 10000.0 * std::pow(1000.0, 128.0 / 126.0));
    REQUIRE(hf.inv_freq.size() == exact.size());
    for (Eigen::Index i = 0; i < exact.size(); ++i) {
      CHECK(std::abs(hf.inv_freq[i] - exact[i]) <= 1e-6 * exact[i]);
    }
  }
}
