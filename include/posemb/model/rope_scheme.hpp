// The RoPE variants as values: each HuggingFace `rope_type` maps to its parameter struct, its
// spec builder (struct -> RopeSpec) and its band classifier (what the variant did to each pair),
// in ONE table, rope_variants(). A layer's scheme (RopeScheme) is the variant's parameters plus
// what every variant has. Needs no JSON parser: the readers of config.json's rope blocks are in
// rope_registry.hpp. Adding a variant is one struct in RopeParams, one row here and its reader
// in rope_registry.hpp (rope_readers(), the same length by construction).
//
// This is HuggingFace's `ROPE_INIT_FUNCTIONS` (modeling_rope_utils.py), typed: the frequency
// functions themselves live in scaled.hpp, one free function per variant.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "posemb/error.hpp"
#include "posemb/rotary/frequencies.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/scaled.hpp"

namespace posemb {

struct DefaultRopeParams {};
struct LinearRopeParams {
  double factor = 1.0;  // s: inv_i / s
};
struct DynamicNtkParams {
  double factor = 1.0;                       // s
  std::int64_t max_position_embeddings = 0;  // L: no change up to L tokens
  // Hunyuan's alpha: the base is theta * alpha^(d / (d - 2)) at every length (static NTK;
  // HunYuanDenseV1RotaryEmbedding gives it rope_type "ntk_alpha", which dynamic_rope_update
  // leaves alone).
  std::optional<double> alpha = std::nullopt;
};

// One alternative per rope_type, in the order of rope_variants().
using RopeParams = std::variant<DefaultRopeParams, LinearRopeParams, DynamicNtkParams, YarnParams,
                                Llama3Params, LongRopeParams, ProportionalParams>;

inline bool operator==(const DefaultRopeParams&, const DefaultRopeParams&) { return true; }
inline bool operator==(const LinearRopeParams& a, const LinearRopeParams& b) {
  return a.factor == b.factor;
}
inline bool operator==(const DynamicNtkParams& a, const DynamicNtkParams& b) {
  return a.factor == b.factor && a.max_position_embeddings == b.max_position_embeddings &&
         a.alpha == b.alpha;
}
inline bool operator==(const YarnParams& a, const YarnParams& b) {
  return a.factor == b.factor &&
         a.original_max_position_embeddings == b.original_max_position_embeddings &&
         a.beta_fast == b.beta_fast && a.beta_slow == b.beta_slow && a.truncate == b.truncate &&
         a.attention_factor == b.attention_factor && a.mscale == b.mscale &&
         a.mscale_all_dim == b.mscale_all_dim;
}
inline bool operator==(const Llama3Params& a, const Llama3Params& b) {
  return a.factor == b.factor && a.low_freq_factor == b.low_freq_factor &&
         a.high_freq_factor == b.high_freq_factor &&
         a.original_max_position_embeddings == b.original_max_position_embeddings;
}
inline bool operator==(const LongRopeParams& a, const LongRopeParams& b) {
  return a.short_factor == b.short_factor && a.long_factor == b.long_factor &&
         a.original_max_position_embeddings == b.original_max_position_embeddings &&
         a.factor == b.factor && a.attention_factor == b.attention_factor &&
         a.short_mscale == b.short_mscale && a.long_mscale == b.long_mscale;
}
inline bool operator==(const ProportionalParams& a, const ProportionalParams& b) {
  return a.partial_rotary_factor == b.partial_rotary_factor && a.factor == b.factor;
}

// What a variant did to one rotary pair, relative to the default base^(-2i/d):
enum class PairBand {
  Kept,          // unchanged
  Interpolated,  // divided by the factor
  Ramp,          // between kept and interpolated (YaRN, Llama 3)
  Ntk,           // dynamic NTK's grown base
  Rescaled,      // LongRoPE's per-pair divisor
  Zero,          // never rotates (proportional RoPE's tail)
};

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

// Bands of every pair and the context L0 they refer to (nullopt: the model's
// max_position_embeddings).
struct RopeBands {
  std::vector<PairBand> pairs;  // [rotary_dim / 2]
  std::optional<std::int64_t> original_context;
};

namespace detail {

// One row of the registry.
struct RopeVariant {
  const char* rope_type;
  // true: partial_rotary_factor chooses the rotating pairs and rotary_dim is the whole head
  // (proportional); false: rotary_dim = int(head_dim * partial_rotary_factor).
  bool rotates_whole_head;
  RopeSpec (*build)(const RopeScheme& scheme, std::optional<std::int64_t> seq_len);
  RopeBands (*bands)(const RopeScheme& scheme, const RopeSpec& spec);
};

inline RopeBands uniform_bands(const RopeSpec& spec, PairBand band) {
  return {std::vector<PairBand>(static_cast<std::size_t>(spec.pairs()), band), std::nullopt};
}

// Pairs whose frequency differs from the default are `changed`, the others kept.
inline RopeBands changed_bands(const RopeScheme& scheme, const RopeSpec& spec, PairBand changed) {
  const Eigen::VectorXd base = default_inv_freq(spec.rotary_dim, scheme.theta);
  RopeBands out;
  for (int i = 0; i < spec.pairs(); ++i) {
    out.pairs.push_back(spec.inv_freq[i] != base[i] ? changed : PairBand::Kept);
  }
  return out;
}

// The registry. Legacy names: "su" (Phi-3's first name for LongRoPE) is read as "longrope".
// One row per RopeParams alternative, in its order.
inline const std::array<RopeVariant, std::variant_size_v<RopeParams>>& rope_variants() {
  static const std::array<RopeVariant, std::variant_size_v<RopeParams>> table{{
      // default: base^(-2i/d) (RoFormer).
      {"default", false,
       [](const RopeScheme& s, std::optional<std::int64_t>) {
         return default_rope_spec(s.dims(), s.theta, s.pairing);
       },
       [](const RopeScheme&, const RopeSpec& spec) {
         return detail::uniform_bands(spec, PairBand::Kept);
       }},
      // linear: position interpolation, inv_i / s.
      {"linear", false,
       [](const RopeScheme& s, std::optional<std::int64_t>) {
         return linear_rope_spec(s.dims(), s.theta, std::get<LinearRopeParams>(s.params).factor,
                                 s.pairing);
       },
       [](const RopeScheme&, const RopeSpec& spec) {
         return detail::uniform_bands(spec, PairBand::Interpolated);
       }},
      // dynamic: NTK base grown with seq_len beyond max_position_embeddings; with Hunyuan's
      // alpha, the static NTK base theta * alpha^(d/(d-2)) at every seq_len.
      {"dynamic", false,
       [](const RopeScheme& s, std::optional<std::int64_t> seq_len) {
         const auto& p = std::get<DynamicNtkParams>(s.params);
         if (p.alpha) return ntk_rope_spec(s.dims(), s.theta, *p.alpha, s.pairing);
         return dynamic_ntk_rope_spec(s.dims(), s.theta, p.factor, p.max_position_embeddings,
                                      seq_len.value_or(p.max_position_embeddings), s.pairing);
       },
       [](const RopeScheme& s, const RopeSpec& spec) {
         RopeBands out = detail::changed_bands(s, spec, PairBand::Ntk);
         out.original_context = std::get<DynamicNtkParams>(s.params).max_position_embeddings;
         return out;
       }},
      // yarn: ramp between kept and interpolated, attention factor on cos/sin.
      {"yarn", false,
       [](const RopeScheme& s, std::optional<std::int64_t>) {
         return yarn_rope_spec(s.dims(), s.theta, std::get<YarnParams>(s.params), s.pairing);
       },
       [](const RopeScheme& s, const RopeSpec& spec) {
         const auto& p = std::get<YarnParams>(s.params);
         const Eigen::VectorXd ramp = yarn_ramp(spec.rotary_dim, s.theta, p);
         RopeBands out{{}, p.original_max_position_embeddings};
         for (Eigen::Index i = 0; i < ramp.size(); ++i) {
           out.pairs.push_back(ramp[i] == 0.0   ? PairBand::Kept
                               : ramp[i] == 1.0 ? PairBand::Interpolated
                                                : PairBand::Ramp);
         }
         return out;
       }},
      // llama3: kept / ramp / interpolated by wavelength.
      {"llama3", false,
       [](const RopeScheme& s, std::optional<std::int64_t>) {
         return llama3_rope_spec(s.dims(), s.theta, std::get<Llama3Params>(s.params), s.pairing);
       },
       [](const RopeScheme& s, const RopeSpec& spec) {
         const auto& p = std::get<Llama3Params>(s.params);
         const Eigen::VectorXd base = default_inv_freq(spec.rotary_dim, s.theta);
         RopeBands out{{}, p.original_max_position_embeddings};
         for (Eigen::Index i = 0; i < base.size(); ++i) {
           const Llama3Band band = llama3_band(base[i], p);
           out.pairs.push_back(band == Llama3Band::Kept   ? PairBand::Kept
                               : band == Llama3Band::Ramp ? PairBand::Ramp
                                                          : PairBand::Interpolated);
         }
         return out;
       }},
      // longrope: searched per-pair divisors, short or long by seq_len.
      {"longrope", false,
       [](const RopeScheme& s, std::optional<std::int64_t> seq_len) {
         return longrope_rope_spec(s.dims(), s.theta, std::get<LongRopeParams>(s.params), seq_len,
                                   s.pairing);
       },
       [](const RopeScheme& s, const RopeSpec& spec) {
         RopeBands out = detail::changed_bands(s, spec, PairBand::Rescaled);
         out.original_context = std::get<LongRopeParams>(s.params).original_max_position_embeddings;
         return out;
       }},
      // proportional: p-RoPE, the first int(p * H // 2) pairs rotate, the rest have frequency 0.
      {"proportional", true,
       [](const RopeScheme& s, std::optional<std::int64_t>) {
         return proportional_rope_spec(s.head_dim, s.theta, std::get<ProportionalParams>(s.params),
                                       s.pairing);
       },
       [](const RopeScheme& s, const RopeSpec& spec) {
         const auto& p = std::get<ProportionalParams>(s.params);
         const int rotating = proportional_rotating_pairs(spec.rotary_dim, p);
         RopeBands out;
         for (int i = 0; i < spec.pairs(); ++i) {
           out.pairs.push_back(i >= rotating     ? PairBand::Zero
                               : p.factor == 1.0 ? PairBand::Kept
                                                 : PairBand::Interpolated);
         }
         return out;
       }},
  }};
  return table;
}

// The registry row of rope_type ("su" is "longrope"), or nullptr.
inline const RopeVariant* find_rope_variant(const std::string& rope_type) {
  const std::string name = rope_type == "su" ? "longrope" : rope_type;
  for (const RopeVariant& variant : rope_variants()) {
    if (name == variant.rope_type) return &variant;
  }
  return nullptr;
}

}  // namespace detail

// "default, linear, ..." for error messages.
inline std::string rope_type_names() {
  std::string names;
  for (const detail::RopeVariant& variant : detail::rope_variants()) {
    names += (names.empty() ? "" : ", ") + std::string(variant.rope_type);
  }
  return names;
}

namespace detail {
inline const RopeVariant& rope_variant(const std::string& rope_type) {
  const RopeVariant* variant = find_rope_variant(rope_type);
  if (variant == nullptr) {
    detail::fail("rope_type", "\"" + rope_type + "\"", "expected one of " + rope_type_names());
  }
  return *variant;
}
}  // namespace detail

inline RopeSpec RopeScheme::spec(std::optional<std::int64_t> seq_len) const {
  return detail::rope_variant(rope_type).build(*this, seq_len);
}

// What the scheme does to each pair at seq_len.
inline RopeBands rope_bands(const RopeScheme& scheme, const RopeSpec& spec) {
  return detail::rope_variant(scheme.rope_type).bands(scheme, spec);
}

}  // namespace posemb
