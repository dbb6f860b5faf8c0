// --weights MODEL.safetensors | model.safetensors.index.json (checkpoint_weights.cpp): the
// positional tensors a checkpoint holds, for apply (a learned position table added to token
// embeddings) and bias (T5's relative-bias table). posemb/model/checkpoint_positions.hpp finds
// the tensors by their HuggingFace names, with and without the model prefix. A malformed file or
// a missing tensor is a posemb::Error naming the file and the tensor (exit status 1).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "apply_inputs.hpp"
#include "posemb/model/positions.hpp"
#include "posemb/io/safetensors.hpp"

namespace posemb::tool {

// apply's --weights option, excluding the rotary-only options.
void add_weights_option(CLI::App* apply, ApplyOptions& options);

// apply CONFIG --weights W --input X.npy --output Y.npy [--positions P | --offset K]:
// Y[b, s, :] = X[b, s, :] + table[p(b, s) + offset, :] for X float32 or float64 [batch, seq, d]
// (computed in float64, Y float32). The table and its offset: GPT-2 wpe (0), OPT
// embed_positions (2), BERT position_embeddings (0), RoBERTa (padding_idx + 1 = 2).
int apply_checkpoint_table(const ApplyOptions& options, const ModelPositions& model);

// bias CONFIG --weights W [--decoder] [--block B]: the [num_buckets, heads] table block B of the
// stack uses: block 0's in T5 and mT5, block B's own in UMT5.
RowMatrixXf checkpoint_bias_table(const std::string& weights_path, const ModelPositions& model,
                                  const LayerPositions& layer);

}  // namespace posemb::tool
