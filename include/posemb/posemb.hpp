// posemb: positional embeddings for transformer models. The umbrella header: everything but
// config.hpp, which needs nlohmann-json (include <posemb/config.hpp> for config.json loading).
#pragma once

// The ground floor: errors, the vocabulary (positions, tensors, layouts, pairing, threads).
#include "posemb/version.hpp"
#include "posemb/error.hpp"
#include "posemb/tensor.hpp"
#include "posemb/isa.hpp"
#include "posemb/streaming_stores.hpp"
#include "posemb/npy.hpp"

// Rotary: frequencies, the kernel, scaled variants, xPos, FoPE, KV-cache helpers, permutation.
#include "posemb/frequencies.hpp"
#include "posemb/rope.hpp"
#include "posemb/scaled.hpp"
#include "posemb/xpos.hpp"
#include "posemb/kv_cache.hpp"
#include "posemb/packed.hpp"
#include "posemb/fope.hpp"
#include "posemb/mrope.hpp"
#include "posemb/mrope_positions.hpp"
#include "posemb/vision_rope.hpp"
#include "posemb/permute.hpp"

// Additive: absolute tables and the attention biases (ALiBi, T5 relative).
#include "posemb/absolute.hpp"
#include "posemb/sinusoidal.hpp"
#include "posemb/learned.hpp"
#include "posemb/alibi.hpp"
#include "posemb/relative_bias.hpp"

// Attention scores tying them together; the fused RoPE + q k^T kernel.
#include "posemb/layer_attention.hpp"
#include "posemb/attention.hpp"
#include "posemb/fused_attention.hpp"
