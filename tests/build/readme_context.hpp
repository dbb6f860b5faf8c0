// The names the C++ blocks of README.md and docs/*.md use without declaring them, so that each
// block compiles on its own (the readme.* and docs.* tests, readme_block.cmake): a block is its
// leading #include lines, then the rest as the body of a function, after this header. A name a
// block declares itself hides the one here; a block that uses a new undeclared name adds it here.
#pragma once

#include <cstdint>
#include <vector>

#include <posemb/model/config.hpp>
#include <posemb/posemb.hpp>

// Activations: [batch, seq, heads, head_dim] (k_cache: [batch, heads, max_seq, head_dim]).
inline float* q_data = nullptr;
inline Eigen::Index seq = 1;
inline posemb::Tensor4<float> q, k, k_proj, k_cache, x_packed;

// Positions: a KV cache's current length, per-token positions [batch, seq], packed documents.
inline std::int64_t cache_length = 0;
inline posemb::PositionMatrix positions;
inline std::vector<std::int64_t> cu_seqlens = {0, 1};
inline std::int64_t tokens = 1;

// Rotary sources.
inline const posemb::RopeSpec spec = posemb::default_rope_spec(128, 10000.0);
inline const posemb::RopeTable<float> table(spec, 0, 1);
inline const posemb::XposSpec xpos_spec{spec, posemb::XposParams{}};
