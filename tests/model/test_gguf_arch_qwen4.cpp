// The rows of model/gguf_archs.hpp for two hybrid architectures of the pinned llama.cpp
// (llama-cpp-python 0.3.36's sdist, vendor/llama.cpp): qwen4exp (src/models/qwen4exp.cpp: Gated
// DeltaNet layers, interleaved M-RoPE attention layers and QSA's indexer) and bailingmoe3
// (src/models/bailingmoe3.cpp: KDA linear-attention layers beside MLA, M-RoPE in the VL files).
// Each on a GGUF the test writes with the keys llama.cpp's loader reads; the expected frequencies
// are ggml_rope_cache_init's, written here again.
//
// transformers 5.25.0 has both models. Qwen4ExpForCausalLM is the llama.cpp harness's case
// qwen4_exp (conformance/llamacpp/build_models.py), converted by conversion/qwen4exp.py, but with
// every attention.compress_ratios entry 0 (the config read through AutoConfig names the attention
// layers "indexed_attention", the converter writes the ratio only for "full_attention"), so
// llama.cpp runs that file dense and only the GGUFs written here have QSA layers.
// BailingHybridForCausalLM (model_type bailing_hybrid, Ling-3.0) is not converted: the
// converter's verdict on a tiny one is "Model BailingHybridForCausalLM is not supported"
// (conversion/bailingmoe3.py registers BailingMoeV3ForCausalLM and
// BailingMoeV3VLForConditionalGeneration), and with its architectures renamed
// BailingMoeV3ForCausalLM "ValueError: BailingMoeV3 KDA LoRA projections are not supported"
// (set_gguf_parameters requires no_kda_lora, which BailingHybridConfig does not have).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "model/gguf_plan.hpp"
#include "posemb/model/gguf.hpp"

namespace {

using test_gguf::check_refused;
using test_gguf::ggml_inv_freq;
using test_gguf::plan_of;

// Layer il rotates n_rot features by ggml's base^(-2i / n_rot), magnitude 1.
void check_frequencies(const posemb::GgufPositions& plan, std::size_t il, int n_rot, double base) {
  CAPTURE(il);
  REQUIRE(plan.ropes[il]);
  const posemb::LayerPositions& layer = plan.model.layers[il];
  REQUIRE(layer.rope);
  CHECK(layer.rope->rotary_dim == n_rot);
  CHECK(plan.ropes[il]->attention_scale == 1.0);
  REQUIRE(plan.ropes[il]->inv_freq.size() == n_rot / 2);
  for (int i = 0; i < n_rot / 2; ++i) {
    CHECK(plan.ropes[il]->inv_freq[i] == Approx(ggml_inv_freq(base, i, n_rot)).epsilon(1e-14));
  }
}

// qwen4exp as Qwen4ExpTextModel writes it: 8 layers, heads of 64 rotating 16 (partial 0.25),
// IMROPE sections [2, 3, 3, 0], the indexer 32 wide; compress_ratios r on the attention layers
// (every 4th by default), 0 elsewhere.
test_gguf::GgufWriter qwen4exp_writer() {
  const std::string a = "qwen4exp";
  return test_gguf::model_writer(a, 8, 4096, 256, 4)
      .u32(a + ".attention.head_count_kv", 2)
      .u32(a + ".attention.key_length", 64)
      .u32(a + ".attention.value_length", 64)
      .u32(a + ".rope.dimension_count", 16)
      .f32(a + ".rope.freq_base", 10000000.0f)
      .ints(a + ".rope.dimension_sections", {2, 3, 3, 0})
      .u32(a + ".attention.indexer.head_count", 2)
      .u32(a + ".attention.indexer.key_length", 32)
      .u32(a + ".attention.indexer.top_k", 16);
}

}  // namespace

TEST_CASE("qwen4exp: DeltaNet layers, partial IMROPE, QSA's indexer rotating like its layer") {
  const auto plan = plan_of(
      qwen4exp_writer().ints("qwen4exp.attention.compress_ratios", {0, 0, 0, 4, 0, 0, 0, 8}),
      "qwen4exp");
  CHECK(std::string(posemb::to_string(plan.hparams.rope_mode)) == "imrope");
  REQUIRE(plan.model.layers.size() == 8);
  for (std::size_t il = 0; il < 8; ++il) {
    CAPTURE(il);
    const posemb::LayerPositions& layer = plan.model.layers[il];
    if (il % 4 != 3) {  // is_recr_impl[i] = (i + 1) % full_attention_interval != 0
      CHECK(layer.layer_type == "linear_attention");
      CHECK_FALSE(plan.ropes[il]);
      CHECK_FALSE(layer.indexer);
      continue;
    }
    check_frequencies(plan, il, 16, static_cast<double>(10000000.0f));
    CHECK(layer.layer_type == "indexed_attention");
    CHECK(layer.rope->pairing == posemb::Pairing::RotateHalf);
    CHECK(layer.rope->mrope_section == posemb::MropeSections{2, 3, 3});
    CHECK(layer.rope->mrope_layout == posemb::MropeLayout::Interleaved);
    CHECK(layer.rotary_offset == 0);
    CHECK(*layer.attention.softmax_scale == Approx(1.0 / 8.0));  // 1/sqrt(n_embd_head)
    // build_qsa_top_k: indexer_q and the pooled keys through ggml_rope_multi with the layer's
    // n_rot, sections, rope_type, base and scale: the first 16 of 32 features, the same cos/sin.
    REQUIRE(layer.indexer);
    CHECK(layer.indexer->head_dim == 32);
    CHECK(layer.indexer->rotary_offset == 0);
    CHECK(layer.indexer->key_block == (il == 3 ? 4 : 8));
    CHECK(layer.indexer->rope.pairing == posemb::Pairing::RotateHalf);
    CHECK(layer.indexer->rope.mrope_section == posemb::MropeSections{2, 3, 3});
    CHECK(layer.indexer->rope.mrope_layout == posemb::MropeLayout::Interleaved);
    const posemb::RopeSpec indexer = layer.indexer_rope_spec();
    const posemb::RopeSpec attention = layer.rope_spec();
    REQUIRE(indexer.rotary_dim == 16);
    CHECK(indexer.head_dim == 16);
    // Property: the indexer's frequencies are the attention's, element for element.
    for (int i = 0; i < 8; ++i) CHECK(indexer.inv_freq[i] == attention.inv_freq[i]);
  }
}

TEST_CASE("qwen4exp: recurrent flags, full_attention_interval and a UINT32 compress ratio") {
  // get_key_or_arr(LLM_KV_ATTENTION_RECURRENT_LAYERS, ...) else every full_attention_interval-th
  // layer attends; get_key_or_arr(LLM_KV_ATTENTION_COMPRESS_RATIOS, ...): one value for all.
  const auto flags = plan_of(qwen4exp_writer()
                                 .bools("qwen4exp.attention.recurrent_layers",
                                        {true, false, true, true, false, true, true, true})
                                 .u32("qwen4exp.attention.compress_ratios", 16),
                             "qwen4exp_flags");
  for (std::size_t il = 0; il < 8; ++il) {
    CAPTURE(il);
    const bool attention = il == 1 || il == 4;
    CHECK(flags.ropes[il].has_value() == attention);
    CHECK(flags.model.layers[il].indexer.has_value() == attention);
    if (attention) CHECK(flags.model.layers[il].indexer->key_block == 16);
  }
  const auto interval =
      plan_of(qwen4exp_writer().u32("qwen4exp.full_attention_interval", 2), "qwen4exp_interval");
  for (std::size_t il = 0; il < 8; ++il) {
    CAPTURE(il);
    CHECK(interval.ropes[il].has_value() == (il % 2 == 1));
    // No compress_ratios: every ratio 0, dense attention (build_layer_attn's qsa false).
    CHECK(interval.model.layers[il].layer_type ==
          (il % 2 == 1 ? "full_attention" : "linear_attention"));
    CHECK_FALSE(interval.model.layers[il].indexer);
  }
}

TEST_CASE("qwen4exp: missing sections or indexer width, bad ratios and interval are refused") {
  const std::string a = "qwen4exp";
  test_gguf::GgufWriter no_sections = test_gguf::model_writer(a, 4, 4096, 256, 4)
                                          .u32(a + ".attention.key_length", 64)
                                          .u32(a + ".rope.dimension_count", 16)
                                          .u32(a + ".attention.indexer.key_length", 32);
  check_refused(no_sections, "q4_nosec", a + ".rope.dimension_sections: missing");
  test_gguf::GgufWriter no_indexer = test_gguf::model_writer(a, 4, 4096, 256, 4)
                                         .u32(a + ".attention.key_length", 64)
                                         .u32(a + ".rope.dimension_count", 16)
                                         .ints(a + ".rope.dimension_sections", {2, 3, 3, 0});
  check_refused(no_indexer, "q4_noidx", a + ".attention.indexer.key_length: missing");
  // ggml's ROPE op: GGML_ASSERT(n_dims <= ne0) on the 8-wide indexer head rotating 16.
  check_refused(test_gguf::GgufWriter(no_indexer).u32(a + ".attention.indexer.key_length", 8),
                "q4_narrow", a + ".attention.indexer.key_length");
  check_refused(qwen4exp_writer().ints(a + ".attention.compress_ratios", {0, 4, 0}), "q4_len",
                a + ".attention.compress_ratios.size()");
  check_refused(qwen4exp_writer().ints(a + ".attention.compress_ratios", {0, 0, 0, 65, 0, 0, 0, 4}),
                "q4_r65", a + ".attention.compress_ratios[3]");
  check_refused(qwen4exp_writer().u32(a + ".full_attention_interval", 0), "q4_interval",
                a + ".full_attention_interval");
}

namespace {

// bailingmoe3 as BailingMoeV3Model writes it: 4 layers plus one MTP layer (block_count 5),
// head_count_kv 1 on the full-attention layers (the 4th and the MTP layer), 0 on the KDA ones;
// MLA: key_length = kv_lora_rank 512 + 64, key_length_mla 192 = 128 nope + 64 rope.
test_gguf::GgufWriter bailingmoe3_writer(const std::vector<std::int64_t>& kv = {0, 0, 0, 1, 1}) {
  const std::string a = "bailingmoe3";
  return test_gguf::model_writer(a, 5, 4096, 256, 4)
      .u32(a + ".nextn_predict_layers", 1)
      .ints(a + ".attention.head_count_kv", kv)
      .u32(a + ".attention.key_length", 576)
      .u32(a + ".attention.value_length", 512)
      .u32(a + ".attention.key_length_mla", 192)
      .u32(a + ".attention.value_length_mla", 128)
      .u32(a + ".rope.dimension_count", 64)
      .f32(a + ".rope.freq_base", 6000000.0f);
}

}  // namespace

TEST_CASE("bailingmoe3: KDA layers without positions, MLA's last 64 of 192 rotated NORM") {
  const auto plan = plan_of(bailingmoe3_writer(), "bailingmoe3");
  CHECK(std::string(posemb::to_string(plan.hparams.rope_mode)) == "norm");
  REQUIRE(plan.model.layers.size() == 4);  // n_layer() = block_count - nextn_predict_layers
  for (std::size_t il = 0; il < 3; ++il) {
    CHECK(plan.model.layers[il].layer_type == "linear_attention");
    CHECK_FALSE(plan.ropes[il]);
  }
  check_frequencies(plan, 3, 64, static_cast<double>(6000000.0f));
  const posemb::LayerPositions& layer = plan.model.layers[3];
  CHECK(layer.layer_type == "full_attention");
  CHECK(layer.head_dim == 192);
  CHECK(layer.rotary_offset == 128);  // ggml_concat(q_nope, q_pe): the rope slice last
  CHECK(layer.rope->pairing == posemb::Pairing::Interleaved);
  CHECK_FALSE(layer.rope->mrope_section);
  CHECK_FALSE(layer.indexer);
  CHECK(*layer.attention.softmax_scale == Approx(1.0 / std::sqrt(192.0)));
}

TEST_CASE("bailingmoe3: M-RoPE with sections 0 and 1 set, else NORM without them") {
  const std::string a = "bailingmoe3";
  const auto vl =
      plan_of(bailingmoe3_writer().ints(a + ".rope.dimension_sections", {8, 12, 12, 0}), "b3_vl");
  CHECK(std::string(posemb::to_string(vl.hparams.rope_mode)) == "mrope");
  check_frequencies(vl, 3, 64, static_cast<double>(6000000.0f));
  CHECK(vl.model.layers[3].rope->pairing == posemb::Pairing::RotateHalf);
  CHECK(vl.model.layers[3].rope->mrope_section == posemb::MropeSections{8, 12, 12});
  CHECK(vl.model.layers[3].rope->mrope_layout == posemb::MropeLayout::Chunked);
  CHECK(vl.model.layers[3].rotary_offset == 128);
  // llama_hparams::use_mrope: sections[0] > 0 && sections[1] > 0.
  const auto text =
      plan_of(bailingmoe3_writer().ints(a + ".rope.dimension_sections", {32, 0, 0, 0}), "b3_t");
  CHECK(std::string(posemb::to_string(text.hparams.rope_mode)) == "norm");
  CHECK_FALSE(text.model.layers[3].rope->mrope_section);
  CHECK(text.model.layers[3].rope->pairing == posemb::Pairing::Interleaved);
}

TEST_CASE("bailingmoe3: YaRN's magnitude on the rotation, kq_scale without MLA's mscale^2") {
  // The graph's kq_scale is 1/sqrt(qk_head_dim) (no mscale); load_arch_hparams reads no
  // yarn_log_multiplier, so llama_context's yarn_attn_factor is get_mscale(F) / (1 + 0.1 ln F)
  // = 1 and rope_yarn multiplies by 1 + 0.1 ln F.
  const std::string a = "bailingmoe3";
  const auto plan = plan_of(bailingmoe3_writer()
                                .str(a + ".rope.scaling.type", "yarn")
                                .f32(a + ".rope.scaling.factor", 4.0f)
                                .u32(a + ".rope.scaling.original_context_length", 1024)
                                .f32(a + ".rope.scaling.yarn_log_multiplier", 0.1f),
                            "b3_yarn");
  REQUIRE(plan.ropes[3]);
  CHECK(plan.ropes[3]->attention_scale == Approx(1.0 + 0.1 * std::log(4.0)).epsilon(1e-12));
  CHECK(*plan.model.layers[3].attention.softmax_scale == Approx(1.0 / std::sqrt(192.0)));
}

TEST_CASE("bailingmoe3: missing MLA widths or a short head_count_kv are refused, naming it") {
  const std::string a = "bailingmoe3";
  const auto without = [&](const std::string& missing) {
    test_gguf::GgufWriter w = test_gguf::model_writer(a, 2, 4096, 256, 4)
                                  .ints(a + ".attention.head_count_kv", {0, 1})
                                  .u32(a + ".attention.key_length", 576)
                                  .u32(a + ".rope.dimension_count", 64);
    if (missing != "key_length_mla") w.u32(a + ".attention.key_length_mla", 192);
    if (missing != "value_length_mla") w.u32(a + ".attention.value_length_mla", 128);
    return w;
  };
  check_refused(without("key_length_mla"), "b3_nok", a + ".attention.key_length_mla: missing");
  check_refused(without("value_length_mla"), "b3_nov", a + ".attention.value_length_mla: missing");
  check_refused(bailingmoe3_writer({0, 0, 1}), "b3_kv", a + ".attention.head_count_kv.size()");
}
