// The GGUF architectures posemb reads, one row each: llama.cpp's arch name, its rope type, the
// per-layer rules its loader and graph builder apply, and where they are written in the pinned
// llama.cpp (llama-cpp-python 0.3.36's sdist, vendor/llama.cpp). A row names only what differs
// from the default row (NEOX rotation, global base and scale on every layer, n_rot from
// rope.dimension_count, softmax scale head_dim^-0.5, no SWA, no NoPE, no rope factors).
//
// Sources of the columns (src/ is llama.cpp's):
//   mode:             llama_model_rope_type (src/llama-model.cpp)
//   permuted:         convert_hf_to_gguf.py's LlamaModel.permute (undo_permute) reorders the q/k
//                     rows of the HF checkpoint into NORM order (conversion/llama.py, granite.py)
//   rot_is_head_dim:  llama_model_base::load_hparams (llama, falcon) or the graph builder's
//                     GGML_ASSERT(n_embd_head == n_rot) (src/models/<arch>.cpp)
//   everything else:  the arch's load_arch_hparams and graph in src/models/<arch>.cpp (`source`)
//
// Adding an architecture: one row below, citing its file; a rule no column covers is a new
// column (a member with its default and a setter), read in gguf.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace posemb {

// ggml's rotation modes (ggml.h GGML_ROPE_TYPE_*): NORM rotates features (2i, 2i+1) of the GGUF
// tensor, NEOX, MROPE and IMROPE (i, i + n_rot/2), IMROPE's sections interleaved pair by pair
// (ggml_mrope_cache_init's is_imrope); None: no rotation (llama.cpp's LLAMA_ROPE_TYPE_NONE).
enum class GgufRopeMode { Norm, Neox, Mrope, Imrope, None };

inline const char* to_string(GgufRopeMode mode) {
  switch (mode) {
    case GgufRopeMode::Norm:
      return "norm";
    case GgufRopeMode::Neox:
      return "neox";
    case GgufRopeMode::Mrope:
      return "mrope";
    case GgufRopeMode::Imrope:
      return "imrope";
    case GgufRopeMode::None:
      return "none";
  }
  return "unknown";
}

// The factor tensors llama_model::get_rope_factors finds: `rope_freqs` (RopeFreqs), LongRoPE's
// long/short pair chosen by the context (LongRope), or `rope_freqs` unless the scaling type is
// longrope, then the pair (RopeFreqsOrLongRope: llama's load_arch_tensors creates either).
enum class GgufRopeFactors { None, RopeFreqs, LongRope, RopeFreqsOrLongRope };

// The graph builder's kq_scale: head_dim^-0.5 (HeadDim); attention.scale when present and non-zero
// (AttentionScaleKey, f_attention_scale); DeepSeek's MLA mscale^2 / sqrt(key_length_mla) (Mla);
// 1 (One: gemma4's f_attention_scale); n_rot^-0.5 (RotDim: bailingmoe's graph);
// attention.output_scale else the row's softmax_default (OutputScaleKey: grok's
// f_attn_out_scale, build_attn_mha's tanh(kq * s / c) * c with kq_scale 1).
enum class GgufSoftmaxScale { HeadDim, AttentionScaleKey, Mla, One, RotDim, OutputScaleKey };

// The base of SWA layers: rope.freq_base_swa else the global base (KeyOrGlobal, llama_model::
// get_rope_freq_base), else 10000 (KeyOr10000, gemma3), or the global base whatever the key says
// (Global: the graph passes the global freq_base, olmo2), or the key, required (Key: dots3note's
// load_arch_hparams reads it with get_key).
enum class GgufSwaBase { KeyOrGlobal, KeyOr10000, Global, Key };

// The layers whose lightning indexer rotates its q / k (attention.indexer.key_length wide, n_rot
// features with the layer's frequencies, by default the first ones NEOX): every RoPE layer (Every:
// deepseek32), the full-attention layers (Full: dots3note's graph, `if (!is_swa)`), the layers
// from leading_dense_block_count on (AfterDenseLead: minimax-m3's MSA layers); those whose
// attention.indexer.types flag (one per layer, or one UINT32) says "full", the others
// indexed_attention layers reusing the last owner's top-k: by default every layer below a 1048576
// context, GLM_5_2_DEFAULT_INDEXER_TYPES from it (TypesOrGlm52: glm-dsa's load_arch_hparams), or
// none, and no indexer at all without attention.indexer.top_k > 0 (TypesIfTopK: hy_v4's).
enum class GgufIndexer { None, Every, Full, AfterDenseLead, TypesOrGlm52, TypesIfTopK };

// The graph's rotation call: ggml_rope_ext with the context's base, scale, ext_factor and
// attn_factor (Ext); ggml_rope_ext(base, 1, 0, 1) (Plain: deepseek2-ocr); ggml_rope, whose
// ggml_rope_impl passes base 10000, scale 1, ext_factor 0, attn_factor 1 (Defaults: cogvlm).
enum class GgufRopeCall { Ext, Plain, Defaults };

// Query temperature (llm_graph_input_attn_temp: q *= log(floor(pos / L) + 1) * s + 1, s from
// attention.temperature_scale, applied only when s != 0): L from attention.temperature_length
// (LengthKey, deepseek2) or n_ctx_orig_yarn (OriginalContext, mistral3).
enum class GgufTemperature { None, LengthKey, OriginalContext };

// rope.scaling.yarn_log_multiplier: not read (None), read as written (Raw, mistral3), divided by
// 0.1f (Tenth: the converter wrote 0.1 * mscale_all_dim; deepseek32, mistral4), and then also
// YaRN's mscale in llama_context's yarn_attn_factor (TenthAsMscale: LLM_ARCH_DEEPSEEK2 only).
enum class GgufYarnLogMul { None, Raw, Tenth, TenthAsMscale };

struct GgufArch {
  std::string_view name;    // general.architecture (LLM_ARCH_NAMES, src/llama-arch.cpp)
  std::string_view source;  // load_arch_hparams and the graph builder: src/models/<file>.cpp
  GgufRopeMode mode = GgufRopeMode::Neox;
  bool permuted = false;           // the converter reordered q/k rows into NORM order
  bool rot_is_head_dim = false;    // n_rot must equal the head width
  bool sections_required = false;  // rope.dimension_sections required (qwen2vl)
  bool mrope_if_sections = false;  // NORM unless sections[0] > 0 and sections[1] > 0 (glm4)
  GgufRopeFactors factors = GgufRopeFactors::None;
  bool factors_global_only = false;  // SWA layers rotate without the factors (gemma4)
  GgufSoftmaxScale softmax = GgufSoftmaxScale::HeadDim;
  std::int64_t embd_head_scale_layers = 0;  // with this many layers: (n_embd / n_head)^-0.5
  double softcap_default = 0.0;             // attn_logit_softcapping's default; 0: no softcap
  bool sinks = false;                       // attn_sinks join every softmax
  bool mla = false;             // DeepSeek MLA: key_length_mla heads, yarn_log_multiplier
  double alibi_max_bias = 0.0;  // > 0: ALiBi on every layer with this max bias, no RoPE
  // SWA layers: set_swa_pattern(period) (il % period < period - 1), the period overridden by
  // attention.sliding_window_pattern (a UINT32, or one flag per layer).
  std::int64_t swa_period = 0;       // 0: no SWA layers
  bool swa_flags_required = false;   // SWA layers only from the per-layer flags (required)
  bool swa_head = false;             // SWA layers: key_length_swa wide, rope.dimension_count_swa
  bool swa_if_window = false;        // only when attention.sliding_window > 0
  bool swa_window_required = false;  // attention.sliding_window required
  std::int64_t swa_window_default = 0;
  GgufSwaBase swa_base = GgufSwaBase::KeyOrGlobal;
  bool swa_unscaled = false;  // SWA layers: freq_scale 1
  bool swa_plain = false;     // SWA layers: ext_factor 0 and attn_factor 1 (no YaRN)
  // Chunked attention in place of SWA (llama4): chunk size; attention.sliding_window = 0 turns
  // the chunks off and makes only the last layer NoPE.
  std::int64_t chunk = 0;
  std::int64_t nope_step = 0;     // layer il has no RoPE iff (il + 1) % step == 0
  bool nope_temperature = false;  // NoPE layers scale queries (build_inp_attn_scale)
  bool rope_switch = false;       // rope.scaling.finetuned false: no RoPE on any layer
  bool rope_pattern = false;      // attention.rope_pattern: one flag per layer, 0 = NoPE
  // Recurrent (linear-attention) layers: attention.recurrent_layers (one flag per layer) else
  // every layer but each full_attention_interval-th (this default).
  std::int64_t recurrent_interval = 0;
  bool recurrent_no_kv = false;  // layer il recurrent (no positions) iff head_count_kv[il] == 0
  // set_swa_pattern(P, dense_first): SWA iff il % P != 0
  bool swa_dense_first = false;
  // With attention.sliding_window > 0 every attention layer slides.
  bool swa_every_layer = false;
  std::int64_t swa_if_layers = 0;  // > 0: SWA layers only in a model of this many layers
  // The lightning indexer's layers (GgufIndexer); they are indexed_attention.
  GgufIndexer indexer = GgufIndexer::None;
  // The indexer's ggml mode and its slice the head's last n_rot (ggml_rope_set_offset(iq,
  // key_length - n_rot)); the MLA keys required (a throw without them: glm-dsa, hy_v4).
  GgufRopeMode indexer_mode = GgufRopeMode::Neox;
  bool indexer_at_end = false;
  bool mla_required = false;
  bool rope_swa_only = false;  // only the SWA layers rotate (the full layers are NoPE)
  // dots3note's MLA: key_length_mla / value_length_mla required, SWA layers
  // attention.key_length_mla_swa wide (required), every layer rotating hparams.n_rot() (layer
  // 0's width) and scaling by its own head width (kq_scale 1/sqrt(n_embd_head_k_mla)).
  bool swa_mla = false;
  std::int64_t swa_window_fixed = 0;  // load_arch_hparams overwrites the window with this
  bool swa_rot = false;               // SWA layers rotate rope.dimension_count_swa (default n_rot)
  bool rotary_at_end = false;  // the rotated slice is the head's last n_rot features (MLA's k_pe)
  // DeepSeek-V4's compressed attention (deepseek4): attention.compress_ratios per layer (0, 4,
  // 128) and attention.compress_rope_freq_base, both required; a layer with ratio != 0 rotates
  // with that base, the global scale and YaRN's ramp, the others with the global base unscaled
  // and plain; magnitude 1 on every layer; the ratio-4 layers carry the indexer, its last n_rot
  // features rotated with the layer's pairing.
  bool compressed_attention = false;
  bool nextn_if_tensor = false;  // nextn layers only with blk.{n_layer}.nextn.eh_proj.weight
  // Qwen4-Exp's QSA: on the attention layers whose attention.compress_ratios entry r is > 0, an
  // indexer of attention.indexer.key_length features rotates, with the layer's own call, its q at
  // the token's position and its keys, means of r tokens' keys, at the block's first position.
  bool qsa = false;
  GgufRopeCall rope_call = GgufRopeCall::Ext;
  GgufTemperature temperature = GgufTemperature::None;
  GgufYarnLogMul yarn_log_mul = GgufYarnLogMul::None;
  bool yarn_betas = false;  // rope.scaling.yarn_beta_fast / _slow (default beta_fast_default / 1)
  double beta_fast_default = 32.0;  // llama_hparams' 32, or the row's load_arch_hparams default
  // rope.scaling.yarn_ext_factor (only llama_context's own default accepted: 1 with YaRN, else 0)
  // and rope.scaling.yarn_attn_factor (the magnitude without YaRN, times attn_factor).
  bool yarn_ext_keys = false;
  double softmax_default = 0.0;  // GgufSoftmaxScale::OutputScaleKey's value without the key
  bool ntk_alpha = false;        // rope.scaling.alpha > 0 scales the base by alpha^(d / (d - 2))
  // posemb diff's notes (README §6 of tests/data/gguf): why llama.cpp runs no sliding window a
  // config asks for, and the fields whose llama.cpp values are hard-coded (space-separated).
  std::string_view no_window_note;
  std::string_view hardcoded_fields;
  // Drafts and adapters (eagle3, dflash, graniteswitch): load_arch_hparams' required keys (after
  // "{arch}.", space-separated; read for presence only), {arch}.target_layers (an ARRAY of the
  // target's layer ids; target_layer_count > 0: exactly so many), the graph's block count
  // (GGML_ASSERT(n_layer == N)), a key whose value > 0 selects a graph posemb does not model,
  // MROPE iff any rope.dimension_sections entry != 0 (else the row's mode; ggml_rope_multi then
  // gets no factors), attn_sinks on the layers whose blk.N.attn_sinks tensor exists, and
  // llama.cpp's extra single-head NoPE layer at index n_layer (kq_scale 1).
  std::string_view required_keys;
  bool target_layers = false;
  std::int64_t target_layer_count = 0;
  std::int64_t block_count_fixed = 0;
  std::string_view unmodelled_key;
  bool mrope_if_any_section = false;
  bool sinks_if_tensor = false;
  bool router_layer = false;
  bool factors_head_wide = false;  // rope_freqs created [n_embd_head_k / 2] (dflash), not n_rot / 2

  constexpr GgufArch with_mode(GgufRopeMode m) const { return set(&GgufArch::mode, m); }
  constexpr GgufArch norm() const { return with_mode(GgufRopeMode::Norm); }
  constexpr GgufArch with_permuted() const { return set(&GgufArch::permuted, true); }
  constexpr GgufArch with_rot_is_head_dim() const { return set(&GgufArch::rot_is_head_dim, true); }
  constexpr GgufArch with_sections_required() const {
    return set(&GgufArch::sections_required, true);
  }
  constexpr GgufArch with_mrope_if_sections() const {
    return set(&GgufArch::mrope_if_sections, true);
  }
  constexpr GgufArch with_factors(GgufRopeFactors f) const { return set(&GgufArch::factors, f); }
  constexpr GgufArch with_factors_global_only() const {
    return set(&GgufArch::factors_global_only, true);
  }
  constexpr GgufArch with_swa_flags_required() const {
    return set(&GgufArch::swa_flags_required, true);
  }
  constexpr GgufArch with_swa_head() const { return set(&GgufArch::swa_head, true); }
  constexpr GgufArch with_softmax(GgufSoftmaxScale s) const { return set(&GgufArch::softmax, s); }
  constexpr GgufArch with_embd_head_scale_layers(std::int64_t n) const {
    return set(&GgufArch::embd_head_scale_layers, n);
  }
  constexpr GgufArch with_softcap_default(double c) const {
    return set(&GgufArch::softcap_default, c);
  }
  constexpr GgufArch with_sinks() const { return set(&GgufArch::sinks, true); }
  constexpr GgufArch with_mla() const { return set(&GgufArch::mla, true); }
  constexpr GgufArch with_alibi(double max_bias) const {
    return set(&GgufArch::alibi_max_bias, max_bias).with_mode(GgufRopeMode::None);
  }
  constexpr GgufArch with_swa(std::int64_t period) const {
    return set(&GgufArch::swa_period, period);
  }
  constexpr GgufArch with_swa_if_window() const { return set(&GgufArch::swa_if_window, true); }
  constexpr GgufArch with_swa_window_required() const {
    return set(&GgufArch::swa_window_required, true);
  }
  constexpr GgufArch with_swa_window_default(std::int64_t w) const {
    return set(&GgufArch::swa_window_default, w);
  }
  constexpr GgufArch with_swa_base(GgufSwaBase b) const { return set(&GgufArch::swa_base, b); }
  constexpr GgufArch with_swa_unscaled() const { return set(&GgufArch::swa_unscaled, true); }
  constexpr GgufArch with_swa_plain() const { return set(&GgufArch::swa_plain, true); }
  constexpr GgufArch with_chunks(std::int64_t size, std::int64_t period) const {
    return set(&GgufArch::chunk, size).with_swa(period);
  }
  constexpr GgufArch with_nope_every(std::int64_t step) const {
    return set(&GgufArch::nope_step, step);
  }
  constexpr GgufArch with_nope_temperature() const {
    return set(&GgufArch::nope_temperature, true);
  }
  constexpr GgufArch with_rope_switch() const { return set(&GgufArch::rope_switch, true); }
  constexpr GgufArch with_rope_pattern() const { return set(&GgufArch::rope_pattern, true); }
  constexpr GgufArch with_recurrent_no_kv() const { return set(&GgufArch::recurrent_no_kv, true); }
  constexpr GgufArch with_swa_dense_first() const { return set(&GgufArch::swa_dense_first, true); }
  constexpr GgufArch with_swa_every_layer() const { return set(&GgufArch::swa_every_layer, true); }
  constexpr GgufArch with_swa_if_layers(std::int64_t n) const {
    return set(&GgufArch::swa_if_layers, n);
  }
  constexpr GgufArch with_indexer(GgufIndexer layers = GgufIndexer::Every) const {
    return set(&GgufArch::indexer, layers);
  }
  constexpr GgufArch with_indexer(GgufIndexer layers, GgufRopeMode pairing_mode,
                                  bool at_end = false) const {
    return with_indexer(layers).with_indexer_rotation(pairing_mode, at_end);
  }
  // The indexer's mode and slice alone, for a row whose indexer layers another rule chooses
  // (deepseek4's compressed_attention: the ratio-4 layers).
  constexpr GgufArch with_indexer_rotation(GgufRopeMode pairing_mode, bool at_end) const {
    return set(&GgufArch::indexer_mode, pairing_mode).set(&GgufArch::indexer_at_end, at_end);
  }
  constexpr GgufArch with_mla_required() const { return set(&GgufArch::mla_required, true); }
  constexpr GgufArch with_swa_mla() const { return set(&GgufArch::swa_mla, true); }
  constexpr GgufArch with_qsa() const { return set(&GgufArch::qsa, true); }
  constexpr GgufArch with_rope_swa_only() const { return set(&GgufArch::rope_swa_only, true); }
  constexpr GgufArch with_swa_window_fixed(std::int64_t w) const {
    return set(&GgufArch::swa_window_fixed, w);
  }
  constexpr GgufArch with_swa_rot() const { return set(&GgufArch::swa_rot, true); }
  constexpr GgufArch with_rotary_at_end() const { return set(&GgufArch::rotary_at_end, true); }
  constexpr GgufArch with_compressed_attention() const {
    return set(&GgufArch::compressed_attention, true);
  }
  constexpr GgufArch with_nextn_if_tensor() const { return set(&GgufArch::nextn_if_tensor, true); }
  constexpr GgufArch with_rope_call(GgufRopeCall c) const { return set(&GgufArch::rope_call, c); }
  constexpr GgufArch with_temperature(GgufTemperature t) const {
    return set(&GgufArch::temperature, t);
  }
  constexpr GgufArch with_yarn_log_mul(GgufYarnLogMul m) const {
    return set(&GgufArch::yarn_log_mul, m);
  }
  constexpr GgufArch with_yarn_betas(double fast_default = 32.0) const {
    return set(&GgufArch::yarn_betas, true).set(&GgufArch::beta_fast_default, fast_default);
  }
  constexpr GgufArch with_yarn_ext_keys() const { return set(&GgufArch::yarn_ext_keys, true); }
  constexpr GgufArch with_output_scale(double default_scale) const {
    return set(&GgufArch::softmax, GgufSoftmaxScale::OutputScaleKey)
        .set(&GgufArch::softmax_default, default_scale);
  }
  constexpr GgufArch with_ntk_alpha() const { return set(&GgufArch::ntk_alpha, true); }
  constexpr GgufArch with_no_window_note(std::string_view note) const {
    return set(&GgufArch::no_window_note, note);
  }
  constexpr GgufArch with_hardcoded_fields(std::string_view fields) const {
    return set(&GgufArch::hardcoded_fields, fields);
  }
  constexpr GgufArch with_recurrent_interval(std::int64_t n) const {
    return set(&GgufArch::recurrent_interval, n);
  }
  constexpr GgufArch with_required_keys(std::string_view keys) const {
    return set(&GgufArch::required_keys, keys);
  }
  constexpr GgufArch with_target_layers(std::int64_t count = 0) const {
    return set(&GgufArch::target_layers, true).set(&GgufArch::target_layer_count, count);
  }
  constexpr GgufArch with_block_count_fixed(std::int64_t n) const {
    return set(&GgufArch::block_count_fixed, n);
  }
  constexpr GgufArch with_unmodelled_key(std::string_view key) const {
    return set(&GgufArch::unmodelled_key, key);
  }
  constexpr GgufArch with_mrope_if_any_section() const {
    return set(&GgufArch::mrope_if_any_section, true);
  }
  constexpr GgufArch with_sinks_if_tensor() const { return set(&GgufArch::sinks_if_tensor, true); }
  constexpr GgufArch with_router_layer() const { return set(&GgufArch::router_layer, true); }
  constexpr GgufArch with_factors_head_wide() const {
    return set(&GgufArch::factors_head_wide, true);
  }

 private:
  template <class T, class V>
  constexpr GgufArch set(T GgufArch::*member, V value) const {
    GgufArch row = *this;
    row.*member = value;
    return row;
  }
};

// A row with its name and source file; everything else the default.
constexpr GgufArch gguf_arch(std::string_view name, std::string_view source) {
  GgufArch row;
  row.name = name;
  row.source = source;
  return row;
}

// Rules several architectures share (one graph builder or one loader behind several names).
//   LlamaModel's conversion (llama and its kin): NORM on the q/k rows LlamaModel.permute
//   reordered, n_rot = head width (load_hparams or the graph's GGML_ASSERT(n_embd_head == n_rot))
constexpr GgufArch gguf_llama_like_arch(std::string_view name, std::string_view source) {
  return gguf_arch(name, source).norm().with_permuted().with_rot_is_head_dim();
}
//   ... with llama's `rope_freqs` or LongRoPE's pair (load_arch_tensors creates either; deci,
//   mistral3)
constexpr GgufArch gguf_llama_factors_arch(std::string_view name, std::string_view source) {
  return gguf_llama_like_arch(name, source).with_factors(GgufRopeFactors::RopeFreqsOrLongRope);
}
//   ... and kq_scale attention.scale when non-zero (the granite family's load_arch_hparams are
//   the only readers of LLM_KV_ATTENTION_SCALE: granite, granite_swa, granitemoe)
constexpr GgufArch gguf_granite_arch(std::string_view name, std::string_view source) {
  return gguf_llama_factors_arch(name, source).with_softmax(GgufSoftmaxScale::AttentionScaleKey);
}
//   sectioned: rope.dimension_sections required (get_key_or_arr(..., true)), n_rot = head width
//              (qwen3vl, qwen3vlmoe, qwen3tts, paddleocr)
constexpr GgufArch gguf_sectioned_arch(std::string_view name, std::string_view source,
                                       GgufRopeMode mode) {
  return gguf_arch(name, source).with_mode(mode).with_rot_is_head_dim().with_sections_required();
}
//   Gated DeltaNet hybrid (qwen35, qwen35moe): recurrent layers but each
//   full_attention_interval-th (default 4) or the attention.recurrent_layers flags, partial
//   interleaved M-RoPE with the sections required, kq_scale 1/sqrt(n_embd_head) (f_attention_scale
//   is never read)
constexpr GgufArch gguf_gated_delta_net_arch(std::string_view name, std::string_view source) {
  return gguf_arch(name, source)
      .with_mode(GgufRopeMode::Imrope)
      .with_sections_required()
      .with_recurrent_interval(4);
}
//   gemma4's load_arch_hparams (gemma4, gemma4-assistant): SWA layers from the flags (required),
//   window required, key_length_swa wide with rope.dimension_count_swa, base rope.freq_base_swa
//   else 10000, scale 1 (llama_hparams' defaults); f_attention_scale 1; `rope_freqs`
//   (proportional RoPE) on the full layers only
constexpr GgufArch gguf_gemma4_arch(std::string_view name, std::string_view source) {
  return gguf_arch(name, source)
      .with_swa_flags_required()
      .with_swa_window_required()
      .with_swa_head()
      .with_swa_base(GgufSwaBase::KeyOr10000)
      .with_swa_unscaled()
      .with_factors(GgufRopeFactors::RopeFreqs)
      .with_factors_global_only()
      .with_softmax(GgufSoftmaxScale::One);
}
//   deepseek2's MLA (deepseek2, mistral4): NORM, q and k key_length_mla wide, q_pe / k_pe the
//   last n_rot (rotary_at_end), kq_scale mscale^2 / sqrt(key_length_mla), the query temperature
//   of attention.temperature_scale / _length
constexpr GgufArch gguf_mla_arch(std::string_view name, std::string_view source,
                                 GgufYarnLogMul log_mul) {
  return gguf_arch(name, source)
      .norm()
      .with_mla()
      .with_softmax(GgufSoftmaxScale::Mla)
      .with_rotary_at_end()
      .with_yarn_log_mul(log_mul)
      .with_temperature(GgufTemperature::LengthKey);
}

// The table. Each row's rules are read from its `source` (load_arch_hparams, the graph) and the
// mode from llama_model_rope_type.
inline const GgufArch gguf_archs[] = {
    // LLM_ARCH_LLAMA: load_hparams demands n_rot == head_dim; rope_freqs or LongRoPE's pair.
    gguf_llama_like_arch("llama", "src/models/llama.cpp")
        .with_factors(GgufRopeFactors::RopeFreqsOrLongRope)
        .with_no_window_note("llama.cpp runs no sliding window for arch llama"),
    // load_arch_hparams: n_no_rope_layer_step 4, chunked SWA 8192 with pattern 4; graph: NoPE
    // layers scale queries; GGML_ASSERT(n_embd_head == n_rot). Llama4Model does not permute.
    gguf_arch("llama4", "src/models/llama4.cpp")
        .norm()
        .with_rot_is_head_dim()
        .with_factors(GgufRopeFactors::RopeFreqs)
        .with_chunks(8192, 4)
        .with_nope_every(4)
        .with_nope_temperature()
        .with_hardcoded_fields("attention_chunk_size query_temperature positions"),
    gguf_arch("qwen2", "src/models/qwen2.cpp"),
    gguf_arch("qwen3", "src/models/qwen3.cpp"),
    gguf_arch("qwen3moe", "src/models/qwen3moe.cpp"),
    gguf_arch("qwen2moe", "src/models/qwen2moe.cpp").with_rot_is_head_dim(),
    gguf_sectioned_arch("qwen2vl", "src/models/qwen2vl.cpp", GgufRopeMode::Mrope),
    gguf_arch("glm4", "src/models/glm4.cpp").norm().with_mrope_if_sections(),
    gguf_arch("phi3", "src/models/phi3.cpp")
        .with_factors(GgufRopeFactors::LongRope)
        .with_no_window_note("llama.cpp disables Phi-3 SWA (PR #13676)"),
    // load_swa_pattern(ml, 2): even layers SWA, window default 4096; softcap default 50
    // (llama_hparams::f_attn_logit_softcapping); the 27B (46 layers) scales by n_embd / n_head.
    gguf_arch("gemma2", "src/models/gemma2.cpp")
        .with_swa(2)
        .with_swa_window_default(4096)
        .with_softcap_default(50.0)
        .with_embd_head_scale_layers(46),
    // SWA only with attention.sliding_window > 0, pattern 6; SWA base 10000 unless
    // rope.freq_base_swa, scale 1; the 27B (62 layers) scales by n_embd / n_head.
    gguf_arch("gemma3", "src/models/gemma3.cpp")
        .with_swa(6)
        .with_swa_if_window()
        .with_swa_base(GgufSwaBase::KeyOr10000)
        .with_swa_unscaled()
        .with_embd_head_scale_layers(62)
        .with_hardcoded_fields("sliding_window inv_freq softmax_scale"),
    gguf_arch("gptneox", "src/models/gptneox.cpp"),
    gguf_arch("command-r", "src/models/command-r.cpp").norm(),
    // load_swa_pattern(ml, 2) with attention.sliding_window required; attn_sinks; q/k/v shaped
    // n_head * n_rot.
    gguf_arch("gpt-oss", "src/models/openai-moe.cpp")
        .with_rot_is_head_dim()
        .with_swa(2)
        .with_swa_window_required()
        .with_sinks(),
    // MLA: q_pe / k_pe the last n_rot of key_length_mla (rotary_at_end); yarn_log_multiplier /
    // 0.1f, also YaRN's mscale (llama_context); attention.temperature_scale / _length (Mistral
    // Large's temperature tuning, build_inp_attn_scale).
    gguf_mla_arch("deepseek2", "src/models/deepseek2.cpp", GgufYarnLogMul::TenthAsMscale),
    // load_arch_hparams: f_max_alibi_bias 8; llama_model_rope_type: NONE; kq_scale
    // 1/sqrt(n_embd_head), ALiBi added after the scale (ggml_soft_max_ext).
    gguf_arch("bloom", "src/models/bloom.cpp").with_alibi(8.0),
    // NORM; ChatGLMModel does not permute (GLM's interleaved rotation); n_rot from
    // rope.dimension_count (the converter writes head_dim * partial_rotary_factor).
    gguf_arch("chatglm", "src/models/chatglm.cpp").norm(),
    // NORM; Ernie4_5Model does not permute; GGML_ASSERT(n_embd_head == n_rot).
    gguf_arch("ernie4_5", "src/models/ernie4-5.cpp").norm().with_rot_is_head_dim(),
    // load_hparams: n_rot must equal n_embd_head_k for LLM_ARCH_FALCON.
    gguf_arch("falcon", "src/models/falcon.cpp").with_rot_is_head_dim(),
    // rope on every layer iff rope.scaling.finetuned (default true); kq_scale attention.scale
    // when non-zero; rope_freqs, or LongRoPE's pair with scaling type longrope (load_arch_tensors,
    // get_rope_factors); GraniteModel permutes (LlamaModel); GGML_ASSERT(n_embd_head == n_rot).
    gguf_granite_arch("granite", "src/models/granite.cpp").with_rope_switch(),
    // granite's graph with SWA layers from the flags and window (both required), the global
    // freq_base / freq_scale on every layer (ggml_rope_ext), attention.rope_pattern's NoPE layers,
    // attn_sinks required on every layer; GraniteSWAModel permutes (GraniteModel).
    gguf_granite_arch("granite_swa", "src/models/granite-swa.cpp")
        .with_sinks()
        .with_swa_flags_required()
        .with_swa_window_required()
        .with_swa_base(GgufSwaBase::Global)
        .with_rope_pattern(),
    // SWA (Olmo 3) only with attention.sliding_window > 0, pattern 4 (or the per-layer flags);
    // the SWA layers' ggml_rope_ext gets the global freq_base, freq_scale 1, ext_factor 0 and
    // attn_factor 1; GGML_ASSERT(n_embd_head == n_rot).
    gguf_arch("olmo2", "src/models/olmo2.cpp")
        .with_rot_is_head_dim()
        .with_swa(4)
        .with_swa_if_window()
        .with_swa_base(GgufSwaBase::Global)
        .with_swa_unscaled()
        .with_swa_plain(),
    // NEOX, partial: n_rot = rope.dimension_count; q scaled by 1/sqrt(n_embd_head), kq_scale 1.
    gguf_arch("phi2", "src/models/phi2.cpp"),
    // Gated DeltaNet layers (recurrent) but each full_attention_interval-th (default 4), or the
    // attention.recurrent_layers flags; kq_scale 1/sqrt(n_embd_head) (f_attention_scale unset).
    gguf_arch("qwen3next", "src/models/qwen3next.cpp").with_recurrent_interval(4),
    // load_arch_hparams: SWA layers from attention.sliding_window_pattern's flags (required),
    // window required, key_length_swa wide with rope.dimension_count_swa (llama_hparams::n_rot(il),
    // n_embd_head_k(il)), base rope.freq_base_swa else 10000, scale 1 (llama_hparams'
    // defaults); f_attention_scale 1; graph: `rope_freqs` (proportional RoPE) on the full layers
    // only.
    gguf_gemma4_arch("gemma4", "src/models/gemma4.cpp"),
    // load_arch_hparams: n_no_rope_layer_step 4 (no query temperature); SmolLM3Model permutes
    // (LlamaModel); GGML_ASSERT(n_embd_head == n_rot).
    gguf_llama_like_arch("smollm3", "src/models/smollm3.cpp").with_nope_every(4),
    // NEOX, partial: n_rot = rope.dimension_count.
    gguf_arch("stablelm", "src/models/stablelm.cpp"),
    // NORM like ernie4_5 (Ernie4_5MoeModel does not permute); GGML_ASSERT(n_embd_head == n_rot).
    gguf_arch("ernie4_5-moe", "src/models/ernie4-5-moe.cpp").norm().with_rot_is_head_dim(),
    // NEOX, or M-RoPE when sections[0] > 0 and sections[1] > 0 (llama_model_rope_type); partial
    // (rope.dimension_count); kq_scale 1/sqrt(n_embd_head); the nextn (MTP) layers run only in
    // graph_mtp.
    gguf_arch("glm4moe", "src/models/glm4-moe.cpp").with_mrope_if_sections(),
    // llama_model_hunyuan_dense is llama_model_hunyuan_vl (src/models/hunyuan-vl.cpp): NEOX or
    // M-RoPE by the sections, base * alpha^(d / (d - 2)) with rope.scaling.alpha,
    // GGML_ASSERT(n_embd_head == n_rot), kq_scale 1/sqrt(n_embd_head).
    gguf_arch("hunyuan-dense", "src/models/hunyuan-dense.cpp")
        .with_mrope_if_sections()
        .with_rot_is_head_dim()
        .with_ntk_alpha(),
    // NEOX; StarCoder2Model does not permute; GGML_ASSERT(n_embd_head == n_rot).
    gguf_arch("starcoder2", "src/models/starcoder2.cpp").with_rot_is_head_dim(),
    // ---- Llama-like: one rotation on every layer, the loader's standard keys. NORM rows whose
    // converter class reorders q/k (LlamaModel.permute / undo_permute) say `permuted`;
    // rot_is_head_dim where the graph asserts GGML_ASSERT(n_embd_head == n_rot).
    gguf_llama_like_arch("baichuan", "src/models/baichuan.cpp"),
    gguf_arch("qwen", "src/models/qwen.cpp"),
    gguf_arch("phimoe", "src/models/phimoe.cpp").with_factors(GgufRopeFactors::LongRope),
    gguf_arch("plamo", "src/models/plamo.cpp").with_rot_is_head_dim(),
    gguf_arch("codeshell", "src/models/codeshell.cpp").with_rot_is_head_dim(),
    gguf_arch("orion", "src/models/orion.cpp").with_rot_is_head_dim(),
    gguf_llama_like_arch("internlm2", "src/models/internlm2.cpp"),
    // rope_freqs or LongRoPE's pair (load_arch_tensors), MiniCPMModel permutes.
    gguf_arch("minicpm", "src/models/minicpm.cpp")
        .norm()
        .with_permuted()
        .with_factors(GgufRopeFactors::RopeFreqsOrLongRope),
    // MLA without key_length_mla: q_pe / k_pe the last n_rot of the head (ggml_rope_set_offset(q,
    // n_embd_head_qk_nope)); LongRoPE's pair; kq_scale 1/sqrt(n_embd_head_k).
    gguf_arch("minicpm3", "src/models/minicpm3.cpp")
        .with_factors(GgufRopeFactors::LongRope)
        .with_rotary_at_end(),
    // q scaled by 1/sqrt(n_embd_head_k), kq_scale 1.
    gguf_arch("gemma", "src/models/gemma.cpp"),
    gguf_llama_like_arch("xverse", "src/models/xverse.cpp"),
    gguf_arch("dbrx", "src/models/dbrx.cpp").with_rot_is_head_dim(),
    gguf_llama_like_arch("olmo", "src/models/olmo.cpp"),
    gguf_arch("olmoe", "src/models/olmoe.cpp").with_rot_is_head_dim(),
    gguf_arch("openelm", "src/models/openelm.cpp"),
    gguf_llama_like_arch("arctic", "src/models/arctic.cpp"),
    gguf_llama_like_arch("deepseek", "src/models/deepseek.cpp"),
    gguf_arch("bitnet", "src/models/bitnet.cpp"),
    gguf_arch("jais2", "src/models/jais2.cpp").with_rot_is_head_dim(),
    // partial: n_rot = rope.dimension_count (the graph's assert is commented out).
    gguf_arch("nemotron", "src/models/nemotron.cpp"),
    gguf_arch("exaone", "src/models/exaone.cpp")
        .with_rot_is_head_dim()
        .with_factors(GgufRopeFactors::RopeFreqs),
    // granite's rules: attention.scale, rope.scaling.finetuned switches RoPE (default true).
    gguf_granite_arch("granitemoe", "src/models/granite-moe.cpp").with_rope_switch(),
    // granite's rules; Mamba layers where head_count_kv[il] == 0.
    gguf_arch("granitehybrid", "src/models/granite-hybrid.cpp")
        .norm()
        .with_permuted()
        .with_factors(GgufRopeFactors::RopeFreqs)
        .with_rope_switch()
        .with_softmax(GgufSoftmaxScale::AttentionScaleKey)
        .with_recurrent_no_kv(),
    gguf_llama_like_arch("chameleon", "src/models/chameleon.cpp"),
    // MLA-like (kv_lora_rank): q_pe / k_pe the last n_rot (ggml_rope_set_offset).
    gguf_arch("plm", "src/models/plm.cpp").norm().with_rotary_at_end(),
    // kq_scale 1/sqrt(n_rot) (partial rotation possible: the graph asserts nothing).
    gguf_arch("bailingmoe", "src/models/bailingmoe.cpp")
        .norm()
        .with_permuted()
        .with_softmax(GgufSoftmaxScale::RotDim),
    gguf_arch("bailingmoe2", "src/models/bailingmoe2.cpp"),
    gguf_arch("dots1", "src/models/dots1.cpp").with_rot_is_head_dim(),
    gguf_llama_like_arch("arcee", "src/models/arcee.cpp").with_factors(GgufRopeFactors::RopeFreqs),
    gguf_arch("hunyuan-moe", "src/models/hunyuan-moe.cpp").with_rot_is_head_dim(),
    // hunyuan-dense's graph and rules: NEOX or M-RoPE by the sections, alpha-scaled base.
    gguf_arch("hunyuan_vl", "src/models/hunyuan-vl.cpp")
        .with_mrope_if_sections()
        .with_rot_is_head_dim()
        .with_ntk_alpha(),
    gguf_arch("hy_v3", "src/models/hy-v3.cpp").with_rot_is_head_dim(),
    gguf_arch("dream", "src/models/dream.cpp").with_rot_is_head_dim(),
    gguf_llama_like_arch("llada", "src/models/llada.cpp"),
    gguf_arch("llada-moe", "src/models/llada-moe.cpp").with_rot_is_head_dim(),
    gguf_arch("seed_oss", "src/models/seed-oss.cpp").with_rot_is_head_dim(),
    gguf_arch("grovemoe", "src/models/grovemoe.cpp").with_rot_is_head_dim(),
    gguf_arch("apertus", "src/models/apertus.cpp")
        .with_rot_is_head_dim()
        .with_factors(GgufRopeFactors::RopeFreqsOrLongRope),
    gguf_arch("hrm_text", "src/models/hrm-text.cpp"),
    // partial (the graph's assert is commented out: head_dim 128, n_rot 64).
    gguf_arch("minimax-m2", "src/models/minimax-m2.cpp"),
    // ggml_rope (not _ext): base 10000, scale 1 whatever the keys say.
    gguf_arch("cogvlm", "src/models/cogvlm.cpp")
        .with_rot_is_head_dim()
        .with_rope_call(GgufRopeCall::Defaults),
    gguf_arch("rnd1", "src/models/rnd1.cpp").with_rot_is_head_dim(),
    gguf_arch("pangu-embedded", "src/models/pangu-embed.cpp").with_rot_is_head_dim(),
    // Ministral3Model (LlamaModel) permutes; rope_freqs or LongRoPE's pair; yarn_log_multiplier as
    // written, YaRN's betas; attention.temperature_scale with floor n_ctx_orig_yarn
    // (load_arch_hparams) multiplies q (build_inp_attn_scale).
    gguf_llama_factors_arch("mistral3", "src/models/mistral3.cpp")
        .with_yarn_log_mul(GgufYarnLogMul::Raw)
        .with_yarn_betas()
        .with_temperature(GgufTemperature::OriginalContext),
    // llama_model_mistral4 is llama_model_deepseek2 (src/models/models.h): MLA; llama_context's
    // mscale special case is LLM_ARCH_DEEPSEEK2 only.
    gguf_mla_arch("mistral4", "src/models/deepseek2.cpp", GgufYarnLogMul::Tenth),
    // deepseek2's graph (llama_model_deepseek2ocr::graph) with is_ocr: ggml_rope_ext with
    // GGML_ROPE_TYPE_NEOX whatever llama_model_rope_type says, n_rot = n_embd / n_head, base
    // asserted 10000, scale 1, ext_factor 0, attn_factor 1; kq_scale mscale^2 / sqrt(head).
    gguf_arch("deepseek2-ocr", "src/models/deepseek2.cpp")
        .with_rot_is_head_dim()
        .with_rope_call(GgufRopeCall::Plain)
        .with_softmax(GgufSoftmaxScale::Mla),
    gguf_arch("maincoder", "src/models/maincoder.cpp").norm().with_rot_is_head_dim(),
    gguf_arch("talkie", "src/models/talkie.cpp").with_rot_is_head_dim(),
    // NanbeigeModel permutes; rope_freqs; the layers run n_loops times at the same positions.
    gguf_arch("nanbeige", "src/models/nanbeige.cpp")
        .norm()
        .with_permuted()
        .with_factors(GgufRopeFactors::RopeFreqs),
    gguf_arch("pockettts", "src/models/pockettts.cpp").norm().with_rot_is_head_dim(),
    // Parallel hybrid: every layer runs attention (NEOX) beside its Mamba2 mixer
    // (is_recr_impl all true for the state cache only); kq_scale 1/sqrt(n_embd_head).
    gguf_arch("falcon-h1", "src/models/falcon-h1.cpp"),
    // ---- M-RoPE: rope.dimension_sections required (get_key_or_arr(..., true)).
    gguf_sectioned_arch("qwen3vl", "src/models/qwen3vl.cpp", GgufRopeMode::Imrope),
    gguf_sectioned_arch("qwen3vlmoe", "src/models/qwen3vlmoe.cpp", GgufRopeMode::Imrope),
    // llama_model_qwen3tts is llama_model_qwen3vl (src/models/models.h).
    gguf_sectioned_arch("qwen3tts", "src/models/qwen3vl.cpp", GgufRopeMode::Imrope),
    gguf_sectioned_arch("paddleocr", "src/models/paddleocr.cpp", GgufRopeMode::Mrope),
    // Gated DeltaNet layers but each full_attention_interval-th (default 4), or the flags; partial
    // interleaved M-RoPE; kq_scale attention.scale when non-zero.
    gguf_gated_delta_net_arch("qwen35", "src/models/qwen35.cpp"),
    gguf_gated_delta_net_arch("qwen35moe", "src/models/qwen35moe.cpp"),
    // qwen35's rules (load_arch_hparams: sections required, the recurrent layers from the flags
    // or full_attention_interval, default 4; kq_scale 1/sqrt(n_embd_head), f_attention_scale
    // never read) and QSA on the attention layers (build_qsa_top_k: ggml_rope_multi of
    // indexer_q at inp_pos and of the pooled keys at blk_pos, llama_memory_hybrid_idx::
    // set_input_qsa's block start pb * r).
    gguf_gated_delta_net_arch("qwen4exp", "src/models/qwen4exp.cpp").with_qsa(),
    // ---- Recurrent mixed with attention by layer.
    // Short-convolution layers where head_count_kv[il] == 0; with attention.sliding_window > 0
    // every attention layer slides (load_arch_hparams); kq_scale 1/sqrt(n_embd_head_v).
    gguf_arch("lfm2", "src/models/lfm2.cpp")
        .with_recurrent_no_kv()
        .with_swa_every_layer()
        .with_swa_if_window(),
    gguf_arch("lfm2moe", "src/models/lfm2moe.cpp").with_recurrent_no_kv(),
    gguf_arch("plamo2", "src/models/plamo2.cpp").with_recurrent_no_kv(),
    // KDA (linear attention) layers where head_count_kv[il] == 0 (load_arch_hparams; the converter
    // writes 1 on the full-attention layers); MLA, key_length_mla and value_length_mla required
    // (get_key), q_pe / k_pe the last n_rot (ggml_concat(q_nope, q_pe)), kq_scale
    // 1/sqrt(key_length_mla); NORM (BailingMoeV3Model does not permute), MROPE when sections[0]
    // > 0 and sections[1] > 0 (llama_model_rope_type: the VL files).
    gguf_arch("bailingmoe3", "src/models/bailingmoe3.cpp")
        .norm()
        .with_mrope_if_sections()
        .with_mla()
        .with_mla_required()
        .with_rotary_at_end()
        .with_recurrent_no_kv(),
    // Lightning-attention layers but each full_attention_interval-th (default 8), or the flags;
    // partial (head_dim 128, n_rot 64).
    gguf_arch("minimax-01", "src/models/minimax-01.cpp").with_recurrent_interval(8),
    // ---- Sliding windows.
    // load_swa_pattern(ml, 8) only with attention.sliding_window > 0, SWA base
    // rope.freq_base_swa else 10000 (llama_hparams default), scale 1.
    gguf_arch("plamo3", "src/models/plamo3.cpp")
        .with_swa(8)
        .with_swa_if_window()
        .with_swa_base(GgufSwaBase::KeyOr10000)
        .with_swa_unscaled(),
    // SWA flags required (get_arr), window required; SWA base rope.freq_base_swa else global;
    // the SWA layers rotate n_rot(il) (rope.dimension_count_swa).
    gguf_arch("maple", "src/models/maple.cpp")
        .with_swa_flags_required()
        .with_swa_window_required()
        .with_swa_rot(),
    // load_swa_pattern(ml, 4), window required; only SWA layers rotate (global base and scale).
    gguf_arch("cohere2", "src/models/cohere2.cpp")
        .norm()
        .with_swa(4)
        .with_swa_window_required()
        .with_swa_base(GgufSwaBase::Global)
        .with_rope_swa_only(),
    // load_swa_pattern(ml, 4, dense_first), window required; every layer rotates.
    gguf_arch("cohere2moe", "src/models/cohere2moe.cpp")
        .norm()
        .with_rot_is_head_dim()
        .with_swa(4)
        .with_swa_dense_first()
        .with_swa_window_required(),
    // load_swa_pattern(ml, 4), window required; use_rope = is_swa(il) (global freq_base).
    gguf_arch("muse-glimmer", "src/models/muse-glimmer.cpp")
        .norm()
        .with_swa(4)
        .with_swa_window_required()
        .with_swa_base(GgufSwaBase::Global)
        .with_rope_swa_only(),
    // load_swa_pattern(ml, 4), window required; RoPE on the SWA (local) layers only, with the
    // global freq_base / freq_scale.
    gguf_arch("exaone-moe", "src/models/exaone-moe.cpp")
        .with_rot_is_head_dim()
        .with_factors(GgufRopeFactors::RopeFreqs)
        .with_swa(4)
        .with_swa_window_required()
        .with_swa_base(GgufSwaBase::Global)
        .with_rope_swa_only(),
    // load_swa_pattern(ml, 5), window required; SWA base rope.freq_base_swa else 10000, scale 1;
    // f_attention_scale 1; layers from 20 on reuse earlier layers' K (rotated at the same
    // positions).
    gguf_arch("gemma3n", "src/models/gemma3n.cpp")
        .with_swa(5)
        .with_swa_window_required()
        .with_swa_base(GgufSwaBase::KeyOr10000)
        .with_swa_unscaled()
        .with_softmax(GgufSoftmaxScale::One),
    // SWA only in the 64-layer model (load_arch_hparams: n_swa 4096, load_swa_pattern(ml, 4),
    // base rope.freq_base_swa else global), attention.sliding_window overriding the window;
    // use_rope = is_swa(il) || no SWA at all; rope_freqs.
    gguf_arch("exaone4", "src/models/exaone4.cpp")
        .with_rot_is_head_dim()
        .with_factors(GgufRopeFactors::RopeFreqs)
        .with_swa(4)
        .with_swa_if_layers(64)
        .with_swa_window_default(4096)
        .with_rope_swa_only(),
    // deepseek2's MLA without the temperature keys (load_arch_hparams), yarn_log_multiplier /
    // 0.1f, and the lightning indexer: ggml_rope_ext(indexer_q / indexer_k, n_rot,
    // LLAMA_ROPE_TYPE_NEOX) on every layer, the head laid out [rope | nope].
    gguf_arch("deepseek32", "src/models/deepseek32.cpp")
        .norm()
        .with_mla()
        .with_softmax(GgufSoftmaxScale::Mla)
        .with_rotary_at_end()
        .with_yarn_log_mul(GgufYarnLogMul::Tenth)
        .with_indexer(),
    // deepseek32's MLA and indexer on the full layers only (graph: `if (!is_swa)`, freq_base);
    // SWA flags, window and rope.freq_base_swa required (load_arch_hparams' get_key / get_arr),
    // the SWA layers key_length_mla_swa wide; every layer ggml_rope_ext(n_rot = hparams.n_rot(),
    // freq_base_l = get_rope_freq_base(il), the global freq_scale, ext_factor, attn_factor);
    // kq_scale 1/sqrt(n_embd_head_k_mla) of the layer; no yarn_log_multiplier.
    gguf_arch("dots3note", "src/models/dots3note.cpp")
        .norm()
        .with_mla()
        .with_swa_mla()
        .with_rotary_at_end()
        .with_swa_flags_required()
        .with_swa_window_required()
        .with_swa_base(GgufSwaBase::Key)
        .with_indexer(GgufIndexer::Full),
    // Partial NEOX on every layer (the graph's assert is left out: head_dim != n_rot); the MSA
    // layers (il >= leading_dense_block_count) rotate their indexer q / k (index_q_proj,
    // attention.indexer.key_length wide) by the same ggml_rope_ext(n_rot, rope_type); llama.cpp
    // runs that indexer only with flash attention on (msa_enabled), the positions are the same.
    gguf_arch("minimax-m3", "src/models/minimax-m3.cpp").with_indexer(GgufIndexer::AfterDenseLead),
    // deepseek32's MLA (NORM, key_length_mla required: load_arch_tensors' "requires MLA") without
    // yarn_log_multiplier or the temperature keys (load_arch_hparams); the indexer's
    // ggml_rope_ext(indexer_q / indexer_k, n_rot, LLAMA_ROPE_TYPE_NORM) on its first n_rot, only
    // on the layers attention.indexer.types (or GLM_5_2_DEFAULT_INDEXER_TYPES) says "full".
    gguf_arch("glm-dsa", "src/models/glm-dsa.cpp")
        .norm()
        .with_mla()
        .with_mla_required()
        .with_softmax(GgufSoftmaxScale::Mla)
        .with_rotary_at_end()
        .with_indexer(GgufIndexer::TypesOrGlm52, GgufRopeMode::Norm),
    // MLA (key_length_mla / value_length_mla required) with kq_scale 1/sqrt(key_length_mla) (no
    // mscale), attn_sinks on every layer, no yarn_log_multiplier; with attention.indexer.top_k > 0
    // the indexer of the "full" layers rotates the last n_rot of its head with the model's NORM
    // (ggml_rope_set_offset(iq, n_embd_indexer_nope), build_indexer_top_k).
    gguf_arch("hy_v4", "src/models/hy-v4.cpp")
        .norm()
        .with_mla()
        .with_mla_required()
        .with_rotary_at_end()
        .with_sinks()
        .with_indexer(GgufIndexer::TypesIfTopK, GgufRopeMode::Norm, true),
    // SWA flags and window required; the SWA layers rotate n_rot(il) = rope.dimension_count_swa
    // with rope.freq_base_swa else 10000 and scale 1 (llama_hparams' defaults), without factors;
    // the full layers rope_freqs or LongRoPE's pair (created [n_rot_max / 2]: posemb reads them
    // when the full layers rotate the most, as the converter writes them).
    gguf_arch("step35", "src/models/step35.cpp")
        .with_swa_flags_required()
        .with_swa_window_required()
        .with_swa_rot()
        .with_swa_base(GgufSwaBase::KeyOr10000)
        .with_swa_unscaled()
        .with_factors(GgufRopeFactors::RopeFreqsOrLongRope)
        .with_factors_global_only(),
    // load_arch_hparams: yarn_beta_fast default 8, attention.output_scale default
    // 0.08838834764831845 and attn_logit_softcapping default 30 (build_attn_mha for
    // LLM_ARCH_GROK: c tanh(kq s / c), kq_scale 1), the YaRN ext / attn factor keys.
    gguf_arch("grok", "src/models/grok.cpp")
        .with_rot_is_head_dim()
        .with_yarn_betas(8.0)
        .with_yarn_ext_keys()
        .with_output_scale(0.08838834764831845)
        .with_softcap_default(30.0),
    // Nemotron's Deci: layers with head_count_kv[il] == 0 run no softmax attention (linear or
    // none); rope_freqs or LongRoPE's pair; kq_scale attention.scale when non-zero.
    gguf_llama_factors_arch("deci", "src/models/deci.cpp").with_recurrent_no_kv(),
    // gemma4's rules (load_arch_hparams).
    gguf_gemma4_arch("gemma4-assistant", "src/models/gemma4-assistant.cpp"),
    // SWA only with attention.sliding_window > 0, load_swa_pattern(ml, 4); base rope.freq_base_swa
    // else global; n_no_rope_layer_step 4: no RoPE where (il + 1) % 4 == 0.
    gguf_arch("afmoe", "src/models/afmoe.cpp").with_swa(4).with_swa_if_window().with_nope_every(4),
    // SWA with attention.sliding_window > 0: load_swa_pattern(ml, 4, dense_first), base
    // rope.freq_base_swa else global, scale 1, no YaRN, rope.dimension_count_swa.
    gguf_arch("laguna", "src/models/laguna.cpp")
        .with_swa(4)
        .with_swa_if_window()
        .with_swa_dense_first()
        .with_swa_unscaled()
        .with_swa_plain()
        .with_swa_rot(),
    // attention.sliding_window > 0: window 4096 whatever it says, load_swa_pattern(ml, 4,
    // dense_first), use_rope = il % 4 != 0 (the SWA layers).
    gguf_arch("smallthinker", "src/models/smallthinker.cpp")
        .with_rot_is_head_dim()
        .with_swa(4)
        .with_swa_if_window()
        .with_swa_dense_first()
        .with_swa_window_fixed(4096)
        .with_rope_swa_only(),
    // SWA flags and window required; SWA base rope.freq_base_swa else 10000, scale 1.
    gguf_arch("mimo2", "src/models/mimo2.cpp")
        .with_swa_flags_required()
        .with_swa_window_required()
        .with_swa_base(GgufSwaBase::KeyOr10000)
        .with_swa_unscaled(),
    gguf_arch("spark2_5", "src/models/spark2-5.cpp")
        .with_swa_flags_required()
        .with_swa_window_required()
        .with_swa_rot(),
    // SWA with attention.sliding_window > 0: load_swa_pattern(ml, 4); the SWA layers'
    // ggml_rope_ext(freq_base, 1.0, 0.0, 1.0): global base, no scale, no YaRN.
    gguf_arch("mellum", "src/models/mellum.cpp")
        .with_rot_is_head_dim()
        .with_swa(4)
        .with_swa_if_window()
        .with_swa_base(GgufSwaBase::Global)
        .with_swa_unscaled()
        .with_swa_plain(),
    // load_arch_hparams: every layer SWA (set_swa_pattern(0)), attention.sliding_window
    // required, compress_ratios / compress_rope_freq_base / indexer.key_length required, the
    // nextn count reset to 0 without the MTP tensor; load_arch_tensors: attn_sinks on every
    // layer. build_attention: q and kv rotate their last n_rot (ggml_rope_set_offset) NORM, base
    // and YaRN by the layer's ratio (freq_base_l, ext_factor_l), attn_factor
    // dsv4_rope_attn_factor; kq_scale 1/sqrt(n_embd_head); build_lid_top_k: indexer_q likewise.
    // Not in the plan: the compressed keys (build_hca_/build_overlap_compressed_kv_from_state
    // rotate each block of `ratio` tokens at its first position, comp_pos) and the output's
    // inverse rotation (ggml_rope_ext_back, "attn_derope").
    gguf_arch("deepseek4", "src/models/deepseek4.cpp")
        .norm()
        .with_rotary_at_end()
        .with_sinks()
        .with_swa_every_layer()
        .with_swa_window_required()
        .with_compressed_attention()
        .with_indexer_rotation(GgufRopeMode::Norm, true)
        .with_nextn_if_tensor(),
    // ---- Drafts and adapters.
    // eagle3.cpp: one decoder layer (GGML_ASSERT(n_layer == 1)), NORM on q/k the converter
    // permuted (LlamaModel, conversion/llama.py), the global base and scale, the optional
    // rope_freqs; kq_scale 1/sqrt(n_embd_head); load_arch_hparams requires target_layers (3 ids)
    // and target_hidden_size. The fused target features enter as embeddings, not positions.
    gguf_arch("eagle3", "src/models/eagle3.cpp")
        .norm()
        .with_permuted()
        .with_factors(GgufRopeFactors::RopeFreqs)
        .with_block_count_fixed(1)
        .with_target_layers(3)
        .with_required_keys("attention.layer_norm_rms_epsilon target_hidden_size"),
    // dflash.cpp: NEOX, or MROPE when a section is non-zero (llama_model_rope_type; the converter
    // writes [head_dim / 2, 0, 0, 0] for an M-RoPE target, conversion/qwen.py DFlashModel):
    // build_rope gives every layer the global base and scale, layers[0].rope_freqs without
    // sections; kq_scale attention.scale else 1/sqrt(n_embd_head); with attention.sliding_window
    // > 0 the per-layer flags are required (base and scale the global ones); optional attn_sinks;
    // rope_freqs created { n_embd_head_k / 2 }. hyper_connection.count > 0 runs graph_dsv4
    // (DeepSeek-V4's MLA stages): refused.
    gguf_arch("dflash", "src/models/dflash.cpp")
        .with_mrope_if_any_section()
        .with_factors(GgufRopeFactors::RopeFreqs)
        .with_factors_head_wide()
        .with_softmax(GgufSoftmaxScale::AttentionScaleKey)
        .with_swa_flags_required()
        .with_swa_if_window()
        .with_swa_base(GgufSwaBase::Global)
        .with_sinks_if_tensor()
        .with_target_layers()
        .with_required_keys("attention.layer_norm_rms_epsilon")
        .with_unmodelled_key("hyper_connection.count"),
    // granite-switch.cpp: granite's rules on the block_count layers (rope.scaling.finetuned fills
    // rope_pattern, attention.scale, GGML_ASSERT(n_embd_head == n_rot)); GraniteSwitchModel
    // permutes q/k per slice (conversion/granite.py); no rope tensors are created. The router at
    // hparams.router_layer = n_layer: build_attn without RoPE, one head, kq_scale 1.
    gguf_arch("graniteswitch", "src/models/granite-switch.cpp")
        .norm()
        .with_permuted()
        .with_rot_is_head_dim()
        .with_rope_switch()
        .with_softmax(GgufSoftmaxScale::AttentionScaleKey)
        .with_router_layer()
        .with_required_keys(
            "attention.layer_norm_rms_epsilon logit_scale adapters.count adapters.lora_rank "
            "adapters.token_ids_activate adapters.token_ids_substitute"),
};

// The row of an architecture, nullptr when posemb has none.
inline const GgufArch* find_gguf_arch(std::string_view name) {
  for (const GgufArch& row : gguf_archs) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

// "llama, llama4, ...": the architectures the table holds, in its order.
inline std::string gguf_known_archs() {
  std::string names;
  for (const GgufArch& row : gguf_archs) {
    if (!names.empty()) names += ", ";
    names += row.name;
  }
  return names;
}

}  // namespace posemb
