// What a caller may change in how a config is read (load.hpp, config.hpp). Needs no JSON parser.
#pragma once

#include <optional>

#include "posemb/tensor.hpp"  // Pairing

namespace posemb {

struct ConfigOptions {
  std::optional<Pairing> pairing;  // overrides the pairing implied by model_type
};

}  // namespace posemb
