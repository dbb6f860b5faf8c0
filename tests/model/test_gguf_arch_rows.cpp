// The rows of model/gguf_archs.hpp for the architectures of llama.cpp's LLM_ARCH_NAMES that had
// none: each on a GGUF the test writes (gguf_writer.hpp), its plan against the rule as the pinned
// llama.cpp states it (llama-cpp-python 0.3.36's sdist: src/models/<arch>.cpp for
// load_arch_hparams and the graph, src/llama-model.cpp for llama_model_rope_type and
// load_hparams). The expected frequencies are ggml_rope_cache_init's, written here again.
#include <catch2/catch.hpp>

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

// A model of `layers` layers, 4 heads of 64 (n_embd 256), base 500000 and n_rot as given.
test_gguf::GgufWriter writer_of(const std::string& arch, std::uint32_t layers,
                                std::uint32_t n_rot) {
  return test_gguf::model_writer(arch, layers, 8192, 256, 4)
      .u32(arch + ".attention.key_length", 64)
      .u32(arch + ".rope.dimension_count", n_rot)
      .f32(arch + ".rope.freq_base", 500000.0f);
}

// Layer il rotates n_rot features by base^(-2i / n_rot), magnitude 1, plain RoPE.
void check_plain_rope(const posemb::GgufPositions& plan, std::size_t il, int n_rot, double base) {
  CAPTURE(il);
  const posemb::LayerPositions& layer = plan.model.layers[il];
  REQUIRE(layer.kind == posemb::PositionKind::Rope);
  REQUIRE(plan.ropes[il]);
  CHECK(layer.rope->rotary_dim == n_rot);
  CHECK(plan.ropes[il]->rope_type == "default");
  CHECK(plan.ropes[il]->attention_scale == 1.0);
  for (int i = 0; i < n_rot / 2; ++i) {
    CHECK(plan.ropes[il]->inv_freq[i] == Approx(ggml_inv_freq(base, i, n_rot)).epsilon(1e-14));
  }
}

// One Llama-like architecture: its rope type and pairing (llama_model_rope_type; NORM of rows the
// converter permuted is HF's rotate_half), whether the loader or graph demands n_rot = head width,
// its softmax scale for heads of 64 rotating n_rot features, and where the rotated slice sits.
struct LlamaLike {
  const char* arch;
  const char* mode;
  posemb::Pairing pairing;
  bool full;               // GGML_ASSERT(n_embd_head == n_rot)
  double softmax = 0.125;  // 1/sqrt(64), unless the graph says otherwise
  bool at_end = false;     // ggml_rope_set_offset(q, n_embd_head_qk_nope): the last n_rot
};

constexpr posemb::Pairing half = posemb::Pairing::RotateHalf;
constexpr posemb::Pairing pairs = posemb::Pairing::Interleaved;

// Read from each src/models/<arch>.cpp (and the converter class for `permuted`).
const std::vector<LlamaLike> llama_like = {
    {"baichuan", "norm", half, true},
    {"internlm2", "norm", half, true},
    {"minicpm", "norm", half, false},
    {"xverse", "norm", half, true},
    {"olmo", "norm", half, true},
    {"arctic", "norm", half, true},
    {"deepseek", "norm", half, true},
    {"chameleon", "norm", half, true},
    {"arcee", "norm", half, true},
    {"llada", "norm", half, true},
    {"nanbeige", "norm", half, false},
    {"mistral3", "norm", half, true},
    {"deci", "norm", half, true},
    {"granitemoe", "norm", half, true},
    {"granitehybrid", "norm", half, false},
    {"maincoder", "norm", pairs, true},
    {"pockettts", "norm", pairs, true},
    {"plm", "norm", pairs, false, 0.125, true},
    {"qwen", "neox", half, false},
    {"phimoe", "neox", half, false},
    {"plamo", "neox", half, true},
    {"codeshell", "neox", half, true},
    {"orion", "neox", half, true},
    {"gemma", "neox", half, false},
    {"dbrx", "neox", half, true},
    {"olmoe", "neox", half, true},
    {"openelm", "neox", half, false},
    {"bitnet", "neox", half, false},
    {"jais2", "neox", half, true},
    {"nemotron", "neox", half, false},
    {"exaone", "neox", half, true},
    {"bailingmoe2", "neox", half, false},
    {"dots1", "neox", half, true},
    {"hunyuan-moe", "neox", half, true},
    {"hunyuan_vl", "neox", half, true},
    {"hy_v3", "neox", half, true},
    {"dream", "neox", half, true},
    {"llada-moe", "neox", half, true},
    {"seed_oss", "neox", half, true},
    {"grovemoe", "neox", half, true},
    {"apertus", "neox", half, true},
    {"hrm_text", "neox", half, false},
    {"minimax-m2", "neox", half, false},
    {"rnd1", "neox", half, true},
    {"pangu-embedded", "neox", half, true},
    {"talkie", "neox", half, true},
    {"falcon-h1", "neox", half, false},
    {"minicpm3", "neox", half, false, 0.125, true},
    // src/models/bailingmoe.cpp: kq_scale 1/sqrt(n_rot).
    {"bailingmoe", "norm", half, false, 1.0 / std::sqrt(32.0)},
};

}  // namespace

TEST_CASE("Llama-like rows: mode, pairing, rotated width and slice, frequencies, softmax scale") {
  for (const LlamaLike& row : llama_like) {
    const std::string arch = row.arch;
    CAPTURE(arch);
    const int n_rot = row.full ? 64 : 32;
    const auto plan = plan_of(writer_of(arch, 3, static_cast<std::uint32_t>(n_rot)), arch);
    CHECK(std::string(posemb::to_string(plan.hparams.rope_mode)) == row.mode);
    REQUIRE(plan.model.layers.size() == 3);
    for (std::size_t il = 0; il < 3; ++il) {
      check_plain_rope(plan, il, n_rot, 500000.0);
      const posemb::LayerPositions& layer = plan.model.layers[il];
      CHECK(layer.rope->pairing == row.pairing);
      CHECK(layer.head_dim == 64);
      CHECK(layer.rotary_offset == (row.at_end ? 64 - n_rot : 0));
      CHECK(*layer.attention.softmax_scale == Approx(row.softmax).epsilon(1e-15));
      CHECK_FALSE(layer.attention.sliding_window);
      CHECK_FALSE(layer.attention.query_temperature);
    }
    if (row.full) {
      check_refused(writer_of(arch, 3, 32), arch + "_rot",
                    arch + ".rope.dimension_count = 32: expected head_dim = 64");
    }
  }
}

TEST_CASE("cogvlm and deepseek2-ocr rotate with ggml's plain call whatever the scaling keys") {
  // cogvlm.cpp: ggml_rope (ggml_rope_impl: base 10000, scale 1, ext 0, attn 1); deepseek2.cpp
  // with is_ocr: ggml_rope_ext(freq_base, 1, 0, 1), NEOX.
  for (const char* arch : {"cogvlm", "deepseek2-ocr"}) {
    const std::string a = arch;
    CAPTURE(a);
    const double base = a == "cogvlm" ? 10000.0 : 500000.0;
    const auto plan = plan_of(writer_of(a, 2, 64)
                                  .str(a + ".rope.scaling.type", "yarn")
                                  .f32(a + ".rope.scaling.factor", 4.0f)
                                  .u32(a + ".rope.scaling.original_context_length", 2048),
                              a);
    for (std::size_t il = 0; il < 2; ++il) {
      check_plain_rope(plan, il, 64, base);
      CHECK(plan.model.layers[il].rope->pairing == posemb::Pairing::RotateHalf);
    }
  }
}

TEST_CASE("rows with recurrent layers: head_count_kv = 0, or all but every N-th layer") {
  // lfm2, lfm2moe, plamo2, granitehybrid, deci: is_recr_impl[il] = n_head_kv(il) == 0.
  for (const char* arch : {"lfm2", "lfm2moe", "plamo2", "granitehybrid", "deci"}) {
    const std::string a = arch;
    CAPTURE(a);
    const int n_rot = a == "deci" ? 64 : 32;
    const auto plan = plan_of(writer_of(a, 4, static_cast<std::uint32_t>(n_rot))
                                  .ints(a + ".attention.head_count_kv", {0, 2, 0, 2}),
                              a);
    for (std::size_t il = 0; il < 4; ++il) {
      CAPTURE(il);
      const bool attention = il % 2 == 1;
      CHECK(plan.model.layers[il].layer_type ==
            (attention ? "full_attention" : "linear_attention"));
      CHECK(plan.ropes[il].has_value() == attention);
      if (attention) check_plain_rope(plan, il, n_rot, 500000.0);
    }
  }
  // lfm2 with attention.sliding_window > 0: every attention layer slides (load_arch_hparams).
  const auto swa = plan_of(writer_of("lfm2", 4, 32)
                               .ints("lfm2.attention.head_count_kv", {0, 2, 0, 2})
                               .u32("lfm2.attention.sliding_window", 512),
                           "lfm2_swa");
  CHECK_FALSE(swa.model.layers[0].attention.sliding_window);
  CHECK(swa.model.layers[1].attention.sliding_window == std::optional<std::int64_t>(512));
  CHECK(swa.model.layers[3].attention.sliding_window == std::optional<std::int64_t>(512));
  // minimax-01: lightning attention but each full_attention_interval-th layer, default 8.
  const auto minimax = plan_of(writer_of("minimax-01", 8, 32), "minimax");
  for (std::size_t il = 0; il < 8; ++il) CHECK(minimax.ropes[il].has_value() == (il == 7));
  // granitehybrid keeps granite's switch: rope.scaling.finetuned false, no RoPE anywhere.
  const auto off = plan_of(writer_of("granitehybrid", 2, 32)
                               .ints("granitehybrid.attention.head_count_kv", {2, 2})
                               .boolean("granitehybrid.rope.scaling.finetuned", false),
                           "granitehybrid_off");
  CHECK_FALSE(off.ropes[0]);
  CHECK_FALSE(off.ropes[1]);
}

TEST_CASE("M-RoPE rows: sections required, IMROPE interleaved, MROPE chunked") {
  // llama_model_rope_type: IMROPE (qwen3vl, qwen3vlmoe, qwen3tts, qwen35, qwen35moe), MROPE
  // (paddleocr); get_key_or_arr(LLM_KV_ROPE_DIMENSION_SECTIONS, ..., required).
  const std::vector<std::pair<std::string, posemb::MropeLayout>> cases = {
      {"qwen3vl", posemb::MropeLayout::Interleaved},
      {"qwen3vlmoe", posemb::MropeLayout::Interleaved},
      {"qwen3tts", posemb::MropeLayout::Interleaved},
      {"paddleocr", posemb::MropeLayout::Chunked}};
  for (const auto& [arch, layout] : cases) {
    CAPTURE(arch);
    const auto plan = plan_of(
        writer_of(arch, 2, 64).ints(arch + ".rope.dimension_sections", {8, 12, 12, 0}), arch);
    CHECK(std::string(posemb::to_string(plan.hparams.rope_mode)) ==
          (layout == posemb::MropeLayout::Interleaved ? "imrope" : "mrope"));
    check_plain_rope(plan, 1, 64, 500000.0);
    CHECK(plan.model.layers[1].rope->mrope_section == posemb::MropeSections{8, 12, 12});
    CHECK(plan.model.layers[1].rope->mrope_layout == layout);
    check_refused(writer_of(arch, 2, 64), arch + "_nosec",
                  arch + ".rope.dimension_sections: missing");
  }
  // qwen35 / qwen35moe: Gated DeltaNet layers but every 4th, the attention layers partial IMROPE.
  for (const char* arch : {"qwen35", "qwen35moe"}) {
    const std::string a = arch;
    CAPTURE(a);
    const auto plan =
        plan_of(writer_of(a, 4, 32).ints(a + ".rope.dimension_sections", {4, 6, 6, 0}), a);
    for (std::size_t il = 0; il < 3; ++il)
      CHECK(plan.model.layers[il].layer_type == "linear_attention");
    check_plain_rope(plan, 3, 32, 500000.0);
    CHECK(plan.model.layers[3].rope->mrope_layout == posemb::MropeLayout::Interleaved);
    CHECK(*plan.model.layers[3].attention.softmax_scale == Approx(0.125));
  }
}

TEST_CASE("SWA rows: which layers slide, with which base, scale and width") {
  const double global = 500000.0;
  // plamo3: load_swa_pattern(ml, 8) only with a window; SWA base rope.freq_base_swa else 10000
  // (llama_hparams' default), scale 1; the global layers scale by 1 / rope.scaling.factor.
  const auto plamo3 = plan_of(writer_of("plamo3", 8, 32)
                                  .u32("plamo3.attention.sliding_window", 1024)
                                  .str("plamo3.rope.scaling.type", "linear")
                                  .f32("plamo3.rope.scaling.factor", 2.0f),
                              "plamo3");
  for (std::size_t il = 0; il < 7; ++il) {
    CHECK(plamo3.model.layers[il].attention.sliding_window == std::optional<std::int64_t>(1024));
    check_plain_rope(plamo3, il, 32, 10000.0);
  }
  CHECK_FALSE(plamo3.model.layers[7].attention.sliding_window);
  CHECK(plamo3.ropes[7]->inv_freq[3] == Approx(ggml_inv_freq(global, 3, 32) / 2.0).epsilon(1e-14));
  const auto dense = plan_of(writer_of("plamo3", 8, 32), "plamo3_dense");
  for (const auto& layer : dense.model.layers) CHECK_FALSE(layer.attention.sliding_window);

  // maple, spark2_5: flags and window required; SWA base rope.freq_base_swa else the global one;
  // the SWA layers rotate rope.dimension_count_swa (n_rot(il)).
  for (const char* arch : {"maple", "spark2_5"}) {
    const std::string a = arch;
    CAPTURE(a);
    const auto plan =
        plan_of(writer_of(a, 3, 64)
                    .u32(a + ".attention.sliding_window", 256)
                    .bools(a + ".attention.sliding_window_pattern", {true, false, true})
                    .u32(a + ".rope.dimension_count_swa", 32),
                a);
    check_plain_rope(plan, 0, 32, global);
    check_plain_rope(plan, 1, 64, global);
    CHECK(plan.model.layers[0].attention.sliding_window == std::optional<std::int64_t>(256));
    check_refused(writer_of(a, 3, 64).u32(a + ".attention.sliding_window", 256), a + "_noflags",
                  a + ".attention.sliding_window_pattern: missing");
  }
  // mimo2: the SWA base rope.freq_base_swa else 10000, scale 1.
  const auto mimo2 = plan_of(writer_of("mimo2", 2, 64)
                                 .u32("mimo2.attention.sliding_window", 128)
                                 .bools("mimo2.attention.sliding_window_pattern", {true, false}),
                             "mimo2");
  check_plain_rope(mimo2, 0, 64, 10000.0);
  check_plain_rope(mimo2, 1, 64, global);

  // cohere2, muse-glimmer, exaone-moe: pattern 4 (il % 4 < 3 slides), RoPE on the SWA layers only,
  // with the global base whatever rope.freq_base_swa says.
  for (const char* arch : {"cohere2", "muse-glimmer", "exaone-moe"}) {
    const std::string a = arch;
    CAPTURE(a);
    const int n_rot = a == "exaone-moe" ? 64 : 32;
    const auto plan = plan_of(writer_of(a, 4, static_cast<std::uint32_t>(n_rot))
                                  .u32(a + ".attention.sliding_window", 4096)
                                  .f32(a + ".rope.freq_base_swa", 1000.0f),
                              a);
    for (std::size_t il = 0; il < 3; ++il) {
      CHECK(plan.model.layers[il].attention.sliding_window == std::optional<std::int64_t>(4096));
      check_plain_rope(plan, il, n_rot, global);
    }
    CHECK(plan.model.layers[3].kind == posemb::PositionKind::None);
    CHECK_FALSE(plan.model.layers[3].attention.sliding_window);
    check_refused(writer_of(a, 4, static_cast<std::uint32_t>(n_rot)), a + "_nowindow",
                  a + ".attention.sliding_window: missing");
  }
  // cohere2moe: load_swa_pattern(ml, 4, dense_first): il % 4 != 0 slides; every layer rotates.
  const auto moe =
      plan_of(writer_of("cohere2moe", 4, 64).u32("cohere2moe.attention.sliding_window", 4096),
              "cohere2moe");
  for (std::size_t il = 0; il < 4; ++il) {
    CHECK(moe.model.layers[il].attention.sliding_window.has_value() == (il != 0));
    check_plain_rope(moe, il, 64, global);
  }
  // afmoe: SWA only with a window (il % 4 < 3); n_no_rope_layer_step 4: (il + 1) % 4 == 0 NoPE.
  const auto afmoe =
      plan_of(writer_of("afmoe", 4, 32).u32("afmoe.attention.sliding_window", 512), "afmoe");
  for (std::size_t il = 0; il < 3; ++il) check_plain_rope(afmoe, il, 32, global);
  CHECK(afmoe.model.layers[3].kind == posemb::PositionKind::None);
  // smallthinker: a window > 0 becomes 4096, dense first, RoPE on the SWA layers (il % 4 != 0).
  const auto small = plan_of(
      writer_of("smallthinker", 4, 64).u32("smallthinker.attention.sliding_window", 100), "small");
  CHECK(small.model.layers[0].kind == posemb::PositionKind::None);
  for (std::size_t il = 1; il < 4; ++il) {
    CHECK(small.model.layers[il].attention.sliding_window == std::optional<std::int64_t>(4096));
    check_plain_rope(small, il, 64, global);
  }
  const auto small_dense = plan_of(writer_of("smallthinker", 4, 64), "small_dense");
  for (std::size_t il = 0; il < 4; ++il) check_plain_rope(small_dense, il, 64, global);
  // gemma3n: pattern 5, window required, SWA base 10000 default, f_attention_scale 1.
  const auto gemma3n =
      plan_of(writer_of("gemma3n", 5, 32).u32("gemma3n.attention.sliding_window", 512), "gemma3n");
  for (std::size_t il = 0; il < 4; ++il) check_plain_rope(gemma3n, il, 32, 10000.0);
  check_plain_rope(gemma3n, 4, 32, global);
  CHECK(*gemma3n.model.layers[4].attention.softmax_scale == 1.0);
}

TEST_CASE("laguna and mellum: YaRN on the full layers, plain RoPE on the sliding ones") {
  const auto yarn = [](const std::string& a) {
    return writer_of(a, 4, 64)
        .u32(a + ".attention.sliding_window", 512)
        .str(a + ".rope.scaling.type", "yarn")
        .f32(a + ".rope.scaling.factor", 8.0f)
        .u32(a + ".rope.scaling.original_context_length", 4096);
  };
  // laguna: dense first (layer 0 full), SWA layers n_rot_swa, base 500000, scale 1, ext 0, attn 1.
  const auto laguna = plan_of(yarn("laguna").u32("laguna.rope.dimension_count_swa", 32), "laguna");
  CHECK(laguna.ropes[0]->rope_type == "yarn");
  for (std::size_t il = 1; il < 4; ++il) check_plain_rope(laguna, il, 32, 500000.0);
  // mellum: il % 4 < 3 slide with ggml_rope_ext(freq_base, 1, 0, 1); layer 3 YaRN.
  const auto mellum = plan_of(yarn("mellum"), "mellum");
  for (std::size_t il = 0; il < 3; ++il) check_plain_rope(mellum, il, 64, 500000.0);
  CHECK(mellum.ropes[3]->rope_type == "yarn");
  CHECK(mellum.ropes[3]->inv_freq[31] ==
        Approx(ggml_inv_freq(500000.0, 31, 64) / 8.0).epsilon(1e-12));
}

TEST_CASE("gemma4-assistant: gemma4's SWA flags, SWA head width and scale 1") {
  const auto plan =
      plan_of(test_gguf::model_writer("gemma4-assistant", 2, 8192, 256, 4)
                  .u32("gemma4-assistant.attention.key_length", 128)
                  .u32("gemma4-assistant.attention.key_length_swa", 64)
                  .u32("gemma4-assistant.rope.dimension_count_swa", 64)
                  .u32("gemma4-assistant.attention.sliding_window", 512)
                  .bools("gemma4-assistant.attention.sliding_window_pattern", {true, false}),
              "gemma4_assistant");
  check_plain_rope(plan, 0, 64, 10000.0);
  CHECK(plan.model.layers[0].head_dim == 64);
  check_plain_rope(plan, 1, 128, 10000.0);
  CHECK(*plan.model.layers[1].attention.softmax_scale == 1.0);
}

TEST_CASE("mistral3: YaRN betas and log multiplier as written, query temperature") {
  // load_arch_hparams: yarn_beta_fast / _slow, rope_yarn_log_mul as written; temperature scale
  // with floor n_ctx_orig_yarn; llama_context: yarn_attn_factor = m(F, 1) / m(F, L) /
  // (1 + 0.1 ln F), rope_yarn multiplies back (1 + 0.1 ln F).
  const double F = 16.0, L = 0.5, beta_fast = 4.0, beta_slow = 2.0;
  const auto plan = plan_of(writer_of("mistral3", 2, 64)
                                .str("mistral3.rope.scaling.type", "yarn")
                                .f32("mistral3.rope.scaling.factor", 16.0f)
                                .u32("mistral3.rope.scaling.original_context_length", 16384)
                                .f32("mistral3.rope.scaling.yarn_beta_fast", 4.0f)
                                .f32("mistral3.rope.scaling.yarn_beta_slow", 2.0f)
                                .f32("mistral3.rope.scaling.yarn_log_multiplier", 0.5f)
                                .f32("mistral3.attention.temperature_scale", 0.1f),
                            "mistral3");
  const auto mscale = [F](double k) { return 0.1 * k * std::log(F) + 1.0; };
  const posemb::GgufLayerRope& rope = *plan.ropes[1];
  CHECK(rope.attention_scale == Approx(mscale(1.0) / mscale(L)).epsilon(1e-12));
  // ggml_rope_yarn_corr_dims with these betas, then the ramp between extrapolation and 1/F.
  const auto corr = [](double beta) {
    return 64.0 * std::log(16384.0 / (2.0 * 3.141592653589793 * beta)) / (2.0 * std::log(500000.0));
  };
  const double lo = std::floor(corr(beta_fast)), hi = std::ceil(corr(beta_slow));
  for (int i = 0; i < 32; ++i) {
    const double ramp = 1.0 - std::clamp((i - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
    const double extrap = ggml_inv_freq(500000.0, i, 64);
    CHECK(rope.inv_freq[i] == Approx(extrap / F * (1.0 - ramp) + extrap * ramp).epsilon(1e-12));
  }
  const posemb::LayerAttention& attention = plan.model.layers[1].attention;
  REQUIRE(attention.query_temperature);
  // llm_graph_input_attn_temp: log(floor(pos / 16384) + 1) * 0.1 + 1.
  CHECK(attention.query_temperature->factor(16383.0) == 1.0);
  CHECK(attention.query_temperature->factor(16384.0) ==
        Approx(std::log(2.0) * static_cast<double>(0.1f) + 1.0).epsilon(1e-12));
  CHECK(plan.model.layers[1].rope->pairing == posemb::Pairing::RotateHalf);
}

TEST_CASE("deepseek2: MTP layers skipped, the rotated slice is the head's last n_rot") {
  // load_hparams: n_layer() = block_count - nextn_predict_layers; src/models/deepseek2.cpp: q_pe /
  // k_pe are the last n_rot of key_length_mla (192 = 128 nope + 64 rope).
  const auto plan = plan_of(test_gguf::model_writer("deepseek2", 3, 4096, 256, 4)
                                .u32("deepseek2.nextn_predict_layers", 1)
                                .u32("deepseek2.attention.key_length", 576)
                                .u32("deepseek2.attention.value_length", 512)
                                .u32("deepseek2.attention.key_length_mla", 192)
                                .u32("deepseek2.attention.value_length_mla", 128)
                                .u32("deepseek2.rope.dimension_count", 64)
                                .f32("deepseek2.attention.temperature_scale", 0.1f)
                                .u32("deepseek2.attention.temperature_length", 8192),
                            "deepseek2");
  REQUIRE(plan.model.layers.size() == 2);
  for (std::size_t il = 0; il < 2; ++il) {
    check_plain_rope(plan, il, 64, 10000.0);
    CHECK(plan.model.layers[il].head_dim == 192);
    CHECK(plan.model.layers[il].rotary_offset == 128);
    CHECK(plan.model.layers[il].rope->pairing == posemb::Pairing::Interleaved);
    CHECK(plan.model.layers[il].attention.query_temperature->factor(8192.0) ==
          Approx(std::log(2.0) * static_cast<double>(0.1f) + 1.0).epsilon(1e-12));
  }
  // The plan's JSON says where the slice sits, as a config.json plan does.
  const auto plans = posemb::gguf_layer_plans(plan);
  CHECK(plans[0].rotary_offset == 128);
  CHECK(plans[0].rotary_dim == 64);
}

TEST_CASE("mistral4: deepseek2's MLA, the log multiplier not YaRN's mscale") {
  // llama_context: mscale = rope_yarn_log_mul only for LLM_ARCH_DEEPSEEK2; mistral4 keeps 1:
  // yarn_attn_factor = m(F, 1) / m(F, L) with L = 0.1f-divided log multiplier.
  const auto writer = [](const std::string& a) {
    return test_gguf::model_writer(a, 1, 4096, 256, 4)
        .u32(a + ".attention.key_length_mla", 192)
        .u32(a + ".attention.value_length_mla", 128)
        .u32(a + ".rope.dimension_count", 64)
        .str(a + ".rope.scaling.type", "yarn")
        .f32(a + ".rope.scaling.factor", 40.0f)
        .u32(a + ".rope.scaling.original_context_length", 4096)
        .f32(a + ".rope.scaling.yarn_log_multiplier", 0.0707f);
  };
  const double F = 40.0, L = static_cast<double>(0.0707f) / static_cast<double>(0.1f);
  const auto m = [F](double k) { return 0.1 * k * std::log(F) + 1.0; };
  const auto mistral4 = plan_of(writer("mistral4"), "mistral4");
  CHECK(mistral4.ropes[0]->attention_scale == Approx(m(1.0) / m(L)).epsilon(1e-9));
  CHECK(mistral4.model.layers[0].rotary_offset == 128);
  const auto deepseek2 = plan_of(writer("deepseek2"), "deepseek2_yarn");
  CHECK(deepseek2.ropes[0]->attention_scale == Approx(m(L) / m(L)).epsilon(1e-9));
}

TEST_CASE("exaone4: SWA and RoPE on the SWA layers only in the 64-layer model") {
  // load_arch_hparams: if n_layer() == 64, n_swa 4096 and load_swa_pattern(ml, 4);
  // attention.sliding_window overrides the window; the graph: use_rope = is_swa(il) || no SWA.
  const auto big = plan_of(writer_of("exaone4", 64, 64), "exaone4_64");
  for (std::size_t il = 0; il < 64; ++il) {
    CAPTURE(il);
    const bool swa = il % 4 < 3;
    CHECK(big.model.layers[il].attention.sliding_window ==
          (swa ? std::optional<std::int64_t>(4096) : std::nullopt));
    CHECK(big.ropes[il].has_value() == swa);
  }
  const auto window =
      plan_of(writer_of("exaone4", 64, 64).u32("exaone4.attention.sliding_window", 1024), "ex_w");
  CHECK(window.model.layers[0].attention.sliding_window == std::optional<std::int64_t>(1024));
  const auto small =
      plan_of(writer_of("exaone4", 4, 64).u32("exaone4.attention.sliding_window", 1024), "ex_4");
  for (std::size_t il = 0; il < 4; ++il) {
    check_plain_rope(small, il, 64, 500000.0);
    CHECK_FALSE(small.model.layers[il].attention.sliding_window);
  }
}

TEST_CASE("deepseek32: MLA plus the indexer's rotate-half of its first n_rot features") {
  // src/models/deepseek32.cpp: ggml_rope_ext(indexer_q, n_rot, LLAMA_ROPE_TYPE_NEOX) on the
  // indexer head laid out [rope | nope]; attention.indexer.key_length required.
  const auto writer = test_gguf::model_writer("deepseek32", 2, 4096, 256, 4)
                          .u32("deepseek32.attention.key_length_mla", 192)
                          .u32("deepseek32.attention.value_length_mla", 128)
                          .u32("deepseek32.rope.dimension_count", 64);
  const auto plan =
      plan_of(test_gguf::GgufWriter(writer).u32("deepseek32.attention.indexer.key_length", 128),
              "deepseek32");
  for (std::size_t il = 0; il < 2; ++il) {
    check_plain_rope(plan, il, 64, 10000.0);
    const posemb::LayerPositions& layer = plan.model.layers[il];
    CHECK(layer.layer_type == "indexed_attention");
    CHECK(layer.rotary_offset == 128);
    CHECK(layer.rope->pairing == posemb::Pairing::Interleaved);
    REQUIRE(layer.indexer);
    CHECK(layer.indexer->head_dim == 128);
    CHECK(layer.indexer->rotary_offset == 0);
    CHECK(layer.indexer->rope.pairing == posemb::Pairing::RotateHalf);
    const posemb::RopeSpec spec = layer.indexer_rope_spec();
    CHECK(spec.rotary_dim == 64);
    CHECK(spec.inv_freq[5] == Approx(ggml_inv_freq(10000.0, 5, 64)).epsilon(1e-14));
  }
  check_refused(writer, "deepseek32_noindexer", "deepseek32.attention.indexer.key_length: missing");
}

TEST_CASE("step35: per-layer widths by SWA, rope_freqs on the full layers only") {
  // src/models/step35.cpp: n_rot_l = hparams.n_rot(il) (is_swa ? n_rot_swa : n_rot_full),
  // rope_factors = is_swa ? nullptr : get_rope_factors; base / scale get_rope_freq_base / _scale.
  const std::vector<float> factors(32, 4.0f);
  const auto plan = plan_of(writer_of("step35", 2, 64)
                                .u32("step35.attention.sliding_window", 512)
                                .bools("step35.attention.sliding_window_pattern", {true, false})
                                .u32("step35.rope.dimension_count_swa", 32)
                                .tensor("rope_freqs.weight", factors),
                            "step35");
  check_plain_rope(plan, 0, 32, 10000.0);
  CHECK(plan.model.layers[0].attention.sliding_window == std::optional<std::int64_t>(512));
  CHECK(plan.ropes[1]->rope_type == "llama3");
  for (int i = 0; i < 32; ++i) {
    CHECK(plan.ropes[1]->inv_freq[i] ==
          Approx(ggml_inv_freq(500000.0, i, 64) / 4.0).epsilon(1e-14));
  }
}

TEST_CASE("grok: output scale and softcap, YaRN beta_fast 8, the ext / attn factor keys") {
  // load_arch_hparams: f_attn_out_scale 0.08838834764831845, f_attn_logit_softcapping 30 and
  // yarn_beta_fast 8 unless the keys say otherwise; build_attn_mha (LLM_ARCH_GROK):
  // kq = c tanh(kq s / c), kq_scale 1.
  const auto plain = plan_of(writer_of("grok", 1, 64), "grok");
  CHECK(*plain.model.layers[0].attention.softmax_scale == 0.08838834764831845);
  CHECK(*plain.model.layers[0].attention.logit_softcap == 30.0);
  check_plain_rope(plain, 0, 64, 500000.0);
  const auto keys = plan_of(writer_of("grok", 1, 64)
                                .f32("grok.attention.output_scale", 0.0625f)
                                .f32("grok.attn_logit_softcapping", 20.0f)
                                .f32("grok.rope.scaling.yarn_attn_factor", 2.0f),
                            "grok_keys");
  CHECK(*keys.model.layers[0].attention.softmax_scale == 0.0625);
  CHECK(*keys.model.layers[0].attention.logit_softcap == 20.0);
  CHECK(keys.ropes[0]->attention_scale == 2.0);  // no YaRN: cparams.yarn_attn_factor as written
  // YaRN with the default beta_fast 8: the ramp's low end c(8) (ggml_rope_yarn_corr_dims).
  const auto yarn = plan_of(writer_of("grok", 1, 64)
                                .str("grok.rope.scaling.type", "yarn")
                                .f32("grok.rope.scaling.factor", 8.0f)
                                .u32("grok.rope.scaling.original_context_length", 8192)
                                .f32("grok.rope.scaling.yarn_ext_factor", 1.0f),
                            "grok_yarn");
  const auto corr = [](double beta) {
    return 64.0 * std::log(8192.0 / (2.0 * 3.141592653589793 * beta)) / (2.0 * std::log(500000.0));
  };
  const double lo = std::floor(corr(8.0)), hi = std::ceil(corr(1.0));
  for (int i = 0; i < 32; ++i) {
    const double ramp = 1.0 - std::clamp((i - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
    const double extrap = ggml_inv_freq(500000.0, i, 64);
    CHECK(yarn.ropes[0]->inv_freq[i] ==
          Approx(extrap / 8.0 * (1.0 - ramp) + extrap * ramp).epsilon(1e-12));
  }
  check_refused(writer_of("grok", 1, 64)
                    .str("grok.rope.scaling.type", "yarn")
                    .f32("grok.rope.scaling.factor", 8.0f)
                    .f32("grok.rope.scaling.yarn_ext_factor", 0.5f),
                "grok_ext", "grok.rope.scaling.yarn_ext_factor = 0.5: expected 1");
}
