// --weights: the positional tensors of a safetensors checkpoint (checkpoint_weights.hpp).
#include "checkpoint_weights.hpp"

#include <cstdint>
#include <vector>

#include "arguments.hpp"
#include "npy_files.hpp"
#include "posemb/model/checkpoint_positions.hpp"

namespace posemb::tool {
namespace {

// "W: TENSOR [rows, cols]", the tensor named as the errors name it.
std::string tensor_at(const std::string& weights_path, const std::string& tensor,
                      const RowMatrixXf& table) {
  return weights_path + ": " + tensor + " [" + std::to_string(table.rows()) + ", " +
         std::to_string(table.cols()) + "]";
}

// X's values as float64 (float32 or float64 .npy).
std::vector<double> values_as_double(const NpyArray& x) {
  if (x.dtype == "<f8") return x.values<double>();
  const std::vector<float> values = x.values<float>();
  return std::vector<double>(values.begin(), values.end());
}

// The table row of every token: p(b, s) + offset, each checked against the table's rows.
// positions: [batch, seq] or [1, seq]
std::vector<Eigen::Index> table_rows(const PositionMatrix& positions, std::int64_t offset,
                                     const std::string& table_name, Eigen::Index rows,
                                     std::int64_t batch, std::int64_t seq) {
  std::vector<Eigen::Index> out;
  out.reserve(static_cast<std::size_t>(batch * seq));
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t s = 0; s < seq; ++s) {
      const std::int64_t p = positions(positions.rows() == 1 ? 0 : b, s);
      if (p < -offset || p >= rows - offset) {
        throw Error(table_name + ": position = " + std::to_string(p) +
                    ": expected a position in [" + std::to_string(-offset) + ", " +
                    std::to_string(rows - offset) + ") (row = position + " +
                    std::to_string(offset) + ")");
      }
      out.push_back(static_cast<Eigen::Index>(p + offset));
    }
  }
  return out;
}

}  // namespace

void add_weights_option(CLI::App* apply, ApplyOptions& options) {
  CLI::Option* weights = apply->add_option(
      "--weights", options.weights,
      "W: model.safetensors or model.safetensors.index.json: add the checkpoint's learned position "
      "table (gpt2 wpe, opt embed_positions with its offset 2, bert/roberta position_embeddings) "
      "to token embeddings X [batch, seq, d]; Y is float32. A FoPE config: rotate X with the "
      "coefficients transformer.blocks.<--layer>.pos_emb.{sin,cos}_coef (default block 0)");
  for (const char* rotary :
       {"--inverse", "--output-layout", "--pairing", "--fope-sin-coef", "--vision", "--role"}) {
    weights->excludes(apply->get_option(rotary));
  }
}

int apply_checkpoint_table(const ApplyOptions& options, const ModelPositions& model) {
  const PositionKind kind = options.layer ? model.layer(*options.layer).kind : model.kind();
  if (kind != PositionKind::Learned) {
    throw UsageError("--weights: the positions of " + options.config + " are " + to_string(kind) +
                     "; --weights adds the learned position table of a gpt2, opt, bert or roberta "
                     "model");
  }
  const NpyArray x = read_npy_checked(options.input, {"<f4", "<f8"}, {3},
                                      "float32 or float64 [batch, seq, d] (token embeddings)");
  const SafetensorsCheckpoint weights(options.weights);
  const CheckpointPositionTable table =
      learned_position_table(weights, model.model_type, model.padding_idx.value_or(1));
  const std::string table_name = tensor_at(options.weights, table.tensor_name, table.table);
  const std::int64_t batch = x.shape[0], seq = x.shape[1], d = x.shape[2];
  if (d != table.table.cols()) {
    throw Error(table_name + ": expected " + std::to_string(d) + " columns, the width d of " +
                options.input + " " + shape_string(x.shape) + " [batch, seq, d]");
  }
  const TokenPositions positions =
      token_positions(options, TokenGrid::of(x.shape, options.layout()));
  const std::vector<Eigen::Index> rows = table_rows(
      positions.whole(options.positions), table.offset, table_name, table.table.rows(), batch, seq);
  // y[b, s, c] = x[b, s, c] + table[row(b, s), c]
  const std::vector<double> xs = values_as_double(x);
  std::vector<float> y(xs.size());
  for (std::size_t token = 0; token < rows.size(); ++token) {
    for (std::int64_t c = 0; c < d; ++c) {
      const std::size_t k = token * static_cast<std::size_t>(d) + static_cast<std::size_t>(c);
      y[k] = static_cast<float>(xs[k] + static_cast<double>(table.table(rows[token], c)));
    }
  }
  write_npy_atomic(options.output, y.data(), x.shape);
  return 0;
}

RowMatrixXf checkpoint_bias_table(const std::string& weights_path, const ModelPositions& model,
                                  const LayerPositions& layer) {
  int stack_first = layer.index;
  for (const LayerPositions& other : model.layers) {
    if (other.stack == layer.stack && other.index < stack_first) stack_first = other.index;
  }
  const int block = layer.relative_bias_table_layer - stack_first;
  const bool decoder = !layer.relative_bias->bidirectional;
  const SafetensorsCheckpoint weights(weights_path);
  RowMatrixXf table = t5_relative_bias_table(weights, decoder, block);
  const std::int64_t buckets = layer.relative_bias->num_buckets, heads = model.n_heads;
  if (table.rows() != buckets || table.cols() != heads) {
    const std::string name = std::string(decoder ? "decoder" : "encoder") + ".block." +
                             std::to_string(block) + " relative_attention_bias.weight";
    throw Error(tensor_at(weights_path, name, table) + ": expected [num_buckets, heads] = [" +
                std::to_string(buckets) + ", " + std::to_string(heads) + "]");
  }
  return table;
}

}  // namespace posemb::tool
