// A model's positions, layer by layer: the vocabulary the readers (config.json: load.hpp,
// config.hpp) fill and every other part of posemb and its users hand around. Needs no JSON
// parser: a translation unit that only names ModelPositions includes this header alone.
//
// A model's positions are per layer (LayerPositions): the positional kind (RoPE, none, ALiBi,
// learned, sinusoidal, FoPE, T5 relative bias), the RoPE scheme of RoPE layers (RopeScheme,
// rope_scheme.hpp), the layer's q/k head size and its attention-side parameters
// (LayerAttention: softmax scale, sliding window, chunk, query temperature). Models whose layers
// agree are as easy to use as one scheme: ModelPositions::rope_spec().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "posemb/bias/relative_bias.hpp"
#include "posemb/error.hpp"
#include "posemb/model/layer_attention.hpp"
#include "posemb/model/position_kind.hpp"
#include "posemb/model/rope_scheme.hpp"
#include "posemb/rotary/fope.hpp"
#include "posemb/rotary/mrope_positions.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/vision.hpp"
#include "posemb/rotary/xpos.hpp"

namespace posemb {

// The layer types of HuggingFace's `layer_types`: attention types (indexed_attention: DeepSeek
// Sparse Attention, full causal attention over the keys a lightning indexer selects), and the
// layers of hybrid models that have no positions (mamba: Jamba, Granite 4; conv: LFM2;
// cross_attention: Mllama's layers attending to the image without RoPE).
inline const std::vector<std::string>& known_layer_types() {
  static const std::vector<std::string> types = {"full_attention",
                                                 "sliding_attention",
                                                 "chunked_attention",
                                                 "indexed_attention",
                                                 "linear_attention",
                                                 "mamba",
                                                 "conv",
                                                 "cross_attention"};
  return types;
}

inline bool is_known_layer_type(const std::string& type) {
  for (const std::string& known : known_layer_types()) {
    if (type == known) return true;
  }
  return false;
}

// The lightning indexer of an indexed_attention layer (DeepSeek-V3.2's DeepseekV32Indexer,
// modeling_deepseek_v32.py): its own q/k heads of head_dim (index_head_dim) features, of which
// rope.rotary_dim from rotary_offset on are rotated by the layer's frequencies and scaling
// (the same cos/sin as the attention) with the indexer's own pairing.
//   q_index: [batch, seq, index_n_heads, head_dim]; k_index: [batch, seq, 1, head_dim]
// Qwen4-Exp's QSA indexer pools its keys by blocks of key_block tokens (modeling_qwen4_exp.py,
// Qwen4ExpIndexer._select_tokens; llama.cpp's build_qsa_top_k): the key of block b is the mean of
// the raw keys at positions b r .. b r + r - 1 (r = key_block), normed, then rotated at the
// block's first position b r; q rotates at its own position.
//   k_index: [batch, seq / key_block, 1, head_dim]
struct IndexerRope {
  int head_dim = 0;       // index_head_dim
  int rotary_offset = 0;  // 0: the rotated slice first; head_dim - rope.rotary_dim: last
  RopeScheme rope;        // head_dim: the slice's width (rotated whole)
  int key_block = 0;      // 0: a key per token at its position; r > 0: a key per r tokens
};

inline bool operator==(const IndexerRope& a, const IndexerRope& b) {
  return a.head_dim == b.head_dim && a.rotary_offset == b.rotary_offset && a.rope == b.rope &&
         a.key_block == b.key_block;
}

// What one decoder layer does with positions.
struct LayerPositions {
  int index = 0;
  std::string layer_type = "full_attention";  // one of known_layer_types()
  PositionKind kind = PositionKind::Rope;
  int head_dim = 0;                // the width q·kᵀ runs over (0: not given by the config)
  std::optional<RopeScheme> rope;  // kind == Rope
  // Where the rotated features sit in the head: [rotary_offset, rotary_offset + rope->rotary_dim)
  // of head_dim rotate, the rest pass. 0: they lead (GPT-NeoX's partial rotary, GPT-J's
  // rotary_dim); MLA (DeepSeek-V2/V3 and kin): qk_nope_head_dim, the rope slice last.
  //   head: [ nope (rotary_offset) | rope (rotary_dim) | rest ]
  int rotary_offset = 0;
  LayerAttention attention;  // softmax_scale is set on every softmax layer
  // Encoder-decoder models (T5): "encoder" or "decoder"; "" for one stack of layers.
  std::string stack;
  // kind == RelativeBias: the buckets (bidirectional in the encoder, causal in the decoder's
  // self-attention) and the layer whose [num_buckets, heads] table this layer adds (the first
  // layer of its stack, which holds the table; UMT5: every layer its own).
  std::optional<T5Buckets> relative_bias;
  int relative_bias_table_layer = 0;
  std::optional<IndexerRope> indexer;  // indexed_attention layers of a family with an indexer

  // Linear-attention (Qwen3-Next's gated DeltaNet, MiniMax), mamba and conv layers have no
  // softmax over q·kᵀ.
  bool softmax_attention() const {
    return layer_type != "linear_attention" && layer_type != "mamba" && layer_type != "conv";
  }

  // The layer's RoPE spec at seq_len over its whole head: q and k of head_dim features are given
  // whole, [rotary_offset, rotary_offset + rotary_dim) rotate; throws unless kind == Rope.
  //   q, k: [batch, seq, heads, head_dim]
  RopeSpec rope_spec(std::optional<std::int64_t> seq_len = std::nullopt) const {
    if (!rope) detail::fail("kind", to_string(kind), "expected rope for a RoPE spec");
    RopeSpec spec = rope->spec(seq_len);
    if (head_dim > 0) {
      spec.head_dim = head_dim;
      spec.rotary_offset = rotary_offset;
      spec.validate();
    }
    return spec;
  }

  // The indexer's RoPE spec over its rotated slice at seq_len; throws unless the layer has one.
  RopeSpec indexer_rope_spec(std::optional<std::int64_t> seq_len = std::nullopt) const {
    if (!indexer) detail::fail("layer_type", layer_type, "expected a layer with an indexer");
    return indexer->rope.spec(seq_len);
  }
};

// True when two layers do the same (everything but the index).
inline bool same_positions(const LayerPositions& a, const LayerPositions& b) {
  return a.kind == b.kind && a.head_dim == b.head_dim && a.rope == b.rope &&
         a.rotary_offset == b.rotary_offset && a.indexer == b.indexer &&
         a.softmax_attention() == b.softmax_attention() &&
         a.attention.softmax_scale == b.attention.softmax_scale &&
         a.attention.sliding_window == b.attention.sliding_window &&
         a.attention.attention_chunk_size == b.attention.attention_chunk_size &&
         a.attention.query_temperature == b.attention.query_temperature &&
         a.attention.logit_softcap == b.attention.logit_softcap &&
         a.attention.attention_sinks == b.attention.attention_sinks &&
         a.attention.bias_placement == b.attention.bias_placement && a.stack == b.stack &&
         a.relative_bias.has_value() == b.relative_bias.has_value() &&
         (!a.relative_bias || (a.relative_bias->num_buckets == b.relative_bias->num_buckets &&
                               a.relative_bias->max_distance == b.relative_bias->max_distance &&
                               a.relative_bias->bidirectional == b.relative_bias->bidirectional &&
                               a.relative_bias_table_layer == b.relative_bias_table_layer));
}

// The positional scheme of one model, layer by layer, as read from its config.json.
//
// Example:
//   const posemb::ModelPositions model = posemb::load_model_positions("config.json");
//   for (const posemb::LayerPositions& layer : model.layers) {
//     if (layer.kind == posemb::PositionKind::Rope) {
//       const posemb::RopeSpec spec = layer.rope_spec(seq_len);  // rotate q and k of this layer
//     }
//     // layer.attention: softmax scale, sliding window, chunk, query temperature
//   }
struct ModelPositions {
  std::string model_type;  // of the decoder ("" if the config has none)
  int n_heads = 0;         // query heads
  int n_kv_heads = 0;      // key/value heads (grouped-query attention); n_heads if not given
  std::optional<std::int64_t> max_position_embeddings;
  // RoBERTa, XLM-R (families.hpp, LearnedTableRule::from_padding_idx): pad_token_id (default 1);
  // learned position p is row p + padding_idx + 1 of the checkpoint's table.
  std::optional<std::int64_t> padding_idx;
  std::vector<LayerPositions> layers;  // [num_hidden_layers]
  std::optional<XposParams> xpos;      // torchscale-style `xpos_rel_pos: true`
  std::optional<FopeConfig> fope;      // rope_type "fope": pass to make_fope
  // Multimodal models (Qwen2-VL family, Pixtral): get_rope_index's rules from the top-level
  // model_type and vision_config (mrope_positions.hpp), and the vision tower's 2-D RoPE
  // (vision_rope.hpp).
  std::optional<MropeIndexRules> mrope_index;
  std::optional<VisionRope> vision;
  // Keys of the rope blocks and position-related top-level keys the reader did not use, as key
  // paths ("rope_scaling.beta_fast"), sorted; `posemb inspect` lists them, --strict refuses them.
  std::vector<std::string> unused_keys;
  // Rope-block keys the reader did not use that transformers ignores too: the config class lists
  // them in ignore_keys_at_rope_validation (Ministral 3: max_position_embeddings). Not in
  // unused_keys; --strict accepts them.
  std::vector<std::string> unused_keys_transformers_ignores;
  // What transformers would log a warning about while loading the same config (one sentence
  // each), e.g. a llama3 block with low_freq_factor == high_freq_factor.
  std::vector<std::string> warnings;

  // Layer i; throws naming `layer` when out of range.
  const LayerPositions& layer(std::int64_t i) const {
    if (i < 0 || i >= static_cast<std::int64_t>(layers.size())) {
      detail::fail("layer", i,
                   "expected a layer index in [0, " + std::to_string(layers.size()) + ")");
    }
    return layers[static_cast<std::size_t>(i)];
  }

  // True when every layer does the same as layer 0.
  bool layers_alike() const {
    for (const LayerPositions& layer : layers) {
      if (!same_positions(layer, layers.front())) return false;
    }
    return true;
  }

  // The kind of every layer that has positions (NoPE layers aside); None if no layer has any.
  PositionKind kind() const {
    std::optional<PositionKind> kind;
    for (const LayerPositions& layer : layers) {
      if (layer.kind == PositionKind::None) continue;
      if (kind && *kind != layer.kind) {
        detail::fail("kind", to_string(layer.kind),
                     std::string("expected every layer to be ") + to_string(*kind));
      }
      kind = layer.kind;
    }
    return kind.value_or(PositionKind::None);
  }

  // The one RoPE scheme every RoPE layer uses; throws when there is none or the layers differ
  // (then use layers[i].rope).
  const RopeScheme& rope_scheme() const {
    const RopeScheme* scheme = nullptr;
    for (const LayerPositions& layer : layers) {
      if (!layer.rope) continue;
      if (scheme != nullptr && !(*scheme == *layer.rope)) {
        detail::fail("layer", layer.index,
                     "its RoPE scheme differs from layer 0's; expected one scheme for the "
                     "model (use layers[i].rope_spec())");
      }
      if (scheme == nullptr) scheme = &*layer.rope;
    }
    if (scheme == nullptr) detail::fail("kind", to_string(kind()), "expected rope for a RoPE spec");
    return *scheme;
  }

  // The RoPE spec at seq_len of a model with one RoPE scheme (see rope_scheme()) and one head
  // and rotated slice, over the whole head (LayerPositions::rope_spec).
  RopeSpec rope_spec(std::optional<std::int64_t> seq_len = std::nullopt) const {
    rope_scheme();  // one scheme, or the error naming the layer that differs
    const LayerPositions* first = nullptr;
    for (const LayerPositions& layer : layers) {
      if (!layer.rope) continue;
      if (first == nullptr) first = &layer;
      if (layer.head_dim != first->head_dim || layer.rotary_offset != first->rotary_offset) {
        detail::fail("layer", layer.index,
                     "its head or rotated slice differs from layer " +
                         std::to_string(first->index) +
                         "'s; expected one for the model (use layers[i].rope_spec())");
      }
    }
    return first->rope_spec(seq_len);
  }

  // xPos spec at seq_len; throws unless the model uses xPos.
  XposSpec xpos_spec(std::optional<std::int64_t> seq_len = std::nullopt) const {
    if (!xpos) detail::fail("xpos_rel_pos", "absent", "expected an xPos model");
    return XposSpec{rope_spec(seq_len), *xpos};
  }
};

// What the readers accept of a model's size: a hostile config.json or GGUF must not make each
// later per-layer step (specs, plans, printing) loop or allocate for minutes. Deep checkpoints
// have about 128 layers; Llama 3.1 405B has 126 layers of 64 rotary pairs (8064 pairs).
constexpr int max_model_layers = 4096;
constexpr std::int64_t max_model_rope_pairs = std::int64_t(1) << 17;

// Throws naming `layers_key` (the file's layer count, n_layers) when the RoPE layers' rotary
// pairs sum (so far) to more than max_model_rope_pairs.
inline void require_model_rope_pairs(const std::string& layers_key, std::int64_t n_layers,
                                     std::int64_t rope_pairs) {
  if (rope_pairs > max_model_rope_pairs) {
    detail::fail(layers_key, n_layers,
                 "expected the RoPE layers' rotary pairs to sum to at most " +
                     std::to_string(max_model_rope_pairs) + " (" + std::to_string(rope_pairs) +
                     " or more)");
  }
}

}  // namespace posemb
