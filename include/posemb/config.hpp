// A HuggingFace model's config.json -> its positional scheme. Needs nlohmann-json (the core
// headers do not; posemb.hpp does not include this one).
//
// The RoPE keys follow HuggingFace transformers (v4.57 `rope_scaling` and v5 `rope_parameters`
// layouts; see tests/data/hf/README.md for the exact rules the golden data follows):
//   rope parameter block P: `rope_scaling` if a non-empty object, else `rope_parameters`, else {}
//   rope type:   P.rope_type, else legacy P.type, else "default" ("su" is read as "longrope")
//   theta:       P.rope_theta, else rope_theta, else rotary_emb_base (GPT-NeoX), else 10000
//   head dim:    qk_rope_head_dim (DeepSeek), else head_dim, else hidden_size / num_attention_heads
//   rotary dim:  int(head_dim * partial factor) with the factor from partial_rotary_factor, else
//                P.partial_rotary_factor, else rotary_pct (GPT-NeoX), else 1; GPT-J / CodeGen
//                give `rotary_dim` directly
// GPT-2 style spellings (n_embd, n_head, n_positions) stand in for hidden_size,
// num_attention_heads and max_position_embeddings. A null value counts as absent.
//
// FoPE (rope_type "fope", Hua et al. 2024) reads its block as the authors' settings:
//   train_length (else max_position_embeddings) = N, floor_ratio (1), ignore_zero (true: drop the
//   clipped frequencies), clip_floor_to_zero (must be true), d_out, sigma (0.3), seed (0),
//   padding_sin (1); see fope.hpp. FoPE rotates whole heads with rotate-half pairs.
//
// Models without RoPE are recognised: ALiBi (`alibi: true`, BLOOM, MPT), learned absolute
// positions (GPT-2, GPT-BigCode, GPT-Neo, OPT) and fixed sinusoidal ones (XGLM, M2M-100).
//
// Bad input (unknown rope type, missing required key, wrongly typed value, invalid value)
// throws posemb::Error naming the key, and the file when loaded from a path.
#pragma once

#include <nlohmann/json.hpp>

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "posemb/error.hpp"
#include "posemb/fope.hpp"
#include "posemb/rope.hpp"
#include "posemb/scaled.hpp"
#include "posemb/xpos.hpp"

namespace posemb {

enum class PositionKind {
  Rope,        // rotary, any rope_type but "fope"
  Fope,        // Fourier position embedding (rope_type "fope")
  Alibi,       // linear attention bias (Press et al. 2021)
  Learned,     // learned absolute position embeddings added to the tokens
  Sinusoidal,  // fixed sinusoidal absolute embeddings added to the tokens
};

inline const char* to_string(PositionKind kind) {
  switch (kind) {
    case PositionKind::Rope:
      return "rope";
    case PositionKind::Fope:
      return "fope";
    case PositionKind::Alibi:
      return "alibi";
    case PositionKind::Learned:
      return "learned";
    case PositionKind::Sinusoidal:
      return "sinusoidal";
  }
  return "unknown";
}

// The positional scheme of one model, as read from its config.json.
struct ModelPositions {
  PositionKind kind = PositionKind::Rope;
  std::string model_type;  // "" if the config has none
  int n_heads = 0;         // query heads
  int n_kv_heads = 0;      // key/value heads (grouped-query attention); n_heads if not given
  std::optional<std::int64_t> max_position_embeddings;
  std::optional<std::int64_t> original_max_position_embeddings;  // top-level (Phi-3 style)

  // RoPE and FoPE (kind == Rope or Fope); the other kinds leave these at their defaults.
  std::string rope_type;  // "default", "linear", "dynamic", "yarn", "llama3", "longrope", "fope"
  nlohmann::json rope_parameters = nlohmann::json::object();  // the raw block P
  int head_dim = 0;
  int rotary_dim = 0;  // features rotated per head (partial rotary: < head_dim)
  double rope_theta = 10000.0;
  Pairing pairing = Pairing::RotateHalf;
  std::optional<XposParams> xpos;  // torchscale-style `xpos_rel_pos: true`
  // The parameters of rope_type (only the matching one is meaningful):
  double factor = 1.0;  // linear, dynamic: s
  YarnParams yarn;
  Llama3Params llama3;
  LongRopeParams longrope;
  FopeConfig fope;  // kind == Fope: pass to make_fope or fope_with_coefficients

  // The RoPE spec at sequence length seq_len. Only dynamic NTK and LongRoPE depend on it;
  // std::nullopt means "no length known" (dynamic: max_position_embeddings, i.e. the default
  // frequencies; LongRoPE: short_factor). Throws unless kind == Rope.
  RopeSpec rope_spec_for(std::optional<std::int64_t> seq_len = std::nullopt) const {
    if (kind != PositionKind::Rope) {
      detail::fail("kind", to_string(kind), "expected rope for a RoPE spec");
    }
    if (rope_type == "default") return default_rope_spec(rotary_dim, rope_theta, pairing);
    if (rope_type == "linear") return linear_rope_spec(rotary_dim, rope_theta, factor, pairing);
    if (rope_type == "dynamic") {
      const std::int64_t L = max_position_embeddings.value_or(0);
      return dynamic_ntk_rope_spec(rotary_dim, rope_theta, factor, L, seq_len.value_or(L), pairing);
    }
    if (rope_type == "yarn") return yarn_rope_spec(rotary_dim, rope_theta, yarn, pairing);
    if (rope_type == "llama3") return llama3_rope_spec(rotary_dim, rope_theta, llama3, pairing);
    if (rope_type == "longrope") {
      return longrope_rope_spec(rotary_dim, rope_theta, longrope, seq_len, pairing);
    }
    detail::fail("rope_type", rope_type, "expected a known rope type");
  }

  // xPos spec at seq_len; throws unless the model uses xPos.
  XposSpec xpos_spec_for(std::optional<std::int64_t> seq_len = std::nullopt) const {
    if (!xpos) detail::fail("xpos_rel_pos", "absent", "expected an xPos model");
    return XposSpec{rope_spec_for(seq_len), *xpos};
  }
};

// What HuggingFace's rope init function returns for a config: one inverse frequency per rotated
// pair, the cos/sin attention factor, and the rotary dim.
struct RopeFrequencies {
  Eigen::VectorXd inv_freq;  // [rotary_dim / 2]
  double attention_scale = 1.0;
  int rotary_dim = 0;
};

struct ConfigOptions {
  std::optional<Pairing> pairing;  // overrides the pairing implied by model_type
};

namespace detail {

// Typed, key-naming access to one JSON object. `path` is the object's own key path ("" for the
// root, "rope_scaling." for a block).
class JsonReader {
 public:
  JsonReader(const nlohmann::json& object, std::string path)
      : object_(object), path_(std::move(path)) {}

  // The value at key, or nullptr when absent or null.
  const nlohmann::json* find(const std::string& key) const {
    const auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  bool has(const std::string& key) const { return find(key) != nullptr; }
  std::string name(const std::string& key) const { return path_ + key; }

  [[noreturn]] void wrong_type(const std::string& key, const std::string& expected) const {
    fail(name(key), find(key)->dump(), "expected " + expected);
  }
  [[noreturn]] void missing(const std::string& key, const std::string& why) const {
    throw Error(name(key) + ": missing; " + why);
  }

  std::optional<double> number(const std::string& key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_number()) wrong_type(key, "a number");
    return value->get<double>();
  }
  double number(const std::string& key, const std::string& why) const {
    if (auto value = number(key)) return *value;
    missing(key, why);
  }
  // Integers; a float with an integral value (4096.0) is accepted, as Python would.
  std::optional<std::int64_t> integer(const std::string& key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (value->is_number_integer()) return value->get<std::int64_t>();
    if (value->is_number_float()) {
      const double x = value->get<double>();
      if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9.0e15) {
        return static_cast<std::int64_t>(x);
      }
    }
    wrong_type(key, "an integer");
  }
  std::int64_t integer(const std::string& key, const std::string& why) const {
    if (auto value = integer(key)) return *value;
    missing(key, why);
  }
  std::optional<bool> boolean(const std::string& key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_boolean()) wrong_type(key, "true or false");
    return value->get<bool>();
  }
  std::optional<std::string> string(const std::string& key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_string()) wrong_type(key, "a string");
    return value->get<std::string>();
  }
  std::vector<double> numbers(const std::string& key, const std::string& why) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) missing(key, why);
    if (!value->is_array()) wrong_type(key, "a list of numbers");
    std::vector<double> out;
    for (const auto& item : *value) {
      if (!item.is_number()) wrong_type(key, "a list of numbers");
      out.push_back(item.get<double>());
    }
    return out;
  }
  // The first key present, or nullopt; `read` is one of the accessors above.
  template <class Read>
  auto first_of(std::initializer_list<const char*> keys, Read read) const
      -> decltype(read(std::string())) {
    for (const char* key : keys) {
      if (has(key)) return read(std::string(key));
    }
    return std::nullopt;
  }

 private:
  const nlohmann::json& object_;
  std::string path_;
};

inline int to_int(const std::string& name, std::int64_t value) {
  if (value <= 0 || value > (1 << 30)) fail(name, value, "expected a count in [1, 2^30]");
  return static_cast<int>(value);
}

// A per-head feature count: beyond 2^16 no model exists, and tables of it would not fit.
inline int to_head_dim(const std::string& name, std::int64_t value) {
  if (value <= 0 || value > (1 << 16)) fail(name, value, "expected a head dimension in [1, 65536]");
  return static_cast<int>(value);
}

// Strips "posemb: " from an Error's message so that context can be put in front of it.
inline std::string error_body(const std::exception& error) {
  const std::string message = error.what();
  const std::string prefix = "posemb: ";
  return message.compare(0, prefix.size(), prefix) == 0 ? message.substr(prefix.size()) : message;
}

inline bool in(const std::string& value, std::initializer_list<const char*> set) {
  for (const char* item : set) {
    if (value == item) return true;
  }
  return false;
}

// Reads FoPE's settings from the block P into model.fope and validates them.
inline void read_fope(const JsonReader& block, ModelPositions& model) {
  FopeConfig& fope = model.fope;
  fope.head_dim = model.head_dim;
  fope.n_heads = model.n_heads;
  fope.n_kv_heads = model.n_kv_heads;
  fope.theta = model.rope_theta;
  if (auto n = block.integer("train_length")) {
    fope.train_length = *n;
  } else if (model.max_position_embeddings) {
    fope.train_length = *model.max_position_embeddings;
  } else {
    block.missing("train_length", "required for rope_type \"fope\" (or max_position_embeddings)");
  }
  fope.floor_ratio = block.number("floor_ratio").value_or(1.0);
  if (!block.boolean("clip_floor_to_zero").value_or(true)) {
    fail(block.name("clip_floor_to_zero"), "false",
         "expected true (frequencies below the floor are set to 0; clamping to the floor is "
         "not supported)");
  }
  fope.drop_clipped = block.boolean("ignore_zero").value_or(true);
  if (auto d_out = block.integer("d_out")) fope.d_out = to_int(block.name("d_out"), *d_out);
  fope.sigma = block.number("sigma").value_or(fope.sigma);
  if (auto seed = block.integer("seed")) {
    if (*seed < 0) fail(block.name("seed"), *seed, "expected an integer >= 0");
    fope.seed = static_cast<std::uint64_t>(*seed);
  }
  fope.padding_sin = block.number("padding_sin").value_or(1.0);
  try {
    resolve_fope_config(fope);
  } catch (const Error& error) {
    throw Error(block.name("") + error_body(error));
  }
}

// Reads the variant parameters of rope_type from the block P into `model`.
inline void read_rope_variant(const JsonReader& root, const JsonReader& block,
                              ModelPositions& model) {
  const std::string& type = model.rope_type;
  const std::string why = "required for rope_type \"" + type + "\"";
  const auto max_position = [&](const std::string& what) {
    if (!model.max_position_embeddings) root.missing("max_position_embeddings", what);
    return *model.max_position_embeddings;
  };
  if (type == "default") return;
  if (type == "linear") {
    model.factor = block.number("factor", why);
  } else if (type == "dynamic") {
    model.factor = block.number("factor", why);
    max_position(why);
  } else if (type == "yarn") {
    YarnParams& yarn = model.yarn;
    if (auto orig = block.integer("original_max_position_embeddings")) {
      yarn.original_max_position_embeddings = *orig;
    } else if (model.original_max_position_embeddings) {
      yarn.original_max_position_embeddings = *model.original_max_position_embeddings;
    } else {
      yarn.original_max_position_embeddings =
          max_position(why + " without original_max_position_embeddings");
    }
    if (auto factor = block.number("factor")) {
      yarn.factor = *factor;
    } else {
      require_context_length(block.name("original_max_position_embeddings"),
                             yarn.original_max_position_embeddings);
      yarn.factor = static_cast<double>(max_position(why + " without factor")) /
                    static_cast<double>(yarn.original_max_position_embeddings);
    }
    yarn.beta_fast = block.number("beta_fast").value_or(32.0);
    yarn.beta_slow = block.number("beta_slow").value_or(1.0);
    yarn.truncate = block.boolean("truncate").value_or(true);
    yarn.attention_factor = block.number("attention_factor");
    yarn.mscale = block.number("mscale");
    yarn.mscale_all_dim = block.number("mscale_all_dim");
  } else if (type == "llama3") {
    Llama3Params& llama3 = model.llama3;
    llama3.factor = block.number("factor", why);
    llama3.low_freq_factor = block.number("low_freq_factor", why);
    llama3.high_freq_factor = block.number("high_freq_factor", why);
    llama3.original_max_position_embeddings =
        block.integer("original_max_position_embeddings", why);
  } else if (type == "longrope") {
    LongRopeParams& longrope = model.longrope;
    longrope.short_factor = block.numbers("short_factor", why);
    longrope.long_factor = block.numbers("long_factor", why);
    if (model.original_max_position_embeddings) {
      longrope.original_max_position_embeddings = *model.original_max_position_embeddings;
    } else if (auto orig = block.integer("original_max_position_embeddings")) {
      longrope.original_max_position_embeddings = *orig;
    } else {
      longrope.original_max_position_embeddings =
          max_position(why + " without original_max_position_embeddings");
    }
    if (auto factor = block.number("factor")) {
      longrope.factor = *factor;
    } else {
      require_context_length("original_max_position_embeddings",
                             longrope.original_max_position_embeddings);
      longrope.factor = static_cast<double>(max_position(why + " without factor")) /
                        static_cast<double>(longrope.original_max_position_embeddings);
    }
    longrope.attention_factor = block.number("attention_factor");
  } else {
    const std::string key = block.has("rope_type") ? "rope_type" : "type";
    fail(block.name(key), "\"" + type + "\"",
         "expected one of default, linear, dynamic, yarn, llama3, longrope, fope");
  }
}

inline void read_rope(const JsonReader& root, const ConfigOptions& options, ModelPositions& model) {
  // The rope parameter block P.
  std::string block_name;
  const nlohmann::json* block_json = nullptr;
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    const nlohmann::json* value = root.find(key);
    if (value == nullptr) continue;
    if (!value->is_object()) root.wrong_type(key, "an object or null");
    if (!value->empty()) {
      block_name = key;
      block_json = value;
      break;
    }
  }
  static const nlohmann::json empty = nlohmann::json::object();
  if (block_json == nullptr) block_json = &empty;
  model.rope_parameters = *block_json;
  const JsonReader block(*block_json, block_name.empty() ? "" : block_name + ".");

  if (!block.has("rope_type") && !block.has("type")) {
    for (const auto& item : block_json->items()) {
      if (item.value().is_object()) {
        fail(block.name(item.key()), "{...}",
             "expected rope parameters, not a block per layer type (unsupported)");
      }
    }
  }
  model.rope_type = block
                        .first_of({"rope_type", "type"},
                                  [&](const std::string& key) { return block.string(key); })
                        .value_or("default");
  if (model.rope_type == "su") model.rope_type = "longrope";  // Phi-3's first name for LongRoPE
  if (auto theta = block.number("rope_theta")) {
    model.rope_theta = *theta;
  } else {
    model.rope_theta = root.first_of({"rope_theta", "rotary_emb_base"},
                                     [&](const std::string& key) { return root.number(key); })
                           .value_or(10000.0);
  }
  require_positive_finite(root.name("rope_theta"), model.rope_theta);

  // head_dim and rotary_dim.
  if (auto dim = root.first_of({"qk_rope_head_dim", "head_dim"},
                               [&](const std::string& key) { return root.integer(key); })) {
    model.head_dim =
        to_head_dim(root.has("qk_rope_head_dim") ? "qk_rope_head_dim" : "head_dim", *dim);
  } else {
    const auto hidden = root.first_of({"hidden_size", "n_embd"},
                                      [&](const std::string& key) { return root.integer(key); });
    if (!hidden)
      root.missing("hidden_size", "expected hidden_size (or n_embd) or head_dim for RoPE");
    model.head_dim = to_head_dim("hidden_size / num_attention_heads", *hidden / model.n_heads);
  }
  const bool gptj_family = in(model.model_type, {"gptj", "codegen"});
  if (gptj_family && root.has("rotary_dim")) {
    model.rotary_dim = to_int("rotary_dim", root.integer("rotary_dim", ""));
  } else {
    std::optional<double> partial = root.number("partial_rotary_factor");
    std::string partial_key = "partial_rotary_factor";
    if (!partial && (partial = block.number("partial_rotary_factor"))) {
      partial_key = block.name("partial_rotary_factor");
    }
    if (!partial && (partial = root.number("rotary_pct"))) partial_key = "rotary_pct";
    const double fraction = partial.value_or(1.0);
    if (!(fraction > 0.0 && fraction <= 1.0)) fail(partial_key, fraction, "expected in (0, 1]");
    // As HF: int(head_dim * factor), a double product truncated.
    model.rotary_dim = static_cast<int>(static_cast<double>(model.head_dim) * fraction);
  }
  if (model.rotary_dim < 2 || model.rotary_dim % 2 != 0 || model.rotary_dim > model.head_dim) {
    fail("rotary_dim", model.rotary_dim,
         "expected an even number in [2, head_dim = " + std::to_string(model.head_dim) + "]");
  }
  model.pairing =
      options.pairing.value_or(gptj_family ? Pairing::Interleaved : Pairing::RotateHalf);

  if (model.rope_type == "fope") {
    if (model.pairing != Pairing::RotateHalf || model.rotary_dim != model.head_dim) {
      fail(block.name("rope_type"), "\"fope\"",
           "FoPE rotates whole heads in rotate-half pairs; expected no partial rotary and no "
           "interleaved pairing");
    }
    read_fope(block, model);
    model.kind = PositionKind::Fope;
    return;
  }

  if (root.boolean("xpos_rel_pos").value_or(false)) {
    XposParams xpos;
    xpos.scale_base = root.number("xpos_scale_base").value_or(xpos.scale_base);
    require_positive_finite("xpos_scale_base", xpos.scale_base);
    model.xpos = xpos;
  }

  read_rope_variant(root, block, model);
  // Build the spec(s) once so that an invalid value fails here, named by its block.
  try {
    model.rope_spec_for(std::nullopt);
    const std::int64_t L0 = model.longrope.original_max_position_embeddings;
    if (model.rope_type == "longrope" && L0 < std::numeric_limits<std::int64_t>::max()) {
      model.rope_spec_for(L0 + 1);  // long_factor
    }
  } catch (const Error& error) {
    throw Error((block_name.empty() ? "" : block_name + ": ") + error_body(error));
  }
}

}  // namespace detail

// Reads the positional scheme from a parsed config.json.
inline ModelPositions model_positions_from_json(const nlohmann::json& config,
                                                const ConfigOptions& options = {}) {
  if (!config.is_object()) {
    detail::fail("config", config.type_name(), "expected a JSON object");
  }
  const detail::JsonReader root(config, "");
  ModelPositions model;
  model.model_type = root.string("model_type").value_or("");
  const std::string& type = model.model_type;

  const auto heads = root.first_of({"num_attention_heads", "n_head", "n_heads"},
                                   [&](const std::string& key) { return root.integer(key); });
  if (!heads)
    root.missing("num_attention_heads", "expected num_attention_heads (or n_head, n_heads)");
  model.n_heads = detail::to_int("num_attention_heads", *heads);
  if (auto kv = root.first_of({"num_key_value_heads", "num_kv_heads"},
                              [&](const std::string& key) { return root.integer(key); })) {
    model.n_kv_heads = detail::to_int("num_key_value_heads", *kv);
  } else {
    model.n_kv_heads = root.boolean("multi_query").value_or(false) ? 1 : model.n_heads;
  }
  if (model.n_heads % model.n_kv_heads != 0) {
    detail::fail("num_key_value_heads", model.n_kv_heads,
                 "expected a divisor of num_attention_heads = " + std::to_string(model.n_heads));
  }
  model.max_position_embeddings =
      root.first_of({"max_position_embeddings", "n_positions", "max_seq_len"},
                    [&](const std::string& key) { return root.integer(key); });
  model.original_max_position_embeddings = root.integer("original_max_position_embeddings");

  bool alibi = root.boolean("alibi").value_or(false) || type == "bloom";
  bool learned = detail::in(type, {"gpt2", "gpt_bigcode", "gpt_neo", "opt"});
  if (type == "mpt") {
    const nlohmann::json* attn = root.find("attn_config");
    if (attn != nullptr && !attn->is_object()) root.wrong_type("attn_config", "an object");
    const nlohmann::json empty = nlohmann::json::object();
    const detail::JsonReader attn_config(attn != nullptr ? *attn : empty, "attn_config.");
    alibi = attn_config.boolean("alibi").value_or(true);  // MPT's default
    learned = !alibi && root.boolean("learned_pos_emb").value_or(true);
  }
  if (alibi) {
    model.kind = PositionKind::Alibi;
  } else if (learned) {
    model.kind = PositionKind::Learned;
    if (!model.max_position_embeddings) {
      root.missing("n_positions",
                   "expected n_positions (or max_position_embeddings) for learned positions");
    }
  } else if (detail::in(type, {"xglm", "m2m_100"})) {
    model.kind = PositionKind::Sinusoidal;
  } else {
    model.kind = PositionKind::Rope;
    detail::read_rope(root, options, model);
  }
  return model;
}

// Reads the positional scheme from a config.json file; errors name the file.
inline ModelPositions load_model_positions(const std::string& path,
                                           const ConfigOptions& options = {}) {
  std::ifstream file(path);
  if (!file) throw Error(path + ": cannot open config file");
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(file);
  } catch (const nlohmann::json::parse_error& error) {
    throw Error(path + ": malformed JSON: " + error.what());
  }
  try {
    return model_positions_from_json(config, options);
  } catch (const Error& error) {
    throw Error(path + ": " + detail::error_body(error));
  }
}

// HuggingFace's (inv_freq, attention_factor) and the rotary dim for a RoPE model at seq_len.
// For FoPE: the default frequencies with the clipped ones set to 0, attention factor 1.
inline RopeFrequencies rope_frequencies(const ModelPositions& model,
                                        std::optional<std::int64_t> seq_len = std::nullopt) {
  if (model.kind == PositionKind::Fope) {
    const FopeFrequencies clip = resolve_fope_config(model.fope).second;
    Eigen::VectorXd inv_freq = clip.base_inv_freq;
    for (int k = 0; k < clip.pairs(); ++k) {
      if (clip.clipped[k]) inv_freq[k] = 0.0;
    }
    return RopeFrequencies{inv_freq, 1.0, model.head_dim};
  }
  const RopeSpec spec = model.rope_spec_for(seq_len);
  return RopeFrequencies{spec.inv_freq, spec.attention_scale, spec.rotary_dim};
}

inline RopeFrequencies rope_frequencies(const std::string& config_path,
                                        std::optional<std::int64_t> seq_len = std::nullopt) {
  const ModelPositions model = load_model_positions(config_path);
  try {
    return rope_frequencies(model, seq_len);
  } catch (const Error& error) {
    throw Error(config_path + ": " + detail::error_body(error));
  }
}

// One rotary pair: its default inverse frequency base^(-2i/d), the one the scheme uses (radians
// per token), and its band: "kept", "interpolated" (divided by the factor), "ramp" (in between,
// YaRN / Llama 3), "ntk" (dynamic NTK's grown base), "rescaled" (LongRoPE's per-pair factor) or
// "clipped" (FoPE: below the floor 2 pi / N, set to 0).
struct PairFrequency {
  double default_inv_freq = 0.0;
  double inv_freq = 0.0;
  std::string band;
};

struct PairFrequencies {
  std::vector<PairFrequency> pairs;  // [rotary_dim / 2]
  double attention_scale = 1.0;
  int rotary_dim = 0;
  Pairing pairing = Pairing::RotateHalf;
  double theta = 10000.0;
  std::optional<std::int64_t> original_context;  // the context the bands refer to, if known
};

// Every rotary pair of a RoPE or FoPE model at seq_len, with its band: what `posemb inspect`
// and examples/long_context print. The frequencies of a model at seq_len (dynamic NTK and LongRoPE depend on it;
// std::nullopt: no length known). Throws for schemes without rotary frequencies.
inline PairFrequencies pair_frequencies(const ModelPositions& model,
                                        std::optional<std::int64_t> seq_len = std::nullopt) {
  PairFrequencies out;
  if (model.kind == PositionKind::Fope) {
    const auto [fope, clip] = resolve_fope_config(model.fope);
    out.rotary_dim = fope.head_dim;
    out.theta = fope.theta;
    out.original_context = fope.train_length;
    for (int k = 0; k < clip.pairs(); ++k) {
      const bool clipped = clip.clipped[k];
      out.pairs.push_back({clip.base_inv_freq[k], clipped ? 0.0 : clip.base_inv_freq[k],
                           clipped ? "clipped" : "kept"});
    }
    return out;
  }
  if (model.kind != PositionKind::Rope) {
    throw Error(std::string("the model's positions are ") + to_string(model.kind) +
                ", not rotary: there are no RoPE frequencies");
  }
  const RopeSpec spec = model.rope_spec_for(seq_len);
  const Eigen::VectorXd base = default_inv_freq(spec.rotary_dim, model.rope_theta);
  out.attention_scale = spec.attention_scale;
  out.rotary_dim = spec.rotary_dim;
  out.pairing = spec.pairing;
  out.theta = model.rope_theta;
  out.original_context = model.max_position_embeddings;
  const std::string& type = model.rope_type;
  Eigen::VectorXd yarn_ramp_values;
  if (type == "yarn") {
    out.original_context = model.yarn.original_max_position_embeddings;
    yarn_ramp_values = yarn_ramp(spec.rotary_dim, model.rope_theta, model.yarn);
  } else if (type == "llama3") {
    out.original_context = model.llama3.original_max_position_embeddings;
  } else if (type == "longrope") {
    out.original_context = model.longrope.original_max_position_embeddings;
  }
  for (int i = 0; i < spec.pairs(); ++i) {
    PairFrequency pair{base[i], spec.inv_freq[i], "kept"};
    if (type == "linear") {
      pair.band = "interpolated";
    } else if (type == "yarn") {
      const double ramp = yarn_ramp_values[i];
      pair.band = ramp == 0.0 ? "kept" : ramp == 1.0 ? "interpolated" : "ramp";
    } else if (type == "llama3") {
      const Llama3Band band = llama3_band(base[i], model.llama3);
      pair.band = band == Llama3Band::Kept ? "kept" : band == Llama3Band::Ramp ? "ramp" : "interpolated";
    } else if (type == "dynamic" && spec.inv_freq[i] != base[i]) {
      pair.band = "ntk";
    } else if (type == "longrope" && spec.inv_freq[i] != base[i]) {
      pair.band = "rescaled";
    }
    out.pairs.push_back(pair);
  }
  return out;
}

}  // namespace posemb
