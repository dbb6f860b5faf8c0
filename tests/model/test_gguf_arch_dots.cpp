// The rows of model/gguf_archs.hpp for dots3note and minimax-m3, on GGUFs the test writes with
// the keys the pinned llama.cpp's loader reads (llama-cpp-python 0.3.36's sdist):
//   dots3note:  src/models/dots3note.cpp (llama_model_dots3note::load_arch_hparams and its graph),
//               written by conversion/dots3.py's Dots3NoteModel (a DeepseekV2Model)
//   minimax-m3: src/models/minimax-m3.cpp (llama_model_minimax_m3::load_arch_hparams and its
//               graph), written by conversion/minimax.py's MiniMaxM3Model
// and llama_model_rope_type (src/llama-model.cpp: dots3note NORM, minimax-m3 NEOX). The expected
// frequencies are ggml_rope_cache_init's (ggml/src/ggml-cpu/ops.cpp), written here again.
//
// No tiny case in conformance/llamacpp for dots3note: transformers 5.25 has Dots3NoteForCausalLM
// and the converter registers Dots3NoteModel for it, but conversion/base.py's load_hparams reads
// the config through AutoConfig, whose Dots3NoteTextConfig folds the checkpoint's swa_* keys into
// per_layer_config; Dots3NoteModel.__init__ then stops at KeyError: 'swa_qk_nope_head_dim' (a
// config without scoring_func, which the class does not define, already at "dots3-note conversion
// only supports noaux_tc/sigmoid expert gating"). Likewise minimax-m3: MiniMaxM3Model is
// registered for transformers 5.25's MiniMaxM3SparseForConditionalGeneration, whose
// MiniMaxM3VLTextConfig flattens sparse_attention_config into index_* and drops moe_layer_freq,
// so the converter stops at KeyError: "could not find any of: ['sparse_attention_config']".
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "model/gguf_plan.hpp"
#include "posemb/model/gguf.hpp"

namespace {

using test_gguf::check_refused;
using test_gguf::ggml_inv_freq;
using test_gguf::plan_of;

// ggml_rope_cache_init with ext_factor 1 (YaRN): pair i's frequency between interpolation
// (scale * extrap) and extrapolation by rope_yarn_ramp over ggml_rope_yarn_corr_dims' range.
double ggml_yarn_inv_freq(double base, int i, int n_rot, double factor, double n_ctx_orig) {
  const double pi = 3.141592653589793;
  const auto corr = [&](double beta) {
    return n_rot * std::log(n_ctx_orig / (2.0 * pi * beta)) / (2.0 * std::log(base));
  };
  const double lo = std::max(0.0, std::floor(corr(32.0)));
  const double hi = std::min(n_rot - 1.0, std::ceil(corr(1.0)));
  const double ramp = 1.0 - std::clamp((i - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
  const double extrap = ggml_inv_freq(base, i, n_rot);
  return extrap / factor * (1.0 - ramp) + extrap * ramp;
}

// Layer il rotates `n_rot` features at the end of its `head`-wide head (MLA's q_pe / k_pe) or at
// its start, pairing as given, with base^(-2i / n_rot).
void check_rope(const posemb::GgufPositions& plan, std::size_t il, int head, int n_rot, int offset,
                posemb::Pairing pairing, double base) {
  CAPTURE(il);
  const posemb::LayerPositions& layer = plan.model.layers[il];
  REQUIRE(layer.kind == posemb::PositionKind::Rope);
  REQUIRE(plan.ropes[il]);
  CHECK(layer.head_dim == head);
  CHECK(layer.rope->rotary_dim == n_rot);
  CHECK(layer.rotary_offset == offset);
  CHECK(layer.rope->pairing == pairing);
  CHECK(plan.ropes[il]->attention_scale == 1.0);
  REQUIRE(plan.ropes[il]->inv_freq.size() == n_rot / 2);
  for (int i = 0; i < n_rot / 2; ++i) {
    CHECK(plan.ropes[il]->inv_freq[i] == Approx(ggml_inv_freq(base, i, n_rot)).epsilon(1e-14));
  }
  // kq_scale 1/sqrt of the layer's own head width (dots3note: n_embd_head_k_mla of the layer).
  CHECK(*layer.attention.softmax_scale == Approx(1.0 / std::sqrt(double(head))).epsilon(1e-15));
}

// The indexer's q / k: `head` wide, the first n_rot NEOX (rotate-half) by the layer's frequencies.
void check_indexer(const posemb::LayerPositions& layer, int head, int n_rot) {
  CAPTURE(layer.index);
  CHECK(layer.layer_type == "indexed_attention");
  REQUIRE(layer.indexer);
  CHECK(layer.indexer->head_dim == head);
  CHECK(layer.indexer->rotary_offset == 0);
  CHECK(layer.indexer->rope.pairing == posemb::Pairing::RotateHalf);
  const posemb::RopeSpec indexer = layer.indexer_rope_spec(), attention = layer.rope_spec();
  CHECK(indexer.rotary_dim == n_rot);
  CHECK(indexer.inv_freq.isApprox(attention.inv_freq, 1e-15));
  CHECK(indexer.attention_scale == attention.attention_scale);
}

constexpr posemb::Pairing pairs = posemb::Pairing::Interleaved;
constexpr posemb::Pairing half = posemb::Pairing::RotateHalf;

// dots3note as Dots3NoteModel writes it: 4 layers, SWA flags {1, 0, 1, 0}, full MLA heads
// 192 = 128 nope + 64 rope, SWA MLA heads 96 = 32 nope + 64 rope, base 1e6, SWA base 50000,
// window 128, indexer heads of 128. set / drop change a key before writer() writes the file.
struct DotsFile {
  std::vector<bool> swa = {true, false, true, false};
  std::map<std::string, std::uint32_t> u32 = {
      {"attention.key_length", 576},          {"attention.key_length_mla", 192},
      {"attention.value_length_mla", 128},    {"attention.key_length_mla_swa", 96},
      {"attention.value_length_mla_swa", 64}, {"rope.dimension_count", 64},
      {"attention.sliding_window", 128},      {"attention.indexer.key_length", 128}};
  std::map<std::string, float> f32 = {{"rope.freq_base", 1000000.0f},
                                      {"rope.freq_base_swa", 50000.0f}};
  bool pattern = true;

  DotsFile& set(const std::string& key, std::uint32_t value) {
    u32[key] = value;
    return *this;
  }
  DotsFile& drop(const std::string& key) {
    u32.erase(key);
    f32.erase(key);
    if (key == "attention.sliding_window_pattern") pattern = false;
    return *this;
  }
  test_gguf::GgufWriter writer() const {
    const std::string a = "dots3note.";
    auto w =
        test_gguf::model_writer("dots3note", static_cast<std::uint32_t>(swa.size()), 4096, 256, 4);
    for (const auto& [key, value] : u32) w.u32(a + key, value);
    for (const auto& [key, value] : f32) w.f32(a + key, value);
    if (pattern) w.bools(a + "attention.sliding_window_pattern", swa);
    std::vector<bool> full;
    for (const bool s : swa) full.push_back(!s);
    return w.bools(a + "attention.indexer.types", full);
  }
};

}  // namespace

TEST_CASE("dots3note: SWA layers with their own MLA head and base, the indexer on full layers") {
  const auto plan = plan_of(DotsFile().writer(), "dots3note");
  CHECK(std::string(posemb::to_string(plan.hparams.rope_mode)) == "norm");
  REQUIRE(plan.model.layers.size() == 4);
  for (std::size_t il = 0; il < 4; ++il) {
    const posemb::LayerPositions& layer = plan.model.layers[il];
    if (il % 2 == 0) {
      // SWA: get_rope_freq_base(il) = rope.freq_base_swa; q_pe after the 32 nope features.
      check_rope(plan, il, 96, 64, 32, pairs, 50000.0);
      CHECK(layer.layer_type == "sliding_attention");
      CHECK(layer.attention.sliding_window == std::optional<std::int64_t>(128));
      CHECK_FALSE(layer.indexer);
    } else {
      check_rope(plan, il, 192, 64, 128, pairs, 1000000.0);
      CHECK_FALSE(layer.attention.sliding_window);
      check_indexer(layer, 128, 64);
    }
  }
  // The SWA layers' base is their own: their slowest pair turns 20 times faster.
  CHECK(plan.ropes[0]->inv_freq[31] / plan.ropes[1]->inv_freq[31] ==
        Approx(std::pow(20.0, 62.0 / 64.0)).epsilon(1e-12));
}

TEST_CASE("dots3note: YaRN with the global scale on every layer, kq_scale without mscale") {
  // The graph passes freq_scale, ext_factor and attn_factor of the context to every layer (not
  // get_rope_freq_scale(il)); kq_scale stays 1/sqrt(n_embd_head_k_mla), unlike deepseek2's
  // mscale^2; yarn_log_multiplier is not read.
  const auto plan = plan_of(DotsFile()
                                .writer()
                                .str("dots3note.rope.scaling.type", "yarn")
                                .f32("dots3note.rope.scaling.factor", 4.0f)
                                .u32("dots3note.rope.scaling.original_context_length", 1024)
                                .f32("dots3note.rope.scaling.yarn_log_multiplier", 0.1f),
                            "dots3note_yarn");
  for (std::size_t il = 0; il < 4; ++il) {
    CAPTURE(il);
    const double base = il % 2 == 0 ? 50000.0 : 1000000.0;
    const int head = il % 2 == 0 ? 96 : 192;
    CHECK(plan.ropes[il]->rope_type == "yarn");
    // llama_context's yarn_attn_factor get_mscale(4, 1) / (1 + 0.1 ln 4) = 1, times rope_yarn's
    // 1 + 0.1 ln(1 / freq_scale): transformers' YaRN factor 0.1 ln 4 + 1 on SWA layers too.
    CHECK(plan.ropes[il]->attention_scale == Approx(1.0 + 0.1 * std::log(4.0)).epsilon(1e-7));
    for (int i = 0; i < 32; ++i) {
      CHECK(plan.ropes[il]->inv_freq[i] ==
            Approx(ggml_yarn_inv_freq(base, i, 64, 4.0, 1024.0)).epsilon(1e-12));
    }
    CHECK(*plan.model.layers[il].attention.softmax_scale ==
          Approx(1.0 / std::sqrt(double(head))).epsilon(1e-15));
  }
}

TEST_CASE("dots3note: every layer rotates hparams.n_rot(), the width of layer 0") {
  // The graph's n_embd_head_qk_rope = hparams.n_rot() = n_rot(0): rope.dimension_count_swa when
  // layer 0 slides, for the full layers too; ignored when layer 0 is a full layer.
  const auto swa_first = plan_of(DotsFile().writer().u32("dots3note.rope.dimension_count_swa", 32),
                                 "dots3note_rot_swa");
  check_rope(swa_first, 0, 96, 32, 64, pairs, 50000.0);
  check_rope(swa_first, 1, 192, 32, 160, pairs, 1000000.0);
  check_indexer(swa_first.model.layers[1], 128, 32);
  const auto full_first = plan_of(
      DotsFile{{false, true, false, true}}.writer().u32("dots3note.rope.dimension_count_swa", 32),
      "dots3note_rot_full");
  check_rope(full_first, 0, 192, 64, 128, pairs, 1000000.0);
  check_rope(full_first, 1, 96, 64, 32, pairs, 50000.0);
  check_indexer(full_first.model.layers[0], 128, 64);
  CHECK_FALSE(full_first.model.layers[1].indexer);
}

TEST_CASE("dots3note: the keys llama.cpp's loader requires, and widths it cannot rotate") {
  for (const char* key :
       {"attention.key_length_mla", "attention.value_length_mla", "attention.key_length_mla_swa",
        "attention.value_length_mla_swa", "rope.freq_base_swa", "attention.sliding_window",
        "attention.sliding_window_pattern", "attention.indexer.key_length"}) {
    CAPTURE(key);
    check_refused(DotsFile().drop(key).writer(), "dots3note_missing",
                  "dots3note." + std::string(key) + ": missing");
  }
  check_refused(DotsFile().set("attention.key_length_mla_swa", 48).writer(), "dots3note_narrow",
                "dots3note.rope.dimension_count = 64: expected <= "
                "dots3note.attention.key_length_mla_swa = 48");
  check_refused(DotsFile().set("attention.indexer.key_length", 32).writer(), "dots3note_idx",
                "dots3note.attention.indexer.key_length = 32: expected >= n_rot = 64");
  check_refused(DotsFile().writer().u32("dots3note.rope.dimension_count_swa", 33), "dots3note_odd",
                "dots3note.rope.dimension_count_swa = 33: expected an even number");
}

namespace {

// minimax-m3 as MiniMaxM3Model writes it: heads of 64 rotating their first 32 (rotary_dim),
// base 5e6, indexer heads of 128.
test_gguf::GgufWriter minimax_writer(std::uint32_t indexer_head = 128) {
  const std::string a = "minimax-m3.";
  return test_gguf::model_writer("minimax-m3", 4, 4096, 256, 4)
      .u32(a + "attention.key_length", 64)
      .u32(a + "attention.value_length", 64)
      .u32(a + "rope.dimension_count", 32)
      .f32(a + "rope.freq_base", 5000000.0f)
      .u32(a + "attention.indexer.key_length", indexer_head)
      .u32(a + "attention.indexer.head_count", 4)
      .u32(a + "attention.indexer.top_k", 16)
      .u32(a + "attention.indexer.block_size", 64)
      .u32(a + "attention.indexer.local_blocks", 1);
}

}  // namespace

TEST_CASE("minimax-m3: partial NEOX, the MSA indexer's rotation from the first sparse layer on") {
  const auto plan =
      plan_of(minimax_writer().u32("minimax-m3.leading_dense_block_count", 1), "minimax_m3");
  CHECK(std::string(posemb::to_string(plan.hparams.rope_mode)) == "neox");
  REQUIRE(plan.model.layers.size() == 4);
  for (std::size_t il = 0; il < 4; ++il) {
    check_rope(plan, il, 64, 32, 0, half, 5000000.0);
    CHECK_FALSE(plan.model.layers[il].attention.sliding_window);
  }
  CHECK(plan.model.layers[0].layer_type == "full_attention");
  CHECK_FALSE(plan.model.layers[0].indexer);
  for (std::size_t il = 1; il < 4; ++il) check_indexer(plan.model.layers[il], 128, 32);
  // Without leading_dense_block_count (optional, default 0) every layer is sparse.
  const auto all = plan_of(minimax_writer(), "minimax_m3_all");
  for (std::size_t il = 0; il < 4; ++il) check_indexer(all.model.layers[il], 128, 32);
}

TEST_CASE("minimax-m3: the indexer's width is required and must hold the rotated features") {
  test_gguf::GgufWriter no_indexer = test_gguf::model_writer("minimax-m3", 2, 4096, 256, 4);
  no_indexer.u32("minimax-m3.rope.dimension_count", 32);
  check_refused(no_indexer, "minimax_m3_noidx", "minimax-m3.attention.indexer.key_length: missing");
  check_refused(minimax_writer(16), "minimax_m3_narrow",
                "minimax-m3.attention.indexer.key_length = 16: expected >= n_rot = 32");
}
