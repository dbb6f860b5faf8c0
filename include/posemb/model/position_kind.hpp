// What a layer does with positions: the positional kind of one model layer (LayerPositions,
// positions.hpp). Needs no JSON parser.
#pragma once

namespace posemb {

enum class PositionKind {
  Rope,          // rotary, any rope_type but "fope"
  Fope,          // Fourier position embedding (rope_type "fope")
  Alibi,         // linear attention bias (Press et al. 2021)
  Learned,       // learned absolute position embeddings added to the tokens
  Sinusoidal,    // fixed sinusoidal absolute embeddings added to the tokens
  RelativeBias,  // T5's bucketed relative position bias on the attention scores
  None,          // no positional encoding in this layer (NoPE, linear attention)
};

inline const char* to_string(PositionKind kind) {
  switch (kind) {
    case PositionKind::Rope:
      return "rope";
    case PositionKind::Fope:
      return "fope";
    case PositionKind::Alibi:
      return "alibi";
    case PositionKind::Learned:
      return "learned";
    case PositionKind::Sinusoidal:
      return "sinusoidal";
    case PositionKind::RelativeBias:
      return "relative_bias";
    case PositionKind::None:
      return "none";
  }
  return "unknown";
}

}  // namespace posemb
