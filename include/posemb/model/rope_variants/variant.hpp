// What a RoPE variant is: the facets every variant's traits struct holds, the values they take,
// and the check that a struct has them all (check_rope_variant<V>(), run on every registered
// variant by model/rope_variants.hpp). A variant is one struct in this folder; adding one is that
// struct and one line in rope_variant_list (model/rope_variants.hpp). DESIGN.md walks through it.
// A variant derives from RopeVariantDefaults and states only the facets that differ from it
// (starred below); the others have no default, so each is a decision of the variant's.
//
//   facet                      what it holds                              used by
//   Params, name               the parameters, config.json's rope_type    RopeParams, the readers
// * legacy_name                an older rope_type read as name, or nullptr  find_rope_variant
// * rotates_whole_head         rotary_dim = head_dim (partial rotary        model/config/
//                              picks the pairs instead)                   rope_block.hpp
// * odd_rotary_dim_rounds_up   an odd int(head_dim * p) is rotated as
//                              d + 1 at theta^((d + 1) / d), as HF's
//                              default frequencies do
//   read(context)              config.json's block -> Params (a template:   model/rope_registry.hpp
//                              the context holds the JSON reader)
//   factor(p),                 its scaling factor (nullopt: none); whether  rope_block.hpp, reports
// * transformers_checks_factor transformers' validator warns below 1
//   spec(p, basis, seq_len)    the exact frequencies and attention factor  RopeScheme::spec
//   bands(p, basis, spec)      what it did to each pair                    rope_bands
//   hf_float32(p, basis, len)  HF's float32 arithmetic op by op, OR        hf_float32_scheme.hpp
//   no_hf_float32              the reason it has none (refused, named)
//   float32_steps(p, seq_len)  its float32 steps for the tolerance K       rotation_tolerance
//   gguf_scaling_type,         how a GGUF spells it (llama.cpp's            model/gguf.hpp
//   gguf_runs(key)             rope.scaling.type; which GGUF layers
//                              llama.cpp runs as it), OR
//   no_gguf                    the reason no GGUF is read as it
// * diff_note(context, field)  where llama.cpp departs from transformers    model/diff.hpp
//                              on it ("" where it does not)
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "posemb/frequencies.hpp"
#include "posemb/rotary/hf_float32.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// What a variant did to one rotary pair, relative to the default base^(-2i/d):
enum class PairBand {
  Kept,          // unchanged
  Interpolated,  // divided by the factor
  Ramp,          // between kept and interpolated (YaRN, Llama 3)
  Ntk,           // dynamic NTK's grown base
  Rescaled,      // LongRoPE's per-pair divisor
  Zero,          // never rotates (proportional RoPE's tail)
};

// Bands of every pair and the context L0 they refer to (nullopt: the model's
// max_position_embeddings).
struct RopeBands {
  std::vector<PairBand> pairs;  // [rotary_dim / 2]
  std::optional<std::int64_t> original_context;
};

// What every variant has beside its parameters (RopeScheme's other fields).
struct RopeBasis {
  RotaryDims dims;  // head_dim and rotary_dim
  double theta = 10000.0;
  Pairing pairing = Pairing::RotateHalf;
};

// A GGUF layer as llama.cpp runs it (model/gguf.hpp): its rope.scaling.type, the rope tensor of
// per-pair divisors llama_model::get_rope_factors gives it ("" when none) and its frequency scale
// (1 / factor).
struct GgufRopeKey {
  std::string scaling_type;  // none, linear, yarn, longrope
  std::string factors;       // "", "rope_freqs.weight", "rope_factors_{long,short}.weight"
  double freq_scale = 1.0;
};

// A layer of `posemb diff` (model/diff.hpp): the GGUF's variant as llama.cpp runs it, the
// config's as transformers does ("" on either side without RoPE), and the context sizes
// llama.cpp chose factors by.
struct RopeDiffContext {
  std::string gguf_type;
  std::string config_type;
  std::int64_t n_ctx_seq = 0;   // llama.cpp's (padded) context per sequence
  std::int64_t n_ctx_orig = 0;  // the GGUF's rope.scaling.original_context_length
};

// What most variants are; a variant derives from it and states only what differs.
struct RopeVariantDefaults {
  static constexpr const char* legacy_name = nullptr;      // no older rope_type
  static constexpr bool rotates_whole_head = false;        // rotary_dim = int(head_dim * p)
  static constexpr bool odd_rotary_dim_rounds_up = false;  // an odd rotary_dim is refused
  static constexpr bool transformers_checks_factor = false;
  // llama.cpp runs it as transformers does: no note.
  static std::string diff_note(const RopeDiffContext&, const std::string&) { return ""; }
};

namespace detail {

inline RopeBands uniform_bands(const RopeSpec& spec, PairBand band) {
  return {std::vector<PairBand>(static_cast<std::size_t>(spec.pairs()), band), std::nullopt};
}

// Pairs whose frequency differs from the default are `changed`, the others kept.
inline RopeBands changed_bands(const RopeBasis& basis, const RopeSpec& spec, PairBand changed) {
  const Eigen::VectorXd base = default_inv_freq(spec.rotary_dim, basis.theta);
  RopeBands out;
  for (int i = 0; i < spec.pairs(); ++i) {
    out.pairs.push_back(spec.inv_freq[i] != base[i] ? changed : PairBand::Kept);
  }
  return out;
}

// The facets, detected one by one so that a missing one is named by its own static_assert.
// The reader is called with an incomplete context type: only its declaration is looked at.
struct RopeReadContext;

// Op<V> if it is well formed, else `absent` (the detection idiom, std::experimental::is_detected).
struct absent {};
template <template <class> class Op, class V, class = void>
struct detected {
  using type = absent;
};
template <template <class> class Op, class V>
struct detected<Op, V, std::void_t<Op<V>>> {
  using type = Op<V>;
};
// Whether Op<V> is well formed and, when Expected is given, is Expected.
template <template <class> class Op, class V, class Expected = void>
inline constexpr bool has_facet =
    std::is_void_v<Expected> ? !std::is_same_v<typename detected<Op, V>::type, absent>
                             : std::is_same_v<typename detected<Op, V>::type, Expected>;

template <class V>
using params_t = typename V::Params;
template <class V>
using p_ref = const params_t<V>&;
using length_t = std::optional<std::int64_t>;

template <class V>
using name_facet = std::enable_if_t<std::is_convertible_v<decltype(V::name), const char*> &&
                                    std::is_convertible_v<decltype(V::legacy_name), const char*>>;
template <class V>
using rotary_dim_facet =
    std::enable_if_t<std::is_same_v<decltype(V::rotates_whole_head), const bool> &&
                     std::is_same_v<decltype(V::odd_rotary_dim_rounds_up), const bool>>;
template <class V>
using read_facet = std::enable_if_t<
    std::is_same_v<decltype(V::read(std::declval<const RopeReadContext&>())), params_t<V>>>;
template <class V>
using factor_facet =
    std::enable_if_t<std::is_same_v<decltype(V::transformers_checks_factor), const bool>,
                     decltype(V::factor(std::declval<p_ref<V>>()))>;
template <class V>
using spec_facet = decltype(V::spec(std::declval<p_ref<V>>(), std::declval<const RopeBasis&>(),
                                    std::declval<length_t>()));
template <class V>
using bands_facet = decltype(V::bands(std::declval<p_ref<V>>(), std::declval<const RopeBasis&>(),
                                      std::declval<const RopeSpec&>()));
template <class V>
using hf_float32_facet = decltype(V::hf_float32(
    std::declval<p_ref<V>>(), std::declval<const RopeBasis&>(), std::declval<length_t>()));
template <class V>
using no_hf_float32_facet =
    std::enable_if_t<std::is_convertible_v<decltype(V::no_hf_float32), const char*>>;
template <class V>
using float32_steps_facet =
    decltype(V::float32_steps(std::declval<p_ref<V>>(), std::declval<length_t>()));
template <class V>
using gguf_facet =
    std::enable_if_t<std::is_convertible_v<decltype(V::gguf_scaling_type), const char*>,
                     decltype(V::gguf_runs(std::declval<const GgufRopeKey&>()))>;
template <class V>
using no_gguf_facet = std::enable_if_t<std::is_convertible_v<decltype(V::no_gguf), const char*>>;
template <class V>
using diff_note_facet = decltype(V::diff_note(std::declval<const RopeDiffContext&>(),
                                              std::declval<const std::string&>()));

template <class V>
inline constexpr bool has_params = has_facet<params_t, V>;
template <class V>
inline constexpr bool has_names = has_facet<name_facet, V>;
template <class V>
inline constexpr bool has_rotary_dim_rules = has_facet<rotary_dim_facet, V>;
template <class V>
inline constexpr bool has_reader = has_facet<read_facet, V>;
template <class V>
inline constexpr bool has_factor = has_facet<factor_facet, V, std::optional<double>>;
template <class V>
inline constexpr bool has_spec = has_facet<spec_facet, V, RopeSpec>;
template <class V>
inline constexpr bool has_bands = has_facet<bands_facet, V, RopeBands>;
template <class V>
inline constexpr bool has_hf_float32 = has_facet<hf_float32_facet, V, HfFloat32Rope>;
template <class V>
inline constexpr bool has_no_hf_float32 = has_facet<no_hf_float32_facet, V>;
template <class V>
inline constexpr bool has_float32_steps = has_facet<float32_steps_facet, V, double>;
template <class V>
inline constexpr bool has_gguf = has_facet<gguf_facet, V, bool>;
template <class V>
inline constexpr bool has_no_gguf = has_facet<no_gguf_facet, V>;
template <class V>
inline constexpr bool has_diff_note = has_facet<diff_note_facet, V, std::string>;

// Every facet, or the stated reason for its absence (exactly one of the two).
template <class V>
inline constexpr bool implements_every_facet =
    has_params<V>&& has_names<V>&& has_rotary_dim_rules<V>&& has_reader<V>&& has_factor<V>&&
        has_spec<V>&& has_bands<V> &&
    (has_hf_float32<V> != has_no_hf_float32<V>)&&has_float32_steps<V> &&
    (has_gguf<V> != has_no_gguf<V>)&&has_diff_note<V>;

// The same, one facet at a time, each with its own message.
template <class V>
constexpr bool check_rope_variant() {
  static_assert(has_params<V>, "posemb: a rope variant has `using Params = ...`");
  static_assert(has_names<V>,
                "posemb: a rope variant has `static constexpr const char* name` and `legacy_name`");
  static_assert(has_rotary_dim_rules<V>,
                "posemb: a rope variant has `static constexpr bool rotates_whole_head` and "
                "`odd_rotary_dim_rounds_up`");
  static_assert(has_reader<V>,
                "posemb: a rope variant has `template <class Context> static Params read(const "
                "Context&)` (config.json's block)");
  static_assert(
      has_factor<V>,
      "posemb: a rope variant has `static std::optional<double> factor(const Params&)` and "
      "`static constexpr bool transformers_checks_factor`");
  static_assert(has_spec<V>,
                "posemb: a rope variant has `static RopeSpec spec(const Params&, const RopeBasis&, "
                "std::optional<std::int64_t> seq_len)`");
  static_assert(
      has_bands<V>,
      "posemb: a rope variant has `static RopeBands bands(const Params&, const RopeBasis&, "
      "const RopeSpec&)`");
  static_assert(has_hf_float32<V> != has_no_hf_float32<V>,
                "posemb: a rope variant has exactly one of `static HfFloat32Rope hf_float32(const "
                "Params&, const RopeBasis&, std::optional<std::int64_t>)` and `static constexpr "
                "const char* no_hf_float32` (the reason)");
  static_assert(has_float32_steps<V>,
                "posemb: a rope variant has `static double float32_steps(const Params&, "
                "std::optional<std::int64_t>)`");
  static_assert(has_gguf<V> != has_no_gguf<V>,
                "posemb: a rope variant has exactly one of `gguf_scaling_type` + `static bool "
                "gguf_runs(const GgufRopeKey&)` and `static constexpr const char* no_gguf` "
                "(the reason)");
  static_assert(
      has_diff_note<V>,
      "posemb: a rope variant has `static std::string diff_note(const RopeDiffContext&, const "
      "std::string& field)`");
  return implements_every_facet<V>;
}

}  // namespace detail
}  // namespace posemb
