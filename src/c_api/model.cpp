// The C API's model handle: posemb::ModelPositions from a config.json or a GGUF file, and what
// each layer holds (kind, head_dim, RoPE, attention settings, T5 buckets).
#include <optional>
#include <string>
#include <vector>

#include "boundary.hpp"
#include "handles.hpp"
#include "posemb/model/gguf.hpp"
#include "posemb/model/load.hpp"

using posemb::c_api::guarded;
using posemb::c_api::require_pointer;

namespace {

std::optional<std::int64_t> seq_len_of(std::int64_t seq_len) {
  if (seq_len < 0) posemb::detail::fail("seq_len", seq_len, "expected 0 (none) or a length >= 1");
  if (seq_len == 0) return std::nullopt;
  return seq_len;
}

// As the tool's --strict: the first key the reader did not use, and how many more.
void check_strict(const posemb::ModelPositions& model, std::int32_t strict,
                  const std::string& where) {
  if (strict == 0 || model.unused_keys.empty()) return;
  const std::size_t more = model.unused_keys.size() - 1;
  throw posemb::Error(where + ": strict: " + model.unused_keys.front() + " is not used" +
                      (more > 0 ? " (and " + std::to_string(more) + " more)" : ""));
}

posemb_model* new_model(posemb::ModelPositions model, std::optional<std::int64_t> seq_len,
                        std::int32_t strict, const std::string& where) {
  check_strict(model, strict, where);
  return new posemb_model{std::move(model), seq_len};
}

const posemb::LayerPositions& layer_of(const posemb_model* model, std::int64_t layer) {
  return require_pointer(model, "model", "a posemb_model")->model.layer(layer);
}

template <class Loader>
posemb_status load(const char* path, std::int64_t seq_len, std::int32_t strict, posemb_model** out,
                   Loader&& loader) {
  return guarded([&] {
    require_pointer(path, "path", "a file name");
    require_pointer(out, "out", "a posemb_model* to write");
    const std::optional<std::int64_t> length = seq_len_of(seq_len);
    *out = new_model(loader(std::string(path), length), length, strict, path);
  });
}

}  // namespace

extern "C" {

posemb_status posemb_model_load_config(const char* path, int64_t seq_len, int32_t strict,
                                       posemb_model** out) {
  return load(path, seq_len, strict, out,
              [](const std::string& file, auto) { return posemb::load_model_positions(file); });
}

posemb_status posemb_model_load_gguf(const char* path, int64_t seq_len, int32_t strict,
                                     posemb_model** out) {
  return load(path, seq_len, strict, out,
              [](const std::string& file, std::optional<std::int64_t> length) {
                return posemb::load_gguf_positions(file, length);
              });
}

posemb_status posemb_model_parse_config(const char* json, size_t size, int64_t seq_len,
                                        int32_t strict, posemb_model** out) {
  return guarded([&] {
    require_pointer(json, "json", "config.json text");
    require_pointer(out, "out", "a posemb_model* to write");
    if (size == 0) posemb::detail::fail("size", size, "expected the text's length >= 1");
    const std::optional<std::int64_t> length = seq_len_of(seq_len);
    *out = new_model(posemb::parse_model_positions(std::string(json, size)), length, strict,
                     "config.json text");
  });
}

void posemb_model_free(posemb_model* model) { delete model; }

posemb_status posemb_model_unused_key_count(const posemb_model* model, int64_t* out) {
  return guarded([&] {
    require_pointer(model, "model", "a posemb_model");
    *require_pointer(out, "out", "an int64_t to write") =
        static_cast<int64_t>(model->model.unused_keys.size());
  });
}

posemb_status posemb_model_unused_key(const posemb_model* model, int64_t index, const char** out) {
  return guarded([&] {
    const std::vector<std::string>& keys =
        require_pointer(model, "model", "a posemb_model")->model.unused_keys;
    require_pointer(out, "out", "a const char* to write");
    if (index < 0 || index >= static_cast<int64_t>(keys.size())) {
      posemb::detail::fail("index", index,
                           "expected an unused key's index in [0, " + std::to_string(keys.size()) +
                               ")");
    }
    *out = keys[static_cast<std::size_t>(index)].c_str();
  });
}

posemb_status posemb_model_layer_count(const posemb_model* model, int64_t* out) {
  return guarded([&] {
    require_pointer(model, "model", "a posemb_model");
    *require_pointer(out, "out", "an int64_t to write") =
        static_cast<int64_t>(model->model.layers.size());
  });
}

posemb_status posemb_model_heads(const posemb_model* model, int32_t* n_heads, int32_t* n_kv_heads) {
  return guarded([&] {
    require_pointer(model, "model", "a posemb_model");
    require_pointer(n_heads, "n_heads", "an int32_t to write");
    require_pointer(n_kv_heads, "n_kv_heads", "an int32_t to write");
    *n_heads = model->model.n_heads;
    *n_kv_heads = model->model.n_kv_heads;
  });
}

posemb_status posemb_model_layer_kind(const posemb_model* model, int64_t layer,
                                      posemb_position_kind* out) {
  return guarded([&] {
    const posemb::LayerPositions& l = layer_of(model, layer);
    *require_pointer(out, "out", "a posemb_position_kind to write") =
        static_cast<posemb_position_kind>(l.kind);
  });
}

posemb_status posemb_model_layer_head_dim(const posemb_model* model, int64_t layer, int32_t* out) {
  return guarded([&] {
    const posemb::LayerPositions& l = layer_of(model, layer);
    *require_pointer(out, "out", "an int32_t to write") = l.head_dim;
  });
}

posemb_status posemb_model_layer_rope_type(const posemb_model* model, int64_t layer,
                                           const char** out) {
  return guarded([&] {
    const posemb::LayerPositions& l = layer_of(model, layer);
    *require_pointer(out, "out", "a const char* to write") =
        l.rope ? l.rope->rope_type.c_str() : "";
  });
}

posemb_status posemb_model_layer_attention(const posemb_model* model, int64_t layer,
                                           posemb_layer_attention* out) {
  return guarded([&] {
    const posemb::LayerPositions& l = layer_of(model, layer);
    require_pointer(out, "out", "a posemb_layer_attention to write");
    const posemb::LayerAttention& a = l.attention;
    posemb_layer_attention c{};
    c.softmax_attention = l.softmax_attention();
    c.has_softmax_scale = l.softmax_attention() && a.softmax_scale.has_value();
    c.softmax_scale = c.has_softmax_scale ? *a.softmax_scale : 0.0;
    c.has_sliding_window = a.sliding_window.has_value();
    c.sliding_window = a.sliding_window.value_or(0);
    c.has_attention_chunk_size = a.attention_chunk_size.has_value();
    c.attention_chunk_size = a.attention_chunk_size.value_or(0);
    c.has_query_temperature = a.query_temperature.has_value();
    if (a.query_temperature) {
      c.query_temperature_floor_scale = a.query_temperature->floor_scale;
      c.query_temperature_attn_scale = a.query_temperature->attn_scale;
      c.query_temperature_position_offset = a.query_temperature->position_offset;
    }
    c.has_logit_softcap = a.logit_softcap.has_value();
    c.logit_softcap = a.logit_softcap.value_or(0.0);
    c.attention_sinks = a.attention_sinks;
    c.alibi_bias_before_scale = a.bias_placement == posemb::BiasPlacement::BeforeScale;
    *out = c;
  });
}

posemb_status posemb_model_layer_query_temperature_form(const posemb_model* model, int64_t layer,
                                                        posemb_temperature_form* out) {
  return guarded([&] {
    const posemb::LayerPositions& l = layer_of(model, layer);
    require_pointer(out, "out", "a posemb_temperature_form to write");
    const auto& t = l.attention.query_temperature;
    *out = t && t->form == posemb::TemperatureForm::Power ? POSEMB_TEMPERATURE_POWER
                                                          : POSEMB_TEMPERATURE_FLOOR_LOG;
  });
}

posemb_status posemb_model_layer_t5_buckets(const posemb_model* model, int64_t layer, int32_t* has,
                                            posemb_t5_buckets* out) {
  return guarded([&] {
    const posemb::LayerPositions& l = layer_of(model, layer);
    require_pointer(has, "has", "an int32_t to write");
    require_pointer(out, "out", "a posemb_t5_buckets to write");
    *has = l.relative_bias.has_value();
    if (l.relative_bias) {
      *out = {l.relative_bias->num_buckets, l.relative_bias->max_distance,
              l.relative_bias->bidirectional};
    }
  });
}

posemb_status posemb_model_layer_rope(const posemb_model* model, int64_t layer, posemb_rope** out) {
  return guarded([&] {
    const posemb::LayerPositions& l = layer_of(model, layer);
    require_pointer(out, "out", "a posemb_rope* to write");
    *out = new posemb_rope{l.rope_spec(model->seq_len)};
  });
}

}  // extern "C"
