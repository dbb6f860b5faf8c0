// The GGUF rows of llama.cpp's two sparse-attention MLA architectures beside deepseek32, each on a
// GGUF the test writes, its plan against the rule as the pinned llama.cpp (llama-cpp-python
// 0.3.36's sdist) states it:
//   glm-dsa (GLM-5): src/models/glm-dsa.cpp, load_arch_hparams (indexer keys, indexer.types,
//     GLM_5_2_DEFAULT_INDEXER_TYPES for contexts from 1048576, no yarn_log_multiplier) and
//     llama_model_glm_dsa::graph (MLA q_pe / k_pe the last n_rot, kq_scale mscale^2 / sqrt(k_mla),
//     the indexer's ggml_rope_ext(..., LLAMA_ROPE_TYPE_NORM) on its first n_rot, only on "full"
//     layers; a "shared" layer reuses prev_top_k); load_arch_tensors' "requires MLA".
//   hy_v4 (HY V4): src/models/hy-v4.cpp, load_arch_hparams (MLA keys required, indexer keys only
//     with indexer.top_k > 0, "bad indexer head count / key length", "layer 0 must own an
//     indexer"), graph (kq_scale 1/sqrt(k_mla), attn_sinks) and build_indexer_top_k (the
//     model's NORM on the last n_rot: ggml_rope_set_offset(iq, n_embd_indexer_nope)).
// llama_model_rope_type (src/llama-model.cpp): NORM for both. conformance/llamacpp runs the tiny
// GLM-5 (GlmMoeDsaForCausalLM, conversion/glm.py) through llama.cpp: its 30 ROPE nodes agree with
// this plan. Its tiny HY V4 (transformers 5.25's HYV4ForCausalLM, which conversion/hy_v4.py
// registers) does not convert: save_pretrained writes the iHC tensors as model.hc_pre.hc_head.*
// (conversion_mapping.py's `\.hc_pre\.hc_` -> `.hc_` reversed), the converter maps the released
// model.hc_head.hc_head_* ("Can not map tensor 'model.hc_pre.hc_head.hc_head_base.weight'"), so
// the hy_v4 rules are checked here only. The expected frequencies are
// ggml_rope_cache_init's and ggml_rope_yarn_corr_dims' (ggml/src/ggml-cpu/ops.cpp, ggml.c),
// written here again.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/gguf_plan.hpp"
#include "posemb/model/gguf.hpp"
#include "posemb/model/layer_plan.hpp"

namespace {

using test_gguf::check_refused;
using test_gguf::ggml_inv_freq;
using test_gguf::plan_of;

constexpr double pi = 3.14159265358979323846;

// ggml's YaRN frequency of pair i (ggml_rope_cache_init with rope_yarn, ext_factor 1):
// corr(beta) = n ln(n_ctx_orig / (2 pi beta)) / (2 ln base), lo = max(0, floor(corr(32))),
// hi = min(n - 1, ceil(corr(1))); ramp = 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1);
// theta = s * extrap (1 - ramp) + extrap * ramp.
double ggml_yarn_inv_freq(double base, int i, int n_rot, double freq_scale, double n_ctx_orig) {
  const auto corr = [&](double beta) {
    return n_rot * std::log(n_ctx_orig / (beta * 2.0 * pi)) / (2.0 * std::log(base));
  };
  const double lo = std::max(0.0, std::floor(corr(32.0)));
  const double hi = std::min(n_rot - 1.0, std::ceil(corr(1.0)));
  const double ramp = 1.0 - std::clamp((i - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
  const double extrap = ggml_inv_freq(base, i, n_rot);
  return freq_scale * extrap * (1.0 - ramp) + extrap * ramp;
}

// A GLM-5-shaped file: heads of key_length_mla 256 (192 nope + 64 rope), value 256, YaRN 49.5
// from 4096 at base 1e6, one MTP layer (block_count = layers + 1), the converter's
// yarn_log_multiplier 0.1 (which glm-dsa's load_arch_hparams never reads).
test_gguf::GgufWriter glm_dsa(std::uint32_t layers, std::uint32_t context = 202752) {
  return test_gguf::model_writer("glm-dsa", layers + 1, context, 256, 4)
      .u32("glm-dsa.nextn_predict_layers", 1)
      .u32("glm-dsa.attention.key_length", 576)
      .u32("glm-dsa.attention.value_length", 512)
      .u32("glm-dsa.attention.key_length_mla", 256)
      .u32("glm-dsa.attention.value_length_mla", 256)
      .u32("glm-dsa.rope.dimension_count", 64)
      .f32("glm-dsa.rope.freq_base", 1000000.0f)
      .str("glm-dsa.rope.scaling.type", "yarn")
      .f32("glm-dsa.rope.scaling.factor", 49.5f)
      .u32("glm-dsa.rope.scaling.original_context_length", 4096)
      .f32("glm-dsa.rope.scaling.yarn_log_multiplier", 0.1f)
      .u32("glm-dsa.attention.indexer.head_count", 4)
      .u32("glm-dsa.attention.indexer.top_k", 8);
}

// An HY-V4-shaped file: key_length_mla 192 (128 nope + 64 rope), value 128, base 10000.
test_gguf::GgufWriter hy_v4(std::uint32_t layers) {
  return test_gguf::model_writer("hy_v4", layers, 4096, 256, 4)
      .u32("hy_v4.attention.key_length", 576)
      .u32("hy_v4.attention.value_length", 512)
      .u32("hy_v4.attention.key_length_mla", 192)
      .u32("hy_v4.attention.value_length_mla", 128)
      .u32("hy_v4.rope.dimension_count", 64);
}

// hy_v4 with the DSA keys: indexer heads of 128, top-k 8, the owners given.
test_gguf::GgufWriter hy_v4_dsa(const std::vector<bool>& owners) {
  return hy_v4(static_cast<std::uint32_t>(owners.size()))
      .u32("hy_v4.attention.indexer.head_count", 4)
      .u32("hy_v4.attention.indexer.key_length", 128)
      .u32("hy_v4.attention.indexer.top_k", 8)
      .bools("hy_v4.attention.indexer.types", owners);
}

// Which layers own an indexer in the plan.
std::vector<bool> owners_of(const posemb::GgufPositions& plan) {
  std::vector<bool> owners;
  for (const posemb::LayerPositions& layer : plan.model.layers)
    owners.push_back(layer.indexer.has_value());
  return owners;
}

}  // namespace

TEST_CASE("glm-dsa: MLA's last n_rot, the indexer's first n_rot NORM on its full layers, YaRN") {
  const auto plan =
      plan_of(glm_dsa(4)
                  .u32("glm-dsa.attention.indexer.key_length", 128)
                  .bools("glm-dsa.attention.indexer.types", {true, false, true, true}),
              "glm_dsa");
  REQUIRE(plan.model.layers.size() == 4);  // n_layer() = block_count - nextn_predict_layers
  CHECK(plan.hparams.rope_mode == posemb::GgufRopeMode::Norm);
  const double F = static_cast<double>(49.5f);
  // llama_context: yarn_log_mul 0 -> yarn_attn_factor = get_mscale(F, 1) / (1 + 0.1 ln F) = 1;
  // rope_yarn's magnitude 1 + 0.1 ln F; the graph's mscale = attn_factor (1 + 0.1 ln F), kq_scale
  // mscale^2 / sqrt(256).
  const double magnitude = 1.0 + 0.1 * std::log(F);
  const std::vector<bool> owners = {true, false, true, true};
  for (std::size_t il = 0; il < 4; ++il) {
    CAPTURE(il);
    const posemb::LayerPositions& layer = plan.model.layers[il];
    REQUIRE(layer.kind == posemb::PositionKind::Rope);
    CHECK(layer.layer_type == "indexed_attention");
    CHECK(layer.head_dim == 256);
    CHECK(layer.rope->rotary_dim == 64);
    CHECK(layer.rotary_offset == 192);  // q_pe / k_pe: the view after n_embd_head_qk_nope
    CHECK(layer.rope->pairing == posemb::Pairing::Interleaved);
    CHECK(plan.ropes[il]->rope_type == "yarn");
    CHECK(plan.ropes[il]->attention_scale == Approx(magnitude).epsilon(1e-9));
    for (int i = 0; i < 32; ++i) {
      CHECK(plan.ropes[il]->inv_freq[i] ==
            Approx(ggml_yarn_inv_freq(1e6, i, 64, 1.0 / F, 4096.0)).epsilon(1e-12));
    }
    CHECK(*layer.attention.softmax_scale == Approx(magnitude * magnitude / 16.0).epsilon(1e-9));
    CHECK_FALSE(layer.attention.attention_sinks);
    REQUIRE(static_cast<bool>(layer.indexer) == owners[il]);
    if (!layer.indexer) continue;  // a "shared" layer: no ROPE of its own (prev_top_k)
    CHECK(layer.indexer->head_dim == 128);
    CHECK(layer.indexer->rotary_offset == 0);  // the indexer head is [rope | nope]
    CHECK(layer.indexer->rope.pairing == posemb::Pairing::Interleaved);  // LLAMA_ROPE_TYPE_NORM
    const posemb::RopeSpec spec = layer.indexer_rope_spec();
    REQUIRE(spec.rotary_dim == 64);
    CHECK(spec.attention_scale == Approx(magnitude).epsilon(1e-9));
    for (int i = 0; i < 32; ++i) CHECK(spec.inv_freq[i] == Approx(plan.ropes[il]->inv_freq[i]));
  }
  // The JSON of `posemb layers` names the indexer on the layers that own one, and only there.
  const std::vector<posemb::LayerPlan> plans = posemb::gguf_layer_plans(plan);
  CHECK_THAT(posemb::layer_plan_json(plans[0]),
             Catch::EndsWith(", \"indexer\": {\"head_dim\": 128, \"rotary_dim\": 64, "
                             "\"rotary_offset\": 0, \"pairing\": \"interleaved\"}}"));
  CHECK_THAT(posemb::layer_plan_json(plans[1]), !Catch::Contains("indexer"));
}

TEST_CASE("glm-dsa: indexers on every layer by default, GLM-5.2's table from a 1048576 context") {
  // load_arch_hparams: is_pre_5_2 = n_ctx_train < 1048576 fills every layer "full"; otherwise
  // GLM_5_2_DEFAULT_INDEXER_TYPES, written out here as the source lists it (zeros after it).
  std::vector<bool> table = {true, true};
  for (int row = 0; row < 19; ++row) table.insert(table.end(), {true, false, false, false});
  table.resize(80, false);
  const auto pre = plan_of(glm_dsa(6).u32("glm-dsa.attention.indexer.key_length", 128), "glm5");
  CHECK(owners_of(pre) == std::vector<bool>(6, true));
  const auto big =
      plan_of(glm_dsa(80, 1048576).u32("glm-dsa.attention.indexer.key_length", 128), "glm52");
  CHECK(owners_of(big) == table);
  for (const posemb::LayerPositions& layer : big.model.layers) {
    CHECK(layer.layer_type == "indexed_attention");
  }
  // One UINT32 for every layer (get_key_or_arr's scalar form).
  const auto one = plan_of(glm_dsa(80, 1048576)
                               .u32("glm-dsa.attention.indexer.key_length", 128)
                               .u32("glm-dsa.attention.indexer.types", 1),
                           "glm52_all");
  CHECK(owners_of(one) == std::vector<bool>(80, true));
}

TEST_CASE("glm-dsa refuses what llama.cpp refuses: no MLA, no or narrow indexer, bad types") {
  const auto indexed = [] { return glm_dsa(3).u32("glm-dsa.attention.indexer.key_length", 128); };
  check_refused(glm_dsa(3), "glm_dsa_nokey", "glm-dsa.attention.indexer.key_length: missing");
  check_refused(glm_dsa(3).u32("glm-dsa.attention.indexer.key_length", 32), "glm_dsa_narrow",
                "glm-dsa.attention.indexer.key_length = 32: expected >= n_rot = 64");
  // get_key_or_arr: an array's length must be n_layer() (3, not block_count 4).
  check_refused(indexed().bools("glm-dsa.attention.indexer.types", {true, true, true, true}),
                "glm_dsa_types4", "glm-dsa.attention.indexer.types.size() = 4: expected n_layer");
  check_refused(indexed().bools("glm-dsa.attention.indexer.types", {false, true, true}),
                "glm_dsa_shared0", "glm-dsa.attention.indexer.types[0] = 0: expected 1");
  check_refused(indexed().str("glm-dsa.attention.indexer.types", "full"), "glm_dsa_types_str",
                "glm-dsa.attention.indexer.types");
  // load_arch_tensors: "GLM_DSA architecture requires MLA".
  test_gguf::GgufWriter no_mla = test_gguf::model_writer("glm-dsa", 2, 4096, 256, 4)
                                     .u32("glm-dsa.attention.key_length", 192)
                                     .u32("glm-dsa.rope.dimension_count", 64)
                                     .u32("glm-dsa.attention.indexer.key_length", 128);
  check_refused(no_mla, "glm_dsa_nomla", "glm-dsa.attention.key_length_mla: missing");
}

TEST_CASE("hy_v4: MLA with sinks and kq_scale 1/sqrt(k_mla), no indexer without indexer.top_k") {
  const auto plan = plan_of(hy_v4(2)
                                .str("hy_v4.rope.scaling.type", "yarn")
                                .f32("hy_v4.rope.scaling.factor", 32.0f)
                                .u32("hy_v4.rope.scaling.original_context_length", 4096)
                                .f32("hy_v4.rope.scaling.yarn_log_multiplier", 0.1f),
                            "hy_v4");
  CHECK(plan.hparams.rope_mode == posemb::GgufRopeMode::Norm);
  for (std::size_t il = 0; il < 2; ++il) {
    CAPTURE(il);
    const posemb::LayerPositions& layer = plan.model.layers[il];
    REQUIRE(layer.kind == posemb::PositionKind::Rope);
    CHECK(layer.layer_type == "full_attention");
    CHECK_FALSE(layer.indexer);
    CHECK(layer.head_dim == 192);
    CHECK(layer.rotary_offset == 128);
    CHECK(layer.rope->pairing == posemb::Pairing::Interleaved);
    CHECK(layer.attention.attention_sinks);
    // The graph's kq_scale = 1 / sqrtf(n_embd_head_k_mla): no YaRN mscale.
    CHECK(*layer.attention.softmax_scale == Approx(1.0 / std::sqrt(192.0)).epsilon(1e-12));
    // yarn_log_multiplier unread: rope_yarn's magnitude 1 + 0.1 ln F.
    CHECK(plan.ropes[il]->attention_scale == Approx(1.0 + 0.1 * std::log(32.0)).epsilon(1e-9));
    for (int i = 0; i < 32; ++i) {
      CHECK(plan.ropes[il]->inv_freq[i] ==
            Approx(ggml_yarn_inv_freq(10000.0, i, 64, 1.0 / 32.0, 4096.0)).epsilon(1e-12));
    }
  }
}

TEST_CASE("hy_v4: with indexer.top_k, the full layers' indexer rotates its last n_rot NORM") {
  const auto plan = plan_of(hy_v4_dsa({true, false, true}), "hy_v4_dsa");
  CHECK(owners_of(plan) == std::vector<bool>{true, false, true});
  for (std::size_t il = 0; il < 3; ++il) {
    CAPTURE(il);
    const posemb::LayerPositions& layer = plan.model.layers[il];
    CHECK(layer.layer_type == "indexed_attention");
    for (int i = 0; i < 32; ++i) {
      CHECK(plan.ropes[il]->inv_freq[i] == Approx(ggml_inv_freq(10000.0, i, 64)).epsilon(1e-14));
    }
    if (!layer.indexer) continue;
    CHECK(layer.indexer->head_dim == 128);
    CHECK(layer.indexer->rotary_offset == 64);  // ggml_rope_set_offset(iq, 128 - 64)
    CHECK(layer.indexer->rope.pairing == posemb::Pairing::Interleaved);
    CHECK(layer.indexer_rope_spec().rotary_dim == 64);
    CHECK(layer.indexer_rope_spec().inv_freq[7] == Approx(ggml_inv_freq(10000.0, 7, 64)));
    CHECK_THAT(posemb::layer_plan_json(posemb::gguf_layer_plans(plan)[il]),
               Catch::Contains("\"rotary_offset\": 64, \"pairing\": \"interleaved\"}"));
  }
  // A scalar types key: every layer owns one.
  const auto all = plan_of(hy_v4(2)
                               .u32("hy_v4.attention.indexer.head_count", 4)
                               .u32("hy_v4.attention.indexer.key_length", 128)
                               .u32("hy_v4.attention.indexer.top_k", 8)
                               .u32("hy_v4.attention.indexer.types", 1),
                           "hy_v4_all");
  CHECK(owners_of(all) == std::vector<bool>{true, true});
}

TEST_CASE("hy_v4 refuses what its load_arch_hparams refuses") {
  // indexer.top_k > 0 without indexer.types: is_indexer_full(0) is false.
  const auto dsa = [] {
    return hy_v4(2)
        .u32("hy_v4.attention.indexer.head_count", 4)
        .u32("hy_v4.attention.indexer.top_k", 8);
  };
  check_refused(dsa().u32("hy_v4.attention.indexer.key_length", 128), "hy_v4_notypes",
                "hy_v4.attention.indexer.types[0] = 0: expected 1");
  check_refused(dsa(), "hy_v4_nokey", "hy_v4.attention.indexer.key_length: missing");
  // "bad indexer head count / key length": indexer_head_size <= n_rot, indexer_n_head == 0.
  check_refused(dsa().u32("hy_v4.attention.indexer.key_length", 64), "hy_v4_keylen",
                "hy_v4.attention.indexer.key_length = 64: expected > n_rot = 64");
  check_refused(hy_v4(2)
                    .u32("hy_v4.attention.indexer.top_k", 8)
                    .u32("hy_v4.attention.indexer.key_length", 128)
                    .u32("hy_v4.attention.indexer.types", 1),
                "hy_v4_noheads", "hy_v4.attention.indexer.head_count = 0: expected a number > 0");
  // get_key(LLM_KV_ATTENTION_VALUE_LENGTH_MLA) is required.
  check_refused(test_gguf::model_writer("hy_v4", 2, 4096, 256, 4)
                    .u32("hy_v4.attention.key_length_mla", 192)
                    .u32("hy_v4.rope.dimension_count", 64),
                "hy_v4_nomla", "hy_v4.attention.value_length_mla: missing");
}
