// The checked plan of one attention_scores call: the options validated once for `heads` query
// heads of width head_dim, and what the kernel asks per entry. Per entry, in this order:
//   s = t(qpos_i) · <q_i', k_j'>                       q', k' rotated; t the query temperature
//   s = scale · (s + bias)   (BiasPlacement::BeforeScale, Falcon)
//   s = scale · s            (otherwise)
//   s = cap · tanh(s / cap)  (layer.logit_softcap, Gemma 2)
//   s = s + bias             (BiasPlacement::AfterScale, MPT, BLOOM, T5)
//   s = -inf where masked    (attention/mask.hpp)
// and with softmax the row's probabilities, the head's sink logit (layer.attention_sinks) in
// the denominator (attention/softmax.hpp).
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "posemb/attention/mask.hpp"
#include "posemb/attention/options.hpp"
#include "posemb/error.hpp"

namespace posemb {
namespace detail {

// Throws unless the bias fits `heads` query heads: one ALiBi slope (finite, > 0) or one T5
// table column per head.
inline void check_score_bias(const ScoreBias& bias, Eigen::Index heads) {
  if (const auto* alibi = std::get_if<AlibiSlopes>(&bias)) {
    if (alibi->slopes.size() != heads) {
      fail("AlibiSlopes.slopes.size()", alibi->slopes.size(),
           "expected one slope per query head = " + std::to_string(heads));
    }
    for (Eigen::Index h = 0; h < heads; ++h) {
      require_positive_finite("AlibiSlopes.slopes[" + std::to_string(h) + "]", alibi->slopes[h]);
    }
  } else if (const auto* t5 = std::get_if<T5BiasTable<float>>(&bias)) {
    if (t5->heads() != heads) {
      fail("T5BiasTable heads", t5->heads(),
           "expected one table column per query head = " + std::to_string(heads));
    }
  }
}

// Throws unless there is one finite sink logit per query head exactly when the layer has sinks.
inline void check_sink_logits(const Eigen::VectorXd& sinks, bool attention_sinks,
                              Eigen::Index heads) {
  if (!attention_sinks) {
    if (sinks.size() != 0)
      fail("sink_logits.size()", sinks.size(), "expected none unless layer.attention_sinks");
    return;
  }
  if (sinks.size() != heads) {
    fail("sink_logits.size()", sinks.size(),
         "expected one sink logit per query head = " + std::to_string(heads) +
             " (layer.attention_sinks)");
  }
  for (Eigen::Index h = 0; h < heads; ++h) {
    if (!std::isfinite(sinks[h]))
      fail("sink_logits[" + std::to_string(h) + "]", sinks[h], "expected a finite number");
  }
}

// Throws unless the layer's parameters are usable: positive window and chunk, a positive finite
// softmax scale and softcap, a usable query temperature, a known bias placement.
inline void check_layer_attention(const LayerAttention& layer) {
  if (layer.softmax_scale) require_positive_finite("layer.softmax_scale", *layer.softmax_scale);
  if (layer.sliding_window) require_positive("layer.sliding_window", *layer.sliding_window);
  if (layer.attention_chunk_size)
    require_positive("layer.attention_chunk_size", *layer.attention_chunk_size);
  if (layer.logit_softcap) require_positive_finite("layer.logit_softcap", *layer.logit_softcap);
  if (layer.query_temperature) {
    require_positive_finite("layer.query_temperature.floor_scale",
                            layer.query_temperature->floor_scale);
    if (!std::isfinite(layer.query_temperature->attn_scale)) {
      fail("layer.query_temperature.attn_scale", layer.query_temperature->attn_scale,
           "expected a finite number");
    }
  }
  if (layer.bias_placement != BiasPlacement::AfterScale &&
      layer.bias_placement != BiasPlacement::BeforeScale) {
    fail("layer.bias_placement", static_cast<int>(layer.bias_placement),
         "expected BiasPlacement::AfterScale or BiasPlacement::BeforeScale");
  }
}

class ScorePlan {
 public:
  // The rotation is checked by the kernel's RowRotation, against the positions.
  ScorePlan(const ScoreOptions& options, Eigen::Index heads, Eigen::Index head_dim)
      : options_(options), mask_(options.layer, options.causal) {
    check_score_bias(options.bias, heads);
    check_sink_logits(options.sink_logits, options.layer.attention_sinks, heads);
    check_layer_attention(options.layer);
    scale_ = options.layer.softmax_scale.value_or(1.0 / std::sqrt(static_cast<double>(head_dim)));
    alibi_ = std::get_if<AlibiSlopes>(&options.bias);
    t5_ = std::get_if<T5BiasTable<float>>(&options.bias);
  }

  const ScoreOptions& options() const { return options_; }
  const ScoreMask& mask() const { return mask_; }
  double scale() const { return scale_; }

  // The factor q at this position is multiplied by: the query temperature, or 1.
  double temperature(std::int64_t q_position) const {
    const auto& t = options_.layer.query_temperature;
    return t ? t->factor(static_cast<double>(q_position)) : 1.0;
  }

  const AlibiSlopes* alibi() const { return alibi_; }
  const T5BiasTable<float>* t5() const { return t5_; }
  bool biased() const { return alibi_ || t5_; }
  // Whether the bias joins the scaled product before the softcap (BeforeScale), and the factor
  // it is multiplied by there: the scale (so the scores see slope · scale), else 1.
  bool bias_before_cap() const {
    return options_.layer.bias_placement == BiasPlacement::BeforeScale;
  }
  double bias_factor() const { return bias_before_cap() ? scale_ : 1.0; }

  const std::optional<double>& softcap() const { return options_.layer.logit_softcap; }
  // Whether entries need more than the scaled product (bias or softcap) where nothing is masked.
  bool finishes_entries() const { return biased() || softcap().has_value(); }

  bool softmax() const { return options_.softmax; }
  bool sinks() const { return options_.layer.attention_sinks; }
  double sink_logit(Eigen::Index h) const { return options_.sink_logits[h]; }

  // Whether anything depends on positions beyond the rotation: masks, bias, temperature, softmax.
  bool by_position() const {
    return mask_.masks() || biased() || options_.layer.query_temperature || options_.softmax;
  }

 private:
  const ScoreOptions& options_;
  ScoreMask mask_;
  double scale_ = 1.0;
  const AlibiSlopes* alibi_ = nullptr;
  const T5BiasTable<float>* t5_ = nullptr;
};

}  // namespace detail
}  // namespace posemb
