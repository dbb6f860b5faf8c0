// posemb: positional embeddings for transformer models. The umbrella header: everything but
// config.hpp, which needs nlohmann-json (include <posemb/model/config.hpp> for config.json
// loading).
#pragma once

// The ground floor: errors, the vocabulary (positions, tensors, layouts, pairing, threads), the
// seeded normal draws.
#include "posemb/version.hpp"
#include "posemb/error.hpp"
#include "posemb/tensor.hpp"
#include "posemb/random.hpp"

// The machine: instruction-set levels, streaming stores and the cache they are sized by.
#include "posemb/machine/isa.hpp"
#include "posemb/machine/streaming_stores.hpp"
#include "posemb/io/npy.hpp"

// Rotary: frequencies, the kernel, scaled variants, xPos, FoPE, KV-cache helpers, permutation.
#include "posemb/frequencies.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/scaled.hpp"
#include "posemb/rotary/xpos.hpp"
#include "posemb/kv/rerotate.hpp"
#include "posemb/rotary/packed.hpp"
#include "posemb/rotary/fope.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/mrope_positions.hpp"
#include "posemb/rotary/vision.hpp"
#include "posemb/rotary/permute.hpp"
#include "posemb/kv/append.hpp"

// Additive: absolute tables and the attention biases (ALiBi, T5 relative).
#include "posemb/absolute/absolute.hpp"
#include "posemb/absolute/sinusoidal.hpp"
#include "posemb/absolute/learned.hpp"
#include "posemb/bias/alibi.hpp"
#include "posemb/bias/relative_bias.hpp"

// Attention scores tying them together; the fused RoPE + q k^T kernel.
#include "posemb/model/layer_attention.hpp"
#include "posemb/attention/scores.hpp"
#include "posemb/attention/fused.hpp"
