// The rows of model/gguf_archs.hpp added for the architectures llama.cpp runs that posemb read
// no rule for (bloom, chatglm, ernie4_5, falcon, gemma4, granite, olmo2, phi2, qwen3next, smollm3,
// stablelm): each rule of its row on a GGUF the test writes (gguf_writer.hpp), against llama.cpp's
// semantics as its source states them (src/models/<arch>.cpp of llama-cpp-python 0.3.36's sdist;
// the llama.cpp harness, conformance/llamacpp, runs the converter and the loader on tiny models).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "model/gguf_plan.hpp"
#include "posemb/model/gguf.hpp"

namespace {

using test_gguf::ggml_inv_freq;
using test_gguf::plan_of;
using test_gguf::temp_gguf;

}  // namespace

TEST_CASE("bloom: ALiBi on every layer, no RoPE, scale head_dim^-0.5") {
  // src/models/bloom.cpp: f_max_alibi_bias 8, kq_scale 1/sqrt(n_embd_head); rope type NONE.
  const auto plan = plan_of(test_gguf::model_writer("bloom", 3, 2048, 256, 4), "bloom");
  CHECK(plan.hparams.rope_mode == posemb::GgufRopeMode::None);
  for (std::size_t il = 0; il < 3; ++il) {
    const posemb::LayerPositions& layer = plan.model.layers[il];
    CHECK(layer.kind == posemb::PositionKind::Alibi);
    CHECK_FALSE(layer.rope);
    CHECK_FALSE(plan.ropes[il]);
    CHECK(layer.attention.bias_placement == posemb::BiasPlacement::AfterScale);
    CHECK(*layer.attention.softmax_scale == Approx(1.0 / 8.0));
  }
}

TEST_CASE("phi2 and stablelm: NEOX partial rotation of rope.dimension_count features") {
  // conversion/phi.py, stablelm.py: rope.dimension_count = partial_rotary_factor * head_dim;
  // llama_model_rope_type: NEOX; ggml rotates the leading n_rot features.
  for (const char* arch : {"phi2", "stablelm"}) {
    CAPTURE(arch);
    const std::string a = arch;
    const auto plan = plan_of(test_gguf::model_writer(a, 2, 2048, 256, 4)
                                  .u32(a + ".rope.dimension_count", 16)
                                  .f32(a + ".rope.freq_base", 10000.0f),
                              a);
    const posemb::RopeScheme& rope = *plan.model.layers[1].rope;
    CHECK(rope.rotary_dim == 16);
    CHECK(rope.head_dim == 64);
    CHECK(rope.pairing == posemb::Pairing::RotateHalf);
    for (int i = 0; i < 8; ++i) {
      CHECK(plan.ropes[1]->inv_freq[i] == Approx(ggml_inv_freq(10000.0, i, 16)).epsilon(1e-15));
    }
    CHECK(*plan.model.layers[1].attention.softmax_scale == Approx(1.0 / 8.0));
  }
}

TEST_CASE("chatglm and ernie4_5 pair interleaved, granite and smollm3 were permuted") {
  // NORM rotates (2i, 2i+1) of the GGUF's rows; LlamaModel.permute (granite, smollm3) reordered
  // HF's rotate_half rows into that order, ChatGLMModel and Ernie4_5Model did not.
  const std::vector<std::pair<std::string, posemb::Pairing>> cases = {
      {"chatglm", posemb::Pairing::Interleaved},
      {"ernie4_5", posemb::Pairing::Interleaved},
      {"granite", posemb::Pairing::RotateHalf},
      {"smollm3", posemb::Pairing::RotateHalf}};
  for (const auto& [arch, pairing] : cases) {
    CAPTURE(arch);
    const auto plan = plan_of(test_gguf::model_writer(arch, 2, 2048, 256, 4), arch);
    CHECK(plan.hparams.rope_mode == posemb::GgufRopeMode::Norm);
    CHECK(plan.model.layers[0].rope->pairing == pairing);
  }
  // chatglm: partial (the converter writes head_dim * partial_rotary_factor).
  const auto glm = plan_of(
      test_gguf::model_writer("chatglm", 2, 2048, 256, 4).u32("chatglm.rope.dimension_count", 32),
      "chatglm");
  CHECK(glm.model.layers[0].rope->rotary_dim == 32);
}

TEST_CASE("falcon, granite, olmo2, ernie4_5, smollm3: n_rot other than head_dim is refused") {
  // load_hparams (falcon) and the graph builders' GGML_ASSERT(n_embd_head == n_rot).
  for (const char* arch : {"falcon", "granite", "olmo2", "ernie4_5", "smollm3"}) {
    CAPTURE(arch);
    const std::string a = arch;
    const std::string path = temp_gguf(a);
    test_gguf::model_writer(a, 2, 2048, 256, 4).u32(a + ".rope.dimension_count", 32).write(path);
    CHECK_THROWS_WITH(posemb::read_gguf_positions(path),
                      Catch::Contains(a + ".rope.dimension_count = 32: expected head_dim = 64"));
    std::filesystem::remove(path);
  }
}

TEST_CASE("granite: attention.scale is the softmax scale, rope.scaling.finetuned switches RoPE") {
  // src/models/granite.cpp: kq_scale = f_attention_scale (attention.scale) when non-zero;
  // rope_pattern = rope.scaling.finetuned (default true); rope_freqs per layer.
  const std::vector<float> factors(32, 2.0f);
  const auto plan = plan_of(test_gguf::model_writer("granite", 2, 4096, 256, 4)
                                .f32("granite.attention.scale", 0.0078125f)
                                .tensor("rope_freqs.weight", factors),
                            "granite");
  CHECK(*plan.model.layers[0].attention.softmax_scale == Approx(0.0078125));
  CHECK(plan.ropes[0]->rope_type == "llama3");
  CHECK(plan.ropes[0]->inv_freq[3] == Approx(ggml_inv_freq(10000.0, 3, 64) / 2.0).epsilon(1e-15));
  const auto off = plan_of(test_gguf::model_writer("granite", 2, 4096, 256, 4)
                               .boolean("granite.rope.scaling.finetuned", false),
                           "granite_off");
  for (const posemb::LayerPositions& layer : off.model.layers) {
    CHECK(layer.kind == posemb::PositionKind::None);
    CHECK_FALSE(layer.attention.query_temperature);
    CHECK(*layer.attention.softmax_scale == Approx(1.0 / 8.0));  // attention.scale absent
  }
}

TEST_CASE("smollm3: every 4th layer without RoPE and without a query temperature") {
  // load_arch_hparams: n_no_rope_layer_step 4; use_rope = (il + 1) % 4 != 0.
  const auto plan = plan_of(test_gguf::model_writer("smollm3", 8, 4096, 256, 4), "smollm3");
  for (std::size_t il = 0; il < 8; ++il) {
    CAPTURE(il);
    const bool nope = (il + 1) % 4 == 0;
    CHECK((plan.model.layers[il].kind == posemb::PositionKind::None) == nope);
    CHECK(plan.ropes[il].has_value() == !nope);
    CHECK_FALSE(plan.model.layers[il].attention.query_temperature);
  }
}

TEST_CASE("olmo2 with SWA: the flags' layers slide with the global base, unscaled, no YaRN") {
  // load_arch_hparams: SWA iff attention.sliding_window > 0, load_swa_pattern(ml, 4) (the flags
  // the converter writes, or il % 4 < 3); graph: SWA layers ggml_rope_ext(freq_base, 1.0, ext 0,
  // attn_factor 1) whatever rope.freq_base_swa says; full layers YaRN.
  const auto plan =
      plan_of(test_gguf::model_writer("olmo2", 4, 65536, 512, 4)
                  .u32("olmo2.attention.sliding_window", 4096)
                  .bools("olmo2.attention.sliding_window_pattern", {true, false, true, false})
                  .f32("olmo2.rope.freq_base", 500000.0f)
                  .f32("olmo2.rope.freq_base_swa", 1000.0f)
                  .str("olmo2.rope.scaling.type", "yarn")
                  .f32("olmo2.rope.scaling.factor", 8.0f)
                  .f32("olmo2.rope.scaling.attn_factor", 1.5f)
                  .u32("olmo2.rope.scaling.original_context_length", 8192),
              "olmo2");
  for (std::size_t il = 0; il < 4; ++il) {
    CAPTURE(il);
    const posemb::LayerPositions& layer = plan.model.layers[il];
    const posemb::GgufLayerRope& rope = *plan.ropes[il];
    if (il % 2 == 0) {
      CHECK(layer.attention.sliding_window == std::optional<std::int64_t>(4096));
      CHECK(rope.rope_type == "default");
      CHECK(rope.attention_scale == 1.0);
      CHECK(rope.inv_freq[5] == Approx(ggml_inv_freq(500000.0, 5, 128)).epsilon(1e-15));
    } else {
      CHECK_FALSE(layer.attention.sliding_window);
      CHECK(rope.rope_type == "yarn");
      // Lowest frequency pair interpolated: scale 1/8 of the extrapolated one.
      CHECK(rope.inv_freq[63] == Approx(ggml_inv_freq(500000.0, 63, 128) / 8.0).epsilon(1e-12));
      CHECK(rope.attention_scale ==
            Approx(1.5 * (1.0 + 0.1 * std::log(8.0)) / (1.0 + 0.1 * std::log(8.0)) *
                   (1.0 + 0.1 * std::log(8.0)))
                .epsilon(1e-12));
    }
  }
  // Olmo 2 (no window): no SWA layer; a UINT32 pattern sets the period.
  const auto dense = plan_of(test_gguf::model_writer("olmo2", 4, 4096, 512, 4), "olmo2_dense");
  for (const auto& layer : dense.model.layers) CHECK_FALSE(layer.attention.sliding_window);
  const auto period = plan_of(
      test_gguf::model_writer("olmo2", 4, 4096, 512, 4).u32("olmo2.attention.sliding_window", 128),
      "olmo2_period");
  for (std::size_t il = 0; il < 4; ++il) {
    CHECK(period.model.layers[il].attention.sliding_window.has_value() == (il % 4 < 3));
  }
}

TEST_CASE("olmo2: a pattern of the wrong length is refused naming the key") {
  const std::string path = temp_gguf("olmo2_bad");
  test_gguf::model_writer("olmo2", 4, 4096, 512, 4)
      .u32("olmo2.attention.sliding_window", 128)
      .bools("olmo2.attention.sliding_window_pattern", {true, false})
      .write(path);
  CHECK_THROWS_WITH(posemb::read_gguf_positions(path),
                    Catch::Contains("olmo2.attention.sliding_window_pattern.size() = 2") &&
                        Catch::Contains("block_count = 4"));
  std::filesystem::remove(path);
}

TEST_CASE("qwen3next: gated DeltaNet layers have no positions, attention layers NEOX partial") {
  // load_arch_hparams: recurrent iff (il + 1) % full_attention_interval != 0 (default 4), or
  // attention.recurrent_layers; the attention layers rotate rope.dimension_count features.
  const auto plan = plan_of(test_gguf::model_writer("qwen3next", 8, 4096, 256, 2)
                                .u32("qwen3next.attention.key_length", 128)
                                .u32("qwen3next.rope.dimension_count", 32),
                            "qwen3next");
  for (std::size_t il = 0; il < 8; ++il) {
    CAPTURE(il);
    const posemb::LayerPositions& layer = plan.model.layers[il];
    const bool attention = (il + 1) % 4 == 0;
    CHECK(layer.softmax_attention() == attention);
    CHECK(layer.layer_type == (attention ? "full_attention" : "linear_attention"));
    CHECK((layer.kind == posemb::PositionKind::Rope) == attention);
    if (!attention) continue;
    CHECK(layer.rope->rotary_dim == 32);
    CHECK(layer.rope->pairing == posemb::Pairing::RotateHalf);
    CHECK(*layer.attention.softmax_scale == Approx(1.0 / std::sqrt(128.0)));
  }
  const auto flags =
      plan_of(test_gguf::model_writer("qwen3next", 4, 4096, 256, 2)
                  .bools("qwen3next.attention.recurrent_layers", {false, true, true, false}),
              "qwen3next_flags");
  CHECK(flags.model.layers[0].kind == posemb::PositionKind::Rope);
  CHECK(flags.model.layers[1].layer_type == "linear_attention");
  CHECK(flags.model.layers[3].kind == posemb::PositionKind::Rope);
  const auto interval = plan_of(test_gguf::model_writer("qwen3next", 4, 4096, 256, 2)
                                    .u32("qwen3next.full_attention_interval", 2),
                                "qwen3next_interval");
  CHECK(interval.model.layers[1].kind == posemb::PositionKind::Rope);
  CHECK(interval.model.layers[2].layer_type == "linear_attention");
}

TEST_CASE("gemma4: SWA layers by flags with their own head, full layers rope_freqs, scale 1") {
  // load_arch_hparams: SWA flags and window required; key_length_swa; f_attention_scale 1.
  // load_hparams: rope.dimension_count_swa; the SWA base rope.freq_base_swa else 10000 and scale
  // 1 (llama_hparams); graph: rope_freqs on the full layers only (proportional RoPE).
  std::vector<float> factors(64, 1.0f);
  for (std::size_t i = 16; i < 64; ++i) factors[i] = 1e30f;  // proportional: 1/4 rotated
  const auto plan =
      plan_of(test_gguf::model_writer("gemma4", 3, 131072, 512, 4)
                  .u32("gemma4.attention.key_length", 128)
                  .u32("gemma4.attention.key_length_swa", 64)
                  .u32("gemma4.rope.dimension_count_swa", 64)
                  .u32("gemma4.attention.sliding_window", 512)
                  .bools("gemma4.attention.sliding_window_pattern", {true, true, false})
                  .f32("gemma4.rope.freq_base", 1000000.0f)
                  .str("gemma4.rope.scaling.type", "linear")
                  .f32("gemma4.rope.scaling.factor", 2.0f)
                  .tensor("rope_freqs.weight", factors),
              "gemma4");
  const posemb::LayerPositions& swa = plan.model.layers[0];
  CHECK(swa.head_dim == 64);
  CHECK(swa.attention.sliding_window == std::optional<std::int64_t>(512));
  CHECK(swa.rope->rotary_dim == 64);
  CHECK(*swa.attention.softmax_scale == 1.0);
  CHECK(plan.ropes[0]->rope_type == "default");
  CHECK(plan.ropes[0]->inv_freq[7] == Approx(ggml_inv_freq(10000.0, 7, 64)).epsilon(1e-15));
  const posemb::LayerPositions& full = plan.model.layers[2];
  CHECK(full.head_dim == 128);
  CHECK_FALSE(full.attention.sliding_window);
  CHECK(full.rope->rotary_dim == 128);
  CHECK(*full.attention.softmax_scale == 1.0);
  CHECK(plan.ropes[2]->rope_type == "llama3");
  CHECK(plan.ropes[2]->inv_freq[3] ==
        Approx(ggml_inv_freq(1000000.0, 3, 128) / 2.0).epsilon(1e-15));
  CHECK(plan.ropes[2]->inv_freq[40] ==
        Approx(ggml_inv_freq(1000000.0, 40, 128) / 2.0 / 1e30).epsilon(1e-6));
}

TEST_CASE("gemma4 without its per-layer SWA flags or key_length_swa is refused naming the key") {
  const std::string path = temp_gguf("gemma4_bad");
  test_gguf::model_writer("gemma4", 3, 4096, 512, 4)
      .u32("gemma4.attention.key_length_swa", 64)
      .u32("gemma4.rope.dimension_count_swa", 64)
      .u32("gemma4.attention.sliding_window", 512)
      .write(path);
  CHECK_THROWS_WITH(posemb::read_gguf_positions(path),
                    Catch::Contains("gemma4.attention.sliding_window_pattern: missing"));
  test_gguf::model_writer("gemma4", 3, 4096, 512, 4)
      .u32("gemma4.attention.sliding_window", 512)
      .bools("gemma4.attention.sliding_window_pattern", {true, true, false})
      .write(path);
  CHECK_THROWS_WITH(posemb::read_gguf_positions(path),
                    Catch::Contains("gemma4.attention.key_length_swa: missing"));
  std::filesystem::remove(path);
}

TEST_CASE("glm4moe: the nextn (MTP) layers are not in the plan, NEOX partial unless M-RoPE") {
  // llama_hparams::n_layer() = block_count - nextn_predict_layers (src/llama-hparams.cpp); the
  // per-layer arrays stay block_count long.
  const auto plan = plan_of(test_gguf::model_writer("glm4moe", 3, 131072, 64, 2)
                                .u32("glm4moe.nextn_predict_layers", 1)
                                .u32("glm4moe.attention.key_length", 128)
                                .u32("glm4moe.rope.dimension_count", 64)
                                .f32("glm4moe.rope.freq_base", 1000000.0f),
                            "glm4moe");
  REQUIRE(plan.model.layers.size() == 2);
  CHECK(plan.hparams.rope_mode == posemb::GgufRopeMode::Neox);
  CHECK(plan.model.layers[1].rope->rotary_dim == 64);
  CHECK(plan.ropes[1]->inv_freq[5] == Approx(ggml_inv_freq(1000000.0, 5, 64)).epsilon(1e-15));
  const auto mrope = plan_of(test_gguf::model_writer("glm4moe", 2, 4096, 64, 2)
                                 .u32("glm4moe.attention.key_length", 128)
                                 .u32("glm4moe.rope.dimension_count", 64)
                                 .ints("glm4moe.rope.dimension_sections", {8, 12, 12, 0}),
                             "glm4moe_mrope");
  CHECK(mrope.hparams.rope_mode == posemb::GgufRopeMode::Mrope);
  const std::string path = temp_gguf("glm4moe_bad");
  test_gguf::model_writer("glm4moe", 2, 4096, 64, 2)
      .u32("glm4moe.nextn_predict_layers", 2)
      .write(path);
  CHECK_THROWS_WITH(
      posemb::read_gguf_positions(path),
      Catch::Contains("glm4moe.nextn_predict_layers = 2: expected < block_count = 2"));
  std::filesystem::remove(path);
}

TEST_CASE("hunyuan-dense: rope.scaling.alpha scales the base by alpha^(d / (d - 2))") {
  // src/models/hunyuan-vl.cpp, load_arch_hparams (in float).
  const auto plan = plan_of(test_gguf::model_writer("hunyuan-dense", 2, 4096, 256, 2)
                                .u32("hunyuan-dense.attention.key_length", 128)
                                .f32("hunyuan-dense.rope.freq_base", 10000.0f)
                                .f32("hunyuan-dense.rope.scaling.alpha", 1000.0f),
                            "hunyuan");
  const double base = 10000.0 * std::pow(1000.0, 128.0 / 126.0);
  CHECK(plan.hparams.freq_base == Approx(base).epsilon(1e-7));
  CHECK(plan.ropes[0]->inv_freq[10] == Approx(ggml_inv_freq(base, 10, 128)).epsilon(1e-6));
  const auto plain = plan_of(test_gguf::model_writer("hunyuan-dense", 2, 4096, 256, 2)
                                 .f32("hunyuan-dense.rope.freq_base", 10000.0f),
                             "hunyuan_plain");
  CHECK(plain.hparams.freq_base == 10000.0);
}

TEST_CASE("granite_swa: SWA flags, rope_pattern's NoPE layers, sinks, one global base") {
  // src/models/granite-swa.cpp: is_swa from attention.sliding_window_pattern, rope_pattern from
  // attention.rope_pattern (has_rope), attn_sinks on every layer, ggml_rope_ext with the global
  // freq_base / freq_scale on every layer (rope.freq_base_swa is not read).
  const auto plan =
      plan_of(test_gguf::model_writer("granite_swa", 4, 8192, 256, 2)
                  .u32("granite_swa.attention.sliding_window", 128)
                  .bools("granite_swa.attention.sliding_window_pattern", {false, true, true, true})
                  .bools("granite_swa.attention.rope_pattern", {true, true, false, true})
                  .f32("granite_swa.rope.freq_base", 500000.0f)
                  .f32("granite_swa.rope.freq_base_swa", 1000.0f)
                  .f32("granite_swa.attention.scale", 0.015625f),
              "granite_swa");
  for (std::size_t il = 0; il < 4; ++il) {
    CAPTURE(il);
    const posemb::LayerPositions& layer = plan.model.layers[il];
    CHECK(layer.attention.sliding_window.has_value() == (il != 0));
    CHECK((layer.kind == posemb::PositionKind::None) == (il == 2));
    CHECK(layer.attention.attention_sinks);
    CHECK(*layer.attention.softmax_scale == Approx(0.015625));
    if (il == 2) continue;
    CHECK(layer.rope->pairing == posemb::Pairing::RotateHalf);
    CHECK(plan.ropes[il]->inv_freq[4] == Approx(ggml_inv_freq(500000.0, 4, 128)).epsilon(1e-15));
  }
}
