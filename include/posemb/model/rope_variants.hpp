// The registered RoPE variants: one traits struct each (model/rope_variants/*.hpp, the facets in
// rope_variants/variant.hpp), listed once in rope_variant_list. Everything else is derived from
// the list: RopeParams (one alternative per variant, in this order), the table of rows the
// model layer dispatches on (rope_variants()), the config.json readers (rope_registry.hpp), the
// hf-float32 transcriptions and tolerance terms (hf_float32_scheme.hpp), the GGUF spelling
// (gguf.hpp) and the notes of `posemb diff` (diff.hpp).
//
// Adding a variant: its struct in rope_variants/, its name in the list below. A missing facet
// is a compile error naming it (detail::check_rope_variant).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "posemb/error.hpp"
#include "posemb/model/rope_variants/default.hpp"
#include "posemb/model/rope_variants/dynamic.hpp"
#include "posemb/model/rope_variants/linear.hpp"
#include "posemb/model/rope_variants/llama3.hpp"
#include "posemb/model/rope_variants/longrope.hpp"
#include "posemb/model/rope_variants/proportional.hpp"
#include "posemb/model/rope_variants/variant.hpp"
#include "posemb/model/rope_variants/yarn.hpp"

namespace posemb {

template <class... V>
struct RopeVariantList {
  using Params = std::variant<typename V::Params...>;
  static constexpr std::size_t size = sizeof...(V);
};

// The registration: one entry per variant.
using rope_variant_list = RopeVariantList<DefaultRope, LinearRope, DynamicNtkRope, YarnRope,
                                          Llama3Rope, LongRopeRope, ProportionalRope>;

// One alternative per variant, in the order of rope_variant_list.
using RopeParams = rope_variant_list::Params;

namespace detail {

template <class... V>
constexpr bool check_rope_variants(RopeVariantList<V...>) {
  return (check_rope_variant<V>() && ...);
}
// A missing facet stops the build at its own static_assert in check_rope_variant.
[[maybe_unused]] inline constexpr bool rope_variants_checked =
    check_rope_variants(rope_variant_list{});

// Each Params type names one variant (RopeParams' alternatives are told apart by type).
template <class P, class... V>
constexpr std::size_t params_count(RopeVariantList<V...>) {
  return (std::size_t{std::is_same_v<P, typename V::Params>} + ...);
}
template <class... V>
constexpr bool params_distinct(RopeVariantList<V...> list) {
  return ((params_count<typename V::Params>(list) == 1) && ...);
}
static_assert(params_distinct(rope_variant_list{}),
              "posemb: two registered rope variants share a Params type");

// A variant's facets over RopeParams, for the runtime table: the functions take the variant's
// own alternative (std::get: the scheme's rope_type chose the row).
struct RopeVariant {
  const char* rope_type;
  const char* legacy_name;  // or nullptr
  bool rotates_whole_head;
  bool odd_rotary_dim_rounds_up;
  bool transformers_checks_factor;
  std::optional<double> (*factor)(const RopeParams& params);
  RopeSpec (*spec)(const RopeParams& params, const RopeBasis& basis,
                   std::optional<std::int64_t> seq_len);
  RopeBands (*bands)(const RopeParams& params, const RopeBasis& basis, const RopeSpec& spec);
  // nullptr: no float32 transcription, no_hf_float32 says why.
  HfFloat32Rope (*hf_float32)(const RopeParams& params, const RopeBasis& basis,
                              std::optional<std::int64_t> seq_len);
  const char* no_hf_float32;
  double (*float32_steps)(const RopeParams& params, std::optional<std::int64_t> seq_len);
  // nullptr: no GGUF spelling, no_gguf says why.
  bool (*gguf_runs)(const GgufRopeKey& key);
  const char* gguf_scaling_type;
  const char* no_gguf;
  std::string (*diff_note)(const RopeDiffContext& context, const std::string& field);
};

template <class V>
const typename V::Params& params_of(const RopeParams& params) {
  return std::get<typename V::Params>(params);
}

template <class V>
RopeVariant rope_variant_row() {
  RopeVariant row{};
  row.rope_type = V::name;
  row.legacy_name = V::legacy_name;
  row.rotates_whole_head = V::rotates_whole_head;
  row.odd_rotary_dim_rounds_up = V::odd_rotary_dim_rounds_up;
  row.transformers_checks_factor = V::transformers_checks_factor;
  row.factor = [](const RopeParams& p) { return V::factor(params_of<V>(p)); };
  row.spec = [](const RopeParams& p, const RopeBasis& b, std::optional<std::int64_t> seq_len) {
    return V::spec(params_of<V>(p), b, seq_len);
  };
  row.bands = [](const RopeParams& p, const RopeBasis& b, const RopeSpec& spec) {
    return V::bands(params_of<V>(p), b, spec);
  };
  if constexpr (has_hf_float32<V>) {
    row.hf_float32 = [](const RopeParams& p, const RopeBasis& b,
                        std::optional<std::int64_t> seq_len) {
      return V::hf_float32(params_of<V>(p), b, seq_len);
    };
  } else {
    row.no_hf_float32 = V::no_hf_float32;
  }
  row.float32_steps = [](const RopeParams& p, std::optional<std::int64_t> seq_len) {
    return V::float32_steps(params_of<V>(p), seq_len);
  };
  if constexpr (has_gguf<V>) {
    row.gguf_runs = &V::gguf_runs;
    row.gguf_scaling_type = V::gguf_scaling_type;
  } else {
    row.no_gguf = V::no_gguf;
  }
  row.diff_note = &V::diff_note;
  return row;
}

template <class... V>
std::array<RopeVariant, sizeof...(V)> rope_variant_rows(RopeVariantList<V...>) {
  return {rope_variant_row<V>()...};
}

// The table: one row per registered variant, in the order of RopeParams.
inline const std::array<RopeVariant, rope_variant_list::size>& rope_variants() {
  static const std::array<RopeVariant, rope_variant_list::size> table =
      rope_variant_rows(rope_variant_list{});
  return table;
}

// The row of rope_type or of its legacy name ("su": "longrope"), or nullptr.
inline const RopeVariant* find_rope_variant(const std::string& rope_type) {
  for (const RopeVariant& variant : rope_variants()) {
    if (rope_type == variant.rope_type ||
        (variant.legacy_name != nullptr && rope_type == variant.legacy_name)) {
      return &variant;
    }
  }
  return nullptr;
}

// "a, b, c", the last joined by last_joiner ("a, b or c" with " or ").
inline std::string join_names(const std::vector<std::string>& names, const char* last_joiner) {
  std::string out;
  for (std::size_t k = 0; k < names.size(); ++k) {
    out += (k == 0 ? "" : k + 1 == names.size() ? last_joiner : ", ") + names[k];
  }
  return out;
}

// The names of the rows that pass `keep`, joined.
template <class Keep>
std::string rope_variant_names(Keep keep, const char* last_joiner = ", ") {
  std::vector<std::string> names;
  for (const RopeVariant& variant : rope_variants()) {
    if (keep(variant)) names.emplace_back(variant.rope_type);
  }
  return join_names(names, last_joiner);
}

}  // namespace detail

// "default, linear, ..." for error messages.
inline std::string rope_type_names() {
  return detail::rope_variant_names([](const detail::RopeVariant&) { return true; });
}

namespace detail {

inline const RopeVariant& rope_variant(const std::string& rope_type) {
  const RopeVariant* variant = find_rope_variant(rope_type);
  if (variant == nullptr) {
    fail("rope_type", "\"" + rope_type + "\"", "expected one of " + rope_type_names());
  }
  return *variant;
}

// The variant llama.cpp runs a GGUF layer as: the one row whose gguf_runs accepts the key.
inline const char* gguf_rope_type(const GgufRopeKey& key) {
  for (const RopeVariant& variant : rope_variants()) {
    if (variant.gguf_runs != nullptr && variant.gguf_runs(key)) return variant.rope_type;
  }
  fail("rope.scaling.type", "\"" + key.scaling_type + "\"",
       "expected a rope variant posemb reads from a GGUF");
}

// Whether a variant is spelt with rope.scaling.type `type`.
inline bool gguf_scaling_type_known(const std::string& type) {
  for (const RopeVariant& variant : rope_variants()) {
    if (variant.gguf_scaling_type != nullptr && type == variant.gguf_scaling_type) return true;
  }
  return false;
}

// The rope.scaling.type values the variants are spelt with, each once, in registry order
// ("none, linear, yarn or longrope").
inline std::string gguf_scaling_types() {
  std::vector<std::string> types;
  for (const RopeVariant& variant : rope_variants()) {
    if (variant.gguf_scaling_type == nullptr) continue;
    if (std::find(types.begin(), types.end(), variant.gguf_scaling_type) == types.end()) {
      types.emplace_back(variant.gguf_scaling_type);
    }
  }
  return join_names(types, " or ");
}

// The note of `posemb diff` on a layer's field: the GGUF side's variant first, then the
// config's ("" when neither departs).
inline std::string rope_diff_note(const RopeDiffContext& context, const std::string& field) {
  for (const std::string& type : {context.gguf_type, context.config_type}) {
    const RopeVariant* variant = find_rope_variant(type);
    if (variant == nullptr) continue;
    std::string note = variant->diff_note(context, field);
    if (!note.empty()) return note;
  }
  return "";
}

}  // namespace detail
}  // namespace posemb
