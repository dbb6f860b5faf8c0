// The deepseek4 row of model/gguf_archs.hpp on GGUFs the test writes (gguf_writer.hpp), against
// the rule as the pinned llama.cpp states it (llama-cpp-python 0.3.36's sdist, src/models/
// deepseek4.cpp): load_arch_hparams (every layer SWA, the window, attention.compress_ratios,
// attention.compress_rope_freq_base and attention.indexer.key_length required, the nextn count
// reset without the MTP tensor) and build_attention / build_lid_top_k (q, kv and indexer_q rotate
// their last n_rot features NORM; a compressed layer with the compress base, the context's scale
// and YaRN ramp, attn_factor dsv4_rope_attn_factor; the others with the global base, scale 1,
// ext_factor 0, attn_factor 1). The expected frequencies are ggml_rope_cache_init's and rope_yarn's
// (ggml/src/ggml-cpu/ops.cpp) with ggml_rope_yarn_corr_dims (ggml/src/ggml.c), written here again.
//
// No converted model: transformers 5.25.0 has DeepseekV4ForCausalLM, the class the pinned
// converter registers for MODEL_ARCH.DEEPSEEK4 (conversion/deepseek.py, DeepseekV4Model), but the
// converter reads the released checkpoint, not what save_pretrained writes: on a tiny
// DeepseekV4ForCausalLM it stops at KeyError 'num_hash_layers' (set_gguf_parameters; the config
// class folds that key and compress_ratios into mlp_layer_types / layer_types), and with both keys
// added at "Missing hash routing tensor layers.0.ffn.gate.tid2eid" (_write_hash_routing_tensors:
// the checkpoint's unprefixed names, where transformers saves model.layers.N..., and
// _write_mxfp4_expert_tensor wants each expert's MXFP4 weight with its .scale). llama.cpp itself
// runs this row's rule on a file written with the sdist's gguf-py: conformance/llamacpp/
// deepseek4.py compares every ROPE node it computes with `posemb layers`.

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

constexpr int n_rot = 16;                   // rope.dimension_count (qk_rope_head_dim)
constexpr int head = 64;                    // attention.key_length (n_embd_head)
constexpr int index_head = 32;              // attention.indexer.key_length
constexpr double base = 10000.0;            // rope.freq_base
constexpr double compress_base = 160000.0;  // attention.compress_rope_freq_base
const std::vector<std::int64_t> ratios = {0, 4, 128, 4};

// Four layers, one of each kind plus a second CSA layer, with every key the loader requires for
// positions; `skip` leaves one key out.
test_gguf::GgufWriter ds4_writer(const std::string& skip = "") {
  const std::string a = "deepseek4.";
  test_gguf::GgufWriter w = test_gguf::model_writer("deepseek4", 4, 8192, 256, 4);
  w.u32(a + "attention.key_length", head)
      .u32(a + "attention.value_length", head)
      .u32(a + "rope.dimension_count", n_rot)
      .f32(a + "rope.freq_base", static_cast<float>(base));
  if (skip != "sliding_window") w.u32(a + "attention.sliding_window", 128);
  if (skip != "compress_ratios") w.ints(a + "attention.compress_ratios", ratios, 4);
  if (skip != "compress_rope_freq_base") {
    w.f32(a + "attention.compress_rope_freq_base", static_cast<float>(compress_base));
  }
  if (skip != "indexer.key_length") w.u32(a + "attention.indexer.key_length", index_head);
  return w;
}

test_gguf::GgufWriter ds4_yarn(float factor, std::uint32_t original) {
  return ds4_writer()
      .str("deepseek4.rope.scaling.type", "yarn")
      .f32("deepseek4.rope.scaling.factor", factor)
      .u32("deepseek4.rope.scaling.original_context_length", original);
}

// ggml's YaRN frequency of pair i (ggml_rope_cache_init with ext_factor 1): theta_extrap =
// base^(-2i / n), theta_interp = scale theta_extrap, ramp = 1 - clamp((i - lo) / max(0.001,
// hi - lo), 0, 1) (rope_yarn_ramp of i0 = 2i), lo / hi = floor / ceil of ggml_rope_yarn_corr_dim
// n ln(n_ctx_orig / (2 pi beta)) / (2 ln base) at beta_fast 32 / beta_slow 1, clamped to [0, n -
// 1].
double ggml_yarn_inv_freq(double b, double scale, int i, int n, double n_ctx_orig) {
  const double pi = 3.14159265358979323846;
  const auto corr_dim = [&](double beta) {
    return n * std::log(n_ctx_orig / (beta * 2.0 * pi)) / (2.0 * std::log(b));
  };
  const double lo = std::max(0.0, std::floor(corr_dim(32.0)));
  const double hi = std::min(n - 1.0, std::ceil(corr_dim(1.0)));
  const double y = (i - lo) / std::max(0.001, hi - lo);
  const double ramp = 1.0 - std::min(1.0, std::max(0.0, y));
  const double extrap = ggml_inv_freq(b, i, n);
  return scale * extrap * (1.0 - ramp) + extrap * ramp;
}

// The layer's rotation and attention as build_attention sets them, the frequencies given.
void check_layer(const posemb::GgufPositions& plan, std::size_t il,
                 const std::vector<double>& inv_freq) {
  CAPTURE(il);
  const posemb::LayerPositions& layer = plan.model.layers[il];
  REQUIRE(layer.kind == posemb::PositionKind::Rope);
  REQUIRE(plan.ropes[il]);
  CHECK(layer.head_dim == head);
  CHECK(layer.rope->rotary_dim == n_rot);
  CHECK(layer.rotary_offset == head - n_rot);  // ggml_rope_set_offset(q, n_embd_head_nope)
  CHECK(layer.rope->pairing == posemb::Pairing::Interleaved);  // NORM, not permuted
  CHECK(plan.ropes[il]->attention_scale == 1.0);
  CHECK(*layer.attention.softmax_scale == Approx(0.125).epsilon(1e-15));  // 1/sqrt(64)
  CHECK(layer.attention.attention_sinks);
  CHECK(layer.attention.sliding_window == std::optional<std::int64_t>(128));
  for (int i = 0; i < n_rot / 2; ++i) {
    CAPTURE(i);
    CHECK(plan.ropes[il]->inv_freq[i] == Approx(inv_freq[i]).epsilon(1e-14));
  }
  // The plan's RopeSpec carries the same frequencies and magnitude.
  const posemb::RopeSpec spec = layer.rope_spec();
  for (int i = 0; i < n_rot / 2; ++i) {
    CHECK(spec.inv_freq[i] == Approx(inv_freq[i]).epsilon(1e-12));
  }
  CHECK(spec.attention_scale == Approx(1.0).epsilon(1e-15));
}

// The indexer of a ratio-4 layer: indexer_q's last n_rot of attention.indexer.key_length, NORM,
// the layer's frequencies (build_lid_top_k); no indexer on the other layers.
void check_indexer(const posemb::GgufPositions& plan, std::size_t il,
                   const std::vector<double>& inv_freq) {
  CAPTURE(il);
  const posemb::LayerPositions& layer = plan.model.layers[il];
  if (ratios[il] != 4) {
    CHECK_FALSE(layer.indexer);
    CHECK(layer.layer_type == "sliding_attention");
    return;
  }
  CHECK(layer.layer_type == "indexed_attention");
  REQUIRE(layer.indexer);
  CHECK(layer.indexer->head_dim == index_head);
  CHECK(layer.indexer->rotary_offset == index_head - n_rot);
  CHECK(layer.indexer->rope.pairing == posemb::Pairing::Interleaved);
  const posemb::RopeSpec spec = layer.indexer_rope_spec();
  CHECK(spec.rotary_dim == n_rot);
  for (int i = 0; i < n_rot / 2; ++i) {
    CHECK(spec.inv_freq[i] == Approx(inv_freq[i]).epsilon(1e-12));
  }
}

std::vector<double> plain_freqs(double b, double scale) {
  std::vector<double> f;
  for (int i = 0; i < n_rot / 2; ++i) f.push_back(scale * ggml_inv_freq(b, i, n_rot));
  return f;
}

}  // namespace

TEST_CASE("deepseek4 unscaled: compressed layers at compress_rope_freq_base, the others at base") {
  const posemb::GgufPositions plan = plan_of(ds4_writer(), "ds4_plain");
  CHECK(std::string(posemb::to_string(plan.hparams.rope_mode)) == "norm");
  REQUIRE(plan.model.layers.size() == 4);
  for (std::size_t il = 0; il < 4; ++il) {
    const auto freqs = plain_freqs(ratios[il] != 0 ? compress_base : base, 1.0);
    check_layer(plan, il, freqs);
    check_indexer(plan, il, freqs);
    CHECK(plan.ropes[il]->rope_type == "default");
  }
}

TEST_CASE("deepseek4 with YaRN: the compressed layers ramp at their own base, the others plain") {
  const posemb::GgufPositions plan = plan_of(ds4_yarn(16.0f, 4096), "ds4_yarn");
  for (std::size_t il = 0; il < 4; ++il) {
    std::vector<double> freqs = plain_freqs(base, 1.0);
    if (ratios[il] != 0) {
      for (int i = 0; i < n_rot / 2; ++i) {
        freqs[static_cast<std::size_t>(i)] =
            ggml_yarn_inv_freq(compress_base, 1.0 / 16.0, i, n_rot, 4096.0);
      }
    }
    check_layer(plan, il, freqs);
    check_indexer(plan, il, freqs);
    CHECK(plan.ropes[il]->rope_type == (ratios[il] != 0 ? "yarn" : "default"));
  }
  // The ramp's ends: with these keys lo = 2 and hi = 5 (corr dims 2.01 and 4.33 pairs at base
  // 160000): pairs 0..2 keep the extrapolated frequency, pairs 5.. are divided by 16 whole.
  const Eigen::VectorXd& f = plan.ropes[1]->inv_freq;
  for (int i = 0; i < n_rot / 2; ++i) {
    CAPTURE(i);
    const double extrap = ggml_inv_freq(compress_base, i, n_rot);
    if (i <= 2) CHECK(f[i] == Approx(extrap).epsilon(1e-15));
    if (i >= 5) CHECK(f[i] == Approx(extrap / 16.0).epsilon(1e-15));
    if (i == 3 || i == 4) CHECK((f[i] < extrap && f[i] > extrap / 16.0));
  }
}

TEST_CASE("deepseek4: dsv4_rope_attn_factor cancels rope_yarn's magnitude, so every layer has 1") {
  // In float, as the graph and rope_yarn compute it: (1 / (1 + 0.1 ln F)) (1 + 0.1 ln F).
  for (const float factor : {2.0f, 16.0f, 40.0f}) {
    const float freq_scale = 1.0f / factor;
    const float attn = 1.0f / (1.0f + 0.1f * std::log(1.0f / freq_scale));
    const float mscale = attn * (1.0f + 0.1f * std::log(1.0f / freq_scale));
    CHECK(mscale == Approx(1.0f).epsilon(2e-7));
    const auto plan = plan_of(ds4_yarn(factor, 4096), "ds4_mag");
    for (std::size_t il = 0; il < 4; ++il) CHECK(plan.ropes[il]->attention_scale == 1.0);
  }
  // rope.scaling.attn_factor is llama_context's yarn_attn_factor, which deepseek4's graph never
  // passes: still 1; linear scaling divides only the compressed layers' frequencies.
  const auto linear = plan_of(ds4_writer()
                                  .str("deepseek4.rope.scaling.type", "linear")
                                  .f32("deepseek4.rope.scaling.factor", 2.0f)
                                  .f32("deepseek4.rope.scaling.attn_factor", 0.5f),
                              "ds4_linear");
  for (std::size_t il = 0; il < 4; ++il) {
    const auto freqs = ratios[il] != 0 ? plain_freqs(compress_base, 0.5) : plain_freqs(base, 1.0);
    check_layer(linear, il, freqs);
  }
}

TEST_CASE("deepseek4: every layer slides whatever attention.sliding_window_pattern says") {
  // load_arch_hparams: set_swa_pattern(0), no pattern key read (lfm2's likewise sets the flags).
  const auto flags = plan_of(ds4_writer().bools("deepseek4.attention.sliding_window_pattern",
                                                {false, false, false, false}),
                             "ds4_flags");
  for (std::size_t il = 0; il < 4; ++il) {
    CHECK(flags.model.layers[il].attention.sliding_window == std::optional<std::int64_t>(128));
  }
  const auto lfm2 = plan_of(test_gguf::model_writer("lfm2", 2, 8192, 256, 4)
                                .u32("lfm2.attention.sliding_window", 512)
                                .ints("lfm2.attention.head_count_kv", {2, 2})
                                .bools("lfm2.attention.sliding_window_pattern", {false, false}),
                            "lfm2_flags");
  CHECK(lfm2.model.layers[0].attention.sliding_window == std::optional<std::int64_t>(512));
  CHECK(lfm2.model.layers[1].attention.sliding_window == std::optional<std::int64_t>(512));
}

TEST_CASE("deepseek4: nextn_predict_layers counts only with the MTP layer's eh_proj tensor") {
  const auto five = [](bool mtp_tensor) {
    test_gguf::GgufWriter w = test_gguf::model_writer("deepseek4", 5, 8192, 256, 4);
    w.u32("deepseek4.attention.key_length", head)
        .u32("deepseek4.rope.dimension_count", n_rot)
        .u32("deepseek4.attention.sliding_window", 128)
        .ints("deepseek4.attention.compress_ratios", {0, 4, 128, 4, 0}, 4)
        .f32("deepseek4.attention.compress_rope_freq_base", 160000.0f)
        .u32("deepseek4.attention.indexer.key_length", index_head)
        .u32("deepseek4.nextn_predict_layers", 1);
    if (mtp_tensor) w.info("blk.4.nextn.eh_proj.weight", {256, 256}, 0, 0);
    return w;
  };
  CHECK(plan_of(five(false), "ds4_nomtp").model.layers.size() == 5);
  CHECK(plan_of(five(true), "ds4_mtp").model.layers.size() == 4);
}

TEST_CASE("deepseek4: a missing required key or a bad value is an error naming it") {
  const std::string a = "deepseek4.";
  for (const char* key :
       {"sliding_window", "compress_ratios", "compress_rope_freq_base", "indexer.key_length"}) {
    CAPTURE(key);
    check_refused(ds4_writer(key), std::string("ds4_no_") + key,
                  a + "attention." + key + ": missing");
  }
  check_refused(ds4_writer("compress_ratios").ints(a + "attention.compress_ratios", {0, 4, 128}, 4),
                "ds4_short",
                a + "attention.compress_ratios.size() = 3: expected >= block_count = 4");
  check_refused(
      ds4_writer("compress_ratios").ints(a + "attention.compress_ratios", {0, 8, 128, 4}, 4),
      "ds4_ratio", a + "attention.compress_ratios[1] = 8: expected 0, 4 or 128");
  check_refused(
      ds4_writer("compress_rope_freq_base").f32(a + "attention.compress_rope_freq_base", -1.0f),
      "ds4_base", a + "attention.compress_rope_freq_base = -1");
  check_refused(ds4_writer("indexer.key_length").u32(a + "attention.indexer.key_length", 8),
                "ds4_index", a + "attention.indexer.key_length = 8: expected >= n_rot = 16");
  check_refused(ds4_writer("compress_ratios").f32(a + "attention.compress_ratios", 4.0f),
                "ds4_type", a + "attention.compress_ratios");
}
