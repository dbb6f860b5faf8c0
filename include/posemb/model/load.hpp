// Loading a model's positions from its HuggingFace config.json: the declarations, which need no
// JSON parser. The vocabulary is positions.hpp (ModelPositions, LayerPositions), rope_scheme.hpp
// (RopeScheme) and layer_attention.hpp (LayerAttention).
//
// Two ways to get the reader (config/reader.hpp, on nlohmann-json), as {fmt} offers:
//   header-only (default): this header brings the reader, inline, into every translation unit
//     that includes it (about ten seconds of compile each: nlohmann-json's parser);
//   compiled: define POSEMB_CONFIG_COMPILED (the CMake target posemb::config does) and the
//     reader is compiled once, in src/config.cpp (the posemb::config library); this header then
//     declares it and needs no nlohmann-json.
// Either way a translation unit that only names ModelPositions includes positions.hpp alone.
//
// Example:
//   const posemb::ModelPositions model = posemb::load_model_positions("config.json");
//   for (const posemb::LayerPositions& layer : model.layers) {
//     if (layer.kind == posemb::PositionKind::Rope) {
//       const posemb::RopeSpec spec = layer.rope_spec(seq_len);  // rotate q and k of this layer
//     }
//     // layer.attention: softmax scale, sliding window, chunk, query temperature
//   }
#pragma once

#include <string>

#include "posemb/model/config_options.hpp"
#include "posemb/model/positions.hpp"

#if defined(POSEMB_CONFIG_COMPILED)
#define POSEMB_CONFIG_FUNC
#else
#define POSEMB_CONFIG_FUNC inline
#endif

namespace posemb {

// Reads every layer's positions from a config.json file; errors name the file, including a
// file that cannot be opened or read (missing, a directory, no permission) or is empty.
POSEMB_CONFIG_FUNC ModelPositions load_model_positions(const std::string& path,
                                                       const ConfigOptions& options = {});

// Reads every layer's positions from config.json's text (malformed JSON: posemb::Error).
POSEMB_CONFIG_FUNC ModelPositions parse_model_positions(const std::string& json_text,
                                                        const ConfigOptions& options = {});

}  // namespace posemb

#if !defined(POSEMB_CONFIG_COMPILED)
#include "posemb/model/config.hpp"  // the reader, header-only
#endif
