// The options of attention_scores: a rotation of q and k, one additive bias, the layer's
// parameters (model/layer_attention.hpp), the causal mask and the softmax. Rotation and bias are
// independent: RoPE with ALiBi, RoPE with T5's bias, or either alone are all one call.
#pragma once

#include <Eigen/Core>
#include <variant>

#include "posemb/bias/alibi.hpp"
#include "posemb/bias/relative_bias.hpp"
#include "posemb/model/layer_attention.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// q and k as given (also for inputs that already carry sinusoidal or learned absolute tables:
// those are added to the token embeddings before the q / k projections).
struct NoRotation {};

// The rotation of q and k before the product: none, RoPE with cos/sin formed in the call from a
// RopeSpec (held by value), or RoPE read from a RopeTable (held by pointer: the table must
// outlive the call; its arithmetic type must be q's, float for float / half / bfloat16 and
// double for double).
using ScoreRotation =
    std::variant<NoRotation, RopeSpec, const RopeTable<float>*, const RopeTable<double>*,
                 const RopeTable<Eigen::half>*, const RopeTable<Eigen::bfloat16>*>;

// No additive bias.
struct NoBias {};

// ALiBi (bias/alibi.hpp): bias[h, i, j] = -slopes[h] · |qpos_i - kpos_j|, one slope per query
// head ([1] for the one-head form). With causal = true the unmasked entries are Press et al.'s
// causal bias; without, the symmetric (encoder) form. layer.bias_placement says whether the
// bias enters before or after the softmax scale.
struct AlibiSlopes {
  Eigen::VectorXd slopes;  // [heads]
};

// The additive bias: none, ALiBi, or T5's bucketed relative bias (bias/relative_bias.hpp):
// bias[h, i, j] = table[bucket(kpos_j - qpos_i), h], one table column per query head (one head,
// table.head(h), for the one-head form). T5 applies no 1 / sqrt(head_dim): set
// layer.softmax_scale = 1.
using ScoreBias = std::variant<NoBias, AlibiSlopes, T5BiasTable<float>>;

// An absent optional or an empty member means "not used"; nothing is encoded as a special number.
//   rotation     applied to q and k in their storage type, as a model rotates them
//   bias         added to the logits (layer.bias_placement: before or after the scale)
//   sink_logits  [heads]: one per query head when layer.attention_sinks, empty otherwise
//   layer        softmax scale, sliding window, chunk, query temperature, softcap, sinks
//   causal       mask entries where kpos > qpos
//   softmax      return softmax probabilities per row instead of logits
// Example (RoPE and ALiBi together, causal probabilities):
//   posemb::ScoreOptions options;
//   options.rotation = posemb::default_rope_spec(64);
//   options.bias = posemb::AlibiSlopes{posemb::alibi_slopes(8)};
//   options.causal = true;
//   options.softmax = true;
struct ScoreOptions {
  ScoreRotation rotation;
  ScoreBias bias;
  Eigen::VectorXd sink_logits;
  LayerAttention layer;
  bool causal = false;
  bool softmax = false;
};

// Scores of one head: [seq_q, seq_k].
template <class C>
using ScoreMatrix = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace posemb
