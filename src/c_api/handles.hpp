// The C API's opaque handles: each wraps one immutable posemb value.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "posemb/c/posemb.h"
#include "posemb/model/positions.hpp"
#include "posemb/rotary/fope.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/rope.hpp"

struct posemb_model {
  posemb::ModelPositions model;
  std::optional<std::int64_t> seq_len;  // the RoPE specs of its layers are taken at this length
};

struct posemb_rope {
  posemb::RopeSpec spec;
};

struct posemb_rope_table {
  posemb::RopeTable<float> table;  // float cos/sin: float32, float16 and bfloat16 tensors
};

struct posemb_mrope {
  posemb::MropeSpec spec;
};

// FoPE over its own copies of the coefficients (the Fope maps them: declared first, built last).
struct posemb_fope {
  std::vector<float> sin_coef, cos_coef;  // [n_kv_heads * D_in * D_out]
  posemb::Fope fope;
};
