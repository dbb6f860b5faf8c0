// A HuggingFace model's config.json -> what every layer does with positions (ModelPositions,
// positions.hpp), with nlohmann-json: load.hpp's functions plus model_positions_from_json for a
// config already parsed, and the family table and the rope block readers as before the reader
// was compiled apart. Header-only unless POSEMB_CONFIG_COMPILED is defined (load.hpp says
// how the reader is compiled once); the rules are stated in config/reader.hpp.
// posemb.hpp does not include this header.
//
// T5-family configs (t5, mt5, umt5) list the encoder's num_layers layers, then the decoder's
// num_decoder_layers; their positions are "relative_bias" (relative_bias.hpp).
//
// FoPE (rope_type "fope", Hua et al. 2024) reads its block as the authors' settings:
//   train_length (else max_position_embeddings) = N, floor_ratio (1), ignore_zero (true: drop the
//   clipped frequencies), clip_floor_to_zero (must be true), d_out, sigma (0.3), seed (0),
//   padding_sin (1); see fope.hpp. FoPE rotates whole heads with rotate-half pairs.
#pragma once

#include <nlohmann/json.hpp>

#include "posemb/model/config_options.hpp"
#include "posemb/model/families.hpp"
#include "posemb/model/load.hpp"
#include "posemb/model/positions.hpp"
#include "posemb/model/rope_registry.hpp"

namespace posemb {

// Reads every layer's positions from a parsed config.json.
POSEMB_CONFIG_FUNC ModelPositions model_positions_from_json(const nlohmann::json& config,
                                                            const ConfigOptions& options = {});

}  // namespace posemb

#if !defined(POSEMB_CONFIG_COMPILED)
#include "posemb/model/config/reader.hpp"  // the definitions, header-only
#endif
