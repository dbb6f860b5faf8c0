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

#include "posemb/detail/chainable.hpp"
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
  int hidden_size = 0;
  int num_attention_heads = 0;
  int head_dim = 0;  // 0: hidden_size / num_attention_heads
  int sliding_window = 0;
  int attention_chunk_size = 0;
  int rotary_dim = 0;                 // the default of the row's rotary_dim key (GPT-J: 64)
  double logit_softcap = 0.0;         // attn_logit_softcapping (Gemma 2: 50)
  double attention_multiplier = 0.0;  // SoftmaxRule::AttentionMultiplier's default (0: 1)
  int max_position_embeddings = 0;
  const char* rope_parameters = nullptr;  // the class's default rope block, as JSON text
};

enum class NopeRule {
  None,                    // every layer has the family's positions
  NonSlidingLayers,        // layers that are not sliding have none
  NonSlidingWhenWindowed,  // with a sliding_window, layers that are not sliding have none
  NoRopeLayers,  // no_rope_layers[i] == 0 (1 = RoPE), default every no_rope_layer_interval-th
  SlidingOrDensePrefix,  // Cohere2-MoE: RoPE on sliding layers when windowed and, when
                         // prefix_dense_sliding_window_pattern is 1, on the dense-MLP layers
};

// Where the family's checkpoints keep their learned position table [positions, d]
// (checkpoint_positions.hpp): `tensor`, tried after each of `prefixes` in turn, position p in
// row p + offset (+ padding_idx + 1 when from_padding_idx: RoBERTa's
// create_position_ids_from_input_ids numbers the tokens padding_idx + 1, padding_idx + 2, ...
// with padding_idx = pad_token_id).
struct LearnedTableRule {
  const char* tensor = nullptr;  // nullptr: posemb reads no table of the family
  std::array<const char*, 2> prefixes = {"", ""};
  int offset = 0;
  bool from_padding_idx = false;
};

// One family's rules. Every member has Llama's value by default (but default_rope_whole_head,
// which a model_type without a row does not take), so a row in model_families() names only what
// differs, with the chainable setters below:
//   ModelFamily("mistral", "mistral/modeling_mistral.py").with_window(WindowRule::EveryLayer)
// A new column is a member with Llama's value, a setter, and the rows that differ.
struct ModelFamily : detail::Chainable<ModelFamily> {
  const char* model_type;
  const char* source;  // transformers file(s) under src/transformers/models/
  PositionKind positions = PositionKind::Rope;
  Pairing pairing = Pairing::RotateHalf;
  double partial_rotary_factor = 1.0;  // config-class default when the config gives none
  double rope_theta = 1e4;             // config-class default when the config gives none
  LayerTypeRule layer_types = LayerTypeRule::AllFull;
  int pattern = 0;  // SlidingPattern / FixedPattern / LinearInterval / MaxWindowLayers default
  WindowRule window = WindowRule::Never;
  SoftmaxRule softmax = SoftmaxRule::HeadDim;
  RopeSplit split = RopeSplit::OneBlock;
  NopeRule nope = NopeRule::None;
  TemperatureRule temperature = TemperatureRule::None;
  PositionsRule positions_rule = PositionsRule::Fixed;
  // The key that gives rotary_dim directly when present (GPT-J, CodeGen: "rotary_dim"), or
  // nullptr: rotary_dim = int(head_dim * partial_rotary_factor).
  const char* rotary_dim_key = nullptr;
  // A boolean key (default true) whose false switches `pairing` to rotate-half (DeepSeek-V3:
  // "rope_interleave"), or nullptr.
  const char* interleave_key = nullptr;
  // RelativeBias: every layer holds its own [buckets, heads] table (UMT5), not the stack's first.
  bool bias_table_per_layer = false;
  bool attention_sinks = false;  // a learned logit per head in every softmax (gpt-oss)
  BiasPlacement bias_placement = BiasPlacement::AfterScale;  // where ALiBi enters the scale
  // use_bidirectional_attention (true, or "all") makes the window W // 2 + 1 (Gemma 3, Gemma 4:
  // "due to fa we set exclusive bounds", configuration_gemma3.py)
  bool bidirectional_window = false;
  ClassDefaults defaults;
  // A `dynamic` block's `alpha` sets a static base theta * alpha^(d / (d - 2)) up to
  // max_position_embeddings (Hunyuan's DynamicNTKAlpha rotary embedding).
  bool dynamic_alpha = false;
  // The rope-block keys the config class passes as ignore_keys_at_rope_validation (transformers
  // neither uses nor warns about them), ", "-separated, or nullptr.
  const char* rope_keys_transformers_ignores = nullptr;
  // A longrope block's short_mscale / long_mscale replace its attention factor, short up to
  // original_max_position_embeddings, long beyond (PhiMoE's PhimoeRotaryEmbedding.forward).
  bool longrope_mscales = false;
  // layer_rope_theta[i] replaces the block's rope_theta in layer i, 0 meaning no RoPE
  // (GraniteSWAModel.__init__ / forward: one rotary embedding per distinct non-zero theta).
  bool layer_rope_theta = false;
  // MLA whose partial_rotary_factor is of qk_nope + qk_rope (Mistral4Config.__post_init__ sets
  // head_dim to it), not of qk_rope_head_dim; the rotated width must be qk_rope_head_dim.
  bool partial_of_qk_head = false;
  IndexerRule indexer = IndexerRule::None;  // indexed_attention layers' indexer RoPE
  // The config's own names of posemb's layer types, in layer_types and as rope_parameters'
  // keys: "name=type, ..." (Zaya: "hybrid=full_attention, hybrid_sliding=sliding_attention"),
  // or nullptr.
  const char* layer_type_names = nullptr;
  // A default rope block rotates the whole head whatever partial_rotary_factor says (Llama:
  // transformers 5.24.0 modeling_llama.py, LlamaRotaryEmbedding.compute_default_rope_parameters
  // takes dim = head_dim; the other rope types and families take the factor, modeling_rope_utils.py
  // ROPE_INIT_FUNCTIONS). Only for the row's own model_type: a model_type without a row reads
  // with Llama's row but takes the factor.
  bool default_rope_whole_head = false;
  LearnedTableRule learned_table;  // the checkpoint's learned position table
  // A "default" rope block holding fope_init_factor, fope_sep_head or num_inv_freq (not null) is
  // FoPE as Intern-S1-Pro's code reads it (config/rope_block.hpp, read_fope_keys), its
  // coefficients the checkpoint's model.language_model.rotary_emb.{sin,cos}_coef.
  bool fope_keys = false;

  ModelFamily(const char* model_type_, const char* source_)
      : model_type(model_type_), source(source_) {}

  // Setters: a copy with one member changed.
  ModelFamily with_positions(PositionKind value) const {
    return with(&ModelFamily::positions, value);
  }
  ModelFamily with_pairing(Pairing value) const { return with(&ModelFamily::pairing, value); }
  ModelFamily with_partial_rotary_factor(double value) const {
    return with(&ModelFamily::partial_rotary_factor, value);
  }
  ModelFamily with_rope_theta(double value) const { return with(&ModelFamily::rope_theta, value); }
  // The layer types' rule and its pattern (the `pattern` member).
  ModelFamily with_layer_types(LayerTypeRule rule, int pattern_ = 0) const {
    return with(&ModelFamily::layer_types, rule).with(&ModelFamily::pattern, pattern_);
  }
  ModelFamily with_window(WindowRule value) const { return with(&ModelFamily::window, value); }
  ModelFamily with_softmax(SoftmaxRule value) const { return with(&ModelFamily::softmax, value); }
  ModelFamily with_split(RopeSplit value) const { return with(&ModelFamily::split, value); }
  ModelFamily with_nope(NopeRule value) const { return with(&ModelFamily::nope, value); }
  ModelFamily with_temperature(TemperatureRule value) const {
    return with(&ModelFamily::temperature, value);
  }
  ModelFamily with_positions_rule(PositionsRule value) const {
    return with(&ModelFamily::positions_rule, value);
  }
  ModelFamily with_rotary_dim_key(const char* key) const {
    return with(&ModelFamily::rotary_dim_key, key);
  }
  ModelFamily with_interleave_key(const char* key) const {
    return with(&ModelFamily::interleave_key, key);
  }
  ModelFamily with_bias_table_per_layer(bool value = true) const {
    return with(&ModelFamily::bias_table_per_layer, value);
  }
  ModelFamily with_attention_sinks(bool value = true) const {
    return with(&ModelFamily::attention_sinks, value);
  }
  ModelFamily with_bias_placement(BiasPlacement value) const {
    return with(&ModelFamily::bias_placement, value);
  }
  ModelFamily with_bidirectional_window(bool value = true) const {
    return with(&ModelFamily::bidirectional_window, value);
  }
  ModelFamily with_dynamic_alpha(bool value = true) const {
    return with(&ModelFamily::dynamic_alpha, value);
  }
  ModelFamily with_rope_keys_transformers_ignores(const char* keys) const {
    return with(&ModelFamily::rope_keys_transformers_ignores, keys);
  }
  ModelFamily with_longrope_mscales(bool value = true) const {
    return with(&ModelFamily::longrope_mscales, value);
  }
  ModelFamily with_layer_rope_theta(bool value = true) const {
    return with(&ModelFamily::layer_rope_theta, value);
  }
  ModelFamily with_partial_of_qk_head(bool value = true) const {
    return with(&ModelFamily::partial_of_qk_head, value);
  }
  ModelFamily with_indexer(IndexerRule value) const { return with(&ModelFamily::indexer, value); }
  ModelFamily with_layer_type_names(const char* names) const {
    return with(&ModelFamily::layer_type_names, names);
  }
  ModelFamily with_default_rope_whole_head(bool value = true) const {
    return with(&ModelFamily::default_rope_whole_head, value);
  }
  ModelFamily with_learned_table(LearnedTableRule value) const {
    return with(&ModelFamily::learned_table, value);
  }
  ModelFamily with_fope_keys(bool value = true) const {
    return with(&ModelFamily::fope_keys, value);
  }

  // Setters of the config class's defaults (the `defaults` member).
  ModelFamily with_hidden_size(int value) const {
    return with_default(&ClassDefaults::hidden_size, value);
  }
  ModelFamily with_num_attention_heads(int value) const {
    return with_default(&ClassDefaults::num_attention_heads, value);
  }
  ModelFamily with_head_dim(int value) const {
    return with_default(&ClassDefaults::head_dim, value);
  }
  ModelFamily with_sliding_window(int value) const {
    return with_default(&ClassDefaults::sliding_window, value);
  }
  ModelFamily with_attention_chunk_size(int value) const {
    return with_default(&ClassDefaults::attention_chunk_size, value);
  }
  ModelFamily with_rotary_dim(int value) const {
    return with_default(&ClassDefaults::rotary_dim, value);
  }
  ModelFamily with_logit_softcap(double value) const {
    return with_default(&ClassDefaults::logit_softcap, value);
  }
  ModelFamily with_attention_multiplier(double value) const {
    return with_default(&ClassDefaults::attention_multiplier, value);
  }
  ModelFamily with_max_position_embeddings(int value) const {
    return with_default(&ClassDefaults::max_position_embeddings, value);
  }
  ModelFamily with_rope_parameters(const char* json) const {
    return with_default(&ClassDefaults::rope_parameters, json);
  }

 private:
  template <class T>
  ModelFamily with_default(T ClassDefaults::*member, T value) const {
    ModelFamily family = *this;
    family.defaults.*member = value;
    return family;
  }
};

inline const std::vector<ModelFamily>& model_families() {
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
  constexpr Pairing inter = Pairing::Interleaved;
  const auto family = [](const char* model_type, const char* source) {
    return ModelFamily(model_type, source);
  };
  // One row per family: its model_type, the transformers file(s) it cites, then only what
  // differs from Llama's rules (ModelFamily's defaults). The first row is Llama's.
  // clang-format off
  static const std::vector<ModelFamily> table{
      family("llama", "llama/configuration_llama.py, modeling_llama.py")
          .with_default_rope_whole_head(),
      family("mistral", "mistral/modeling_mistral.py (sliding_window on every layer)")
          .with_window(W::EveryLayer),
      family("mixtral", "mixtral/configuration_mixtral.py (default_theta 1e6), modeling_mixtral.py (sliding_window on every layer)")
          .with_rope_theta(1e6).with_window(W::EveryLayer),
      family("phi3", "phi3/modeling_phi3.py (sliding_window on every layer)")
          .with_window(W::EveryLayer),
      family("qwen2", "qwen2/configuration_qwen2.py (use_sliding_window, max_window_layers 28)")
          .with_layer_types(L::MaxWindowLayers, 28).with_window(W::SlidingLayers),
      family("qwen3", "qwen3/configuration_qwen3.py (use_sliding_window, max_window_layers 28)")
          .with_layer_types(L::MaxWindowLayers, 28).with_window(W::SlidingLayers),
      family("qwen2_moe", "qwen2_moe/configuration_qwen2_moe.py (layer_types: even layers below max_window_layers 28 sliding with use_sliding_window)")
          .with_layer_types(L::EvenBelowWindowLayers, 28).with_window(W::SlidingLayers),
      family("qwen3_moe", "qwen3_moe/configuration_qwen3_moe.py, modeling_qwen3_moe.py (sliding_window on every layer with use_sliding_window)")
          .with_window(W::EveryLayerIfEnabled),
      family("qwen3_next", "qwen3_next/configuration_qwen3_next.py (head_dim 256, full_attention_interval 4, partial 0.25)")
          .with_partial_rotary_factor(0.25).with_layer_types(L::LinearInterval, 4)
          .with_hidden_size(2048).with_num_attention_heads(16).with_head_dim(256)
          .with_max_position_embeddings(32768),
      family("gemma2", "gemma2/configuration_gemma2.py (attn_logit_softcapping 50, sliding_window 4096), modeling_gemma2.py")
          .with_layer_types(L::FixedPattern, 2).with_window(W::SlidingLayers)
          .with_softmax(S::QueryPreAttnScalar).with_hidden_size(2304).with_num_attention_heads(8)
          .with_head_dim(256).with_sliding_window(4096).with_logit_softcap(50.0)
          .with_max_position_embeddings(8192),
      family("gemma3_text", "gemma3/configuration_gemma3.py (sliding_window_pattern 6, rope_local_base_freq, sliding_window 4096)")
          .with_rope_theta(1e6).with_layer_types(L::SlidingPattern, 6).with_window(W::SlidingLayers)
          .with_softmax(S::QueryPreAttnScalar).with_split(R::LocalBase).with_bidirectional_window()
          .with_hidden_size(2304).with_num_attention_heads(8).with_head_dim(256)
          .with_sliding_window(4096),
      family("gemma4_text", "gemma4/configuration_gemma4.py, modeling_gemma4.py (global_head_dim 512, proportional, sliding_window 512)")
          .with_rope_theta(1e6).with_layer_types(L::FixedPattern, 6).with_window(W::SlidingLayers)
          .with_softmax(S::One).with_split(R::Gemma4).with_bidirectional_window()
          .with_hidden_size(2304).with_num_attention_heads(8).with_head_dim(256)
          .with_sliding_window(512).with_max_position_embeddings(131072),
      family("olmo3", "olmo3/modular_olmo3.py (every 4th layer full, YaRN on full layers)")
          .with_rope_theta(5e5).with_layer_types(L::FixedPattern, 4).with_window(W::SlidingLayers)
          .with_split(R::FullOnly),
      family("gpt_oss", "gpt_oss/configuration_gpt_oss.py (default_theta 150000, head_dim 64, YaRN block, sliding_window 128), modeling_gpt_oss.py (sinks)")
          .with_rope_theta(150000.0).with_layer_types(L::FixedPattern, 2)
          .with_window(W::SlidingLayers).with_attention_sinks().with_hidden_size(2880)
          .with_num_attention_heads(64).with_head_dim(64).with_sliding_window(128)
          .with_max_position_embeddings(131072)
          .with_rope_parameters(R"({"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": false, "original_max_position_embeddings": 4096})"),
      family("smollm3", "smollm3/configuration_smollm3.py (default_theta 2000000, no_rope_layers, NoPE layers sliding)")
          .with_rope_theta(2e6).with_layer_types(L::NopeSliding, 4).with_window(W::SlidingLayers)
          .with_nope(N::NoRopeLayers).with_hidden_size(2048).with_num_attention_heads(16)
          .with_max_position_embeddings(32768),
      family("llama4_text", "llama4/configuration_llama4.py (head_dim 128, attention_chunk_size 8192, attn_temperature_tuning true), modeling_llama4.py (interleaved, NoPE)")
          .with_pairing(inter).with_rope_theta(5e5).with_layer_types(L::ChunkedRope, 4)
          .with_nope(N::NoRopeLayers).with_temperature(T::Llama4NopeLayers).with_hidden_size(5120)
          .with_num_attention_heads(40).with_head_dim(128).with_attention_chunk_size(8192)
          .with_max_position_embeddings(131072),
      family("cohere", "cohere/modeling_cohere.py (rotate_half on x[..., ::2], x[..., 1::2])")
          .with_pairing(inter),
      family("cohere2", "cohere2/configuration_cohere2.py, modeling_cohere2.py (RoPE on sliding layers only)")
          .with_pairing(inter).with_layer_types(L::SlidingPattern, 4).with_window(W::SlidingLayers)
          .with_nope(N::NonSlidingLayers),
      family("cohere2_moe", "cohere2_moe/configuration_cohere2_moe.py (head_dim 128, sliding_window 4096, sliding_window_pattern 4, first_k_dense_replace prefix, mlp_layer_types), modeling_cohere2_moe.py (Cohere2MoeAttention: RoPE iff sliding_window or force_rope; cohere's interleaved rotate_half)")
          .with_pairing(inter).with_layer_types(L::DensePrefixPattern, 4)
          .with_window(W::SlidingLayers).with_nope(N::SlidingOrDensePrefix).with_hidden_size(8192)
          .with_num_attention_heads(64).with_head_dim(128).with_sliding_window(4096)
          .with_max_position_embeddings(8192),
      family("glm", "glm/configuration_glm.py (partial_rotary_factor 0.5), modeling_glm.py")
          .with_pairing(inter).with_partial_rotary_factor(0.5),
      family("glm4", "glm4/configuration_glm4.py (partial_rotary_factor 0.5), modeling_glm4.py")
          .with_pairing(inter).with_partial_rotary_factor(0.5),
      family("ernie4_5", "ernie4_5/configuration_ernie4_5.py (default_theta 500000, head_dim 128), modeling_ernie4_5.py (repeat_interleave'd cos/sin)")
          .with_pairing(inter).with_rope_theta(5e5).with_hidden_size(1024)
          .with_num_attention_heads(16).with_head_dim(128).with_max_position_embeddings(131072),
      family("ernie4_5_moe", "ernie4_5_moe/modeling_ernie4_5_moe.py (as ernie4_5)")
          .with_pairing(inter).with_rope_theta(5e5).with_head_dim(128),
      family("deepseek_v2", "deepseek_v2/modeling_deepseek_v2.py (complex multiply on adjacent pairs, MLA)")
          .with_pairing(inter).with_softmax(S::DeepseekMscale),
      family("deepseek_v3", "deepseek_v3/configuration_deepseek_v3.py (rope_interleave true), modeling_deepseek_v3.py")
          .with_pairing(inter).with_softmax(S::DeepseekMscale)
          .with_interleave_key("rope_interleave"),
      family("gptj", "gptj/configuration_gptj.py (rotary_dim 64, n_embd 4096, n_head 16), modeling_gptj.py (rotate_every_two)")
          .with_pairing(inter).with_rotary_dim_key("rotary_dim").with_hidden_size(4096)
          .with_num_attention_heads(16).with_rotary_dim(64).with_max_position_embeddings(2048),
      family("codegen", "codegen/modeling_codegen.py (rotate_every_two, rotary_dim)")
          .with_pairing(inter).with_rotary_dim_key("rotary_dim"),
      family("gpt_neox", "gpt_neox/configuration_gpt_neox.py (rotary_pct 0.25, rotary_emb_base)")
          .with_partial_rotary_factor(0.25),
      family("phi", "phi/configuration_phi.py (partial_rotary_factor 0.5)")
          .with_partial_rotary_factor(0.5),
      family("persimmon", "persimmon/configuration_persimmon.py (v5: no default_theta, so 1e4; partial_rotary_factor 0.5)")
          .with_partial_rotary_factor(0.5).with_hidden_size(4096).with_num_attention_heads(64)
          .with_max_position_embeddings(16384),
      family("stablelm", "stablelm/configuration_stablelm.py (partial_rotary_factor 0.25)")
          .with_partial_rotary_factor(0.25),
      family("granite", "granite/modeling_granite.py (scaling = attention_multiplier)")
          .with_softmax(S::AttentionMultiplier),
      family("gpt2", "gpt2/modeling_gpt2.py (wpe, scale_attn_by_inverse_layer_idx)")
          .with_positions(K::Learned).with_softmax(S::Gpt2)
          .with_learned_table({"wpe.weight", {"", "transformer."}, 0, false}),
      family("gpt_bigcode", "gpt_bigcode/modeling_gpt_bigcode.py (wpe)")
          .with_positions(K::Learned),
      family("gpt_neo", "gpt_neo/configuration_gpt_neo.py (attention_types, window_size 256), modeling_gpt_neo.py (wpe, unscaled scores)")
          .with_positions(K::Learned).with_layer_types(L::AttentionTypes)
          .with_window(W::SlidingLayers).with_softmax(S::Unscaled).with_hidden_size(2048)
          .with_num_attention_heads(16).with_sliding_window(256).with_max_position_embeddings(2048),
      family("opt", "opt/modeling_opt.py (learned positions)")
          .with_positions(K::Learned)
          .with_learned_table({"decoder.embed_positions.weight", {"model.", ""}, 2, false}),
      family("bert", "bert/configuration_bert.py (max_position_embeddings 512), modeling_bert.py (position_embeddings, position ids 0..)")
          .with_positions(K::Learned).with_hidden_size(768).with_num_attention_heads(12)
          .with_max_position_embeddings(512)
          .with_learned_table({"embeddings.position_embeddings.weight", {"bert.", ""}, 0, false}),
      family("roberta", "roberta/modeling_roberta.py (position_embeddings from padding_idx + 1, create_position_ids_from_input_ids)")
          .with_positions(K::Learned).with_hidden_size(768).with_num_attention_heads(12)
          .with_max_position_embeddings(512)
          .with_learned_table({"embeddings.position_embeddings.weight", {"roberta.", ""}, 1, true}),
      family("xlm-roberta", "xlm_roberta/modeling_xlm_roberta.py (as roberta)")
          .with_positions(K::Learned).with_hidden_size(768).with_num_attention_heads(12)
          .with_max_position_embeddings(512)
          .with_learned_table({"embeddings.position_embeddings.weight", {"roberta.", ""}, 1, true}),
      family("bloom", "bloom/modeling_bloom.py (build_alibi_tensor)")
          .with_positions(K::Alibi),
      family("xglm", "xglm/modeling_xglm.py (sinusoidal positions)")
          .with_positions(K::Sinusoidal),
      family("m2m_100", "m2m_100/modeling_m2m_100.py (sinusoidal positions)")
          .with_positions(K::Sinusoidal),
      family("mpt", "mpt/configuration_mpt.py (attn_config.alibi default true, learned_pos_emb default true)")
          .with_positions(K::Alibi).with_positions_rule(PR::MptAttnConfig),
      family("t5", "t5/configuration_t5.py, modeling_t5.py (relative_attention_bias in block 0, no 1/sqrt(d))")
          .with_positions(K::RelativeBias).with_softmax(S::Unscaled),
      family("mt5", "mt5/configuration_mt5.py, modeling_mt5.py (as t5)")
          .with_positions(K::RelativeBias).with_softmax(S::Unscaled),
      family("umt5", "umt5/modeling_umt5.py (UMT5Attention: a relative_attention_bias in every layer)")
          .with_positions(K::RelativeBias).with_softmax(S::Unscaled).with_bias_table_per_layer(),
      family("gemma3n_text", "gemma3n/configuration_gemma3n.py (full every 5th layer, default_theta {1e6, local 1e4}, sliding_window 512), modeling_gemma3n.py (scaling 1)")
          .with_rope_theta(1e6).with_layer_types(L::FixedPattern, 5).with_window(W::SlidingLayers)
          .with_softmax(S::One).with_split(R::LocalBase).with_hidden_size(2048)
          .with_num_attention_heads(8).with_head_dim(256).with_sliding_window(512)
          .with_max_position_embeddings(32768),
      family("exaone4", "exaone4/configuration_exaone4.py (sliding_window 4096, pattern 4), modeling_exaone4.py (RoPE on sliding layers when windowed)")
          .with_layer_types(L::SlidingPattern, 4).with_window(W::SlidingLayers)
          .with_nope(N::NonSlidingWhenWindowed).with_hidden_size(4096).with_num_attention_heads(32)
          .with_sliding_window(4096).with_max_position_embeddings(2048),
      family("ministral3", "ministral3/configuration_ministral3.py (head_dim 128, YaRN block with llama_4_scaling_beta, ignore_keys_at_rope_validation), modeling_ministral3.py")
          .with_rope_theta(1e6).with_window(W::EveryLayer).with_temperature(T::EveryLayerLlama4Beta)
          .with_hidden_size(4096).with_num_attention_heads(32).with_head_dim(128)
          .with_max_position_embeddings(262144)
          .with_rope_parameters(R"({"type": "yarn", "rope_theta": 1000000.0, "factor": 16.0, "original_max_position_embeddings": 16384, "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1})")
          .with_rope_keys_transformers_ignores("llama_4_scaling_beta, max_position_embeddings"),
      family("helium", "helium/configuration_helium.py (default_theta 100000, head_dim 128), modeling_helium.py (rotate_half on x[..., 0::2], x[..., 1::2])")
          .with_pairing(inter).with_rope_theta(1e5).with_hidden_size(2560)
          .with_num_attention_heads(20).with_head_dim(128).with_max_position_embeddings(4096),
      family("glm4_moe", "glm4_moe/modular_glm4_moe.py (head_dim 128, partial 0.5; gpt_neox's rotate-half apply_rotary_pos_emb)")
          .with_partial_rotary_factor(0.5).with_hidden_size(4096).with_num_attention_heads(96)
          .with_head_dim(128),
      family("starcoder2", "starcoder2/modeling_starcoder2.py (sliding_window on every layer)")
          .with_window(W::EveryLayer),
      family("phimoe", "phimoe/modeling_phimoe.py (sliding_window on every layer; PhimoeRotaryEmbedding: short_mscale / long_mscale)")
          .with_rope_theta(1e6).with_window(W::EveryLayer).with_longrope_mscales(),
      family("lfm2", "lfm2/configuration_lfm2.py (default_theta 1e6, conv / full_attention layers)")
          .with_rope_theta(1e6).with_layer_types(L::FullAttnIdxs).with_hidden_size(2560)
          .with_num_attention_heads(32).with_max_position_embeddings(128000),
      family("jamba", "jamba/configuration_jamba.py (attn_layer_period 8, offset 4), modeling_jamba.py (JambaAttention without RoPE)")
          .with_positions(K::None).with_layer_types(L::AttentionPeriod).with_hidden_size(4096)
          .with_num_attention_heads(32),
      family("granitemoehybrid", "granitemoehybrid/configuration_granitemoehybrid.py (layers_block_type: every layer mamba without layer_types), modeling_granitemoehybrid.py (mamba layers; RoPE iff position_embedding_type rope)")
          .with_layer_types(L::AllMamba).with_softmax(S::AttentionMultiplier)
          .with_positions_rule(PR::PositionEmbeddingType),
      family("minimax", "minimax/modular_minimax.py (MiniMaxConfig: default_theta 1e6, linear_attention on odd layers; MiniMaxLightningAttention without RoPE)")
          .with_rope_theta(1e6).with_layer_types(L::LinearOddLayers),
      family("mllama_text_model", "mllama/configuration_mllama.py (cross_attention_layers), modeling_mllama.py (cross-attention without RoPE)")
          .with_rope_theta(5e5).with_layer_types(L::CrossAttention),
      family("interns1_pro_text", "Intern-S1-Pro's remote code (configuration_interns1_pro.py, modeling_interns1_pro.py: FoPE from the default block's fope keys); vLLM 0.33.0 models/interns1_pro.py, rotary_embedding/fope.py")
          .with_fope_keys(),
      family("kimi_k2", "deepseek_v3/modeling_deepseek_v3.py (Kimi K2 ships DeepseekV3ForCausalLM)")
          .with_pairing(inter).with_softmax(S::DeepseekMscale)
          .with_interleave_key("rope_interleave"),
      family("deepseek_v32", "deepseek_v32/configuration_deepseek_v32.py (layer_types: every layer indexed_attention; head_dim = qk_rope_head_dim), modeling_deepseek_v32.py (DeepseekV32Attention: MLA, apply_rotary_pos_emb_interleave always; DeepseekV32Indexer: rotate-half on its first qk_rope_head_dim features)")
          .with_pairing(inter).with_layer_types(L::AllIndexed).with_softmax(S::DeepseekMscale)
          .with_indexer(I::RotateHalfFirst),
      family("axk2", "axk2/configuration_axk2.py (as deepseek_v32: indexed_attention layers, qk_rope_head_dim 32), modeling_axk2.py (AXK2Attention: DeepSeek-V3.2's MLA and indexer)")
          .with_pairing(inter).with_layer_types(L::AllIndexed).with_softmax(S::DeepseekMscale)
          .with_indexer(I::RotateHalfFirst),
      family("hy_v4", "hy_v4/configuration_hy_v4.py (indexed_attention layers, indexer_types), modeling_hy_v4.py (HYV4Attention: MLA, rotate-half apply_rotary_pos_emb, yarn_apply_mscale scaling, sinks; HYV4Indexer: rotate-half on its last qk_rope_head_dim features)")
          .with_layer_types(L::AllIndexed).with_softmax(S::DeepseekMscale).with_attention_sinks()
          .with_indexer(I::RotateHalfLastShared),
      family("mistral4", "mistral4/configuration_mistral4.py (head_dim = qk_nope + qk_rope, partial_rotary_factor = qk_rope / head_dim, default yarn block factor 128 with llama_4_scaling_beta 0.1), modeling_mistral4.py (Mistral4Attention: DeepSeek-V3's MLA and yarn_apply_mscale, rope_interleave, q * get_llama_4_attn_scale)")
          .with_pairing(inter).with_softmax(S::DeepseekMscale)
          .with_temperature(T::EveryLayerLlama4Beta).with_interleave_key("rope_interleave")
          .with_hidden_size(4096).with_num_attention_heads(32).with_max_position_embeddings(1048576)
          .with_rope_parameters(R"({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 128.0, "original_max_position_embeddings": 8192, "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1})")
          .with_rope_keys_transformers_ignores("llama_4_scaling_beta, max_position_embeddings")
          .with_partial_of_qk_head(),
      family("falcon", "falcon/modeling_falcon.py (alibi: (scores + alibi) * inv_norm_factor)")
          .with_bias_placement(B::BeforeScale),
      family("hunyuan_v1_dense", "hunyuan_v1_dense/configuration_hunyuan_v1_dense.py (theta 1e4, head_dim 128, max_position_embeddings 2048), modeling_hunyuan_v1_dense.py (HunYuanDenseV1RotaryEmbedding: dynamic with alpha, static at every length)")
          .with_hidden_size(4096).with_num_attention_heads(32).with_head_dim(128)
          .with_max_position_embeddings(2048).with_dynamic_alpha(),
      family("hunyuan_v1_moe", "hunyuan_v1_moe/configuration_hunyuan_v1_moe.py, modeling_hunyuan_v1_moe.py (as hunyuan_v1_dense)")
          .with_hidden_size(4096).with_num_attention_heads(32).with_head_dim(128)
          .with_max_position_embeddings(2048).with_dynamic_alpha(),
      family("falcon_h1", "falcon_h1/configuration_falcon_h1.py (theta 1e5, key_multiplier 1), modular_falcon_h1.py (FalconH1Attention: k * key_multiplier; mamba in parallel, attention with RoPE in every layer)")
          .with_rope_theta(1e5).with_softmax(S::KeyMultiplier).with_hidden_size(4096)
          .with_num_attention_heads(32).with_max_position_embeddings(8192),
      family("beam", "beam/configuration_beam.py (every 6th layer and the last full, sliding_window 512, head_dim 128, rope_parameters {sliding_attention: default 1e4, full_attention: None}), modeling_beam.py (BeamModel.forward: NoPE full layers, q * compute_attention_scaling)")
          .with_layer_types(L::FixedPatternLastFull, 6).with_window(W::SlidingLayers)
          .with_temperature(T::PowerNopeLayers).with_hidden_size(5120).with_num_attention_heads(48)
          .with_head_dim(128).with_sliding_window(512).with_max_position_embeddings(8192)
          .with_rope_parameters(R"({"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}, "full_attention": null})"),
      family("zaya", "zaya/configuration_zaya.py (layer_types \"hybrid\" / \"hybrid_sliding\", rope_parameters by them: theta 5e6 / 1e4, partial_rotary_factor 0.5), modeling_zaya.py (ZayaAttention: rotate_half on the first rotary_dim features, sliding_window on hybrid_sliding layers)")
          .with_window(W::SlidingLayers).with_hidden_size(2048).with_num_attention_heads(8)
          .with_head_dim(128).with_max_position_embeddings(131072)
          .with_rope_parameters(R"({"full_attention": {"rope_type": "default", "rope_theta": 5000000.0, "partial_rotary_factor": 0.5}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}})")
          .with_rope_keys_transformers_ignores("hybrid, hybrid_sliding")
          .with_layer_type_names("hybrid=full_attention, hybrid_sliding=sliding_attention"),
      family("dory", "dory/configuration_dory.py (layer_types and num_hidden_layers of config.json in (attention, mlp) blocks, halved by __post_init__; full iff (i+1) % 4 == 0; rope_parameters by layer type: sliding 1e4, full 1e7; head_dim 256, sliding_window 1024), modeling_dory.py (DoryAttention: RoPE after the q/k L2 norms, window on sliding layers)")
          .with_layer_types(L::AttentionMlpPairs, 4).with_window(W::SlidingLayers)
          .with_hidden_size(2560).with_num_attention_heads(16).with_head_dim(256)
          .with_sliding_window(1024).with_max_position_embeddings(8192)
          .with_rope_parameters(R"({"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}, "full_attention": {"rope_type": "default", "rope_theta": 10000000.0}})"),
      family("afmoe", "afmoe/configuration_afmoe.py (global_attn_every_n_layers 4, sliding_window 1024, head_dim 128), modeling_afmoe.py (AfmoeAttention: RoPE on sliding layers only)")
          .with_layer_types(L::GlobalEveryN, 4).with_window(W::SlidingLayers)
          .with_nope(N::NonSlidingLayers).with_hidden_size(2048).with_num_attention_heads(16)
          .with_head_dim(128).with_sliding_window(1024).with_max_position_embeddings(16384),
      family("cwm", "cwm/configuration_cwm.py (default_theta 1e6, llama3 block, head_dim 128, sliding_window 8192, full iff i % 4 == 0), modeling_cwm.py")
          .with_rope_theta(1e6).with_layer_types(L::FixedPatternFromZero, 4)
          .with_window(W::SlidingLayers).with_hidden_size(6144).with_num_attention_heads(48)
          .with_head_dim(128).with_sliding_window(8192).with_max_position_embeddings(131072)
          .with_rope_parameters(R"({"rope_type": "llama3", "rope_theta": 1000000.0, "factor": 16.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192})"),
      family("exaone_moe", "exaone_moe/configuration_exaone_moe.py (sliding_window 4096, sliding_window_pattern 4), modeling_exaone_moe.py (as exaone4: RoPE on sliding layers when windowed)")
          .with_layer_types(L::SlidingPattern, 4).with_window(W::SlidingLayers)
          .with_nope(N::NonSlidingWhenWindowed).with_hidden_size(4096).with_num_attention_heads(32)
          .with_sliding_window(4096).with_max_position_embeddings(2048),
      family("kolibri1", "kolibri1/configuration_kolibri1.py (full every 5th layer, sliding_window 513, head_dim 128), modeling_kolibri1.py (as exaone4: RoPE on sliding layers when windowed)")
          .with_layer_types(L::FixedPattern, 5).with_window(W::SlidingLayers)
          .with_nope(N::NonSlidingWhenWindowed).with_hidden_size(2560).with_num_attention_heads(48)
          .with_head_dim(128).with_sliding_window(513).with_max_position_embeddings(262144),
      family("lara_mini", "lara_mini/configuration_lara_mini.py (layer_types period 5, sliding_window 512, head_dim 128), modeling_lara_mini.py (LaraMiniModel.forward: position_embeddings on sliding layers only; gated DeltaNet linear layers)")
          .with_layer_types(L::LaraMiniPeriod, 5).with_window(W::SlidingLayers)
          .with_nope(N::NonSlidingLayers).with_hidden_size(1024).with_num_attention_heads(16)
          .with_head_dim(128).with_sliding_window(512).with_max_position_embeddings(131072),
      family("modernbert", "modernbert/configuration_modernbert.py (default_theta {global 160000, local 1e4}, global_attn_every_n_layers 3, local_attention 128), modeling_modernbert.py (ModernBertAttention: sliding_window = local_attention // 2 + 1)")
          .with_layer_types(L::GlobalEveryNFromZero, 3).with_window(W::HalfLocalAttentionPlusOne)
          .with_hidden_size(768).with_num_attention_heads(12).with_sliding_window(128)
          .with_max_position_embeddings(8192)
          .with_rope_parameters(R"({"full_attention": {"rope_type": "default", "rope_theta": 160000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})"),
      family("modernbert-decoder", "modernbert_decoder/configuration_modernbert_decoder.py (as modernbert; sliding_window = local_attention // 2), modeling_modernbert_decoder.py")
          .with_layer_types(L::GlobalEveryNFromZero, 3).with_window(W::HalfLocalAttention)
          .with_hidden_size(768).with_num_attention_heads(12).with_sliding_window(128)
          .with_max_position_embeddings(8192)
          .with_rope_parameters(R"({"full_attention": {"rope_type": "default", "rope_theta": 160000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})"),
      family("ultrabert", "ultrabert/configuration_ultrabert.py (sliding iff (i+1) % 3 != 0, rope {sliding 1e4, full 2560000}, sliding_window 128), modeling_ultrabert.py (UltrabertAttention: sliding_window + 1)")
          .with_layer_types(L::FixedPattern, 3).with_window(W::SlidingLayersRadius)
          .with_hidden_size(4096).with_num_attention_heads(32).with_sliding_window(128)
          .with_max_position_embeddings(32768)
          .with_rope_parameters(R"({"full_attention": {"rope_type": "default", "rope_theta": 2560000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})"),
      family("vaultgemma", "vaultgemma/configuration_vaultgemma.py (as gemma2: sliding iff (i+1) % 2 != 0, attn_logit_softcapping 50, sliding_window 4096, head_dim 256), modeling_vaultgemma.py (scaling query_pre_attn_scalar^-0.5)")
          .with_layer_types(L::FixedPattern, 2).with_window(W::SlidingLayers)
          .with_softmax(S::QueryPreAttnScalar).with_hidden_size(2304).with_num_attention_heads(8)
          .with_head_dim(256).with_sliding_window(4096).with_logit_softcap(50.0)
          .with_max_position_embeddings(8192),
      family("granitemoe", "granitemoe/modeling_granitemoe.py (as granite: scaling = attention_multiplier)")
          .with_softmax(S::AttentionMultiplier),
      family("granitemoeshared", "granitemoeshared/modeling_granitemoeshared.py (as granite: scaling = attention_multiplier)")
          .with_softmax(S::AttentionMultiplier),
      family("granite_swa", "granite_swa/modular_granite_swa.py (GraniteSWAConfig: full iff i % 4 == 0, sliding_window 128, layer_rope_theta; GraniteSWAAttention: scaling = attention_multiplier, sinks)")
          .with_layer_types(L::FixedPatternFromZero, 4).with_window(W::SlidingLayers)
          .with_softmax(S::AttentionMultiplier).with_attention_sinks().with_hidden_size(2560)
          .with_num_attention_heads(20).with_sliding_window(128).with_max_position_embeddings(8192)
          .with_layer_rope_theta(),
      family("granitemoe_swa", "granitemoe_swa/modular_granitemoe_swa.py (as granite_swa; GraniteMoeSWAConfig: hidden_size 4096, 32 heads, max_position_embeddings 2048)")
          .with_layer_types(L::FixedPatternFromZero, 4).with_window(W::SlidingLayers)
          .with_softmax(S::AttentionMultiplier).with_attention_sinks().with_hidden_size(4096)
          .with_num_attention_heads(32).with_sliding_window(128).with_max_position_embeddings(2048)
          .with_layer_rope_theta(),
      family("granite_docling_text", "granite_docling/configuration_granite_docling.py (GraniteDoclingTextConfig: attention_multiplier 0.015625, hidden_size 1024, 16 heads, max_position_embeddings 32768), modeling_granite_docling.py (GraniteDoclingTextAttention: scaling = attention_multiplier)")
          .with_softmax(S::AttentionMultiplier).with_hidden_size(1024).with_num_attention_heads(16)
          .with_attention_multiplier(0.015625).with_max_position_embeddings(32768),
      family("minicpm3", "minicpm3/configuration_minicpm3.py (qk_nope_head_dim 64, qk_rope_head_dim 32), modeling_minicpm3.py (MiniCPM3Attention: DeepSeek-V2's MLA and mscale, rotate-half apply_rotary_pos_emb)")
          .with_softmax(S::DeepseekMscale).with_hidden_size(2560).with_num_attention_heads(40)
          .with_max_position_embeddings(32768),
      family("youtu", "youtu/configuration_youtu.py (rope_interleave true, qk_rope_head_dim 64), modeling_youtu.py (YoutuAttention: DeepSeek-V3's MLA and mscale)")
          .with_pairing(inter).with_softmax(S::DeepseekMscale)
          .with_interleave_key("rope_interleave").with_hidden_size(2048)
          .with_num_attention_heads(16).with_max_position_embeddings(131072),
      family("glm4_moe_lite", "glm4_moe_lite/configuration_glm4_moe_lite.py (rope_interleave true, head_dim = qk_rope_head_dim 64), modeling_glm4_moe_lite.py (Glm4MoeLiteAttention: DeepSeek-V3's MLA and mscale)")
          .with_pairing(inter).with_softmax(S::DeepseekMscale)
          .with_interleave_key("rope_interleave").with_hidden_size(2048)
          .with_num_attention_heads(20).with_max_position_embeddings(202752),
      family("jetmoe", "jetmoe/configuration_jetmoe.py (attribute_map head_dim: kv_channels, default 128; num_attention_heads = num_key_value_heads * num_experts_per_tok), modeling_jetmoe.py (JetMoeAttention: head_dim = kv_channels)")
          .with_hidden_size(2048).with_num_attention_heads(32).with_head_dim(128)
          .with_max_position_embeddings(4096),
  };
  // clang-format on
  return table;
}

// The row of model_type, or nullptr.
inline const ModelFamily* find_model_family(const std::string& model_type) {
  for (const ModelFamily& family : model_families()) {
    if (model_type == family.model_type) return &family;
  }
  return nullptr;
}

// The row of model_type; unknown types (and configs without one) get Llama's row.
inline const ModelFamily& model_family(const std::string& model_type) {
  const ModelFamily* family = find_model_family(model_type);
  return family != nullptr ? *family : model_families()[0];
}

// The model_types of the rows (model_families() or multimodal_families()) for which has(row)
// holds, as "a, b or c", for errors that name the families that have a rule.
template <class Row, class Has>
std::string model_types_where(const std::vector<Row>& rows, Has has) {
  std::vector<const char*> types;
  for (const Row& row : rows) {
    if (has(row)) types.push_back(row.model_type);
  }
  std::string out;
  for (std::size_t i = 0; i < types.size(); ++i) {
    out += std::string(i == 0 ? "" : i + 1 == types.size() ? " or " : ", ") + types[i];
  }
  return out;
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
// row too: Mistral 3 wraps PixtralVisionConfig, whose model_type is "pixtral"). Members default
// to a wrapper with no rules of its own; a row names what it has with the setters below.
struct MultimodalFamily : detail::Chainable<MultimodalFamily> {
  const char* model_type;
  const char* source;  // transformers file(s) under src/transformers/models/
  // text_config's model_type when text_config names none ("": the config names it, or the
  // decoder is the top level).
  const char* text_model_type = "";
  std::optional<MropeFamily> mrope_index;  // get_rope_index's rules (mrope_positions.hpp)
  VisionTower vision = VisionTower::None;

  MultimodalFamily(const char* model_type_, const char* source_)
      : model_type(model_type_), source(source_) {}

  MultimodalFamily with_text_model_type(const char* value) const {
    return with(&MultimodalFamily::text_model_type, value);
  }
  MultimodalFamily with_mrope_index(MropeFamily value) const {
    return with(&MultimodalFamily::mrope_index, value);
  }
  MultimodalFamily with_vision(VisionTower value) const {
    return with(&MultimodalFamily::vision, value);
  }
};

inline const std::vector<MultimodalFamily>& multimodal_families() {
  using V = VisionTower;
  using M = MropeFamily;
  const auto family = [](const char* model_type, const char* source) {
    return MultimodalFamily(model_type, source);
  };
  // One row per wrapper: its model_type, the transformers file(s) it cites, what it has.
  // clang-format off
  static const std::vector<MultimodalFamily> table{
      family("mistral3", "mistral3/configuration_mistral3.py (text_config: mistral)")
          .with_text_model_type("mistral"),
      family("gemma3", "gemma3/configuration_gemma3.py (text_config: gemma3_text)")
          .with_text_model_type("gemma3_text"),
      family("gemma4", "gemma4/configuration_gemma4.py (text_config: gemma4_text)")
          .with_text_model_type("gemma4_text"),
      family("llama4", "llama4/configuration_llama4.py (text_config: llama4_text)")
          .with_text_model_type("llama4_text"),
      family("gemma3n", "gemma3n/configuration_gemma3n.py (text_config: gemma3n_text)")
          .with_text_model_type("gemma3n_text"),
      family("mllama", "mllama/configuration_mllama.py (text_config: mllama_text_model)")
          .with_text_model_type("mllama_text_model"),
      family("granite_docling", "granite_docling/configuration_granite_docling.py (text_config: granite_docling_text)")
          .with_text_model_type("granite_docling_text"),
      family("qwen2_vl", "qwen2_vl/modeling_qwen2_vl.py (get_rope_index, VisionRotaryEmbedding)")
          .with_mrope_index(M::Qwen2VL).with_vision(V::QwenMerge),
      family("qwen2_5_vl", "qwen2_5_vl/modeling_qwen2_5_vl.py (get_rope_index with tokens_per_second)")
          .with_mrope_index(M::Qwen25VL).with_vision(V::QwenMerge),
      family("qwen3_vl", "qwen3_vl/modeling_qwen3_vl.py (get_rope_index, interleaved M-RoPE)")
          .with_mrope_index(M::Qwen3VL).with_vision(V::QwenMerge),
      family("qwen3_vl_moe", "qwen3_vl_moe/modeling_qwen3_vl_moe.py (as qwen3_vl)")
          .with_mrope_index(M::Qwen3VL).with_vision(V::QwenMerge),
      family("qwen3_5", "qwen3_5/modeling_qwen3_5.py (as qwen3_vl)")
          .with_mrope_index(M::Qwen3VL).with_vision(V::QwenMerge),
      family("qwen3_5_moe", "qwen3_5_moe/modeling_qwen3_5_moe.py (as qwen3_vl)")
          .with_mrope_index(M::Qwen3VL).with_vision(V::QwenMerge),
      family("pixtral", "pixtral/modeling_pixtral.py (PixtralRotaryEmbedding)")
          .with_vision(V::Pixtral),
  };
  // clang-format on
  return table;
}

// The model_types whose rows give get_rope_index's rules, "a, b or c".
inline std::string mrope_model_types() {
  return model_types_where(multimodal_families(),
                           [](const MultimodalFamily& row) { return row.mrope_index.has_value(); });
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
