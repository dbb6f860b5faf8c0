// A layer's RoPE scheme (RopeScheme): its variant's parameters plus what every variant has.
// The variants themselves are traits structs, one per HuggingFace `rope_type`
// (model/rope_variants/*.hpp), registered once in model/rope_variants.hpp; RopeScheme::spec and
// rope_bands dispatch through that registry. Needs no JSON parser: the readers of config.json's
// rope blocks are in rope_registry.hpp, generated from the same registry.
//
// This is HuggingFace's `ROPE_INIT_FUNCTIONS` (modeling_rope_utils.py), typed: the frequency
// functions themselves live in scaled.hpp, one free function per variant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "posemb/error.hpp"
#include "posemb/model/rope_variants.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/rope.hpp"

namespace posemb {

// One RoPE scheme of a layer: the variant's parameters plus what every variant has.
struct RopeScheme {
  std::string rope_type = "default";
  RopeParams params;
  double theta = 10000.0;
  int head_dim = 0;    // the width of the q/k heads it rotates
  int rotary_dim = 0;  // features rotated per head (partial rotary: < head_dim)
  Pairing pairing = Pairing::RotateHalf;
  // M-RoPE (mrope.hpp) when the block has mrope_section: the pairs per axis (t, h, w) and their
  // layout (interleaved with mrope_interleaved: true, else chunked).
  std::optional<MropeSections> mrope_section;
  MropeLayout mrope_layout = MropeLayout::Chunked;

  RotaryDims dims() const { return RotaryDims{head_dim, rotary_dim}; }
  RopeBasis basis() const { return RopeBasis{dims(), theta, pairing}; }

  // The spec at sequence length seq_len (dynamic NTK and LongRoPE depend on it; nullopt: no
  // length known, i.e. max_position_embeddings for dynamic NTK and short_factor for LongRoPE).
  RopeSpec spec(std::optional<std::int64_t> seq_len = std::nullopt) const;

  // The M-RoPE spec at seq_len; throws unless mrope_section is set.
  MropeSpec mrope_spec(std::optional<std::int64_t> seq_len = std::nullopt) const {
    if (!mrope_section) detail::fail("mrope_section", "absent", "expected an M-RoPE scheme");
    return make_mrope_spec(spec(seq_len), *mrope_section, mrope_layout);
  }
};

inline bool operator==(const RopeScheme& a, const RopeScheme& b) {
  return a.rope_type == b.rope_type && a.params == b.params && a.theta == b.theta &&
         a.head_dim == b.head_dim && a.rotary_dim == b.rotary_dim && a.pairing == b.pairing &&
         a.mrope_section == b.mrope_section && a.mrope_layout == b.mrope_layout;
}

inline RopeSpec RopeScheme::spec(std::optional<std::int64_t> seq_len) const {
  return detail::rope_variant(rope_type).spec(params, basis(), seq_len);
}

// What the scheme does to each pair at seq_len.
inline RopeBands rope_bands(const RopeScheme& scheme, const RopeSpec& spec) {
  return detail::rope_variant(scheme.rope_type).bands(scheme.params, scheme.basis(), spec);
}

}  // namespace posemb
