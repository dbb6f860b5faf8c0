// Reads config.json's rope blocks (`rope_scaling` / `rope_parameters`) into the typed parameters
// of each variant: ONE table of readers, rope_readers(), one per row of rope_variants()
// (rope_scheme.hpp, which holds the parameter structs, spec builders and band classifiers and
// needs no JSON parser). The array lengths are both the number of RopeParams alternatives, and
// rope_reader() finds a variant's reader by its name.
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
#include <variant>

#include "posemb/detail/json_reader.hpp"
#include "posemb/error.hpp"
#include "posemb/model/rope_scheme.hpp"
#include "posemb/rotary/scaled.hpp"

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

// One row per RopeParams alternative, in the order of rope_variants().
inline const std::array<RopeReader, std::variant_size_v<RopeParams>>& rope_readers() {
  static const std::array<RopeReader, std::variant_size_v<RopeParams>> table{{
      {"default", [](const RopeReadContext&) -> RopeParams { return DefaultRopeParams{}; }},
      {"linear",
       [](const RopeReadContext& c) -> RopeParams {
         return LinearRopeParams{c.block.number("factor", c.why)};
       }},
      {"dynamic",
       [](const RopeReadContext& c) -> RopeParams {
         const double factor = c.block.number("factor", c.why);
         return DynamicNtkParams{factor, c.max_position(c.why)};
       }},
      {"yarn",
       [](const RopeReadContext& c) -> RopeParams {
         YarnParams yarn;
         yarn.original_max_position_embeddings = c.original_context(false);
         yarn.factor = c.factor_or_ratio(yarn.original_max_position_embeddings);
         yarn.beta_fast = c.block.number("beta_fast").value_or(32.0);
         yarn.beta_slow = c.block.number("beta_slow").value_or(1.0);
         yarn.truncate = c.block.boolean("truncate").value_or(true);
         yarn.attention_factor = c.block.number("attention_factor");
         yarn.mscale = c.block.number("mscale");
         yarn.mscale_all_dim = c.block.number("mscale_all_dim");
         return yarn;
       }},
      {"llama3",
       [](const RopeReadContext& c) -> RopeParams {
         Llama3Params llama3;
         llama3.factor = c.block.number("factor", c.why);
         llama3.low_freq_factor = c.block.number("low_freq_factor", c.why);
         llama3.high_freq_factor = c.block.number("high_freq_factor", c.why);
         llama3.original_max_position_embeddings = c.original_context(true);
         return llama3;
       }},
      {"longrope",
       [](const RopeReadContext& c) -> RopeParams {
         LongRopeParams longrope;
         longrope.short_factor = c.block.numbers("short_factor", c.why);
         longrope.long_factor = c.block.numbers("long_factor", c.why);
         longrope.original_max_position_embeddings = c.original_context(false);
         longrope.factor = c.factor_or_ratio(longrope.original_max_position_embeddings);
         longrope.attention_factor = c.block.number("attention_factor");
         return longrope;
       }},
      {"proportional",
       [](const RopeReadContext& c) -> RopeParams {
         return ProportionalParams{c.partial_rotary_factor, c.block.number("factor").value_or(1.0)};
       }},
  }};
  return table;
}

// The reader of a variant of rope_variants().
inline const RopeReader& rope_reader(const RopeVariant& variant) {
  const auto index = static_cast<std::size_t>(&variant - rope_variants().data());
  return rope_readers().at(index);
}

}  // namespace posemb::detail
