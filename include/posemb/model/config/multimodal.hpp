// config.json reader, multimodal parts: get_rope_index's rules (mrope_positions.hpp) and the
// vision tower's 2-D RoPE (vision.hpp), from the top-level model_type's row of
// multimodal_families() (families.hpp) and vision_config: spatial_merge_size (2),
// tokens_per_second (4, Qwen2_5_VLVisionConfig's default); Pixtral's tower (when the top-level
// or vision_config's model_type is a Pixtral row): head_dim, else hidden_size /
// num_attention_heads; rope_theta, else rope_parameters.rope_theta, else 1e4; the Qwen tower:
// embed_dim / num_heads, else hidden_size / num_heads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "posemb/detail/json_reader.hpp"
#include "posemb/error.hpp"
#include "posemb/model/families.hpp"
#include "posemb/model/positions.hpp"
#include "posemb/rotary/mrope_positions.hpp"
#include "posemb/rotary/vision.hpp"

namespace posemb::detail {

// The vision tower of a config: the top-level row's, or Pixtral's when vision_config's own
// model_type is a Pixtral row.
inline VisionTower vision_tower(const MultimodalFamily* top, const JsonReader& vision) {
  const MultimodalFamily* own = find_multimodal_family(vision.string("model_type").value_or(""));
  if (own != nullptr && own->vision == VisionTower::Pixtral) return VisionTower::Pixtral;
  return top != nullptr ? top->vision : VisionTower::None;
}

// The vision tower's head size: width_key / heads_key of vision_config.
inline int vision_head_dim(const JsonReader& vision, const char* width_key, const char* heads_key) {
  const std::string why = "required for the vision tower's head_dim";
  const std::int64_t width = vision.integer(width_key, why);
  const std::int64_t heads = vision.integer(heads_key, why);
  if (heads < 1 || width % heads != 0) {
    fail(vision.name(heads_key), heads, "expected a divisor of " + vision.name(width_key));
  }
  return to_head_dim(vision.name(std::string(width_key) + " / " + heads_key), width / heads);
}

inline VisionRope read_pixtral_tower(const JsonReader& vision) {
  const int head_dim = vision.has("head_dim")
                           ? to_head_dim(vision.name("head_dim"), vision.integer("head_dim", ""))
                           : vision_head_dim(vision, "hidden_size", "num_attention_heads");
  std::optional<double> theta = vision.number("rope_theta");
  if (const nlohmann::json* parameters = vision.object("rope_parameters"); !theta && parameters) {
    theta = JsonReader(*parameters, vision.name("rope_parameters.")).number("rope_theta");
  }
  return pixtral_vision_rope(head_dim, theta.value_or(1e4));
}

inline void read_multimodal(const JsonReader& top, const std::string& top_type,
                            ModelPositions& model) {
  static const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json* vision_json = top.object("vision_config");
  const JsonReader vision(vision_json != nullptr ? *vision_json : empty, "vision_config.");
  const MultimodalFamily* family = find_multimodal_family(top_type);
  const std::int64_t merge = vision.integer("spatial_merge_size").value_or(2);
  if (merge < 1 || merge > 64) {
    fail(vision.name("spatial_merge_size"), merge, "expected an integer in [1, 64]");
  }
  if (family != nullptr && family->mrope_index) {
    MropeIndexRules rules;
    rules.family = *family->mrope_index;
    rules.spatial_merge_size = static_cast<int>(merge);
    rules.tokens_per_second = vision.number("tokens_per_second").value_or(4.0);
    require_positive_finite(vision.name("tokens_per_second"), rules.tokens_per_second);
    model.mrope_index = rules;
  }
  if (vision_json == nullptr) return;
  try {
    switch (vision_tower(family, vision)) {
      case VisionTower::Pixtral:
        model.vision = read_pixtral_tower(vision);
        break;
      case VisionTower::QwenMerge:
        model.vision = qwen2_vl_vision_rope(
            vision_head_dim(vision, vision.has("embed_dim") ? "embed_dim" : "hidden_size",
                            "num_heads"),
            static_cast<int>(merge));
        break;
      case VisionTower::None:
        break;
    }
  } catch (Error& error) {
    error.add_context("vision_config");
    throw;
  }
}

}  // namespace posemb::detail
