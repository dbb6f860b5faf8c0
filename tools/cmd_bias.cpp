// The attention-score biases, for query positions q_offset + i and key positions j:
//   posemb alibi --heads H --q-len N --k-len M [--causal | --symmetric] [--q-offset K]
//                [--max-bias B] [--head-begin A --head-end Z] --output B.npy
//   posemb buckets --num-buckets B --max-distance D (--bidirectional | --causal)
//                  --q-len N --k-len M [--q-offset K] --output IDS.npy
//   posemb bias CONFIG.json (--table T.npy | --weights W [--block B]) --q-len N --k-len M
//               [--q-offset K] [--decoder] --output BIAS.npy
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "checkpoint_weights.hpp"
#include "command.hpp"
#include "npy_files.hpp"
#include "posemb/bias/alibi.hpp"
#include "posemb/bias/relative_bias.hpp"
#include "posemb/model/config.hpp"

namespace posemb::tool {
namespace {

// alibi: B[h, i, j] (alibi.hpp), for all heads or the heads [head_begin, head_end) of one
// tensor-parallel rank; masked entries are -inf.
class AlibiCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* alibi = app.add_subcommand(
        "alibi", "Write the ALiBi bias B: float32 [heads, q_len, k_len]; masked entries are -inf.");
    add_integer(alibi, "--heads", heads_, 1, 1 << 20, "Number of heads")->required();
    query_key_.add_to(alibi, std::int64_t{0});
    CLI::Option* causal =
        alibi->add_flag("--causal", causal_, "-slope * (q - k), -inf where k > q (the default)");
    CLI::Option* symmetric =
        alibi->add_flag("--symmetric", symmetric_, "-slope * |q - k|, nothing masked (encoders)");
    causal->excludes(symmetric);
    add_positive_number(alibi, "--max-bias", max_bias_,
                        "B in the slopes 2^(-B h / n) (MPT's alibi_bias_max)");
    CLI::Option* head_begin =
        add_integer(alibi, "--head-begin", head_begin_, 0, 1 << 20,
                    "First head of a contiguous slice (a tensor-parallel rank)");
    CLI::Option* head_end = add_integer(alibi, "--head-end", head_end_, 1, 1 << 20,
                                        "One past the last head of the slice");
    head_begin->needs(head_end);
    head_end->needs(head_begin);
    alibi->add_option("--output", output_, "B.npy: float32 [head_end - head_begin, q_len, k_len]")
        ->required();
    return alibi;
  }

  int run() override {
    const std::int64_t q_len = query_key_.q_len, k_len = query_key_.k_len;
    // Keys sit at 0 .. k_len - 1: a causal query before position 0 would see no key and get a
    // row of -inf only (softmax NaN). --q-offset is >= 0 (add_integer); the default
    // k_len - q_len is too when the queries are no more than the keys.
    if (!query_key_.q_offset && q_len > k_len) {
      throw UsageError("--q-len = " + std::to_string(q_len) +
                       ": expected at most --k-len = " + std::to_string(k_len) +
                       " (the queries are the last q_len keys), or a --q-offset");
    }
    query_key_.query_offset();
    const int begin = head_begin_.value_or(0), end = head_end_.value_or(heads_);
    if (begin < 0 || begin >= end || end > heads_) {
      throw UsageError("--head-begin, --head-end = " + std::to_string(begin) + ", " +
                       std::to_string(end) +
                       ": expected 0 <= begin < end <= --heads = " + std::to_string(heads_));
    }
    const std::int64_t heads = end - begin;
    query_key_.check_size(heads);
    Eigen::VectorXd slopes;
    try {
      slopes = alibi_slopes(heads_, max_bias_, HeadRange{begin, end});
    } catch (const Error& error) {
      rethrow_as_flag(error, "max_bias", "--max-bias");
    }
    const AlibiBias<float> bias =
        alibi_bias<float>(slopes, query_key_.query_positions(), query_key_.key_positions(),
                          symmetric_ ? AlibiForm::Symmetric : AlibiForm::Causal);
    write_npy_atomic(output_, bias.data(), {heads, q_len, k_len});
    return 0;
  }

 private:
  int heads_ = 0;
  QueryKeyOptions query_key_;
  bool symmetric_ = false, causal_ = false;
  double max_bias_ = 8.0;
  std::optional<int> head_begin_, head_end_;
  std::string output_;
};

// buckets: the T5 bucket ids (relative_bias.hpp), int64 [q_len, k_len].
class BucketsCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* buckets = app.add_subcommand(
        "buckets",
        "Write T5's relative position bucket ids: int64 [q_len, k_len], the bucket of key position "
        "j - query position (q_offset + i), as HuggingFace's _relative_position_bucket in "
        "float32.");
    add_integer(buckets, "--num-buckets", num_buckets_, 2, int_max,
                "relative_attention_num_buckets")
        ->required();
    add_integer(buckets, "--max-distance", max_distance_, 1, int_max,
                "relative_attention_max_distance")
        ->required();
    CLI::Option* bidirectional = buckets->add_flag(
        "--bidirectional", bidirectional_, "Encoder buckets: half for keys after the query");
    CLI::Option* causal =
        buckets->add_flag("--causal", causal_, "Decoder buckets: keys before the query only");
    bidirectional->excludes(causal);
    query_key_.add_to(buckets, int64_min);
    buckets->add_option("--output", output_, "IDS.npy: int64 [q_len, k_len]")->required();
    return buckets;
  }

  int run() override {
    if (!bidirectional_ && !causal_) {
      throw UsageError("buckets: one of --bidirectional or --causal is required");
    }
    query_key_.check_size(std::nullopt);
    const std::int64_t offset = query_key_.query_offset();
    const T5Buckets buckets{num_buckets_, max_distance_, bidirectional_};
    BucketMatrix ids;
    try {
      ids = t5_bucket_matrix(buckets, query_key_.q_len, query_key_.k_len, offset);
    } catch (const Error& error) {
      const std::string message = error.what();
      if (message.find("posemb: num_buckets") == 0)
        rethrow_as_flag(error, "num_buckets", "--num-buckets");
      rethrow_as_flag(error, "max_distance", "--max-distance");
    }
    write_npy_atomic(output_, ids.data(), {query_key_.q_len, query_key_.k_len});
    return 0;
  }

 private:
  int num_buckets_ = 0, max_distance_ = 0;
  bool bidirectional_ = false, causal_ = false;
  QueryKeyOptions query_key_;
  std::string output_;
};

// bias: the T5 relative position bias (relative_bias.hpp) of a T5-family config with the
// checkpoint's table, float32 [heads, q_len, k_len]; the encoder's bidirectional buckets, or
// with --decoder the decoder's causal ones.
class BiasCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* bias = app.add_subcommand(
        "bias",
        "Write the T5 relative position bias of a T5-family config (t5, mt5, umt5) with the "
        "checkpoint's relative_attention_bias table (--table or --weights): float32 [heads, "
        "q_len, k_len], no mask.");
    add_config_argument(bias, config_path_);
    CLI::Option* table = bias->add_option(
        "--table", table_,
        "T.npy: float32 [num_buckets, heads], block 0's relative_attention_bias.weight");
    CLI::Option* weights = bias->add_option(
        "--weights", weights_,
        "W: model.safetensors or model.safetensors.index.json holding the table "
        "({encoder|decoder}.block.B.layer.0.SelfAttention.relative_attention_bias.weight)");
    table->excludes(weights);
    add_integer(bias, "--block", block_, 0, int_max,
                "With --weights: the block of the stack (UMT5: each block has its own table; T5 "
                "and mT5 blocks use block 0's; default 0)")
        ->needs(weights);
    query_key_.add_to(bias, int64_min);
    bias->add_flag("--decoder", decoder_,
                   "The decoder's causal buckets (default: the encoder's bidirectional ones)");
    bias->add_option("--output", output_, "BIAS.npy")->required();
    return bias;
  }

  int run() override {
    if (table_.empty() == weights_.empty()) {
      throw UsageError("bias: one of --table or --weights is required");
    }
    const ModelPositions model = load_model_positions(config_path_);
    const LayerPositions& layer = block_layer(model);
    const T5Buckets buckets = *layer.relative_bias;
    const std::int64_t heads = model.n_heads;
    query_key_.check_size(heads);
    query_key_.query_offset();
    const RowMatrixXf table = weights_.empty() ? npy_table(buckets, heads)
                                               : checkpoint_bias_table(weights_, model, layer);
    const T5BiasTable<float> bias_table(buckets, table.data(), table.rows(), table.cols());
    const RelativeBias<float> bias =
        t5_bias(bias_table, query_key_.query_positions(), query_key_.key_positions());
    write_npy_atomic(output_, bias.data(), {heads, query_key_.q_len, query_key_.k_len});
    return 0;
  }

 private:
  // --table T.npy: float32 [num_buckets, heads].
  RowMatrixXf npy_table(const T5Buckets& buckets, std::int64_t heads) const {
    const std::string expected = "float32 [num_buckets, heads] = [" +
                                 std::to_string(buckets.num_buckets) + ", " +
                                 std::to_string(heads) + "]";
    const NpyArray table = read_npy_checked(table_, {"<f4"}, {2}, expected);
    if (table.shape[0] != buckets.num_buckets || table.shape[1] != heads) {
      throw Error(table_ + ": shape = " + shape_string(table.shape) + ": expected " + expected);
    }
    const std::vector<float> values = table.values<float>();
    return Eigen::Map<const RowMatrixXf>(values.data(), table.shape[0], table.shape[1]);
  }

  // Block --block of the stack --decoder names.
  const LayerPositions& block_layer(const ModelPositions& model) const {
    const LayerPositions& first = stack_layer(model);
    std::int64_t blocks = 0;
    for (const LayerPositions& layer : model.layers) blocks += layer.stack == first.stack ? 1 : 0;
    if (block_ >= blocks) {
      throw UsageError("--block = " + std::to_string(block_) + ": expected a block in [0, " +
                       std::to_string(blocks) + ") of " + config_path_ + "'s " +
                       (decoder_ ? "decoder" : "encoder"));
    }
    return model.layers.at(static_cast<std::size_t>(first.index + block_));
  }

  // The first layer of the stack --decoder names whose relative bias has its buckets.
  const LayerPositions& stack_layer(const ModelPositions& model) const {
    for (const LayerPositions& candidate : model.layers) {
      if (candidate.relative_bias && candidate.relative_bias->bidirectional == !decoder_) {
        return candidate;
      }
    }
    const std::string stack = decoder_ ? "decoder" : "encoder";
    const bool t5 = !model.layers.empty() && model.layers[0].relative_bias;
    throw Error(config_path_ + (t5 ? ": the model has no " + stack +
                                         " (is_encoder_decoder is "
                                         "false); " +
                                         (decoder_ ? "drop" : "pass") + " --decoder"
                                   : std::string(": the model's positions are ") +
                                         to_string(model.layers.at(0).kind) +
                                         ", not a T5 relative position bias"));
  }

  std::string config_path_, table_, weights_, output_;
  int block_ = 0;
  QueryKeyOptions query_key_;
  bool decoder_ = false;
};

}  // namespace

std::unique_ptr<Command> alibi_command() { return std::make_unique<AlibiCommand>(); }
std::unique_ptr<Command> buckets_command() { return std::make_unique<BucketsCommand>(); }
std::unique_ptr<Command> bias_command() { return std::make_unique<BiasCommand>(); }

}  // namespace posemb::tool
