// The positional tensors of a safetensors checkpoint, found by the names HuggingFace's models
// give them, with or without the model prefix:
//   learned tables [positions, d]:  GPT-2 `wpe.weight`; OPT `decoder.embed_positions.weight`
//                  (row p + 2 holds position p: OPTLearnedPositionalEmbedding's offset);
//                  BERT `embeddings.position_embeddings.weight`; RoBERTa the same, position p
//                  in row p + padding_idx + 1 (padding_idx = pad_token_id, 1 in RoBERTa and
//                  XLM-R: modeling_roberta.py create_position_ids_from_input_ids numbers the
//                  non-padding tokens padding_idx + 1, padding_idx + 2, ...)
//   T5 relative bias [num_buckets, heads]: `{encoder|decoder}.block.{b}.layer.0.SelfAttention.
//                  relative_attention_bias.weight` (block 0 in T5 / mT5, every block in UMT5)
//   rope_freqs:    `rope_freqs.weight` [rotary_dim / 2], Llama-3-style divisors
//   FoPE coefficients [n_kv_heads, D_in, D_out]: `transformer.blocks.{b}.pos_emb.{sin,cos}_coef`
//                  (the FoPE authors' OLMo FourierEmbedding, a `pos_emb` per block; also under
//                  `model.`), else `model.language_model.rotary_emb.{sin,cos}_coef` (Intern-S1-Pro:
//                  one FourierEmbedding for every layer, as vLLM 0.33.0 interns1_pro.py loads it)
// Where each family keeps its learned table is a column of its row (families.hpp,
// learned_table). Missing tensors are posemb::Error naming the checkpoint and every name tried.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "posemb/error.hpp"
#include "posemb/io/safetensors.hpp"
#include "posemb/model/families.hpp"

namespace posemb {

// A learned position table and the row of position 0.
struct CheckpointPositionTable {
  RowMatrixXf table;  // [rows, d]
  std::string tensor_name;
  std::int64_t offset = 0;  // position p is row p + offset
};

// The first of `names` the checkpoint holds, each tried bare and with each prefix.
inline std::string find_checkpoint_tensor(const SafetensorsCheckpoint& weights,
                                          const std::vector<std::string>& prefixes,
                                          const std::vector<std::string>& names,
                                          const std::string& what) {
  std::string tried;
  for (const std::string& name : names) {
    for (const std::string& prefix : prefixes) {
      if (weights.contains(prefix + name)) return prefix + name;
      tried += (tried.empty() ? "" : ", ") + prefix + name;
    }
  }
  throw Error(what, ": no tensor named " + tried).add_context(weights.path());
}

// The learned position table of a model_type whose row names one (gpt2, opt, bert, roberta,
// xlm-roberta); padding_idx: the config's pad_token_id (ModelPositions::padding_idx) for a row
// whose rows start after it.
inline CheckpointPositionTable learned_position_table(const SafetensorsCheckpoint& weights,
                                                      const std::string& model_type,
                                                      std::int64_t padding_idx = 1) {
  const ModelFamily* family = find_model_family(model_type);
  if (family == nullptr || family->learned_table.tensor == nullptr) {
    fail("model_type", "\"" + model_type + "\"",
         "expected " + model_types_where(model_families(), [](const ModelFamily& row) {
           return row.learned_table.tensor != nullptr;
         }));
  }
  const LearnedTableRule& rule = family->learned_table;
  CheckpointPositionTable out;
  out.tensor_name = find_checkpoint_tensor(weights, {rule.prefixes[0], rule.prefixes[1]},
                                           {rule.tensor}, "position table");
  out.offset = rule.offset;
  if (rule.from_padding_idx) {
    if (padding_idx < 0) {
      fail("pad_token_id", padding_idx, "expected >= 0 (RoBERTa's padding_idx)");
    }
    out.offset += padding_idx;
  }
  out.table = weights.matrix(out.tensor_name);
  return out;
}

// T5's relative-bias table of `block` in the encoder or decoder: [num_buckets, heads].
inline RowMatrixXf t5_relative_bias_table(const SafetensorsCheckpoint& weights, bool decoder,
                                          int block = 0) {
  const std::string name = std::string(decoder ? "decoder" : "encoder") + ".block." +
                           std::to_string(block) +
                           ".layer.0.SelfAttention.relative_attention_bias.weight";
  return weights.matrix(
      find_checkpoint_tensor(weights, {"", "transformer."}, {name}, "relative_attention_bias"));
}

// FoPE's coefficient arrays of one transformer block, float32 in C order, for
// fope_with_coefficients (rotary/fope.hpp), which maps them without copying: keep this alive as
// long as the Fope.
struct CheckpointFopeCoefficients {
  std::vector<float> sin_coef, cos_coef;           // [n_kv_heads * D_in * D_out]
  std::vector<std::int64_t> sin_shape, cos_shape;  // [n_kv_heads, D_in, D_out]
  std::string sin_name, cos_name;
};

// The `sin_coef` and `cos_coef` of transformer block `block`, or the model's one pair shared by
// every block; each must be 3-D.
inline CheckpointFopeCoefficients fope_checkpoint_coefficients(const SafetensorsCheckpoint& weights,
                                                               int block) {
  if (block < 0) fail("block", block, "expected >= 0");
  CheckpointFopeCoefficients out;
  const std::string stem = "transformer.blocks." + std::to_string(block) + ".pos_emb.";
  for (const bool sin : {true, false}) {
    const std::string what = sin ? "sin_coef" : "cos_coef";
    const std::string name =
        find_checkpoint_tensor(weights, {"", "model.", "model.language_model."},
                               {stem + what, "rotary_emb." + what}, what);
    const std::vector<std::int64_t>& shape = weights.file_of(name).tensor(name).shape;
    if (shape.size() != 3) {
      throw Error(name, ": " + std::to_string(shape.size()) +
                            " dimensions: expected [n_kv_heads, D_in, D_out]")
          .add_context(weights.path());
    }
    const RowMatrixXf values = weights.matrix(name);  // [n_kv_heads * D_in, D_out]
    (sin ? out.sin_coef : out.cos_coef).assign(values.data(), values.data() + values.size());
    (sin ? out.sin_shape : out.cos_shape) = shape;
    (sin ? out.sin_name : out.cos_name) = name;
  }
  return out;
}

// A checkpoint's rope_freqs divisors, [rotary_dim / 2].
inline std::vector<double> checkpoint_rope_freqs(const SafetensorsCheckpoint& weights) {
  const RowMatrixXf freqs = weights.matrix(
      find_checkpoint_tensor(weights, {"", "model."}, {"rope_freqs.weight"}, "rope_freqs"));
  return std::vector<double>(freqs.data(), freqs.data() + freqs.size());
}

}  // namespace posemb
