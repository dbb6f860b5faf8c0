// Where a GGUF will not run the scheme its config.json describes (tests/data/gguf/README.md §5):
// the GGUF's layers with llama.cpp's semantics against the config's with HuggingFace's, field by
// field, every layer, no field suppressing another. Equal means: inv_freq of equal length within
// 1e-6 * max(|config|, 1e-12) per pair; attention_scale, softmax_scale and the query temperature
// within 1e-6 * |config|; everything else exactly. Where llama.cpp genuinely differs from
// transformers on a faithful conversion (README §6) the difference carries a note.
//
// Example:
//   const auto differences = posemb::diff_gguf_config("model.gguf", "config.json", seq_len);
//   std::cout << posemb::differences_text(differences);  // or differences_json(...)
//   return differences.empty() ? 0 : 3;
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "posemb/model/config.hpp"
#include "posemb/model/gguf.hpp"
#include "posemb/model/layer_plan.hpp"

namespace posemb {

// One (layer, field) where the two differ; values as JSON text, as in the layer objects.
struct PlanDifference {
  std::optional<int> layer;  // nullopt for field "layers" (the layer counts differ)
  std::string field;
  std::string gguf;
  std::string config;
  std::string note;  // why llama.cpp differs on a faithful conversion; "" when it should not
};

namespace detail {

inline bool close_to(double gguf, double config, double floor = 0.0) {
  return std::abs(gguf - config) <= 1e-6 * std::max(std::abs(config), floor);
}

inline bool same_inv_freq(const std::vector<double>& gguf, const std::vector<double>& config) {
  if (gguf.size() != config.size()) return false;
  for (std::size_t i = 0; i < gguf.size(); ++i) {
    if (!close_to(gguf[i], config[i], 1e-12)) return false;
  }
  return true;
}

template <class T>
bool same_optional(const std::optional<T>& a, const std::optional<T>& b,
                   const std::function<bool(const T&, const T&)>& same) {
  return a.has_value() == b.has_value() && (!a || same(*a, *b));
}

// One compared field: its name, equality and JSON rendering.
struct PlanField {
  const char* name;
  std::function<bool(const LayerPlan&, const LayerPlan&)> same;
  std::function<std::string(const LayerPlan&)> json;
};

inline const std::vector<PlanField>& plan_fields() {
  using namespace plan_json;
  static const std::vector<PlanField> fields = {
      {"positions", [](auto& g, auto& c) { return g.positions == c.positions; },
       [](auto& p) { return string(p.positions); }},
      {"head_dim", [](auto& g, auto& c) { return g.head_dim == c.head_dim; },
       [](auto& p) { return std::to_string(p.head_dim); }},
      {"rotary_dim", [](auto& g, auto& c) { return g.rotary_dim == c.rotary_dim; },
       [](auto& p) { return std::to_string(p.rotary_dim); }},
      {"inv_freq", [](auto& g, auto& c) { return same_inv_freq(g.inv_freq, c.inv_freq); },
       [](auto& p) { return numbers(p.inv_freq); }},
      {"attention_scale",
       [](auto& g, auto& c) { return close_to(g.attention_scale, c.attention_scale); },
       [](auto& p) { return number(p.attention_scale); }},
      {"pairing", [](auto& g, auto& c) { return g.pairing == c.pairing; },
       [](auto& p) { return or_null(p.pairing, string); }},
      {"softmax_scale",
       [](auto& g, auto& c) {
         return same_optional<double>(g.softmax_scale, c.softmax_scale,
                                      [](double a, double b) { return close_to(a, b); });
       },
       [](auto& p) { return or_null(p.softmax_scale, number); }},
      {"sliding_window", [](auto& g, auto& c) { return g.sliding_window == c.sliding_window; },
       [](auto& p) { return or_null(p.sliding_window, integer); }},
      {"attention_chunk_size",
       [](auto& g, auto& c) { return g.attention_chunk_size == c.attention_chunk_size; },
       [](auto& p) { return or_null(p.attention_chunk_size, integer); }},
      {"query_temperature",
       [](auto& g, auto& c) {
         return same_optional<QueryTemperature>(g.query_temperature, c.query_temperature,
                                                [](auto& a, auto& b) {
                                                  return close_to(a.floor_scale, b.floor_scale) &&
                                                         close_to(a.attn_scale, b.attn_scale);
                                                });
       },
       [](auto& p) { return or_null(p.query_temperature, temperature); }},
      {"mrope_section", [](auto& g, auto& c) { return g.mrope_section == c.mrope_section; },
       [](auto& p) { return or_null(p.mrope_section, sections); }},
      {"mrope_layout", [](auto& g, auto& c) { return g.mrope_layout == c.mrope_layout; },
       [](auto& p) { return or_null(p.mrope_layout, string); }},
  };
  return fields;
}

// True when `word` is one of the space-separated words of `list`.
inline bool listed(std::string_view list, std::string_view word) {
  while (!list.empty()) {
    const std::size_t end = std::min(list.find(' '), list.size());
    if (list.substr(0, end) == word) return true;
    list.remove_prefix(std::min(end + 1, list.size()));
  }
  return false;
}

// README §6: the places llama.cpp departs from transformers on a correct conversion: the rope
// variants' own (their diff_note facets, model/rope_variants/) and the arch's (its GgufArch row:
// no_window_note, hardcoded_fields).
inline std::string difference_note(const GgufPositions& gguf, const ModelPositions& config,
                                   const LayerPlan& g, const std::string& field) {
  const GgufHparams& h = gguf.hparams;
  if (field == "sliding_window" && !g.sliding_window && !h.rules.no_window_note.empty()) {
    return std::string(h.rules.no_window_note);
  }
  const LayerPositions& layer = config.layers[static_cast<std::size_t>(g.layer)];
  const std::string variant_note =
      rope_diff_note({g.rope_type.value_or(""), layer.rope ? layer.rope->rope_type : "",
                      gguf.n_ctx_seq, h.n_ctx_orig},
                     field);
  if (!variant_note.empty()) return variant_note;
  if (listed(h.rules.hardcoded_fields, field)) return "hard-coded in llama.cpp for " + h.arch;
  return "";
}

}  // namespace detail

// The differences between a GGUF's plan and a config's plan (same layer order).
inline std::vector<PlanDifference> diff_plans(const GgufPositions& gguf,
                                              const ModelPositions& config,
                                              std::optional<std::int64_t> seq_len) {
  const std::vector<LayerPlan> g = gguf_layer_plans(gguf);
  const std::vector<LayerPlan> c = config_layer_plans(config, seq_len);
  std::vector<PlanDifference> out;
  if (g.size() != c.size()) {
    out.push_back({std::nullopt, "layers", std::to_string(g.size()), std::to_string(c.size()), ""});
  }
  for (std::size_t il = 0; il < std::min(g.size(), c.size()); ++il) {
    for (const detail::PlanField& field : detail::plan_fields()) {
      if (field.same(g[il], c[il])) continue;
      out.push_back({g[il].layer, field.name, field.json(g[il]), field.json(c[il]),
                     detail::difference_note(gguf, config, g[il], field.name)});
    }
  }
  return out;
}

// diff_plans of the GGUF at gguf_path (context seq_len, else its context_length) and the
// config.json at config_path (sequence length seq_len).
inline std::vector<PlanDifference> diff_gguf_config(const std::string& gguf_path,
                                                    const std::string& config_path,
                                                    std::optional<std::int64_t> seq_len) {
  const GgufPositions gguf = read_gguf_positions(gguf_path, seq_len);
  const ModelPositions config = load_model_positions(config_path);
  try {
    return diff_plans(gguf, config, seq_len);
  } catch (Error& error) {
    throw error.add_context(config_path);
  }
}

// `diff --json`: [{"layer": I, "field": F, "gguf": V, "config": V[, "note": N]}, ...], one
// entry a line; engine names the first value ("gguf", or "vllm" for engine_vllm.hpp's).
inline std::string differences_json(const std::vector<PlanDifference>& differences,
                                    const std::string& engine = "gguf") {
  std::string out = "[";
  for (std::size_t k = 0; k < differences.size(); ++k) {
    const PlanDifference& d = differences[k];
    out += std::string(k ? ",\n " : "") +
           "{\"layer\": " + (d.layer ? std::to_string(*d.layer) : "null") + ", \"field\": \"" +
           d.field + "\", \"" + engine + "\": " + d.gguf + ", \"config\": " + d.config +
           (d.note.empty() ? "" : ", \"note\": " + plan_json::string(d.note)) + "}";
  }
  return out + "]\n";
}

namespace detail {

// inv_freq in a line: the lengths, or the pair with the largest relative difference.
inline std::string inv_freq_summary(const std::string& gguf_json, const std::string& config_json,
                                    const std::string& engine) {
  const auto parse = [](const std::string& json) {
    std::vector<double> values;
    for (const auto& x : nlohmann::json::parse(json)) values.push_back(x.get<double>());
    return values;
  };
  const std::vector<double> g = parse(gguf_json), c = parse(config_json);
  if (g.size() != c.size()) {
    return engine + " " + std::to_string(g.size()) + " pairs config " + std::to_string(c.size()) +
           " pairs";
  }
  std::size_t worst = 0;
  double worst_rel = -1.0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double rel = std::abs(g[i] - c[i]) / std::max(std::abs(c[i]), 1e-12);
    if (rel > worst_rel) worst = i, worst_rel = rel;
  }
  return engine + " " + plan_json::number(g[worst]) + " config " + plan_json::number(c[worst]) +
         " (worst of " + std::to_string(g.size()) + " pairs: pair " + std::to_string(worst) +
         ", relative difference " + plan_json::number(worst_rel) + ")";
}

}  // namespace detail

// `diff` without --json: "layer I FIELD: gguf V config V" a line, "  (note)" appended; engine
// names the first value.
inline std::string differences_text(const std::vector<PlanDifference>& differences,
                                    const std::string& engine = "gguf") {
  std::string out;
  for (const PlanDifference& d : differences) {
    out += d.layer ? "layer " + std::to_string(*d.layer) + " " : std::string();
    out += d.field + ": ";
    out += d.field == "inv_freq" ? detail::inv_freq_summary(d.gguf, d.config, engine)
                                 : engine + " " + d.gguf + " config " + d.config;
    out += d.note.empty() ? "\n" : "  (" + d.note + ")\n";
  }
  return out;
}

}  // namespace posemb
