// config.json reader, the rope block: which parameter block P each layer type reads
// (`rope_scaling` if a non-empty object, else `rope_parameters`, else {}; nested by layer type in
// v5; or the block the family implies for its sliding layers), and P into a RopeScheme: rope
// type, theta, head size, rotary dim, pairing, the variant's parameters (rope_registry.hpp),
// M-RoPE sections, DeepSeek's softmax factor, or FoPE's settings.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "posemb/detail/json_reader.hpp"
#include "posemb/error.hpp"
#include "posemb/model/config/layers.hpp"
#include "posemb/model/config_options.hpp"
#include "posemb/model/families.hpp"
#include "posemb/model/positions.hpp"
#include "posemb/model/rope_registry.hpp"
#include "posemb/model/rope_scheme.hpp"
#include "posemb/rotary/fope.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/scaled.hpp"

namespace posemb::detail {

// One rope parameter block, read for one layer type.
struct RopeBlock {
  RopeScheme scheme;
  bool fope = false;
  double softmax_factor = 1.0;                  // DeepSeek's m^2
  std::optional<QueryTemperature> temperature;  // Ministral 3's llama_4_scaling_beta
};

// M-RoPE (mrope.hpp, the Qwen2-VL family): mrope_section [t, h, w] pairs summing to
// rotary_dim / 2; interleaved when mrope_interleaved is true (Qwen3-VL, Qwen3.5), else chunked.
inline void read_mrope(const JsonReader& block, RopeScheme& scheme) {
  const auto sections = block.integers("mrope_section");
  if (!sections || sections->size() != 3) {
    fail(block.name("mrope_section"), block.json().at("mrope_section").dump(),
         "expected three integers [t, h, w]");
  }
  MropeSections out{};
  for (std::size_t a = 0; a < 3; ++a) {
    const std::int64_t value = (*sections)[a];
    if (value < 0 || value > (1 << 16)) {
      fail(block.name("mrope_section") + "[" + std::to_string(a) + "]", value,
           "expected an integer in [0, 65536]");
    }
    out[a] = static_cast<int>(value);
  }
  scheme.mrope_section = out;
  scheme.mrope_layout = block.boolean("mrope_interleaved").value_or(false)
                            ? MropeLayout::Interleaved
                            : MropeLayout::Chunked;
}

// FoPE's settings from the block (fope.hpp): train_length (else max_position_embeddings),
// floor_ratio (1), ignore_zero (true), clip_floor_to_zero (must be true), d_out, sigma, seed,
// padding_sin (1).
inline FopeConfig read_fope(const JsonReader& block, const ModelPositions& model, int head_dim,
                            double theta) {
  FopeConfig fope;
  fope.head_dim = head_dim;
  fope.n_heads = model.n_heads;
  fope.n_kv_heads = model.n_kv_heads;
  fope.theta = theta;
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
  } catch (Error& error) {
    error.qualify(block.name(""));  // the FoPE settings are named as their keys
    throw;
  }
  return fope;
}

// Intern-S1-Pro's FoPE, read from a "default" block holding fope_init_factor, fope_sep_head or
// num_inv_freq not null (vLLM 0.33.0 models/interns1_pro.py, InternS1ProMoeDecoderLayer:
// use_fope; rotary_embedding/fope.py, FourierRotaryEmbedding; the checkpoint's
// modeling_interns1_pro.py, FourierEmbedding, as xtuner trains it): coefficients per key-value
// head (fope_sep_head must be true: shared coefficients are not supported), the frequencies
// above 2 pi / max_position_embeddings (num_inv_freq null) or the first num_inv_freq, D_in of
// them mixed into D_out = D_in slots, the others padded with cos 1 and sin 1; fope_init_factor
// is the Xavier gain of the initial noise (FopeConfig::sigma). posemb keeps a frequency equal to
// the floor, which theirs drop (w > floor): no power of a theta meets it exactly in practice.
inline bool has_fope_keys(const JsonReader& block) {
  const bool any[3] = {block.has("fope_init_factor"), block.has("fope_sep_head"),
                       block.has("num_inv_freq")};
  return any[0] || any[1] || any[2];
}

inline FopeConfig read_fope_keys(const JsonReader& block, const ModelPositions& model, int head_dim,
                                 double theta) {
  if (!block.boolean("fope_sep_head").value_or(false)) {
    fail(block.name("fope_sep_head"), block.has("fope_sep_head") ? "false" : "null",
         "expected true (FoPE coefficients per key-value head; shared coefficients are not "
         "supported)");
  }
  FopeConfig fope;
  fope.head_dim = head_dim;
  fope.n_heads = model.n_heads;
  fope.n_kv_heads = model.n_kv_heads;
  fope.theta = theta;
  if (!model.max_position_embeddings) {
    fail("max_position_embeddings", "null",
         "expected the training length FoPE's clip floor 2 pi / max_position_embeddings needs");
  }
  fope.train_length = *model.max_position_embeddings;
  if (auto n = block.integer("num_inv_freq"))
    fope.num_inv_freq = to_int(block.name("num_inv_freq"), *n);
  fope.sigma = block.number("fope_init_factor").value_or(fope.sigma);
  try {
    fope.d_out = resolve_fope_config(fope).second.d_in();  // vLLM: output_dim = input_dim
    resolve_fope_config(fope);
  } catch (Error& error) {
    error.qualify(block.name(""));
    throw;
  }
  return fope;
}

// The rope blocks of one decoder config, read once per layer type.
class RopeBlockReader {
 public:
  RopeBlockReader(const JsonReader& root, const ModelFamily& family, const ConfigOptions& options,
                  ModelPositions& model)
      : root_(root), family_(family), options_(options), model_(model) {}

  // Whether layer_type's rope parameters are null, in the config's block nested by layer type or
  // in the class's default block: its layers have no RoPE (BeamConfig.__post_init__'s
  // {"sliding_attention": {...}, "full_attention": None}; BeamModel.forward passes
  // position_embeddings None to those layers).
  bool without_rope(const std::string& layer_type) {
    find_block();
    if (block_ != nullptr) {
      const std::string key = config_layer_type_name(family_, layer_type);
      return nested_ && block_->contains(key) && block_->at(key).is_null();
    }
    if (family_.defaults.rope_parameters == nullptr || root_.contains("rope_parameters")) {
      return false;
    }
    const nlohmann::json defaults = nlohmann::json::parse(family_.defaults.rope_parameters);
    return defaults.contains(layer_type) && defaults.at(layer_type).is_null();
  }

  // The block of a layer type; theta, when given, replaces the block's rope_theta (a layer's own
  // theta, read_layer_thetas).
  const RopeBlock& block(const std::string& layer_type, std::optional<double> theta = {}) {
    const auto cached = blocks_.find({layer_type, theta});
    if (cached != blocks_.end()) return cached->second;
    find_block();
    std::string name = block_name_;
    const nlohmann::json* json = block_for(layer_type, name);
    // Gemma 4's sliding layers take head_dim whole (Gemma4TextRotaryEmbedding).
    const bool ignore_partial =
        family_.split == RopeSplit::Gemma4 && layer_type == "sliding_attention";
    static const nlohmann::json empty = nlohmann::json::object();
    // A block the family implies is not in the file: its keys are not logged as used.
    const JsonReader block = name.empty()
                                 ? JsonReader(json != nullptr ? *json : empty, root_.name(""))
                                 : root_.child(*json, root_.name(name + "."));
    RopeBlock out =
        read_block(block, name.empty() ? "" : root_.name(name), layer_type, ignore_partial, theta);
    return blocks_.emplace(std::make_pair(layer_type, theta), std::move(out)).first->second;
  }

 private:
  // The block P and whether it is nested by layer type.
  void find_block() {
    if (block_found_) return;
    block_found_ = true;
    for (const char* key : {"rope_scaling", "rope_parameters"}) {
      const nlohmann::json* value = root_.object(key);
      if (value != nullptr && !value->empty()) {
        block_name_ = key;
        block_ = value;
        break;
      }
    }
    if (block_ == nullptr) return;
    const JsonReader block = root_.child(*block_, root_.name(block_name_ + "."));
    if (nested_by_family_names()) {
      // Zaya's released config.json nests by "hybrid" / "hybrid_sliding" and has a rope_type
      // beside them, which ZayaConfig.convert_rope_params_to_dict deletes: read, not used.
      static_cast<void>(block.has("rope_type"));
    } else if (block.has("rope_type") || block.has("type")) {
      return;
    }
    for (const auto& item : block_->items()) {
      if (!item.value().is_object() && !item.value().is_null()) continue;
      nested_ = nested_ || item.value().is_object();
      if (!is_known_layer_type(layer_type_of_name(family_, item.key()))) {
        fail(block.name(item.key()), "{...}",
             "expected rope parameters, or rope parameters per layer type (full_attention, "
             "sliding_attention, chunked_attention, linear_attention)");
      }
    }
  }

  // Whether the block holds a block under one of the family's own layer type names.
  bool nested_by_family_names() const {
    for (const auto& [config_name, type] : layer_type_names(family_)) {
      if (block_->contains(config_name) && block_->at(config_name).is_object()) return true;
    }
    return false;
  }

  // The JSON block a layer type reads (nullptr: none); name becomes its key path ("" for a
  // block the family implies, whose keys are not in the file).
  const nlohmann::json* block_for(const std::string& layer_type, std::string& name) {
    const bool sliding = layer_type == "sliding_attention";
    nlohmann::json& synthetic = synthetic_[layer_type];
    synthetic = nlohmann::json::object();
    if (nested_) {
      const std::string key = config_layer_type_name(family_, layer_type);
      name = block_name_ + "." + key;
      if (!block_->contains(key) || !block_->at(key).is_object()) {
        root_.child(*block_, root_.name(block_name_ + "."))
            .missing(key, "expected rope parameters for every layer type in use");
      }
      return &block_->at(key);
    }
    if (block_ == nullptr && family_.defaults.rope_parameters != nullptr &&
        !root_.contains("rope_parameters")) {
      // The configuration class's default block (configuration_gpt_oss.py,
      // configuration_ministral3.py), when the config has neither rope block.
      synthetic = nlohmann::json::parse(family_.defaults.rope_parameters);
      // A default nested by layer type (configuration_modernbert.py): this layer type's block.
      if (synthetic.contains(layer_type) && synthetic[layer_type].is_object()) {
        nlohmann::json own = synthetic[layer_type];
        synthetic = std::move(own);
      }
    } else if (family_.split == RopeSplit::Gemma4 && block_ == nullptr) {
      // configuration_gemma4.py's defaults.
      synthetic = sliding ? nlohmann::json{{"rope_type", "default"}, {"rope_theta", 1e4}}
                          : nlohmann::json{{"rope_type", "proportional"},
                                           {"partial_rotary_factor", 0.25},
                                           {"rope_theta", 1e6}};
    } else if (sliding && family_.split == RopeSplit::LocalBase) {
      const double local_base = root_.number("rope_local_base_freq").value_or(1e4);
      require_positive_finite(root_.name("rope_local_base_freq"), local_base);
      synthetic = {{"rope_type", "default"}, {"rope_theta", local_base}};
    } else if (sliding && family_.split == RopeSplit::FullOnly) {
      synthetic = {{"rope_type", "default"}};
    } else {
      return block_;
    }
    name.clear();
    return &synthetic;
  }

  // theta: the layer's own (layer_theta), else P.rope_theta, else rope_theta, else
  // rotary_emb_base (GPT-NeoX), else the family's.
  double read_theta(const JsonReader& block, std::optional<double> layer_theta) const {
    if (layer_theta) return *layer_theta;
    std::optional<double> theta = block.number("rope_theta");
    if (!theta) {
      theta = root_.first_of({"rope_theta", "rotary_emb_base"},
                             [&](const std::string& key) { return root_.number(key); });
    }
    const double value = theta.value_or(family_.rope_theta);
    require_positive_finite(root_.name("rope_theta"), value);
    return value;
  }

  // The head size the rotation runs over: qk_rope_head_dim (DeepSeek), else the layer's.
  int rope_head_dim(const std::string& layer_type) const {
    if (auto dim = root_.integer("qk_rope_head_dim")) {
      return to_head_dim(root_.name("qk_rope_head_dim"), *dim);
    }
    const int head_dim = layer_head_dim(root_, family_, model_.n_heads, layer_type);
    if (head_dim == 0) {
      root_.missing("hidden_size", "expected hidden_size (or n_embd) or head_dim for RoPE");
    }
    return head_dim;
  }

  // A partial rotary factor and the key that gave it (empty: the family's default).
  struct PartialRotary {
    double fraction = 1.0;
    std::string key;
  };

  // The partial rotary factor: P.partial_rotary_factor, else partial_rotary_factor, else
  // rotary_pct (GPT-NeoX), else the family's. The block wins: convert_rope_params_to_dict
  // (modeling_rope_utils.py, transformers v5) only setdefault()s the top-level value.
  PartialRotary read_fraction(const JsonReader& block, bool ignore_partial) const {
    PartialRotary out{options_.partial_rotary_factor.value_or(family_.partial_rotary_factor), ""};
    if (auto partial = block.number("partial_rotary_factor")) {
      out = {*partial, block.name("partial_rotary_factor")};
    } else if ((partial = root_.number("partial_rotary_factor"))) {
      out = {*partial, root_.name("partial_rotary_factor")};
    } else if ((partial = root_.number("rotary_pct"))) {
      out = {*partial, root_.name("rotary_pct")};
    }
    if (ignore_partial) out.fraction = 1.0;
    if (!(out.fraction > 0.0 && out.fraction <= 1.0)) {
      fail(out.key.empty() ? block.name("partial_rotary_factor") : out.key, out.fraction,
           "expected in (0, 1]");
    }
    return out;
  }

  // Mistral 4 (families.hpp, partial_of_qk_head): the factor p given is of qk_nope + qk_rope
  // (Mistral4Config.__post_init__ sets head_dim to it and setdefault()s p = qk_rope / head_dim),
  // and its cos/sin of int(head_dim * p) features multiply the qk_rope_head_dim slice
  // (apply_rotary_pos_emb), so the two must agree: the slice rotates whole (fraction 1).
  double fraction_of_qk_head(const PartialRotary& partial, int rope_head) const {
    if (partial.key.empty()) return 1.0;
    const std::int64_t qk = root_.integer("qk_nope_head_dim").value_or(0) + rope_head;
    if (static_cast<std::int64_t>(static_cast<double>(qk) * partial.fraction) != rope_head) {
      fail(partial.key, partial.fraction,
           "expected qk_rope_head_dim / (qk_nope_head_dim + qk_rope_head_dim) = " +
               std::to_string(rope_head) + " / " + std::to_string(qk) +
               " (the rotated width must be the qk_rope_head_dim slice)");
    }
    return 1.0;
  }

  // A family whose default rope rotates the whole head whatever partial_rotary_factor says
  // (families.hpp, default_rope_whole_head: Llama); the other rope types take it
  // (modeling_rope_utils.py, ROPE_INIT_FUNCTIONS). Only the model_type's own row says so: model
  // types without a row read with Llama's row but take the factor.
  bool default_rope_whole_head(const std::string& rope_type) const {
    const ModelFamily* own = find_model_family(model_.model_type);
    return rope_type == "default" && own != nullptr && own->default_rope_whole_head;
  }

  // rotary_dim: the family's rotary_dim key (GPT-J, CodeGen; else its class default), the whole
  // head for a variant that rotates it whole, else d = int(head_dim * fraction) as HF (a double
  // product truncated). An odd d: HF builds 1 / theta^(arange(0, d, 2) / d), ceil(d / 2)
  // frequencies with the exponent over d (_compute_default_rope_parameters), rotating d + 1
  // features; that is default RoPE over d + 1 at theta^((d + 1) / d), which `theta` becomes.
  int read_rotary_dim(const RopeVariant& variant, int head_dim, double fraction,
                      RopeScheme& scheme) const {
    int rotary_dim = 0;
    const char* key = family_.rotary_dim_key;
    if (key != nullptr && (root_.has(key) || family_.defaults.rotary_dim > 0)) {
      rotary_dim =
          to_int(root_.name(key), root_.integer(key).value_or(family_.defaults.rotary_dim));
    } else if (variant.rotates_whole_head) {
      rotary_dim = head_dim;
    } else {
      rotary_dim = static_cast<int>(static_cast<double>(head_dim) * fraction);
      if (rotary_dim % 2 != 0 && rotary_dim + 1 <= head_dim && variant.odd_rotary_dim_rounds_up) {
        scheme.theta = std::pow(scheme.theta, static_cast<double>(rotary_dim + 1) / rotary_dim);
        ++rotary_dim;
      }
    }
    if (rotary_dim < 2 || rotary_dim % 2 != 0 || rotary_dim > head_dim) {
      fail("rotary_dim", rotary_dim,
           "expected an even number in [2, head_dim = " + std::to_string(head_dim) + "]");
    }
    return rotary_dim;
  }

  // The family's pairing (rotate-half when its interleave key is false), or the caller's.
  Pairing read_pairing() const {
    Pairing pairing = family_.pairing;
    if (family_.interleave_key != nullptr &&
        !root_.boolean(family_.interleave_key).value_or(true)) {
      pairing = Pairing::RotateHalf;
    }
    return options_.pairing.value_or(pairing);
  }

  // DeepSeek-V2/V3 (modeling_deepseek_v3.py): scaling *= m^2 for a scaled rope type with
  // mscale_all_dim != 0, m = 0.1 mscale_all_dim ln(factor) + 1.
  double read_softmax_factor(const JsonReader& block, const RopeScheme& scheme,
                             const std::string& why) const {
    if (family_.softmax != SoftmaxRule::DeepseekMscale || scheme.rope_type == "default") {
      return 1.0;
    }
    const double all_dim = block.number("mscale_all_dim").value_or(0.0);
    if (all_dim == 0.0) return 1.0;
    const auto* yarn = std::get_if<YarnParams>(&scheme.params);
    const double m = yarn_mscale(yarn ? yarn->factor : block.number("factor", why), all_dim);
    return m * m;
  }

  // Hunyuan (modeling_hunyuan_v1_dense.py, HunYuanDenseV1RotaryEmbedding.__init__): a dynamic
  // block with alpha has the static base theta * alpha^(d/(d-2)), d = head_dim, at every length
  // (transformers 5.24 renames it rope_type "ntk_alpha", so dynamic_rope_update never regrows it).
  void read_dynamic_alpha(const JsonReader& block, RopeScheme& scheme) const {
    auto* dynamic = std::get_if<DynamicNtkParams>(&scheme.params);
    if (!family_.dynamic_alpha || dynamic == nullptr || !block.has("alpha")) return;
    const double alpha = block.number("alpha", "");
    require_positive_finite(block.name("alpha"), alpha);
    dynamic->alpha = alpha;
  }

  // PhiMoE (modeling_phimoe.py, PhimoeRotaryEmbedding.forward): a longrope block's short_mscale
  // (up to original_max_position_embeddings) and long_mscale (beyond) scale cos / sin in place
  // of the attention factor; configuration_phimoe.py requires both to be numbers.
  void read_longrope_mscales(const JsonReader& block, RopeScheme& scheme) const {
    auto* longrope = std::get_if<LongRopeParams>(&scheme.params);
    if (!family_.longrope_mscales || longrope == nullptr) return;
    const std::string why = "required for a PhiMoE longrope block";
    longrope->short_mscale = block.number("short_mscale", why);
    longrope->long_mscale = block.number("long_mscale", why);
    require_positive_finite(block.name("short_mscale"), *longrope->short_mscale);
    require_positive_finite(block.name("long_mscale"), *longrope->long_mscale);
  }

  // The scaling factor of the variants whose transformers validator checks it (their
  // transformers_checks_factor facet), else nothing.
  static std::optional<double> checked_factor(const RopeScheme& scheme) {
    const RopeVariant& variant = rope_variant(scheme.rope_type);
    if (!variant.transformers_checks_factor) return std::nullopt;
    return variant.factor(scheme.params);
  }

  void add_warning(std::string warning) {
    for (const std::string& known : model_.warnings) {
      if (known == warning) return;
    }
    model_.warnings.push_back(std::move(warning));
  }

  // What transformers logs a warning about and still runs (modeling_rope_utils.py,
  // RotaryEmbeddingConfigMixin._validate_{linear,dynamic,yarn,llama3}_rope_parameters):
  // a factor below 1 ("factor field must be a float or int >= 1"), and a llama3 block whose
  // high_freq_factor is not above low_freq_factor (Llama-4-Scout-17B-16E-Instruct: both 1; the
  // medium band is empty).
  void note_warnings(const JsonReader& block, const RopeScheme& scheme) {
    if (const std::optional<double> factor = checked_factor(scheme); factor && *factor < 1.0) {
      std::ostringstream text;
      text << block.name("factor") << " = " << *factor
           << " is below 1: transformers expects a factor >= 1 (it shortens wavelengths)";
      add_warning(text.str());
    }
    const auto* llama3 = std::get_if<Llama3Params>(&scheme.params);
    if (llama3 == nullptr || llama3->high_freq_factor > llama3->low_freq_factor) return;
    std::ostringstream text;
    text << block.name("high_freq_factor") << " = " << llama3->high_freq_factor
         << " is not greater than " << block.name("low_freq_factor") << " = "
         << llama3->low_freq_factor << ": the band between them is empty";
    add_warning(text.str());
  }

  // Builds the spec(s) once so that an invalid value fails here, named by its block.
  static void check_scheme(const RopeScheme& scheme, const std::string& block_name) {
    try {
      scheme.spec(std::nullopt);
      if (scheme.mrope_section) scheme.mrope_spec(std::nullopt);
      if (const auto* longrope = std::get_if<LongRopeParams>(&scheme.params)) {
        const std::int64_t original = longrope->original_max_position_embeddings;
        if (original < std::numeric_limits<std::int64_t>::max()) scheme.spec(original + 1);
      }
    } catch (Error& error) {
      if (!block_name.empty()) error.add_context(block_name);
      throw;
    }
  }

  // FoPE rotates whole heads in rotate-half pairs.
  void require_whole_head_fope(double fraction, const JsonReader& block,
                               const std::string& rope_type) const {
    if (fraction != 1.0 || options_.pairing.value_or(family_.pairing) != Pairing::RotateHalf) {
      fail(block.name("rope_type"), "\"" + rope_type + "\"",
           "FoPE rotates whole heads in rotate-half pairs; expected no partial rotary and no "
           "interleaved pairing");
    }
  }

  // block_name: where the block is, for errors from its values ("" for the config itself);
  // layer_theta: the layer's own theta, or nullopt.
  RopeBlock read_block(const JsonReader& block, const std::string& block_name,
                       const std::string& layer_type, bool ignore_partial,
                       std::optional<double> layer_theta) {
    RopeBlock out;
    RopeScheme& scheme = out.scheme;
    const char* type_key = block.first_key({"rope_type", "type"});
    // The legacy "type" beside "rope_type" is read, never reported unused: transformers'
    // _check_received_keys (RotaryEmbeddingConfigMixin) drops it from the keys it checks.
    static_cast<void>(block.has("type"));
    scheme.rope_type = type_key ? *block.string(type_key) : "default";
    if (scheme.rope_type == "mrope") scheme.rope_type = "default";  // Qwen2VLConfig's rewrite
    scheme.theta = read_theta(block, layer_theta);
    const int head_dim = rope_head_dim(layer_type);
    const PartialRotary partial =
        read_fraction(block, ignore_partial || default_rope_whole_head(scheme.rope_type));
    const double fraction =
        family_.partial_of_qk_head ? fraction_of_qk_head(partial, head_dim) : partial.fraction;
    if (scheme.rope_type == "default" && family_.fope_keys && has_fope_keys(block)) {
      require_whole_head_fope(fraction, block, scheme.rope_type);
      model_.fope = read_fope_keys(block, model_, head_dim, scheme.theta);
      out.fope = true;
      return out;
    }
    if (scheme.rope_type == "fope") {
      require_whole_head_fope(fraction, block, scheme.rope_type);
      model_.fope = read_fope(block, model_, head_dim, scheme.theta);
      out.fope = true;
      return out;
    }
    const RopeVariant* variant = find_rope_variant(scheme.rope_type);
    if (variant == nullptr) {
      fail(block.name(type_key), "\"" + scheme.rope_type + "\"",
           "expected one of " + rope_type_names() + ", fope");
    }
    scheme.rope_type = variant->rope_type;  // a legacy name (Phi-3's "su") read as its variant
    scheme.head_dim = head_dim;
    scheme.rotary_dim = read_rotary_dim(*variant, head_dim, fraction, scheme);
    scheme.pairing = read_pairing();
    const RopeReadContext context{root_,
                                  block,
                                  model_.max_position_embeddings,
                                  root_.integer("original_max_position_embeddings"),
                                  fraction,
                                  "required for rope_type \"" + scheme.rope_type + "\""};
    scheme.params = rope_reader(*variant).read(context);
    read_dynamic_alpha(block, scheme);
    read_longrope_mscales(block, scheme);
    if (block.has("mrope_section")) {
      read_mrope(block, scheme);
    } else if (options_.default_mrope_section) {
      scheme.mrope_section = family_.default_mrope_section;  // chunked, as mrope_layout's default
    }
    out.softmax_factor = read_softmax_factor(block, scheme, context.why);
    if (family_.temperature == TemperatureRule::EveryLayerLlama4Beta) {
      out.temperature = read_beta_temperature(block);
    }
    note_warnings(block, scheme);
    check_scheme(scheme, block_name);
    return out;
  }

  const JsonReader& root_;
  const ModelFamily& family_;
  const ConfigOptions& options_;
  ModelPositions& model_;
  bool block_found_ = false;
  bool nested_ = false;
  std::string block_name_;
  const nlohmann::json* block_ = nullptr;
  std::map<std::pair<std::string, std::optional<double>>, RopeBlock> blocks_;  // by (type, theta)
  std::map<std::string, nlohmann::json> synthetic_;  // blocks the family implies, by layer type
};

}  // namespace posemb::detail
