// What a caller may change in how a config is read (load.hpp, config.hpp). Needs no JSON parser.
#pragma once

#include <optional>

#include "posemb/tensor.hpp"  // Pairing

namespace posemb {

struct ConfigOptions {
  std::optional<Pairing> pairing;  // overrides the pairing implied by model_type

  // An engine's own reading where it departs from transformers' (engine_vllm.hpp: vLLM's model
  // code); the defaults are transformers'.
  // The partial rotary factor when the config gives none, in place of the family's default.
  std::optional<double> partial_rotary_factor{};
  // false: M-RoPE only where the rope block has mrope_section (no family default section).
  bool default_mrope_section = true;
  // The boolean key (default false) whose true pairs the lightning indexer interleaved, else
  // rotate-half, in place of the family's rule (nullptr: the family's rule).
  const char* indexer_interleave_key = nullptr;
};

}  // namespace posemb
