// The rows of model/gguf_archs.hpp for llama.cpp's draft and adapter architectures: eagle3
// (src/models/eagle3.cpp), dflash (src/models/dflash.cpp) and graniteswitch
// (src/models/granite-switch.cpp) of the pinned llama.cpp (llama-cpp-python 0.3.36's sdist), each
// on a GGUF the test writes with the keys the arch's load_arch_hparams reads, its plan per layer
// against the rule as the source states it. The expected frequencies are ggml_rope_cache_init's,
// written here again (gguf_plan.hpp).
//
// The real thing (conformance/llamacpp): transformers 5.25.0 builds a model the pinned converter
// turns into dflash, none for the other two.
//   dflash:        MuseGlimmerAssistantModel -> dflash (conversion/muse_glimmer.py), the harness's
//                  DRAFT_CASES muse_glimmer_assistant, run beside the tiny llama as ctx_other (the
//                  draft has no token_embd or output: "dflash requires ctx_other to be set",
//                  src/llama-context.cpp); the converter's other dflash classes (DFlashDraftModel,
//                  DFlash2DraftModel, DSpark*: conversion/qwen.py, gemma.py, deepseek.py) are not
//                  in transformers.
//   eagle3:        conversion/llama.py switches LlamaModel to EAGLE3 for a config with
//                  draft_vocab_size and one layer, and needs --target-model-dir plus the draft's
//                  own tensors (fc, d2t, hidden_norm, q/k/v over 2 * hidden_size); transformers has
//                  no EAGLE-3 model class (no "eagle" in its models/).
//   graniteswitch: conversion/granite.py registers GraniteSwitchForCausalLM, which transformers
//                  5.25.0 does not have (remote code of ibm-granite/granite-switch-*).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/gguf_plan.hpp"
#include "posemb/model/gguf.hpp"

namespace {

using test_gguf::check_refused;
using test_gguf::ggml_inv_freq;
using test_gguf::plan_of;

// `layers` layers of 4 heads of 64 (n_embd 256), base 500000, n_rot as given.
test_gguf::GgufWriter sized(const std::string& arch, std::uint32_t layers, std::uint32_t n_rot) {
  return test_gguf::model_writer(arch, layers, 8192, 256, 4)
      .u32(arch + ".attention.key_length", 64)
      .u32(arch + ".rope.dimension_count", n_rot)
      .f32(arch + ".rope.freq_base", 500000.0f)
      .f32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
}

// eagle3's load_arch_hparams: target_layers (3 ids) and target_hidden_size.
test_gguf::GgufWriter eagle3(std::uint32_t layers = 1, std::uint32_t n_rot = 64) {
  return sized("eagle3", layers, n_rot)
      .ints("eagle3.target_layers", {2, 16, 29})
      .u32("eagle3.target_hidden_size", 512);
}

// dflash's load_arch_hparams: target_layers (any number of ids).
test_gguf::GgufWriter dflash(std::uint32_t layers = 3, std::uint32_t n_rot = 64) {
  return sized("dflash", layers, n_rot).ints("dflash.target_layers", {2, 9, 17, 25, 33});
}

// granite-switch's load_arch_hparams: logit_scale and the adapters' keys.
test_gguf::GgufWriter graniteswitch(std::uint32_t layers = 2, std::uint32_t n_rot = 64) {
  return sized("graniteswitch", layers, n_rot)
      .f32("graniteswitch.logit_scale", 8.0f)
      .u32("graniteswitch.adapters.count", 2)
      .u32("graniteswitch.adapters.lora_rank", 8)
      .ints("graniteswitch.adapters.token_ids_activate", {100, 101})
      .ints("graniteswitch.adapters.token_ids_substitute", {5, 6});
}

// dflash's rope_freqs, created { n_embd_head_k / 2 } (32 for heads of 64): 2 for the first 16
// pairs, which ggml reads for n_rot 32 (freq_factors[i0 / 2], i0 < n_dims), 9 after.
std::vector<float> head_wide_factors() {
  std::vector<float> factors(32, 9.0f);
  std::fill(factors.begin(), factors.begin() + 16, 2.0f);
  return factors;
}

// Layer il rotates n_rot features by base^(-2i / n_rot) / ff_i, magnitude 1.
void check_rope(const posemb::GgufPositions& plan, std::size_t il, int n_rot, double base,
                double ff = 1.0) {
  CAPTURE(il);
  REQUIRE(plan.model.layers[il].kind == posemb::PositionKind::Rope);
  REQUIRE(plan.ropes[il]);
  CHECK(plan.model.layers[il].rope->rotary_dim == n_rot);
  CHECK(plan.ropes[il]->attention_scale == 1.0);
  REQUIRE(plan.ropes[il]->inv_freq.size() == n_rot / 2);
  for (int i = 0; i < n_rot / 2; ++i) {
    CHECK(plan.ropes[il]->inv_freq[i] == Approx(ggml_inv_freq(base, i, n_rot) / ff).epsilon(1e-14));
  }
  // A geometric sequence: each pair turns base^(-2 / n_rot) times as fast as the one before.
  const double ratio = std::pow(base, -2.0 / n_rot);
  for (int i = 1; i < n_rot / 2; ++i) {
    CHECK(plan.ropes[il]->inv_freq[i] / plan.ropes[il]->inv_freq[i - 1] ==
          Approx(ratio).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("eagle3: its one layer NORM (permuted), rope_freqs, kq_scale 1/sqrt(head)") {
  // src/models/eagle3.cpp graph<false>: ggml_rope_ext(Qcur, inp_pos, get_rope_factors, n_rot,
  // rope_type, ..., freq_base, freq_scale, ...); kq_scale = 1.0f / sqrtf(n_embd_head).
  const auto plan = plan_of(eagle3(), "eagle3");
  CHECK(std::string(posemb::to_string(plan.hparams.rope_mode)) == "norm");
  REQUIRE(plan.model.layers.size() == 1);
  check_rope(plan, 0, 64, 500000.0);
  CHECK(plan.model.layers[0].rope->pairing == posemb::Pairing::RotateHalf);  // LlamaModel.permute
  CHECK(*plan.model.layers[0].attention.softmax_scale == Approx(0.125).epsilon(1e-15));
  // rope_freqs ({n_rot / 2}, TENSOR_NOT_REQUIRED) divides every frequency; n_rot may be partial.
  const auto factored =
      plan_of(eagle3(1, 32).tensor("rope_freqs.weight", std::vector<float>(16, 4.0f)), "eagle3_ff");
  check_rope(factored, 0, 32, 500000.0, 4.0);
  CHECK(*factored.model.layers[0].attention.softmax_scale == Approx(0.125).epsilon(1e-15));
}

TEST_CASE("eagle3 refuses what its loader and graph refuse") {
  // GGML_ASSERT(n_layer == 1); "requires 'extract_layers'"; "exactly 3 entries"; get_key of
  // target_hidden_size.
  check_refused(eagle3(2), "eagle3_2", "eagle3.block_count = 2: expected 1");
  check_refused(sized("eagle3", 1, 64).u32("eagle3.target_hidden_size", 512), "eagle3_nolayers",
                "eagle3.target_layers: missing");
  check_refused(sized("eagle3", 1, 64)
                    .ints("eagle3.target_layers", {2, 16})
                    .u32("eagle3.target_hidden_size", 512),
                "eagle3_two", "eagle3.target_layers.size() = 2: expected 3");
  check_refused(sized("eagle3", 1, 64).ints("eagle3.target_layers", {2, 16, 29}), "eagle3_nohidden",
                "eagle3.target_hidden_size: missing");
}

TEST_CASE("dflash: NEOX with rope_freqs on every layer, attention.scale, optional sinks") {
  // llama_model_rope_type: NEOX without sections; build_rope: ggml_rope_ext(...,
  // model.layers[0].rope_freqs, n_rot, ..., freq_base, freq_scale, ...) on every layer.
  const auto plan = plan_of(dflash(3, 32)
                                .f32("dflash.attention.scale", 0.2f)
                                .tensor("rope_freqs.weight", head_wide_factors())
                                .tensor("blk.1.attn_sinks.weight", std::vector<float>(4, 0.0f)),
                            "dflash");
  CHECK(std::string(posemb::to_string(plan.hparams.rope_mode)) == "neox");
  REQUIRE(plan.model.layers.size() == 3);
  for (std::size_t il = 0; il < 3; ++il) {
    check_rope(plan, il, 32, 500000.0, 2.0);
    const posemb::LayerPositions& layer = plan.model.layers[il];
    CHECK(layer.rope->pairing == posemb::Pairing::RotateHalf);
    CHECK_FALSE(layer.rope->mrope_section);
    CHECK(*layer.attention.softmax_scale == Approx(0.2f).epsilon(1e-15));
    // layer.attn_sinks: blk.il.attn_sinks (TENSOR_NOT_REQUIRED) only where the file has it.
    CHECK(layer.attention.attention_sinks == (il == 1));
    CHECK_FALSE(layer.attention.sliding_window);
  }
  // A rope_freqs of n_rot / 2 factors is not the shape load_arch_tensors creates.
  check_refused(dflash(3, 32).tensor("rope_freqs.weight", std::vector<float>(16, 2.0f)),
                "dflash_ff16", "expected F32 (0) of shape [head_dim / 2 = 32]");
  // No attention.scale: 1/sqrt(n_embd_head).
  CHECK(*plan_of(dflash(), "dflash_kq").model.layers[0].attention.softmax_scale ==
        Approx(0.125).epsilon(1e-15));
}

TEST_CASE("dflash: M-RoPE for any non-zero section, without factors, NEOX for all-zero ones") {
  // llama_model_rope_type: MROPE iff s[0] || s[1] || s[2] || s[3]; build_rope's ggml_rope_multi
  // gets nullptr factors.
  const auto plan = plan_of(dflash(2, 64)
                                .ints("dflash.rope.dimension_sections", {32, 0, 0, 0})
                                .tensor("rope_freqs.weight", std::vector<float>(32, 2.0f)),
                            "dflash_mrope");
  CHECK(std::string(posemb::to_string(plan.hparams.rope_mode)) == "mrope");
  for (std::size_t il = 0; il < 2; ++il) {
    check_rope(plan, il, 64, 500000.0);
    CHECK(plan.model.layers[il].rope->mrope_section == posemb::MropeSections{32, 0, 0});
  }
  // The converter writes [head_dim / 2, 0, 0, 0] for a partial rotation too: every pair's sector
  // (i % 32) is below 32, all temporal, as [n_rot / 2] says.
  const auto partial =
      plan_of(dflash(2, 32).ints("dflash.rope.dimension_sections", {32, 0, 0, 0}), "dflash_part");
  check_rope(partial, 1, 32, 500000.0);
  CHECK(partial.model.layers[1].rope->mrope_section == posemb::MropeSections{16, 0, 0});
  const auto zero =
      plan_of(dflash(2, 64).ints("dflash.rope.dimension_sections", {0, 0, 0, 0}), "dflash_zero");
  CHECK(std::string(posemb::to_string(zero.hparams.rope_mode)) == "neox");
  CHECK_FALSE(zero.model.layers[0].rope->mrope_section);
  // Temporal-only M-RoPE at text positions (one position in every stream) is plain NEOX.
  for (int i = 0; i < 32; ++i) CHECK(plan.ropes[0]->inv_freq[i] == zero.ropes[0]->inv_freq[i]);
}

TEST_CASE("dflash: sliding layers from the flags, the global base and scale on all") {
  // load_arch_hparams: attention.sliding_window > 0 -> get_arr(sliding_window_pattern), required;
  // rope_freq_base_train_swa = rope_freq_base_train.
  const auto plan =
      plan_of(dflash(3)
                  .u32("dflash.attention.sliding_window", 256)
                  .bools("dflash.attention.sliding_window_pattern", {true, false, true})
                  .f32("dflash.rope.freq_base_swa", 1000.0f),
              "dflash_swa");
  for (std::size_t il = 0; il < 3; ++il) {
    check_rope(plan, il, 64, 500000.0);
    const auto window = plan.model.layers[il].attention.sliding_window;
    CHECK(window == (il == 1 ? std::nullopt : std::optional<std::int64_t>(256)));
  }
  check_refused(dflash(3).u32("dflash.attention.sliding_window", 256), "dflash_noflags",
                "dflash.attention.sliding_window_pattern: missing");
  // A window of 0: no SWA, the flags not read.
  const auto off = plan_of(dflash(3).u32("dflash.attention.sliding_window", 0), "dflash_off");
  CHECK_FALSE(off.model.layers[0].attention.sliding_window);
}

TEST_CASE("dflash refuses a file without target_layers and DeepSeek-V4 DSpark's graph") {
  check_refused(sized("dflash", 2, 64), "dflash_notarget", "dflash.target_layers: missing");
  check_refused(dflash().u32("dflash.hyper_connection.count", 4), "dflash_dsv4",
                "dflash.hyper_connection.count = 4: expected 0 or absent");
  check_refused(dflash(2, 64).ints("dflash.rope.dimension_sections", {8, 8, 8, 8}), "dflash_s4",
                "dflash.rope.dimension_sections[3]");
}

TEST_CASE("graniteswitch: granite's blocks, then the router layer without positions") {
  // granite-switch.cpp: has_rope(il) from rope.scaling.finetuned, kq_scale attention.scale (else
  // 1/sqrt(n_embd_head)); the router: build_attn(Qr, Kr, Vr, kq_scale 1, il = router_layer).
  const auto plan =
      plan_of(graniteswitch().f32("graniteswitch.attention.scale", 0.015625f), "graniteswitch");
  CHECK(std::string(posemb::to_string(plan.hparams.rope_mode)) == "norm");
  REQUIRE(plan.model.layers.size() == 3);
  for (std::size_t il = 0; il < 2; ++il) {
    check_rope(plan, il, 64, 500000.0);
    CHECK(plan.model.layers[il].rope->pairing == posemb::Pairing::RotateHalf);
    CHECK(*plan.model.layers[il].attention.softmax_scale == 0.015625);
  }
  const posemb::LayerPositions& router = plan.model.layers[2];
  CHECK(router.index == 2);
  CHECK(router.kind == posemb::PositionKind::None);
  CHECK_FALSE(router.rope);
  CHECK_FALSE(plan.ropes[2]);
  CHECK(*router.attention.softmax_scale == 1.0);
  CHECK(router.head_dim == 64);
  // rope.scaling.finetuned false: std::fill(rope_pattern, false), no layer rotates.
  const auto nope = plan_of(graniteswitch().boolean("graniteswitch.rope.scaling.finetuned", false),
                            "graniteswitch_nope");
  for (const posemb::LayerPositions& layer : nope.model.layers) {
    CHECK(layer.kind == posemb::PositionKind::None);
  }
}

TEST_CASE("graniteswitch refuses a partial rotation and a file without its adapter keys") {
  // GGML_ASSERT(n_embd_head == n_rot); get_key(LLM_KV_ADAPTER_COUNT, ...) and logit_scale required.
  check_refused(graniteswitch(2, 32), "graniteswitch_rot", "graniteswitch.rope.dimension_count");
  check_refused(sized("graniteswitch", 2, 64).f32("graniteswitch.logit_scale", 8.0f),
                "graniteswitch_noadapters", "graniteswitch.adapters.count: missing");
  check_refused(sized("graniteswitch", 2, 64), "graniteswitch_nologit",
                "graniteswitch.logit_scale: missing");
}
