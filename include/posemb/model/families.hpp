// What the loader knows about each HuggingFace model family (`model_type`): the positional kind,
// the pairing its modeling code uses, the config class's defaults, how it derives its layer
// types, which layers get a sliding window, its softmax scale, which layers have no RoPE and the
// keys only some families read. ONE table, model_families(); each row cites the transformers file
// (src/transformers/models/) it comes from. A model_type not in the table gets the first row
// (Llama's rules). The multimodal wrappers (the top-level model_type of a config with a
// text_config or a vision_config) have their own table, multimodal_families().
// Needs no JSON parser; the config reader (config/) asks these tables, never a model_type string.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "posemb/model/layer_attention.hpp"
#include "posemb/model/position_kind.hpp"
#include "posemb/rotary/mrope_positions.hpp"
#include "posemb/rotary/rope.hpp"

namespace posemb {

// How a config class derives `layer_types` when the config gives none (layer i, 0-based;
// `pattern` is the row's pattern / interval, overridden by the config key named below).
enum class LayerTypeRule {
  AllFull,               // every layer full_attention
  SlidingPattern,        // sliding iff (i+1) % sliding_window_pattern != 0
  FixedPattern,          // sliding iff (i+1) % pattern != 0 (no config key)
  FixedPatternFromZero,  // CWM: sliding iff i % pattern != 0 (no config key)
  FixedPatternLastFull,  // Beam: sliding iff (i+1) % pattern != 0 and i is not the last layer
  // Dory: sliding iff (i+1) % pattern != 0; a config.json whose layer_types holds "mlp" lists
  // each layer as two blocks (its attention type, "mlp") and counts blocks in num_hidden_layers
  AttentionMlpPairs,
  GlobalEveryN,  // AfMoE: sliding iff (i+1) % global_attn_every_n_layers != 0 (default pattern)
  GlobalEveryNFromZero,  // ModernBERT: sliding iff i % global_attn_every_n_layers != 0 (default
                         // pattern)
  LaraMiniPeriod,        // LaRA-mini: [linear, sliding, linear, full, sliding][i % 5]
  MaxWindowLayers,  // sliding iff use_sliding_window and sliding_window and i >= max_window_layers
  EvenBelowWindowLayers,  // Qwen2-MoE: sliding iff use_sliding_window and sliding_window and i
                          // even and i < max_window_layers
  NopeSliding,      // sliding iff use_sliding_window and sliding_window and no_rope_layers[i] == 0
  ChunkedRope,      // chunked_attention for RoPE layers, full_attention for NoPE layers
  LinearInterval,   // linear_attention iff (i+1) % full_attention_interval != 0
  AttentionTypes,   // GPT-Neo: attention_types [[["global", "local"], n], ...] expanded; local
                    // layers sliding (default [[["global", "local"], 12]])
  AttentionPeriod,  // Jamba: full_attention iff i % attn_layer_period == attn_layer_offset
                    // (defaults 8, 4), else mamba
  FullAttnIdxs,     // LFM2: full_attention iff i in full_attn_idxs (default every layer), else conv
  CrossAttention,   // Mllama: cross_attention iff i in cross_attention_layers, else full
  LinearOddLayers,  // MiniMax: linear_attention iff (i+1) % 2 == 0, else full_attention
  AllIndexed,       // DeepSeek-V3.2: every layer indexed_attention
  AllMamba,         // Granite 4 hybrid: layers_block_type without layer_types, every layer mamba
  DensePrefixPattern,  // Cohere2-MoE: the first first_k_dense_replace layers sliding iff (i+1) %
                       // prefix_dense_sliding_window_pattern (1) != 0, the rest iff (j+1) %
                       // sliding_window_pattern != 0, j counted from the prefix's end
};

enum class WindowRule {
  Never,                // sliding_window is not used
  SlidingLayers,        // sliding_window on sliding_attention layers
  EveryLayer,           // sliding_window (if set) on every layer
  EveryLayerIfEnabled,  // Qwen3-MoE: sliding_window on every layer iff use_sliding_window
  SlidingLayersRadius,  // UltraBERT: sliding_window (a radius) + 1 on sliding_attention layers
  HalfLocalAttention,   // ModernBERT decoder: local_attention // 2 on sliding_attention layers
  HalfLocalAttentionPlusOne,  // ModernBERT: local_attention // 2 + 1 on sliding_attention layers
};

enum class SoftmaxRule {
  HeadDim,              // head_dim^-0.5
  QueryPreAttnScalar,   // query_pre_attn_scalar^-0.5 (default 256)
  One,                  // 1 (q and k are RMS-normalised)
  AttentionMultiplier,  // attention_multiplier (default 1)
  DeepseekMscale,       // (qk_nope + qk_rope)^-0.5 * m^2, m = 0.1 mscale_all_dim ln(factor) + 1
  Gpt2,           // head_dim^-0.5 if scale_attn_weights, / (i+1) if scale_attn_by_inverse_layer_idx
  Unscaled,       // 1: T5 folds the scale into its initialisation
  KeyMultiplier,  // head_dim^-0.5 * key_multiplier (default 1): Falcon-H1 scales k before q.k
};

// Which rope parameters each layer type gets when the config has one block (not nested by type).
enum class RopeSplit {
  OneBlock,   // every layer the same block
  LocalBase,  // full: the block; sliding: plain RoPE at rope_local_base_freq (default 1e4)
  FullOnly,   // full: the block; sliding: plain RoPE at the same rope_theta
  Gemma4,     // nested by type; default {sliding: default 1e4, full: proportional 0.25, 1e6}
};

// How the config chooses the positional kind beyond the row's `positions` (every family also
// turns to ALiBi on `"alibi": true`, as Falcon writes it).
enum class PositionsRule {
  Fixed,          // the row's kind
  MptAttnConfig,  // attn_config.alibi (default true): ALiBi; else learned_pos_emb (default
                  // true): learned; else RoPE (configuration_mpt.py, MptAttentionConfig); the
                  // softmax scale attn_config.softmax_scale when set
  PositionEmbeddingType,  // RoPE iff position_embedding_type == "rope", else none (Granite 4)
};

// Which layers scale q by a position-dependent temperature (layer_attention.hpp).
enum class TemperatureRule {
  None,
  Llama4NopeLayers,      // NoPE layers, when attn_temperature_tuning (default true): floor_scale,
                         // attn_scale, floor((p + 1) / F)
  EveryLayerLlama4Beta,  // every layer, with the rope block's llama_4_scaling_beta: F = the
                         // block's original_max_position_embeddings, floor(p / F) (Ministral 3)
  PowerNopeLayers,       // softmax layers without RoPE: (1 + (p + 1) / 2048)^0.1 (Beam)
};

// The RoPE of an indexed_attention layer's lightning indexer (positions.hpp, IndexerRope): its
// pairing, and whether the rotated qk_rope_head_dim features come first or last of its
// index_head_dim.
enum class IndexerRule {
  None,             // no indexer
  RotateHalfFirst,  // DeepSeek-V3.2: DeepseekV32Indexer.forward, split [rope, pass], rotate_half
  // HY V4: HYV4Indexer.forward, split [pass, rope], rotate_half; only on the layers whose
  // indexer_types entry is "full" (default: layer 0 and every i with (i - 1) % 4 == 0), the
  // "shared" ones reusing the previous selection (HYV4Attention.__init__, HYV4Config)
  RotateHalfLastShared,
};

// The configuration class's defaults for keys a transformers v5 config.json leaves out
// (save_pretrained writes a diff against them); 0 / nullptr: the class has none.
struct ClassDefaults {
  int hidden_size;
  int num_attention_heads;
  int head_dim;  // 0: hidden_size / num_attention_heads
  int sliding_window;
  int attention_chunk_size;
  int rotary_dim;               // the default of the row's rotary_dim key (GPT-J: 64)
  double logit_softcap;         // attn_logit_softcapping (Gemma 2: 50)
  double attention_multiplier;  // SoftmaxRule::AttentionMultiplier's default (0: Granite's 1)
  int max_position_embeddings;
  const char* rope_parameters;  // the class's default rope block, as JSON text
};

enum class NopeRule {
  None,                    // every layer has the family's positions
  NonSlidingLayers,        // layers that are not sliding have none
  NonSlidingWhenWindowed,  // with a sliding_window, layers that are not sliding have none
  NoRopeLayers,  // no_rope_layers[i] == 0 (1 = RoPE), default every no_rope_layer_interval-th
  SlidingOrDensePrefix,  // Cohere2-MoE: RoPE on sliding layers when windowed and, when
                         // prefix_dense_sliding_window_pattern is 1, on the dense-MLP layers
};

struct ModelFamily {
  const char* model_type;
  const char* source;  // transformers file(s) under src/transformers/models/
  PositionKind positions;
  Pairing pairing;
  double partial_rotary_factor;  // config-class default when the config gives none
  double rope_theta;             // config-class default when the config gives none
  LayerTypeRule layer_types;
  int pattern;  // SlidingPattern / FixedPattern / LinearInterval / MaxWindowLayers default
  WindowRule window;
  SoftmaxRule softmax;
  RopeSplit split;
  NopeRule nope;
  TemperatureRule temperature;
  PositionsRule positions_rule;
  // The key that gives rotary_dim directly when present (GPT-J, CodeGen: "rotary_dim"), or
  // nullptr: rotary_dim = int(head_dim * partial_rotary_factor).
  const char* rotary_dim_key;
  // A boolean key (default true) whose false switches `pairing` to rotate-half (DeepSeek-V3:
  // "rope_interleave"), or nullptr.
  const char* interleave_key;
  // RelativeBias: every layer holds its own [buckets, heads] table (UMT5), not the stack's first.
  bool bias_table_per_layer;
  bool attention_sinks;          // a learned logit per head in every softmax (gpt-oss)
  BiasPlacement bias_placement;  // where ALiBi enters relative to the softmax scale
  // use_bidirectional_attention (true, or "all") makes the window W // 2 + 1 (Gemma 3, Gemma 4:
  // "due to fa we set exclusive bounds", configuration_gemma3.py)
  bool bidirectional_window;
  ClassDefaults defaults;
  // A `dynamic` block's `alpha` sets a static base theta * alpha^(d / (d - 2)) up to
  // max_position_embeddings (Hunyuan's DynamicNTKAlpha rotary embedding).
  bool dynamic_alpha;
  // The rope-block keys the config class passes as ignore_keys_at_rope_validation (transformers
  // neither uses nor warns about them), ", "-separated, or nullptr.
  const char* rope_keys_transformers_ignores;
  // A longrope block's short_mscale / long_mscale replace its attention factor, short up to
  // original_max_position_embeddings, long beyond (PhiMoE's PhimoeRotaryEmbedding.forward).
  bool longrope_mscales;
  // layer_rope_theta[i] replaces the block's rope_theta in layer i, 0 meaning no RoPE
  // (GraniteSWAModel.__init__ / forward: one rotary embedding per distinct non-zero theta).
  bool layer_rope_theta;
  // MLA whose partial_rotary_factor is of qk_nope + qk_rope (Mistral4Config.__post_init__ sets
  // head_dim to it), not of qk_rope_head_dim; the rotated width must be qk_rope_head_dim.
  bool partial_of_qk_head;
  IndexerRule indexer;  // indexed_attention layers' indexer RoPE
  // The config's own names of posemb's layer types, in layer_types and as rope_parameters'
  // keys: "name=type, ..." (Zaya: "hybrid=full_attention, hybrid_sliding=sliding_attention"),
  // or nullptr.
  const char* layer_type_names;
};

inline const std::array<ModelFamily, 88>& model_families() {
  using P = Pairing;
  using K = PositionKind;
  using L = LayerTypeRule;
  using W = WindowRule;
  using S = SoftmaxRule;
  using R = RopeSplit;
  using N = NopeRule;
  using PR = PositionsRule;
  using T = TemperatureRule;
  using B = BiasPlacement;
  using I = IndexerRule;
  constexpr P half = P::RotateHalf, inter = P::Interleaved;
  // One row per family, one line per row. Columns: model_type, source, kind, pairing, partial,
  // theta, layer types, pattern, window, softmax, split, nope, temperature, positions rule,
  // rotary_dim key, interleave key, table per layer, sinks, ALiBi placement, bidirectional
  // window, class defaults {hidden_size, heads, head_dim, window, chunk, rotary_dim, softcap,
  // attention_multiplier, max_position_embeddings, rope block}, dynamic alpha, rope keys
  // transformers ignores, longrope mscales, layer_rope_theta, partial of the qk head, indexer,
  // layer type names.
  // clang-format off
  static const std::array<ModelFamily, 88> table{{
      {"llama", "llama/configuration_llama.py, modeling_llama.py", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"mistral", "mistral/modeling_mistral.py (sliding_window on every layer)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::EveryLayer, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"mixtral", "mixtral/configuration_mixtral.py (default_theta 1e6), modeling_mixtral.py (sliding_window on every layer)", K::Rope, half, 1.0, 1e6, L::AllFull, 0, W::EveryLayer, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"phi3", "phi3/modeling_phi3.py (sliding_window on every layer)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::EveryLayer, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"qwen2", "qwen2/configuration_qwen2.py (use_sliding_window, max_window_layers 28)", K::Rope, half, 1.0, 1e4, L::MaxWindowLayers, 28, W::SlidingLayers, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"qwen3", "qwen3/configuration_qwen3.py (use_sliding_window, max_window_layers 28)", K::Rope, half, 1.0, 1e4, L::MaxWindowLayers, 28, W::SlidingLayers, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"qwen2_moe", "qwen2_moe/configuration_qwen2_moe.py (layer_types: even layers below max_window_layers 28 sliding with use_sliding_window)", K::Rope, half, 1.0, 1e4, L::EvenBelowWindowLayers, 28, W::SlidingLayers, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"qwen3_moe", "qwen3_moe/configuration_qwen3_moe.py, modeling_qwen3_moe.py (sliding_window on every layer with use_sliding_window)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::EveryLayerIfEnabled, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"qwen3_next", "qwen3_next/configuration_qwen3_next.py (head_dim 256, full_attention_interval 4, partial 0.25)", K::Rope, half, 0.25, 1e4, L::LinearInterval, 4, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {2048, 16, 256, 0, 0, 0, 0.0, 0.0, 32768, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"gemma2", "gemma2/configuration_gemma2.py (attn_logit_softcapping 50, sliding_window 4096), modeling_gemma2.py", K::Rope, half, 1.0, 1e4, L::FixedPattern, 2, W::SlidingLayers, S::QueryPreAttnScalar, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {2304, 8, 256, 4096, 0, 0, 50.0, 0.0, 8192, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"gemma3_text", "gemma3/configuration_gemma3.py (sliding_window_pattern 6, rope_local_base_freq, sliding_window 4096)", K::Rope, half, 1.0, 1e6, L::SlidingPattern, 6, W::SlidingLayers, S::QueryPreAttnScalar, R::LocalBase, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, true, {2304, 8, 256, 4096, 0, 0, 0.0, 0.0, 0, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"gemma4_text", "gemma4/configuration_gemma4.py, modeling_gemma4.py (global_head_dim 512, proportional, sliding_window 512)", K::Rope, half, 1.0, 1e6, L::FixedPattern, 6, W::SlidingLayers, S::One, R::Gemma4, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, true, {2304, 8, 256, 512, 0, 0, 0.0, 0.0, 131072, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"olmo3", "olmo3/modular_olmo3.py (every 4th layer full, YaRN on full layers)", K::Rope, half, 1.0, 5e5, L::FixedPattern, 4, W::SlidingLayers, S::HeadDim, R::FullOnly, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"gpt_oss", "gpt_oss/configuration_gpt_oss.py (default_theta 150000, head_dim 64, YaRN block, sliding_window 128), modeling_gpt_oss.py (sinks)", K::Rope, half, 1.0, 150000.0, L::FixedPattern, 2, W::SlidingLayers, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, true, B::AfterScale, false, {2880, 64, 64, 128, 0, 0, 0.0, 0.0, 131072, R"({"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": false, "original_max_position_embeddings": 4096})"}, false, nullptr, false, false, false, I::None, nullptr},
      {"smollm3", "smollm3/configuration_smollm3.py (default_theta 2000000, no_rope_layers, NoPE layers sliding)", K::Rope, half, 1.0, 2e6, L::NopeSliding, 4, W::SlidingLayers, S::HeadDim, R::OneBlock, N::NoRopeLayers, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {2048, 16, 0, 0, 0, 0, 0.0, 0.0, 32768, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"llama4_text", "llama4/configuration_llama4.py (head_dim 128, attention_chunk_size 8192, attn_temperature_tuning true), modeling_llama4.py (interleaved, NoPE)", K::Rope, inter, 1.0, 5e5, L::ChunkedRope, 4, W::Never, S::HeadDim, R::OneBlock, N::NoRopeLayers, T::Llama4NopeLayers, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {5120, 40, 128, 0, 8192, 0, 0.0, 0.0, 131072, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"cohere", "cohere/modeling_cohere.py (rotate_half on x[..., ::2], x[..., 1::2])", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"cohere2", "cohere2/configuration_cohere2.py, modeling_cohere2.py (RoPE on sliding layers only)", K::Rope, inter, 1.0, 1e4, L::SlidingPattern, 4, W::SlidingLayers, S::HeadDim, R::OneBlock, N::NonSlidingLayers, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"cohere2_moe", "cohere2_moe/configuration_cohere2_moe.py (head_dim 128, sliding_window 4096, sliding_window_pattern 4, first_k_dense_replace prefix, mlp_layer_types), modeling_cohere2_moe.py (Cohere2MoeAttention: RoPE iff sliding_window or force_rope; cohere's interleaved rotate_half)", K::Rope, inter, 1.0, 1e4, L::DensePrefixPattern, 4, W::SlidingLayers, S::HeadDim, R::OneBlock, N::SlidingOrDensePrefix, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {8192, 64, 128, 4096, 0, 0, 0.0, 0.0, 8192, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"glm", "glm/configuration_glm.py (partial_rotary_factor 0.5), modeling_glm.py", K::Rope, inter, 0.5, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"glm4", "glm4/configuration_glm4.py (partial_rotary_factor 0.5), modeling_glm4.py", K::Rope, inter, 0.5, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"ernie4_5", "ernie4_5/configuration_ernie4_5.py (default_theta 500000, head_dim 128), modeling_ernie4_5.py (repeat_interleave'd cos/sin)", K::Rope, inter, 1.0, 5e5, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {1024, 16, 128, 0, 0, 0, 0.0, 0.0, 131072, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"ernie4_5_moe", "ernie4_5_moe/modeling_ernie4_5_moe.py (as ernie4_5)", K::Rope, inter, 1.0, 5e5, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {0, 0, 128, 0, 0, 0, 0.0, 0.0, 0, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"deepseek_v2", "deepseek_v2/modeling_deepseek_v2.py (complex multiply on adjacent pairs, MLA)", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::DeepseekMscale, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"deepseek_v3", "deepseek_v3/configuration_deepseek_v3.py (rope_interleave true), modeling_deepseek_v3.py", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::DeepseekMscale, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, "rope_interleave", false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"gptj", "gptj/configuration_gptj.py (rotary_dim 64, n_embd 4096, n_head 16), modeling_gptj.py (rotate_every_two)", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, "rotary_dim", nullptr, false, false, B::AfterScale, false, {4096, 16, 0, 0, 0, 64, 0.0, 0.0, 2048, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"codegen", "codegen/modeling_codegen.py (rotate_every_two, rotary_dim)", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, "rotary_dim", nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"gpt_neox", "gpt_neox/configuration_gpt_neox.py (rotary_pct 0.25, rotary_emb_base)", K::Rope, half, 0.25, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"phi", "phi/configuration_phi.py (partial_rotary_factor 0.5)", K::Rope, half, 0.5, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"persimmon", "persimmon/configuration_persimmon.py (v5: no default_theta, so 1e4; partial_rotary_factor 0.5)", K::Rope, half, 0.5, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {4096, 64, 0, 0, 0, 0, 0.0, 0.0, 16384, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"stablelm", "stablelm/configuration_stablelm.py (partial_rotary_factor 0.25)", K::Rope, half, 0.25, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"granite", "granite/modeling_granite.py (scaling = attention_multiplier)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::AttentionMultiplier, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"gpt2", "gpt2/modeling_gpt2.py (wpe, scale_attn_by_inverse_layer_idx)", K::Learned, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::Gpt2, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"gpt_bigcode", "gpt_bigcode/modeling_gpt_bigcode.py (wpe)", K::Learned, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"gpt_neo", "gpt_neo/configuration_gpt_neo.py (attention_types, window_size 256), modeling_gpt_neo.py (wpe, unscaled scores)", K::Learned, half, 1.0, 1e4, L::AttentionTypes, 0, W::SlidingLayers, S::Unscaled, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {2048, 16, 0, 256, 0, 0, 0.0, 0.0, 2048, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"opt", "opt/modeling_opt.py (learned positions)", K::Learned, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"bert", "bert/configuration_bert.py (max_position_embeddings 512), modeling_bert.py (position_embeddings, position ids 0..)", K::Learned, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {768, 12, 0, 0, 0, 0, 0.0, 0.0, 512, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"roberta", "roberta/modeling_roberta.py (position_embeddings from padding_idx + 1, create_position_ids_from_input_ids)", K::Learned, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {768, 12, 0, 0, 0, 0, 0.0, 0.0, 512, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"xlm-roberta", "xlm_roberta/modeling_xlm_roberta.py (as roberta)", K::Learned, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {768, 12, 0, 0, 0, 0, 0.0, 0.0, 512, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"bloom", "bloom/modeling_bloom.py (build_alibi_tensor)", K::Alibi, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"xglm", "xglm/modeling_xglm.py (sinusoidal positions)", K::Sinusoidal, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"m2m_100", "m2m_100/modeling_m2m_100.py (sinusoidal positions)", K::Sinusoidal, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"mpt", "mpt/configuration_mpt.py (attn_config.alibi default true, learned_pos_emb default true)", K::Alibi, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::MptAttnConfig, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"t5", "t5/configuration_t5.py, modeling_t5.py (relative_attention_bias in block 0, no 1/sqrt(d))", K::RelativeBias, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::Unscaled, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"mt5", "mt5/configuration_mt5.py, modeling_mt5.py (as t5)", K::RelativeBias, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::Unscaled, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"umt5", "umt5/modeling_umt5.py (UMT5Attention: a relative_attention_bias in every layer)", K::RelativeBias, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::Unscaled, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, true, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"gemma3n_text", "gemma3n/configuration_gemma3n.py (full every 5th layer, default_theta {1e6, local 1e4}, sliding_window 512), modeling_gemma3n.py (scaling 1)", K::Rope, half, 1.0, 1e6, L::FixedPattern, 5, W::SlidingLayers, S::One, R::LocalBase, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {2048, 8, 256, 512, 0, 0, 0.0, 0.0, 32768, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"exaone4", "exaone4/configuration_exaone4.py (sliding_window 4096, pattern 4), modeling_exaone4.py (RoPE on sliding layers when windowed)", K::Rope, half, 1.0, 1e4, L::SlidingPattern, 4, W::SlidingLayers, S::HeadDim, R::OneBlock, N::NonSlidingWhenWindowed, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {4096, 32, 0, 4096, 0, 0, 0.0, 0.0, 2048, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"ministral3", "ministral3/configuration_ministral3.py (head_dim 128, YaRN block with llama_4_scaling_beta, ignore_keys_at_rope_validation), modeling_ministral3.py", K::Rope, half, 1.0, 1e6, L::AllFull, 0, W::EveryLayer, S::HeadDim, R::OneBlock, N::None, T::EveryLayerLlama4Beta, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {4096, 32, 128, 0, 0, 0, 0.0, 0.0, 262144, R"({"type": "yarn", "rope_theta": 1000000.0, "factor": 16.0, "original_max_position_embeddings": 16384, "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1})"}, false, "llama_4_scaling_beta, max_position_embeddings", false, false, false, I::None, nullptr},
      {"helium", "helium/configuration_helium.py (default_theta 100000, head_dim 128), modeling_helium.py (rotate_half on x[..., 0::2], x[..., 1::2])", K::Rope, inter, 1.0, 1e5, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {2560, 20, 128, 0, 0, 0, 0.0, 0.0, 4096, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"glm4_moe", "glm4_moe/modular_glm4_moe.py (head_dim 128, partial 0.5; gpt_neox's rotate-half apply_rotary_pos_emb)", K::Rope, half, 0.5, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {4096, 96, 128, 0, 0, 0, 0.0, 0.0, 0, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"starcoder2", "starcoder2/modeling_starcoder2.py (sliding_window on every layer)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::EveryLayer, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"phimoe", "phimoe/modeling_phimoe.py (sliding_window on every layer; PhimoeRotaryEmbedding: short_mscale / long_mscale)", K::Rope, half, 1.0, 1e6, L::AllFull, 0, W::EveryLayer, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, true, false, false, I::None, nullptr},
      {"lfm2", "lfm2/configuration_lfm2.py (default_theta 1e6, conv / full_attention layers)", K::Rope, half, 1.0, 1e6, L::FullAttnIdxs, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {2560, 32, 0, 0, 0, 0, 0.0, 0.0, 128000, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"jamba", "jamba/configuration_jamba.py (attn_layer_period 8, offset 4), modeling_jamba.py (JambaAttention without RoPE)", K::None, half, 1.0, 1e4, L::AttentionPeriod, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {4096, 32, 0, 0, 0, 0, 0.0, 0.0, 0, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"granitemoehybrid", "granitemoehybrid/configuration_granitemoehybrid.py (layers_block_type: every layer mamba without layer_types), modeling_granitemoehybrid.py (mamba layers; RoPE iff position_embedding_type rope)", K::Rope, half, 1.0, 1e4, L::AllMamba, 0, W::Never, S::AttentionMultiplier, R::OneBlock, N::None, T::None, PR::PositionEmbeddingType, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"minimax", "minimax/modular_minimax.py (MiniMaxConfig: default_theta 1e6, linear_attention on odd layers; MiniMaxLightningAttention without RoPE)", K::Rope, half, 1.0, 1e6, L::LinearOddLayers, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"mllama_text_model", "mllama/configuration_mllama.py (cross_attention_layers), modeling_mllama.py (cross-attention without RoPE)", K::Rope, half, 1.0, 5e5, L::CrossAttention, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"kimi_k2", "deepseek_v3/modeling_deepseek_v3.py (Kimi K2 ships DeepseekV3ForCausalLM)", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::DeepseekMscale, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, "rope_interleave", false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"deepseek_v32", "deepseek_v32/configuration_deepseek_v32.py (layer_types: every layer indexed_attention; head_dim = qk_rope_head_dim), modeling_deepseek_v32.py (DeepseekV32Attention: MLA, apply_rotary_pos_emb_interleave always; DeepseekV32Indexer: rotate-half on its first qk_rope_head_dim features)", K::Rope, inter, 1.0, 1e4, L::AllIndexed, 0, W::Never, S::DeepseekMscale, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::RotateHalfFirst, nullptr},
      {"axk2", "axk2/configuration_axk2.py (as deepseek_v32: indexed_attention layers, qk_rope_head_dim 32), modeling_axk2.py (AXK2Attention: DeepSeek-V3.2's MLA and indexer)", K::Rope, inter, 1.0, 1e4, L::AllIndexed, 0, W::Never, S::DeepseekMscale, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::RotateHalfFirst, nullptr},
      {"hy_v4", "hy_v4/configuration_hy_v4.py (indexed_attention layers, indexer_types), modeling_hy_v4.py (HYV4Attention: MLA, rotate-half apply_rotary_pos_emb, yarn_apply_mscale scaling, sinks; HYV4Indexer: rotate-half on its last qk_rope_head_dim features)", K::Rope, half, 1.0, 1e4, L::AllIndexed, 0, W::Never, S::DeepseekMscale, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, true, B::AfterScale, false, {}, false, nullptr, false, false, false, I::RotateHalfLastShared, nullptr},
      {"mistral4", "mistral4/configuration_mistral4.py (head_dim = qk_nope + qk_rope, partial_rotary_factor = qk_rope / head_dim, default yarn block factor 128 with llama_4_scaling_beta 0.1), modeling_mistral4.py (Mistral4Attention: DeepSeek-V3's MLA and yarn_apply_mscale, rope_interleave, q * get_llama_4_attn_scale)", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::DeepseekMscale, R::OneBlock, N::None, T::EveryLayerLlama4Beta, PR::Fixed, nullptr, "rope_interleave", false, false, B::AfterScale, false, {4096, 32, 0, 0, 0, 0, 0.0, 0.0, 1048576, R"({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 128.0, "original_max_position_embeddings": 8192, "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1})"}, false, "llama_4_scaling_beta, max_position_embeddings", false, false, true, I::None, nullptr},
      {"falcon", "falcon/modeling_falcon.py (alibi: (scores + alibi) * inv_norm_factor)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::BeforeScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"hunyuan_v1_dense", "hunyuan_v1_dense/configuration_hunyuan_v1_dense.py (theta 1e4, head_dim 128, max_position_embeddings 2048), modeling_hunyuan_v1_dense.py (HunYuanDenseV1RotaryEmbedding: dynamic with alpha, static at every length)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {4096, 32, 128, 0, 0, 0, 0.0, 0.0, 2048, nullptr}, true, nullptr, false, false, false, I::None, nullptr},
      {"hunyuan_v1_moe", "hunyuan_v1_moe/configuration_hunyuan_v1_moe.py, modeling_hunyuan_v1_moe.py (as hunyuan_v1_dense)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {4096, 32, 128, 0, 0, 0, 0.0, 0.0, 2048, nullptr}, true, nullptr, false, false, false, I::None, nullptr},
      {"falcon_h1", "falcon_h1/configuration_falcon_h1.py (theta 1e5, key_multiplier 1), modular_falcon_h1.py (FalconH1Attention: k * key_multiplier; mamba in parallel, attention with RoPE in every layer)", K::Rope, half, 1.0, 1e5, L::AllFull, 0, W::Never, S::KeyMultiplier, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {4096, 32, 0, 0, 0, 0, 0.0, 0.0, 8192, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"beam", "beam/configuration_beam.py (every 6th layer and the last full, sliding_window 512, head_dim 128, rope_parameters {sliding_attention: default 1e4, full_attention: None}), modeling_beam.py (BeamModel.forward: NoPE full layers, q * compute_attention_scaling)", K::Rope, half, 1.0, 1e4, L::FixedPatternLastFull, 6, W::SlidingLayers, S::HeadDim, R::OneBlock, N::None, T::PowerNopeLayers, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {5120, 48, 128, 512, 0, 0, 0.0, 0.0, 8192, R"({"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}, "full_attention": null})"}, false, nullptr, false, false, false, I::None, nullptr},
      {"zaya", "zaya/configuration_zaya.py (layer_types \"hybrid\" / \"hybrid_sliding\", rope_parameters by them: theta 5e6 / 1e4, partial_rotary_factor 0.5), modeling_zaya.py (ZayaAttention: rotate_half on the first rotary_dim features, sliding_window on hybrid_sliding layers)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::SlidingLayers, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {2048, 8, 128, 0, 0, 0, 0.0, 0.0, 131072, R"({"full_attention": {"rope_type": "default", "rope_theta": 5000000.0, "partial_rotary_factor": 0.5}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}})"}, false, "hybrid, hybrid_sliding", false, false, false, I::None, "hybrid=full_attention, hybrid_sliding=sliding_attention"},
      {"dory", "dory/configuration_dory.py (layer_types and num_hidden_layers of config.json in (attention, mlp) blocks, halved by __post_init__; full iff (i+1) % 4 == 0; rope_parameters by layer type: sliding 1e4, full 1e7; head_dim 256, sliding_window 1024), modeling_dory.py (DoryAttention: RoPE after the q/k L2 norms, window on sliding layers)", K::Rope, half, 1.0, 1e4, L::AttentionMlpPairs, 4, W::SlidingLayers, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {2560, 16, 256, 1024, 0, 0, 0.0, 0.0, 8192, R"({"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}, "full_attention": {"rope_type": "default", "rope_theta": 10000000.0}})"}, false, nullptr, false, false, false, I::None, nullptr},
      {"afmoe", "afmoe/configuration_afmoe.py (global_attn_every_n_layers 4, sliding_window 1024, head_dim 128), modeling_afmoe.py (AfmoeAttention: RoPE on sliding layers only)", K::Rope, half, 1.0, 1e4, L::GlobalEveryN, 4, W::SlidingLayers, S::HeadDim, R::OneBlock, N::NonSlidingLayers, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {2048, 16, 128, 1024, 0, 0, 0.0, 0.0, 16384, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"cwm", "cwm/configuration_cwm.py (default_theta 1e6, llama3 block, head_dim 128, sliding_window 8192, full iff i % 4 == 0), modeling_cwm.py", K::Rope, half, 1.0, 1e6, L::FixedPatternFromZero, 4, W::SlidingLayers, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {6144, 48, 128, 8192, 0, 0, 0.0, 0.0, 131072, R"({"rope_type": "llama3", "rope_theta": 1000000.0, "factor": 16.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192})"}, false, nullptr, false, false, false, I::None, nullptr},
      {"exaone_moe", "exaone_moe/configuration_exaone_moe.py (sliding_window 4096, sliding_window_pattern 4), modeling_exaone_moe.py (as exaone4: RoPE on sliding layers when windowed)", K::Rope, half, 1.0, 1e4, L::SlidingPattern, 4, W::SlidingLayers, S::HeadDim, R::OneBlock, N::NonSlidingWhenWindowed, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {4096, 32, 0, 4096, 0, 0, 0.0, 0.0, 2048, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"kolibri1", "kolibri1/configuration_kolibri1.py (full every 5th layer, sliding_window 513, head_dim 128), modeling_kolibri1.py (as exaone4: RoPE on sliding layers when windowed)", K::Rope, half, 1.0, 1e4, L::FixedPattern, 5, W::SlidingLayers, S::HeadDim, R::OneBlock, N::NonSlidingWhenWindowed, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {2560, 48, 128, 513, 0, 0, 0.0, 0.0, 262144, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"lara_mini", "lara_mini/configuration_lara_mini.py (layer_types period 5, sliding_window 512, head_dim 128), modeling_lara_mini.py (LaraMiniModel.forward: position_embeddings on sliding layers only; gated DeltaNet linear layers)", K::Rope, half, 1.0, 1e4, L::LaraMiniPeriod, 5, W::SlidingLayers, S::HeadDim, R::OneBlock, N::NonSlidingLayers, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {1024, 16, 128, 512, 0, 0, 0.0, 0.0, 131072, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"modernbert", "modernbert/configuration_modernbert.py (default_theta {global 160000, local 1e4}, global_attn_every_n_layers 3, local_attention 128), modeling_modernbert.py (ModernBertAttention: sliding_window = local_attention // 2 + 1)", K::Rope, half, 1.0, 1e4, L::GlobalEveryNFromZero, 3, W::HalfLocalAttentionPlusOne, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {768, 12, 0, 128, 0, 0, 0.0, 0.0, 8192, R"({"full_attention": {"rope_type": "default", "rope_theta": 160000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})"}, false, nullptr, false, false, false, I::None, nullptr},
      {"modernbert-decoder", "modernbert_decoder/configuration_modernbert_decoder.py (as modernbert; sliding_window = local_attention // 2), modeling_modernbert_decoder.py", K::Rope, half, 1.0, 1e4, L::GlobalEveryNFromZero, 3, W::HalfLocalAttention, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {768, 12, 0, 128, 0, 0, 0.0, 0.0, 8192, R"({"full_attention": {"rope_type": "default", "rope_theta": 160000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})"}, false, nullptr, false, false, false, I::None, nullptr},
      {"ultrabert", "ultrabert/configuration_ultrabert.py (sliding iff (i+1) % 3 != 0, rope {sliding 1e4, full 2560000}, sliding_window 128), modeling_ultrabert.py (UltrabertAttention: sliding_window + 1)", K::Rope, half, 1.0, 1e4, L::FixedPattern, 3, W::SlidingLayersRadius, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {4096, 32, 0, 128, 0, 0, 0.0, 0.0, 32768, R"({"full_attention": {"rope_type": "default", "rope_theta": 2560000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})"}, false, nullptr, false, false, false, I::None, nullptr},
      {"vaultgemma", "vaultgemma/configuration_vaultgemma.py (as gemma2: sliding iff (i+1) % 2 != 0, attn_logit_softcapping 50, sliding_window 4096, head_dim 256), modeling_vaultgemma.py (scaling query_pre_attn_scalar^-0.5)", K::Rope, half, 1.0, 1e4, L::FixedPattern, 2, W::SlidingLayers, S::QueryPreAttnScalar, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {2304, 8, 256, 4096, 0, 0, 50.0, 0.0, 8192, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"granitemoe", "granitemoe/modeling_granitemoe.py (as granite: scaling = attention_multiplier)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::AttentionMultiplier, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"granitemoeshared", "granitemoeshared/modeling_granitemoeshared.py (as granite: scaling = attention_multiplier)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::AttentionMultiplier, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {}, false, nullptr, false, false, false, I::None, nullptr},
      {"granite_swa", "granite_swa/modular_granite_swa.py (GraniteSWAConfig: full iff i % 4 == 0, sliding_window 128, layer_rope_theta; GraniteSWAAttention: scaling = attention_multiplier, sinks)", K::Rope, half, 1.0, 1e4, L::FixedPatternFromZero, 4, W::SlidingLayers, S::AttentionMultiplier, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, true, B::AfterScale, false, {2560, 20, 0, 128, 0, 0, 0.0, 0.0, 8192, nullptr}, false, nullptr, false, true, false, I::None, nullptr},
      {"granitemoe_swa", "granitemoe_swa/modular_granitemoe_swa.py (as granite_swa; GraniteMoeSWAConfig: hidden_size 4096, 32 heads, max_position_embeddings 2048)", K::Rope, half, 1.0, 1e4, L::FixedPatternFromZero, 4, W::SlidingLayers, S::AttentionMultiplier, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, true, B::AfterScale, false, {4096, 32, 0, 128, 0, 0, 0.0, 0.0, 2048, nullptr}, false, nullptr, false, true, false, I::None, nullptr},
      {"granite_docling_text", "granite_docling/configuration_granite_docling.py (GraniteDoclingTextConfig: attention_multiplier 0.015625, hidden_size 1024, 16 heads, max_position_embeddings 32768), modeling_granite_docling.py (GraniteDoclingTextAttention: scaling = attention_multiplier)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::AttentionMultiplier, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {1024, 16, 0, 0, 0, 0, 0.0, 0.015625, 32768, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"minicpm3", "minicpm3/configuration_minicpm3.py (qk_nope_head_dim 64, qk_rope_head_dim 32), modeling_minicpm3.py (MiniCPM3Attention: DeepSeek-V2's MLA and mscale, rotate-half apply_rotary_pos_emb)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::DeepseekMscale, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {2560, 40, 0, 0, 0, 0, 0.0, 0.0, 32768, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"youtu", "youtu/configuration_youtu.py (rope_interleave true, qk_rope_head_dim 64), modeling_youtu.py (YoutuAttention: DeepSeek-V3's MLA and mscale)", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::DeepseekMscale, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, "rope_interleave", false, false, B::AfterScale, false, {2048, 16, 0, 0, 0, 0, 0.0, 0.0, 131072, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"glm4_moe_lite", "glm4_moe_lite/configuration_glm4_moe_lite.py (rope_interleave true, head_dim = qk_rope_head_dim 64), modeling_glm4_moe_lite.py (Glm4MoeLiteAttention: DeepSeek-V3's MLA and mscale)", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::DeepseekMscale, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, "rope_interleave", false, false, B::AfterScale, false, {2048, 20, 0, 0, 0, 0, 0.0, 0.0, 202752, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
      {"jetmoe", "jetmoe/configuration_jetmoe.py (attribute_map head_dim: kv_channels, default 128; num_attention_heads = num_key_value_heads * num_experts_per_tok), modeling_jetmoe.py (JetMoeAttention: head_dim = kv_channels)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, T::None, PR::Fixed, nullptr, nullptr, false, false, B::AfterScale, false, {2048, 32, 128, 0, 0, 0, 0.0, 0.0, 4096, nullptr}, false, nullptr, false, false, false, I::None, nullptr},
  }};
  // clang-format on
  return table;
}

// The row of model_type; unknown types (and configs without one) get Llama's row.
inline const ModelFamily& model_family(const std::string& model_type) {
  for (const ModelFamily& family : model_families()) {
    if (model_type == family.model_type) return family;
  }
  return model_families()[0];
}

// The (config name, posemb layer type) pairs of the family's layer_type_names.
inline std::vector<std::pair<std::string, std::string>> layer_type_names(
    const ModelFamily& family) {
  std::vector<std::pair<std::string, std::string>> pairs;
  const std::string list = family.layer_type_names != nullptr ? family.layer_type_names : "";
  for (std::size_t begin = 0; begin < list.size();) {
    std::size_t end = list.find(", ", begin);
    if (end == std::string::npos) end = list.size();
    const std::string pair = list.substr(begin, end - begin);
    const std::size_t equals = pair.find('=');
    pairs.emplace_back(pair.substr(0, equals), pair.substr(equals + 1));
    begin = end + 2;
  }
  return pairs;
}

// posemb's layer type for a name of the family's configs (Zaya's "hybrid": full_attention), or
// the name itself.
inline std::string layer_type_of_name(const ModelFamily& family, const std::string& name) {
  for (const auto& [config_name, type] : layer_type_names(family)) {
    if (name == config_name) return type;
  }
  return name;
}

// The family's config name for posemb's layer type (Zaya's full_attention: "hybrid"), or the
// type itself.
inline std::string config_layer_type_name(const ModelFamily& family, const std::string& type) {
  for (const auto& [config_name, own] : layer_type_names(family)) {
    if (type == own) return config_name;
  }
  return type;
}

// The vision tower whose 2-D RoPE a multimodal config describes (vision_rope.hpp).
enum class VisionTower {
  None,
  QwenMerge,  // the Qwen2-VL family: embed_dim / num_heads, merge-block patch order
  Pixtral,    // Pixtral: head_dim, rope_theta, row-major patches
};

// A multimodal wrapper, by its top-level model_type (a vision config's own model_type names a
// row too: Mistral 3 wraps PixtralVisionConfig, whose model_type is "pixtral").
struct MultimodalFamily {
  const char* model_type;
  const char* source;  // transformers file(s) under src/transformers/models/
  // text_config's model_type when text_config names none ("": the config names it, or the
  // decoder is the top level).
  const char* text_model_type;
  std::optional<MropeFamily> mrope_index;  // get_rope_index's rules (mrope_positions.hpp)
  VisionTower vision;
};

inline const std::array<MultimodalFamily, 14>& multimodal_families() {
  using V = VisionTower;
  using M = MropeFamily;
  // One row per family, one line per row.
  // clang-format off
  static const std::array<MultimodalFamily, 14> table{{
      // model_type   source                                                        text model_type  M-RoPE index  vision tower
      {"mistral3", "mistral3/configuration_mistral3.py (text_config: mistral)", "mistral", std::nullopt, V::None},
      {"gemma3", "gemma3/configuration_gemma3.py (text_config: gemma3_text)", "gemma3_text", std::nullopt, V::None},
      {"gemma4", "gemma4/configuration_gemma4.py (text_config: gemma4_text)", "gemma4_text", std::nullopt, V::None},
      {"llama4", "llama4/configuration_llama4.py (text_config: llama4_text)", "llama4_text", std::nullopt, V::None},
      {"gemma3n", "gemma3n/configuration_gemma3n.py (text_config: gemma3n_text)", "gemma3n_text", std::nullopt, V::None},
      {"mllama", "mllama/configuration_mllama.py (text_config: mllama_text_model)", "mllama_text_model", std::nullopt, V::None},
      {"granite_docling", "granite_docling/configuration_granite_docling.py (text_config: granite_docling_text)", "granite_docling_text", std::nullopt, V::None},
      {"qwen2_vl", "qwen2_vl/modeling_qwen2_vl.py (get_rope_index, VisionRotaryEmbedding)", "", M::Qwen2VL, V::QwenMerge},
      {"qwen2_5_vl", "qwen2_5_vl/modeling_qwen2_5_vl.py (get_rope_index with tokens_per_second)", "", M::Qwen25VL, V::QwenMerge},
      {"qwen3_vl", "qwen3_vl/modeling_qwen3_vl.py (get_rope_index, interleaved M-RoPE)", "", M::Qwen3VL, V::QwenMerge},
      {"qwen3_vl_moe", "qwen3_vl_moe/modeling_qwen3_vl_moe.py (as qwen3_vl)", "", M::Qwen3VL, V::QwenMerge},
      {"qwen3_5", "qwen3_5/modeling_qwen3_5.py (as qwen3_vl)", "", M::Qwen3VL, V::QwenMerge},
      {"qwen3_5_moe", "qwen3_5_moe/modeling_qwen3_5_moe.py (as qwen3_vl)", "", M::Qwen3VL, V::QwenMerge},
      {"pixtral", "pixtral/modeling_pixtral.py (PixtralRotaryEmbedding)", "", std::nullopt, V::Pixtral},
  }};
  // clang-format on
  return table;
}

// The row of a top-level (or vision) model_type, or nullptr.
inline const MultimodalFamily* find_multimodal_family(const std::string& model_type) {
  for (const MultimodalFamily& family : multimodal_families()) {
    if (model_type == family.model_type) return &family;
  }
  return nullptr;
}

// The model_type text_config has when it names none ("" for other wrappers).
inline const char* default_text_model_type(const std::string& wrapper_type) {
  const MultimodalFamily* family = find_multimodal_family(wrapper_type);
  return family != nullptr ? family->text_model_type : "";
}

}  // namespace posemb
