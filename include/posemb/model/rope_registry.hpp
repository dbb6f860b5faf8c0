// Reads config.json's rope blocks (`rope_scaling` / `rope_parameters`) into the typed parameters
// of each variant: the table rope_readers(), one reader per row of rope_variants(), each the
// variant's own `read` facet (model/rope_variants/*.hpp, a template on the context below, so
// that the variants need no JSON parser). rope_reader() finds a variant's reader by its row.
//
// The readers follow HuggingFace's `ROPE_INIT_FUNCTIONS` (modeling_rope_utils.py): which keys
// each `rope_type` requires, and the values HF fills in when a key is absent.
//
// Needs nlohmann-json (through detail/json_reader.hpp); posemb.hpp does not include it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "posemb/detail/json_reader.hpp"
#include "posemb/error.hpp"
#include "posemb/model/rope_scheme.hpp"
#include "posemb/model/rope_variants.hpp"

namespace posemb::detail {

// What a variant's reader sees: its block P of config.json and the model-wide values HF fills in.
struct RopeReadContext {
  const JsonReader& root;   // the (text) config, for max_position_embeddings
  const JsonReader& block;  // P
  std::optional<std::int64_t> max_position_embeddings;
  std::optional<std::int64_t> original_max_position_embeddings;  // top level: replaces P's
  double partial_rotary_factor = 1.0;
  std::string why;  // "required for rope_type \"...\""

  std::int64_t max_position(const std::string& what) const {
    if (!max_position_embeddings) root.missing("max_position_embeddings", what);
    return *max_position_embeddings;
  }
  // L0 for llama3 / yarn / longrope: the top-level value, else P's, else max_position_embeddings.
  std::int64_t original_context(bool required) const {
    if (original_max_position_embeddings) return *original_max_position_embeddings;
    if (required) return block.integer("original_max_position_embeddings", why);
    if (auto orig = block.integer("original_max_position_embeddings")) return *orig;
    return max_position(why + " without original_max_position_embeddings");
  }
  // s for yarn / longrope: P.factor, else max_position_embeddings / L0.
  double factor_or_ratio(std::int64_t original) const {
    if (auto factor = block.number("factor")) return *factor;
    require_context_length(block.name("original_max_position_embeddings"), original);
    return static_cast<double>(max_position(why + " without factor")) /
           static_cast<double>(original);
  }
};

// One reader per variant: its block -> its parameters.
struct RopeReader {
  const char* rope_type;
  RopeParams (*read)(const RopeReadContext& context);
};

template <class... V>
std::array<RopeReader, sizeof...(V)> rope_reader_rows(RopeVariantList<V...>) {
  return {RopeReader{
      V::name, [](const RopeReadContext& context) -> RopeParams { return V::read(context); }}...};
}

// One row per registered variant, in the order of rope_variants().
inline const std::array<RopeReader, rope_variant_list::size>& rope_readers() {
  static const std::array<RopeReader, rope_variant_list::size> table =
      rope_reader_rows(rope_variant_list{});
  return table;
}

// The reader of a variant of rope_variants().
inline const RopeReader& rope_reader(const RopeVariant& variant) {
  const auto index = static_cast<std::size_t>(&variant - rope_variants().data());
  return rope_readers().at(index);
}

}  // namespace posemb::detail
