// A GGUF model file -> what every layer does with positions when llama.cpp runs it: the same
// ModelPositions vocabulary as a config.json (config.hpp), with llama.cpp's run-time semantics
// (tests/data/gguf/README.md states the rules in full; `src/` below is llama.cpp, `ggml/src/`
// its ggml, as of December 2025):
//   hparams:     llama_model::load_hparams (src/llama-model.cpp) with the keys of
//                src/llama-arch.cpp (LLM_KV_*), through llama_model_loader::get_key
//   base, scale: llama_model::get_rope_freq_base / get_rope_freq_scale (SWA layers have their
//                own), scaling type `none` forcing the scale to 1 (llama_context::llama_context,
//                src/llama-context.cpp)
//   factors:     llama_model::get_rope_factors: `rope_freqs`, or LongRoPE's long/short tensor
//                chosen once by the context size per sequence
//   YaRN:        ext_factor 1 for scaling type yarn; the ramp of ggml_rope_yarn_corr_dims
//                (ggml/src/ggml.c) and the magnitude of rope_yarn (ggml/src/ggml-cpu/ops.cpp)
//                with yarn_attn_factor as llama_context::llama_context sets it
//   pairing:     llama_model_rope_type (src/llama-model.cpp), reported in the order of the HF
//                checkpoint the converter read (convert_hf_to_gguf.py permutes the q/k rows of
//                the archs whose row says `permuted`, so their NORM rotation is HF's rotate_half)
//   attention:   each arch's graph builder (src/models/*.cpp) kq_scale; SWA / chunked layers of
//                llama_hparams::set_swa_pattern; NoPE, recurrent and ALiBi layers
//   per arch:    the arch's row in gguf_archs.hpp (its rope mode, hparams and per-layer rules,
//                citing src/models/<arch>.cpp of llama-cpp-python 0.3.36's sdist); an arch
//                without a row is refused saying whether llama.cpp runs it
//                (gguf_arch_coverage.hpp)
//
// Only the metadata and the three rope tensors are read (io/gguf_file.hpp maps the file), so a
// 100 GB model costs a few kilobytes of I/O. A file llama.cpp's loader would refuse (unknown
// architecture, missing or wrongly typed key, bad rope tensor) is a posemb::Error naming the file
// and the key.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "posemb/error.hpp"
#include "posemb/io/gguf_file.hpp"
#include "posemb/model/gguf_arch_coverage.hpp"
#include "posemb/model/gguf_archs.hpp"
#include "posemb/model/positions.hpp"
#include "posemb/model/rope_scheme.hpp"

namespace posemb {

// The hyperparameters llama.cpp reads for positions (llama_hparams, src/llama-hparams.h).
struct GgufHparams {
  std::string arch;
  GgufArch rules;  // the arch's row (gguf_archs.hpp)
  std::int64_t n_layer = 0, n_ctx_train = 0, n_embd = 0;
  std::int64_t n_layer_all = 0;      // block_count: n_layer plus the MTP (nextn) layers
  std::vector<std::int64_t> n_head;  // [n_layer]
  std::int64_t head_dim = 0;         // n_embd_head_k
  std::int64_t n_rot = 0;
  std::int64_t head_dim_swa = 0, n_rot_swa = 0;  // SWA layers' (gemma4), else head_dim, n_rot
  double freq_base = 10000.0, freq_scale = 1.0;  // every non-SWA layer
  double freq_base_swa = 10000.0, freq_scale_swa = 1.0;  // SWA / chunked layers
  std::string scaling_type = "linear";                   // none, linear, yarn, longrope
  std::int64_t n_ctx_orig = 0;                           // n_ctx_orig_yarn
  double attn_factor = 1.0;                              // rope.scaling.attn_factor
  double yarn_log_mul = 0.0;                             // rope.scaling.yarn_log_multiplier
  double beta_fast = 32.0, beta_slow = 1.0;              // YaRN's ramp (llama_hparams defaults)
  std::optional<QueryTemperature> temperature;           // attention.temperature_scale != 0
  double logit_softcap = 0.0;                            // gemma2's attn_logit_softcapping; 0: none
  double attention_scale = 0.0;                          // attention.scale (granite); 0: unset
  std::int64_t n_swa = 0;                                // 0: no SWA layers
  std::vector<bool> swa_layers;                          // [n_layer]
  std::vector<bool> rope_layers;                         // [n_layer]; false: NoPE
  std::vector<bool> recurrent_layers;                    // [n_layer]; true: linear attention
  std::vector<std::int64_t> n_head_kv;                   // [n_layer]
  std::int64_t indexer_head_dim = 0;                     // attention.indexer.key_length
  std::int64_t n_layer_dense_lead = 0;                   // leading_dense_block_count
  std::vector<std::int64_t> compress_ratios;             // [n_layer] (deepseek4; qwen4exp's QSA)
  double freq_base_compress = 0.0;                       // attention.compress_rope_freq_base
  std::optional<std::vector<std::int64_t>> sections;     // rope.dimension_sections
  GgufRopeMode rope_mode = GgufRopeMode::Norm;
  bool permuted = false;  // the converter reordered q/k rows into NORM order (GgufArch::permuted)
  std::vector<bool> indexer_owners;  // [n_layer]: owns its indexer; empty: no indexed layers
};

// One layer's rotation as llama.cpp computes it (README §3), and the name posemb gives its kind.
struct GgufLayerRope {
  std::string rope_type;     // the variant llama.cpp runs it as (model/rope_variants.hpp)
  Eigen::VectorXd inv_freq;  // [n_rot / 2]
  double attention_scale = 1.0;
};

// A GGUF's positional plan: the vocabulary (model) plus what only a GGUF has.
struct GgufPositions {
  GgufHparams hparams;
  std::int64_t n_ctx_seq = 0;  // the context size per sequence the plan is for (padded to 256)
  std::vector<std::optional<GgufLayerRope>> ropes;  // [n_layer]; nullopt on NoPE layers
  ModelPositions model;
};

namespace detail {

inline std::int64_t gguf_required(const GgufFile& file, const std::string& key) {
  const std::optional<std::uint32_t> value = file.uint32(key);
  if (!value) throw Error(key, ": missing; required by llama.cpp's loader");
  return *value;
}

// {arch}.attention.head_count: a UINT32, or an array of one integer per layer.
inline std::vector<std::int64_t> gguf_head_counts(const GgufFile& file, const std::string& key,
                                                  std::int64_t n_layer) {
  const GgufValue* value = file.find(key);
  if (value == nullptr) throw Error(key, ": missing; required by llama.cpp's loader");
  std::vector<std::int64_t> heads;
  if (value->type == GgufType::Array) {
    heads = *file.integers(key);
    if (static_cast<std::int64_t>(heads.size()) != n_layer) {
      fail(key + ".size()", heads.size(), "expected block_count = " + std::to_string(n_layer));
    }
  } else {
    heads.assign(static_cast<std::size_t>(n_layer), *file.uint32(key));
  }
  if (heads.empty() || heads[0] <= 0) fail(key, heads.empty() ? 0 : heads[0], "expected > 0");
  return heads;
}

// {arch}.attention.head_count_kv per layer (a UINT32 or one integer per layer), default the head
// counts (llama_model_base::load_hparams: n_head_kv_arr = n_head_arr, then get_key_or_arr).
inline std::vector<std::int64_t> gguf_kv_head_counts(const GgufFile& file, const std::string& key,
                                                     std::int64_t n_layer_all,
                                                     const std::vector<std::int64_t>& n_head) {
  const GgufValue* value = file.find(key);
  std::vector<std::int64_t> heads = n_head;
  if (value != nullptr && value->type == GgufType::Array) {
    heads = *file.integers(key);
    if (static_cast<std::int64_t>(heads.size()) != n_layer_all) {
      fail(key + ".size()", heads.size(), "expected block_count = " + std::to_string(n_layer_all));
    }
  } else if (value != nullptr) {
    const std::optional<std::uint32_t> count = file.uint32(key);
    if (!count) fail(key, to_string(value->type), "expected UINT32 or an ARRAY of integers");
    heads.assign(static_cast<std::size_t>(n_layer_all), *count);
  }
  heads.resize(n_head.size());
  return heads;
}

// ggml's scale 1 / factor, factor from rope.scaling.factor else rope.scale_linear; 0 or absent: 1.
inline double gguf_freq_scale(const GgufFile& file, const std::string& prefix) {
  std::optional<double> factor = file.float32(prefix + "rope.scaling.factor");
  std::string key = prefix + "rope.scaling.factor";
  if (!factor) {
    key = prefix + "rope.scale_linear";
    factor = file.float32(key);
  }
  if (!factor || *factor == 0.0) return 1.0;
  require_positive_finite(key, *factor);
  return 1.0 / *factor;
}

// n_rot: even, in (0, head_dim], = head_dim where llama.cpp's loader or graph builder demands it
// (GgufArch::rot_is_head_dim).
inline void check_gguf_rot(const GgufHparams& h, const std::string& key) {
  if (h.n_rot <= 0 || h.n_rot % 2 != 0 || h.n_rot > h.head_dim) {
    fail(key, h.n_rot,
         "expected an even number in [2, head_dim = " + std::to_string(h.head_dim) + "]");
  }
  if (h.rules.rot_is_head_dim && h.n_rot != h.head_dim) {
    fail(key, h.n_rot, "expected head_dim = " + std::to_string(h.head_dim) + " for " + h.arch);
  }
}

// attention.indexer.key_length >= n_rot: the indexer head is laid out [rope | nope]
// (deepseek32's and dots3note's graph: GGML_ASSERT(n_rot <= n_embd_indexer_head); qwen4exp's
// ggml_rope_multi: ggml_compute_forward_rope's GGML_ASSERT(n_dims <= ne0)), deepseek4's
// [nope | rope] (build_lid_top_k: GGML_ASSERT(n_embd_indexer_head >= n_embd_indexer_head_rope)).
inline void check_gguf_indexer_head(const GgufHparams& h, const std::string& prefix) {
  const bool indexer =
      h.rules.indexer != GgufIndexer::None || h.rules.compressed_attention || h.rules.qsa;
  if (indexer && h.indexer_head_dim < h.n_rot) {
    fail(prefix + "attention.indexer.key_length", h.indexer_head_dim,
         "expected >= n_rot = " + std::to_string(h.n_rot));
  }
}

// rope.dimension_sections: 1..4 integers >= 0 summing to 1 .. n_rot/2.
inline std::optional<std::vector<std::int64_t>> gguf_sections(const GgufFile& file,
                                                              const GgufHparams& h,
                                                              const std::string& key) {
  std::optional<std::vector<std::int64_t>> sections = file.integers(key);
  if (!sections) {
    if (h.rules.sections_required) {
      throw Error(key, ": missing; required by llama.cpp's loader");
    }
    return sections;
  }
  std::int64_t sum = 0;
  for (const std::int64_t s : *sections) {
    if (s < 0 || s > h.n_rot) fail(key, s, "expected sections in [0, n_rot / 2]");
    sum += s;
  }
  if (sections->empty() || sections->size() > 4 || sum < 1 || sum > h.n_rot / 2) {
    fail(key, std::to_string(sections->size()) + " sections summing to " + std::to_string(sum),
         "expected 1 to 4 sections summing to 1 .. n_rot / 2 = " + std::to_string(h.n_rot / 2));
  }
  // ggml_mrope_cache_init (ggml/src/ggml-cpu/ops.cpp) rotates the pairs of a fourth section by a
  // fourth position stream, which llama.cpp fills with the token's position in a plain token
  // batch (llama_batch_allocr, src/llama-batch.cpp) and with 0 in a multimodal
  // prompt (tools/mtmd/mtmd-helper.cpp); transformers' M-RoPE has three axes. No one answer.
  if (sections->size() == 4 && (*sections)[3] != 0) {
    fail(key + "[3]", (*sections)[3],
         "expected 0 (llama.cpp rotates a fourth section by a position stream it fills with the "
         "text position or with 0 depending on the batch; not supported)");
  }
  return sections;
}

// dflash's sections (llama_model_rope_type): MROPE iff any of rope.dimension_sections is
// non-zero, else the row's mode and no sections. The converter's temporal-only [head_dim / 2, 0,
// 0, 0] puts every pair in section 0 (ggml_mrope_cache_init: sector = (i0 / 2) % sum, ggml
// asserting sum <= n_rot), the same as [n_rot / 2] when n_rot is smaller than the head.
inline void read_gguf_draft_sections(const GgufFile& file, GgufHparams& h) {
  const std::string key = h.arch + ".rope.dimension_sections";
  const std::optional<std::vector<std::int64_t>> raw = file.integers(key);
  if (!raw || std::all_of(raw->begin(), raw->end(), [](std::int64_t s) { return s == 0; })) return;
  h.rope_mode = GgufRopeMode::Mrope;
  const bool temporal_only =
      std::all_of(raw->begin() + 1, raw->end(), [](std::int64_t s) { return s == 0; });
  if (temporal_only && raw->front() > h.n_rot / 2 && raw->front() <= h.n_rot) {
    h.sections = std::vector<std::int64_t>{h.n_rot / 2};
    return;
  }
  h.sections = gguf_sections(file, h, key);
}

// The SWA layers' head and rotary widths: llama_model_base::load_hparams reads
// attention.key_length_swa (default the head width) and rope.dimension_count_swa (default n_rot);
// the row's swa_head says the arch uses them (gemma4's load_arch_hparams requires the first).
inline void read_gguf_swa_sizes(const GgufFile& file, GgufHparams& h) {
  h.head_dim_swa = h.head_dim;
  h.n_rot_swa = h.n_rot;
  const std::string p = h.arch + ".";
  if (h.rules.swa_rot) {
    // laguna, step35: llama_hparams::n_rot(il) of the SWA layers, rope.dimension_count_swa.
    h.n_rot_swa = file.uint32(p + "rope.dimension_count_swa").value_or(h.n_rot);
    if (h.n_rot_swa <= 0 || h.n_rot_swa % 2 != 0 || h.n_rot_swa > h.head_dim) {
      fail(p + "rope.dimension_count_swa", h.n_rot_swa,
           "expected an even number in [2, head_dim = " + std::to_string(h.head_dim) + "]");
    }
  }
  if (!h.rules.swa_head) return;
  h.head_dim_swa = gguf_required(file, p + "attention.key_length_swa");
  require_positive(p + "attention.key_length_swa", h.head_dim_swa);
  h.n_rot_swa = file.uint32(p + "rope.dimension_count_swa").value_or(h.n_rot);
  if (h.n_rot_swa <= 0 || h.n_rot_swa % 2 != 0 || h.n_rot_swa > h.head_dim_swa) {
    fail(p + "rope.dimension_count_swa", h.n_rot_swa,
         "expected an even number in [2, key_length_swa = " + std::to_string(h.head_dim_swa) + "]");
  }
}

// Model-wide sizes: block_count, context_length, embedding_length, head counts, head_dim, n_rot.
inline void read_gguf_sizes(const GgufFile& file, GgufHparams& h) {
  const std::string p = h.arch + ".";
  h.n_layer = gguf_required(file, p + "block_count");
  // The plan's size is bounded (positions.hpp: max_model_layers, max_model_rope_pairs).
  if (h.n_layer < 1 || h.n_layer > max_model_layers) {
    fail(p + "block_count", h.n_layer, "expected 1 .. " + std::to_string(max_model_layers));
  }
  h.n_ctx_train = gguf_required(file, p + "context_length");
  require_positive(p + "context_length", h.n_ctx_train);
  h.n_embd = gguf_required(file, p + "embedding_length");
  require_positive(p + "embedding_length", h.n_embd);
  h.n_layer_all = h.n_layer;
  // llama_model_base::load_hparams reads nextn_predict_layers for every arch;
  // llama_hparams::n_layer() = block_count - nextn_predict_layers: the graph runs n_layer()
  // layers, the MTP layers only in graph_mtp (speculative decoding).
  std::int64_t nextn = file.uint32(p + "nextn_predict_layers").value_or(0);
  if (nextn >= h.n_layer) {
    fail(p + "nextn_predict_layers", nextn,
         "expected < block_count = " + std::to_string(h.n_layer));
  }
  // deepseek4's load_arch_hparams: n_layer_nextn = 0 when the file lacks the first MTP layer's
  // blk.{block_count - nextn}.nextn.eh_proj.weight (a conversion without the MTP tensors).
  const std::string mtp_probe =
      "blk." + std::to_string(h.n_layer - nextn) + ".nextn.eh_proj.weight";
  if (h.rules.nextn_if_tensor && file.find_tensor(mtp_probe) == nullptr) nextn = 0;
  h.n_layer -= nextn;
  h.n_head = gguf_head_counts(file, p + "attention.head_count", h.n_layer_all);
  h.n_head.resize(static_cast<std::size_t>(h.n_layer));
  h.n_head_kv = gguf_kv_head_counts(file, p + "attention.head_count_kv", h.n_layer_all, h.n_head);
  const std::optional<std::uint32_t> key_length = file.uint32(p + "attention.key_length");
  h.head_dim = key_length ? *key_length : h.n_embd / h.n_head[0];
  require_positive(key_length ? p + "attention.key_length" : p + "embedding_length / head_count",
                   h.head_dim);
  const std::optional<std::uint32_t> n_rot = file.uint32(p + "rope.dimension_count");
  h.n_rot = n_rot ? *n_rot : h.head_dim;
  // deepseek2 with MLA (llama_hparams::is_mla: both *_length_mla keys): q and k are
  // key_length_mla = nope + rope wide, n_rot the rope slice (src/models/deepseek2.cpp,
  // n_embd_head_qk_rope = n_rot); n_rot still defaults to key_length (load_hparams).
  if (h.rules.swa_mla || h.rules.mla_required) {
    // get_key (required) of both MLA widths: dots3note's, hy_v4's and bailingmoe3's
    // load_arch_hparams; glm-dsa's load_arch_tensors throws without them ("GLM_DSA architecture
    // requires MLA").
    gguf_required(file, p + "attention.key_length_mla");
    gguf_required(file, p + "attention.value_length_mla");
  }
  const std::optional<std::uint32_t> k_mla = file.uint32(p + "attention.key_length_mla");
  if (h.rules.mla && k_mla && file.uint32(p + "attention.value_length_mla")) {
    h.head_dim = *k_mla;
    require_positive(p + "attention.key_length_mla", h.head_dim);
  }
  check_gguf_rot(h, p + "rope.dimension_count");
  require_model_rope_pairs(p + "block_count", h.n_layer, h.n_layer * (h.n_rot / 2));
  read_gguf_swa_sizes(file, h);
}

// The draft and adapter rows' keys (GgufArch::required_keys, target_layers, block_count_fixed,
// unmodelled_key), as their load_arch_hparams and graphs check them: eagle3's "requires exactly 3
// entries in 'extract_layers'" and GGML_ASSERT(n_layer == 1), dflash's "requires
// 'target_layers'" and graph_dsv4 for hyper_connection.count > 0.
inline void read_gguf_draft_keys(const GgufFile& file, const GgufHparams& h) {
  const std::string p = h.arch + ".";
  const GgufArch& a = h.rules;
  for (std::size_t at = 0; at < a.required_keys.size();) {
    const std::size_t end = std::min(a.required_keys.find(' ', at), a.required_keys.size());
    const std::string key = p + std::string(a.required_keys.substr(at, end - at));
    if (file.find(key) == nullptr) throw Error(key, ": missing; required by llama.cpp's loader");
    at = end + 1;
  }
  if (a.target_layers) {
    const std::string key = p + "target_layers";
    const std::optional<std::vector<std::int64_t>> ids = file.integers(key);
    if (!ids) throw Error(key, ": missing; required by llama.cpp's loader (the target's layers)");
    if (a.target_layer_count > 0 &&
        static_cast<std::int64_t>(ids->size()) != a.target_layer_count) {
      fail(key + ".size()", ids->size(), "expected " + std::to_string(a.target_layer_count));
    }
  }
  if (a.block_count_fixed > 0 && h.n_layer != a.block_count_fixed) {
    fail(p + "block_count", h.n_layer,
         "expected " + std::to_string(a.block_count_fixed) + " (" + std::string(a.source) + ")");
  }
  if (a.unmodelled_key.empty()) return;
  const std::string key = p + std::string(a.unmodelled_key);
  const std::uint32_t value = file.uint32(key).value_or(0);
  if (value > 0) {
    fail(key, value,
         "expected 0 or absent: a value > 0 selects a graph of " + std::string(a.source) +
             " whose rotations posemb does not model");
  }
}

// dots3note (GgufArch::swa_mla), once the SWA layers are known: the SWA layers' MLA head
// attention.key_length_mla_swa (load_arch_hparams reads it and value_length_mla_swa with get_key),
// and the one width every layer rotates, the graph's n_embd_head_qk_rope = hparams.n_rot() =
// n_rot(0): rope.dimension_count_swa (default rope.dimension_count) when layer 0 slides.
inline void read_gguf_mla_swa(const GgufFile& file, GgufHparams& h) {
  const std::string p = h.arch + ".";
  gguf_required(file, p + "attention.value_length_mla_swa");
  const std::string head_key = p + "attention.key_length_mla_swa";
  h.head_dim_swa = gguf_required(file, head_key);
  const std::string swa_key = p + "rope.dimension_count_swa";
  const std::optional<std::uint32_t> n_rot_swa = file.uint32(swa_key);
  const bool swa_rot = h.swa_layers[0] && n_rot_swa.has_value();
  if (swa_rot) h.n_rot = *n_rot_swa;
  h.n_rot_swa = h.n_rot;
  const std::string key = swa_rot ? swa_key : p + "rope.dimension_count";
  check_gguf_rot(h, key);
  if (h.n_rot > h.head_dim_swa) {
    fail(key, h.n_rot, "expected <= " + head_key + " = " + std::to_string(h.head_dim_swa));
  }
  check_gguf_indexer_head(h, p);
  require_model_rope_pairs(p + "block_count", h.n_layer, h.n_layer * (h.n_rot / 2));
}

// GLM_5_2_DEFAULT_INDEXER_TYPES (src/models/glm-dsa.cpp): layers 0 and 1, then every fourth from
// 2 to 74, own an indexer; the table's 78 entries end there (the rest of the array is 0).
inline bool glm52_default_indexer_owner(std::int64_t il) {
  return il < 2 || (il < 78 && (il - 2) % 4 == 0);
}

// attention.indexer.types (llama_model_loader::get_key_or_arr into is_indexer_full_impl): an
// ARRAY of n_layer() BOOL or integer flags, or one UINT32 for every layer; nullopt if absent.
inline std::optional<std::vector<bool>> gguf_indexer_types(const GgufFile& file,
                                                           const GgufHparams& h) {
  const std::string key = h.arch + ".attention.indexer.types";
  const GgufValue* value = file.find(key);
  if (value == nullptr) return std::nullopt;
  if (value->type != GgufType::Array) {
    const std::optional<std::uint32_t> flag = file.uint32(key);
    return std::vector<bool>(static_cast<std::size_t>(h.n_layer), *flag != 0);
  }
  const std::vector<std::int64_t> flags = file.flags(key);
  if (static_cast<std::int64_t>(flags.size()) != h.n_layer) {
    fail(key + ".size()", flags.size(),
         "expected n_layer = block_count - nextn_predict_layers = " + std::to_string(h.n_layer));
  }
  return std::vector<bool>(flags.begin(), flags.end());
}

// attention.indexer.key_length, the indexer's head width: required (load_arch_hparams' get_key);
// >= n_rot (deepseek32, glm-dsa: the graph's GGML_ASSERT(n_rot <= n_embd_indexer_head)), or with
// `strict` > n_rot and attention.indexer.head_count > 0 (hy_v4: "bad indexer head count / key
// length").
inline void read_gguf_indexer_head(const GgufFile& file, GgufHparams& h, bool strict) {
  const std::string p = h.arch + ".";
  h.indexer_head_dim = gguf_required(file, p + "attention.indexer.key_length");
  if (strict && h.indexer_head_dim <= h.n_rot) {
    fail(p + "attention.indexer.key_length", h.indexer_head_dim,
         "expected > n_rot = " + std::to_string(h.n_rot));
  }
  check_gguf_indexer_head(h, p);
  if (!strict) return;
  require_positive(p + "attention.indexer.head_count",
                   file.uint32(p + "attention.indexer.head_count").value_or(0));
}

// The layers that own an indexer by attention.indexer.types (GgufIndexer): by default every
// layer below a 1048576 context, GLM-5.2's table from it (TypesOrGlm52: glm-dsa), or none
// (TypesIfTopK: hy_v4). Layer 0 must own one: hy_v4's load_arch_hparams throws, glm-dsa's graph
// asserts a "shared" layer follows a "full" one.
inline std::vector<bool> gguf_indexer_owners(const GgufFile& file, const GgufHparams& h) {
  const GgufIndexer rule = h.rules.indexer;
  const auto n = static_cast<std::size_t>(h.n_layer);
  std::vector<bool> owners(n, rule == GgufIndexer::TypesOrGlm52);
  if (rule == GgufIndexer::TypesOrGlm52 && h.n_ctx_train >= 1048576) {
    for (std::size_t il = 0; il < n; ++il) {
      owners[il] = glm52_default_indexer_owner(static_cast<std::int64_t>(il));
    }
  }
  if (auto types = gguf_indexer_types(file, h)) owners = std::move(*types);
  if (!owners[0]) {
    fail(h.arch + ".attention.indexer.types[0]", 0,
         "expected 1: layer 0 owns an indexer (nothing precedes it to share)");
  }
  return owners;
}

// The lightning indexer of a row with one (GgufArch::indexer): none for hy_v4 without
// attention.indexer.top_k > 0 (its load_arch_hparams: "DSA is absent on the all-full_attention
// checkpoints"), else its head width (deepseek32's, dots3note's, minimax-m3's, deepseek4's,
// glm-dsa's load_arch_hparams require it), leading_dense_block_count (AfterDenseLead) or the owners
// (attention.indexer.types).
inline void read_gguf_indexer(const GgufFile& file, GgufHparams& h) {
  const GgufIndexer rule = h.rules.indexer;
  if (rule == GgufIndexer::None && !h.rules.compressed_attention && !h.rules.qsa) return;
  const bool if_top_k = rule == GgufIndexer::TypesIfTopK;
  if (if_top_k && file.uint32(h.arch + ".attention.indexer.top_k").value_or(0) == 0) return;
  read_gguf_indexer_head(file, h, if_top_k);
  if (rule == GgufIndexer::AfterDenseLead) {
    h.n_layer_dense_lead = file.uint32(h.arch + ".leading_dense_block_count").value_or(0);
  }
  if (if_top_k || rule == GgufIndexer::TypesOrGlm52)
    h.indexer_owners = gguf_indexer_owners(file, h);
}

// rope.scaling.yarn_ext_factor and yarn_attn_factor (grok's load_arch_hparams, then
// llama_context): the ext factor as llama_context would choose it anyway (1 with YaRN, else 0;
// posemb models ggml's ramp whole or not at all, anything else is refused), the attn factor the
// magnitude without YaRN (with YaRN llama_context recomputes it), times rope.scaling.attn_factor.
inline void read_gguf_yarn_ext_keys(const GgufFile& file, GgufHparams& h) {
  const std::string p = h.arch + ".";
  const double expected = h.scaling_type == "yarn" ? 1.0 : 0.0;
  if (const auto ext = file.float32(p + "rope.scaling.yarn_ext_factor")) {
    if (*ext != expected) {
      fail(p + "rope.scaling.yarn_ext_factor", *ext,
           "expected " + std::string(expected == 1.0 ? "1 (scaling type yarn)" : "0") +
               ": a partial ramp is not supported");
    }
  }
  const auto attn = file.float32(p + "rope.scaling.yarn_attn_factor");
  if (attn && h.scaling_type != "yarn") {
    require_positive_finite(p + "rope.scaling.yarn_attn_factor", *attn);
    h.attn_factor *= *attn;
  }
}

// The row's YaRN keys (GgufArch::yarn_log_mul, yarn_betas) and attention temperature:
//   yarn_log_multiplier: as written (mistral3), or the converter's 0.1 * mscale_all_dim divided
//                        back by the float 0.1f (deepseek2 and its kin's load_arch_hparams)
//   yarn_beta_fast / _slow: llama_context's cparams.yarn_beta_* (defaults 32 / 1)
//   temperature_scale s != 0: q *= log(floor(pos / L) + 1) s + 1 (llm_graph_input_attn_temp,
//                        f_attn_temp_offset 0), L from temperature_length or n_ctx_orig_yarn
inline void read_gguf_yarn_keys(const GgufFile& file, GgufHparams& h) {
  const std::string p = h.arch + ".";
  const GgufArch& a = h.rules;
  const std::string log_key = p + "rope.scaling.yarn_log_multiplier";
  const std::optional<double> log_mul = file.float32(log_key);
  if (a.yarn_log_mul != GgufYarnLogMul::None && log_mul) {
    const double tenth = static_cast<double>(0.1f);
    h.yarn_log_mul = a.yarn_log_mul == GgufYarnLogMul::Raw ? *log_mul : *log_mul / tenth;
    if (!(std::isfinite(h.yarn_log_mul) && h.yarn_log_mul >= 0.0)) {
      fail(log_key, *log_mul, "expected a finite number >= 0");
    }
  }
  if (a.yarn_betas) {
    h.beta_fast = file.float32(p + "rope.scaling.yarn_beta_fast").value_or(a.beta_fast_default);
    h.beta_slow = file.float32(p + "rope.scaling.yarn_beta_slow").value_or(1.0);
    require_positive_finite(p + "rope.scaling.yarn_beta_slow", h.beta_slow);
    if (!(h.beta_fast > h.beta_slow && std::isfinite(h.beta_fast))) {
      fail(p + "rope.scaling.yarn_beta_fast", h.beta_fast, "expected a finite number > beta_slow");
    }
  }
  if (a.yarn_ext_keys) read_gguf_yarn_ext_keys(file, h);
  if (a.temperature == GgufTemperature::None) return;
  const double scale = file.float32(p + "attention.temperature_scale").value_or(0.0);
  if (scale == 0.0) return;
  if (!std::isfinite(scale)) fail(p + "attention.temperature_scale", scale, "expected finite");
  const std::string length_key = a.temperature == GgufTemperature::LengthKey
                                     ? p + "attention.temperature_length"
                                     : p + "rope.scaling.original_context_length";
  const double length = a.temperature == GgufTemperature::LengthKey
                            ? static_cast<double>(file.uint32(length_key).value_or(0))
                            : static_cast<double>(h.n_ctx_orig);
  require_positive_finite(length_key + " (the temperature's floor scale)", length);
  h.temperature = QueryTemperature{length, scale, 0, TemperatureForm::FloorLog};
}

// Base, scale, scaling type, original context and attention factor (load_hparams).
inline void read_gguf_rope_scaling(const GgufFile& file, GgufHparams& h) {
  const std::string p = h.arch + ".";
  if (auto base = file.float32(p + "rope.freq_base")) h.freq_base = *base;
  require_positive_finite(p + "rope.freq_base", h.freq_base);
  const std::optional<double> alpha = file.float32(p + "rope.scaling.alpha");
  if (h.rules.ntk_alpha && alpha && *alpha > 0.0) {
    // hunyuan_vl's load_arch_hparams (XDRoPE / NTK-aware): base * alpha^(d / (d - 2)), d the head
    // width; llama.cpp computes it in float.
    const double d = static_cast<double>(h.head_dim);
    h.freq_base = static_cast<float>(h.freq_base * std::pow(*alpha, d / (d - 2.0)));
    require_positive_finite(p + "rope.scaling.alpha (the scaled base)", h.freq_base);
  }
  h.freq_scale = gguf_freq_scale(file, p);
  if (auto type = file.string(p + "rope.scaling.type")) {
    if (!gguf_scaling_type_known(*type)) {
      fail(p + "rope.scaling.type", "\"" + *type + "\"", "expected " + gguf_scaling_types());
    }
    h.scaling_type = *type;
  }
  if (h.scaling_type == "none") h.freq_scale = 1.0;  // llama_context::llama_context
  const std::optional<std::uint32_t> orig = file.uint32(p + "rope.scaling.original_context_length");
  h.n_ctx_orig = orig && *orig != 0 ? *orig : h.n_ctx_train;
  if (auto attn = file.float32(p + "rope.scaling.attn_factor")) h.attn_factor = *attn;
  require_positive_finite(p + "rope.scaling.attn_factor", h.attn_factor);
  read_gguf_yarn_keys(file, h);
  // SWA layers default to the global values (gemma3: base 10000 and scale 1, below).
  h.freq_base_swa = h.freq_base;
  h.freq_scale_swa = h.freq_scale;
  if (auto base = file.float32(p + "rope.freq_base_swa")) h.freq_base_swa = *base;
  require_positive_finite(p + "rope.freq_base_swa", h.freq_base_swa);
}

// Per-layer flags (attention.sliding_window_pattern, attention.recurrent_layers: an ARRAY of
// BOOL or integers, one per layer, as llama_model_loader::get_arr reads it), nullopt if absent.
inline std::optional<std::vector<bool>> gguf_layer_flags(const GgufFile& file,
                                                         const std::string& key,
                                                         std::int64_t n_layer_all,
                                                         std::int64_t n_layer) {
  const GgufValue* value = file.find(key);
  if (value == nullptr || value->type != GgufType::Array) return std::nullopt;
  const std::vector<std::int64_t> flags = file.flags(key);
  if (static_cast<std::int64_t>(flags.size()) != n_layer_all) {
    fail(key + ".size()", flags.size(), "expected block_count = " + std::to_string(n_layer_all));
  }
  return std::vector<bool>(flags.begin(), flags.begin() + n_layer);
}

// The SWA period and window of the arch's row (GgufArch's swa_* and chunk columns, from each
// load_arch_hparams): llama_hparams::set_swa_pattern makes layer il SWA iff il % P < P - 1, P
// from attention.sliding_window_pattern when it is a UINT32. Sets the SWA base and scale.
// Returns the period (0: no SWA layers) and the NoPE step.
inline std::pair<std::int64_t, std::int64_t> read_gguf_swa(const GgufFile& file, GgufHparams& h) {
  const GgufArch& a = h.rules;
  const std::string p = h.arch + ".";
  const std::optional<std::uint32_t> window = file.uint32(p + "attention.sliding_window");
  std::optional<std::uint32_t> pattern;
  const GgufValue* pattern_value = file.find(p + "attention.sliding_window_pattern");
  if (pattern_value == nullptr || pattern_value->type != GgufType::Array) {
    pattern = file.uint32(p + "attention.sliding_window_pattern");
  }
  if (pattern && *pattern == 0) fail(p + "attention.sliding_window_pattern", 0, "expected > 0");
  if (a.chunk > 0) {
    // llama4: attention.sliding_window = 0 turns the chunks off; the NoPE step becomes n_layer.
    if (window && *window == 0) return {0, h.n_layer};
    h.n_swa = a.chunk;
    return {pattern ? *pattern : a.swa_period, a.nope_step};
  }
  const bool active = (a.swa_flags_required || a.swa_period > 0 || a.swa_every_layer) &&
                      (a.swa_if_layers == 0 || h.n_layer == a.swa_if_layers);
  if (!active || (a.swa_if_window && !(window && *window > 0))) return {0, a.nope_step};
  if (!window && a.swa_window_required) {
    throw Error(p + "attention.sliding_window", ": missing; required by llama.cpp's loader");
  }
  h.n_swa = window ? *window : a.swa_window_default;
  require_positive(p + "attention.sliding_window", h.n_swa);
  if (a.swa_window_fixed > 0) h.n_swa = a.swa_window_fixed;
  if (a.swa_base == GgufSwaBase::KeyOr10000) {
    h.freq_base_swa = file.float32(p + "rope.freq_base_swa").value_or(10000.0);
  } else if (a.swa_base == GgufSwaBase::Global) {
    h.freq_base_swa = h.freq_base;
  } else if (a.swa_base == GgufSwaBase::Key && !file.float32(p + "rope.freq_base_swa")) {
    throw Error(p + "rope.freq_base_swa", ": missing; required by llama.cpp's loader");
  }
  if (a.swa_unscaled) h.freq_scale_swa = 1.0;
  return {pattern ? *pattern : a.swa_period, a.nope_step};
}

// Whether layer il slides by the period P (llama_hparams::set_swa_pattern): il % P < P - 1, or
// with dense_first il % P != 0; every layer for a row with swa_every_layer (lfm2) and a window.
inline bool gguf_swa_layer(const GgufHparams& h, std::int64_t il, std::int64_t period) {
  if (h.rules.swa_every_layer) return h.n_swa > 0;
  if (period <= 0) return false;
  return h.rules.swa_dense_first ? il % period != 0 : il % period < period - 1;
}

// QSA's block size per layer: attention.compress_ratios, a UINT32 or one per layer of
// block_count, default 0 (qwen4exp's load_arch_hparams: get_key_or_arr, optional); a layer runs
// QSA iff it is an attention layer and r > 0 (build_layer_attn), r <= 64
// (llama_memory_hybrid_idx::set_input_qsa: GGML_ASSERT(r <= 64)).
inline void read_gguf_qsa_ratios(const GgufFile& file, GgufHparams& h) {
  const std::string key = h.arch + ".attention.compress_ratios";
  const std::vector<std::int64_t> dense(static_cast<std::size_t>(h.n_layer), 0);
  h.compress_ratios = gguf_kv_head_counts(file, key, h.n_layer_all, dense);
  for (std::size_t il = 0; il < h.compress_ratios.size(); ++il) {
    const std::int64_t r = h.compress_ratios[il];
    if (r < 0 || r > 64) fail(key + "[" + std::to_string(il) + "]", r, "expected 0 .. 64");
    if (h.recurrent_layers[il]) h.compress_ratios[il] = 0;
  }
}

// SWA / chunked / NoPE / recurrent layers, by the arch's row:
//   SWA:       read_gguf_swa, or the per-layer flags of attention.sliding_window_pattern
//              (load_swa_pattern's get_arr)
//   NoPE:      use_rope iff (il + 1) % step != 0 (llama4, smollm3: n_no_rope_layer_step); none
//              at all when rope.scaling.finetuned is false (granite: rope_pattern); the zero
//              flags of attention.rope_pattern (granite_swa: llama_hparams::has_rope)
//   recurrent: attention.recurrent_layers, else every layer but each full_attention_interval-th
//              (qwen3next's load_arch_hparams)
inline void read_gguf_layer_pattern(const GgufFile& file, GgufHparams& h) {
  const std::string p = h.arch + ".";
  const auto n = static_cast<std::size_t>(h.n_layer);
  h.swa_layers.assign(n, false);
  h.rope_layers.assign(n, h.rules.alibi_max_bias == 0.0);
  h.recurrent_layers.assign(n, false);
  const auto [period, nope_step] = read_gguf_swa(file, h);
  for (std::size_t il = 0; il < n; ++il) {
    const auto layer = static_cast<std::int64_t>(il);
    h.swa_layers[il] = gguf_swa_layer(h, layer, period);
    if (nope_step > 0 && (layer + 1) % nope_step == 0) h.rope_layers[il] = false;
  }
  // lfm2's and deepseek4's load_arch_hparams set every layer's flag themselves, reading no
  // pattern key.
  if (h.n_swa > 0 && h.rules.chunk == 0 && !h.rules.swa_every_layer) {
    const std::string key = p + "attention.sliding_window_pattern";
    const auto flags = gguf_layer_flags(file, key, h.n_layer_all, h.n_layer);
    if (flags) h.swa_layers = *flags;
    if (!flags && h.rules.swa_flags_required) {
      throw Error(key,
                  ": missing (an ARRAY of one flag per layer); required by llama.cpp's loader");
    }
  }
  if (h.rules.rope_swa_only && h.n_swa > 0) {
    // cohere2, muse-glimmer, exaone-moe, smallthinker: the graph rotates only when
    // hparams.is_swa(il); the full-attention layers are NoPE.
    for (std::size_t il = 0; il < n; ++il)
      h.rope_layers[il] = h.rope_layers[il] && h.swa_layers[il];
  }
  if (h.rules.rope_switch) {
    const GgufValue* finetuned = file.find(p + "rope.scaling.finetuned");
    if (finetuned != nullptr && finetuned->type != GgufType::Bool) {
      fail(p + "rope.scaling.finetuned", to_string(finetuned->type), "expected BOOL");
    }
    if (finetuned != nullptr && finetuned->unsigned_value == 0) h.rope_layers.assign(n, false);
  }
  if (h.rules.rope_pattern) {
    const auto flags =
        gguf_layer_flags(file, p + "attention.rope_pattern", h.n_layer_all, h.n_layer);
    for (std::size_t il = 0; flags && il < n; ++il) {
      if (!(*flags)[il]) h.rope_layers[il] = false;
    }
  }
  if (h.rules.recurrent_no_kv) {
    // lfm2, granitehybrid, plamo2, deci: is_recr_impl[il] = n_head_kv(il) == 0 (short
    // convolution, Mamba or linear layers: no positions).
    for (std::size_t il = 0; il < n; ++il) {
      h.recurrent_layers[il] = h.n_head_kv[il] == 0;
      if (h.recurrent_layers[il]) h.rope_layers[il] = false;
    }
  }
  if (h.rules.recurrent_interval > 0) {
    const auto flags =
        gguf_layer_flags(file, p + "attention.recurrent_layers", h.n_layer_all, h.n_layer);
    const std::string key = p + "full_attention_interval";
    const std::int64_t interval = file.uint32(key).value_or(h.rules.recurrent_interval);
    require_positive(key, interval);
    for (std::size_t il = 0; il < n; ++il) {
      h.recurrent_layers[il] =
          flags ? (*flags)[il] : (static_cast<std::int64_t>(il) + 1) % interval != 0;
      if (h.recurrent_layers[il]) h.rope_layers[il] = false;
    }
  }
  if (h.rules.qsa) read_gguf_qsa_ratios(file, h);
}

// rope.dimension_sections and the mode they select: the row's rule (dflash's any section,
// glm4's sections[0] > 0 and sections[1] > 0), else the sections as written.
inline void read_gguf_sections_mode(const GgufFile& file, GgufHparams& h) {
  if (h.rules.mrope_if_any_section) {
    read_gguf_draft_sections(file, h);
    return;
  }
  h.sections = gguf_sections(file, h, h.arch + ".rope.dimension_sections");
  if (h.rules.mrope_if_sections && h.sections) {
    // llama_model_rope_type: GLM4 is MROPE iff llama_hparams::use_mrope(), i.e. sections[0] > 0
    // and sections[1] > 0; otherwise NORM, and the sections are not used.
    const std::vector<std::int64_t>& s = *h.sections;
    if (s[0] > 0 && s.size() > 1 && s[1] > 0) {
      h.rope_mode = GgufRopeMode::Mrope;
    } else {
      h.sections.reset();
    }
  }
}

// general.architecture -> the arch's row; an arch without one is refused saying whether the
// pinned llama.cpp runs it (gguf_arch_coverage.hpp), so a user tells posemb's gap from a broken
// file.
inline const GgufArch& gguf_arch_row(const GgufFile& file) {
  const std::optional<std::string> arch = file.string("general.architecture");
  if (!arch) throw Error("general.architecture", ": missing; required by llama.cpp's loader");
  if (const GgufArch* row = find_gguf_arch(*arch)) return *row;
  fail("general.architecture", "\"" + *arch + "\"",
       "expected one of " + gguf_known_archs() + "; " + gguf_arch_verdict(*arch));
}

// deepseek4's load_arch_hparams: attention.compress_ratios, an ARRAY at least block_count long
// (get_arr_n, else "compress_ratios is shorter than block_count"), each 0, 4 or 128
// (load_arch_tensors refuses others), and attention.compress_rope_freq_base, both required.
inline void read_gguf_compress(const GgufFile& file, GgufHparams& h) {
  const std::string key = h.arch + ".attention.compress_ratios";
  const std::optional<std::vector<std::int64_t>> ratios = file.integers(key);
  if (!ratios) throw Error(key, ": missing; required by llama.cpp's loader");
  if (static_cast<std::int64_t>(ratios->size()) < h.n_layer_all) {
    fail(key + ".size()", ratios->size(),
         "expected >= block_count = " + std::to_string(h.n_layer_all));
  }
  h.compress_ratios.assign(ratios->begin(), ratios->begin() + h.n_layer);
  for (std::size_t il = 0; il < h.compress_ratios.size(); ++il) {
    const std::int64_t r = h.compress_ratios[il];
    if (r != 0 && r != 4 && r != 128)
      fail(key + "[" + std::to_string(il) + "]", r, "expected 0, 4 or 128");
  }
  const std::string base_key = h.arch + ".attention.compress_rope_freq_base";
  const std::optional<double> base = file.float32(base_key);
  if (!base) throw Error(base_key, ": missing; required by llama.cpp's loader");
  require_positive_finite(base_key, *base);
  h.freq_base_compress = *base;
}

inline GgufHparams read_gguf_hparams(const GgufFile& file) {
  GgufHparams h;
  h.rules = gguf_arch_row(file);
  h.arch = std::string(h.rules.name);
  h.rope_mode = h.rules.mode;
  h.permuted = h.rules.permuted;
  read_gguf_sizes(file, h);
  read_gguf_indexer(file, h);
  read_gguf_draft_keys(file, h);
  read_gguf_rope_scaling(file, h);
  read_gguf_layer_pattern(file, h);
  if (h.rules.swa_mla) read_gguf_mla_swa(file, h);
  if (h.rules.compressed_attention) read_gguf_compress(file, h);
  if (h.rules.softcap_default > 0.0) {
    // llama_hparams::f_attn_logit_softcapping: default 50 (src/llama-hparams.h), attn_soft_cap
    // set by src/models/gemma2.cpp, applied in llm_graph_context::build_attn_mha.
    h.logit_softcap =
        file.float32(h.arch + ".attn_logit_softcapping").value_or(h.rules.softcap_default);
    require_positive_finite(h.arch + ".attn_logit_softcapping", h.logit_softcap);
  }
  if (h.rules.softmax == GgufSoftmaxScale::AttentionScaleKey) {
    h.attention_scale = file.float32(h.arch + ".attention.scale").value_or(0.0);
    if (h.attention_scale != 0.0)
      require_positive_finite(h.arch + ".attention.scale", h.attention_scale);
  }
  if (h.rules.softmax == GgufSoftmaxScale::OutputScaleKey) {
    h.attention_scale =
        file.float32(h.arch + ".attention.output_scale").value_or(h.rules.softmax_default);
    require_positive_finite(h.arch + ".attention.output_scale", h.attention_scale);
  }
  read_gguf_sections_mode(file, h);
  return h;
}

// A rope tensor: F32 of shape [n_rot / 2] (a row with factors_head_wide: [head_dim / 2], of which
// ggml reads the first n_rot / 2), every factor finite and > 0.
inline std::optional<std::vector<double>> gguf_rope_tensor(const GgufFile& file,
                                                           const GgufHparams& h,
                                                           const std::string& name) {
  const GgufTensorInfo* info = file.find_tensor(name);
  if (info == nullptr) return std::nullopt;
  const bool head_wide = h.rules.factors_head_wide;
  const std::int64_t width = (head_wide ? h.head_dim : h.n_rot) / 2;
  if (info->ggml_type != 0 || info->n_dims != 1 || info->ne[0] != std::uint64_t(width)) {
    fail(name,
         "type " + std::to_string(info->ggml_type) + " with " + std::to_string(info->n_dims) +
             " dims, ne[0] = " + std::to_string(info->ne[0]),
         "expected F32 (0) of shape [" + std::string(head_wide ? "head_dim" : "n_rot") +
             " / 2 = " + std::to_string(width) + "]");
  }
  const std::vector<float> data = *file.f32_tensor(name);
  std::vector<double> factors(data.begin(), data.end());
  for (std::size_t i = 0; i < factors.size(); ++i) {
    require_positive_finite(name + "[" + std::to_string(i) + "]", factors[i]);
  }
  return factors;
}

// The factors ff_i every RoPE layer divides its frequencies by (llama_model::get_rope_factors),
// and the tensor they come from, by the row's GgufRopeFactors: `rope_freqs`; LongRoPE's long
// tensor when n_ctx_seq > n_ctx_orig, else the short one; llama's either, by its scaling type.
inline std::optional<std::pair<std::string, std::vector<double>>> gguf_rope_factors(
    const GgufFile& file, const GgufHparams& h, std::int64_t n_ctx_seq) {
  const GgufRopeFactors kind = h.rules.factors;
  const bool longrope =
      kind == GgufRopeFactors::LongRope ||
      (kind == GgufRopeFactors::RopeFreqsOrLongRope && h.scaling_type == "longrope");
  // dflash: ggml_rope_multi gets no factors (build_rope).
  if (h.rules.mrope_if_any_section && h.rope_mode == GgufRopeMode::Mrope) return std::nullopt;
  std::string name;
  if (longrope) {
    name = n_ctx_seq > h.n_ctx_orig ? "rope_factors_long.weight" : "rope_factors_short.weight";
  } else if (kind != GgufRopeFactors::None) {
    name = "rope_freqs.weight";
  } else {
    return std::nullopt;
  }
  std::optional<std::vector<double>> factors = gguf_rope_tensor(file, h, name);
  if (!factors) return std::nullopt;
  return std::make_pair(name, std::move(*factors));
}

// YaRN's correction range [lo, hi] in pairs (ggml_rope_yarn_corr_dims, ggml/src/ggml.c) with
// llama.cpp's beta_fast (default 32) and beta_slow (default 1): c(beta) = n_rot ln(n_ctx_orig /
// (2 pi beta)) / (2 ln base), lo = max(0, floor(c(beta_fast))), hi = min(n_rot - 1,
// ceil(c(beta_slow))).
inline std::pair<double, double> gguf_yarn_corr_dims(const GgufHparams& h, std::int64_t n_rot,
                                                     double base) {
  const std::int64_t n_ctx_orig = h.n_ctx_orig;
  const auto corr_dim = [&](double beta) {
    return static_cast<double>(n_rot) *
           std::log(static_cast<double>(n_ctx_orig) / (two_pi * beta)) / (2.0 * std::log(base));
  };
  return {std::max(0.0, std::floor(corr_dim(h.beta_fast))),
          std::min(static_cast<double>(n_rot - 1), std::ceil(corr_dim(h.beta_slow)))};
}

// cparams.yarn_attn_factor (llama_context::llama_context, src/llama-context.cpp), F = 1 / the
// global scale, get_mscale(s, m) = s <= 1 ? 1 : 0.1 m ln s + 1:
//   yarn: get_mscale(F, 1), or with rope_yarn_log_mul L != 0 get_mscale(F, m) / get_mscale(F, L),
//         m = L for MLA (deepseek2) when L != 1 else 1; then divided by 1 + 0.1 ln F
//   always: times rope.scaling.attn_factor
inline double gguf_yarn_attn_factor(const GgufHparams& h) {
  if (h.scaling_type != "yarn") return h.attn_factor;
  const double F = 1.0 / h.freq_scale;
  const auto get_mscale = [F](double m) { return F <= 1.0 ? 1.0 : 0.1 * m * std::log(F) + 1.0; };
  const double L = h.yarn_log_mul;
  // llama_context: mscale = L only for LLM_ARCH_DEEPSEEK2 ([TAG_DEEPSEEK2_YARN_LOG_MUL_FIX]).
  const double m = h.rules.yarn_log_mul == GgufYarnLogMul::TenthAsMscale && L != 1.0 ? L : 1.0;
  const double factor = L != 0.0 ? get_mscale(m) / get_mscale(L) : get_mscale(1.0);
  return factor / (1.0 + 0.1 * std::log(F)) * h.attn_factor;
}

// A layer's head width and rotated width (SWA layers of a row with swa_head have their own).
struct GgufWidth {
  std::int64_t head_dim = 0, n_rot = 0;
};

// One RoPE layer's frequencies and magnitude, in float64 (ggml_rope_cache_init + rope_yarn,
// ggml/src/ggml-cpu/ops.cpp):
//   extrap_i = base^(-2i/n_rot) / ff_i,  interp_i = scale * extrap_i
//   ext_factor 0: inv_i = interp_i
//   ext_factor 1 (yarn): ramp_i = 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1),
//                        inv_i = interp_i (1 - ramp_i) + extrap_i ramp_i
// Magnitude: gguf_yarn_attn_factor, for yarn times rope_yarn's (1 + 0.1 ln(1 / scale)).
// plain: the graph passes ext_factor 0 and attn_factor 1 (olmo2's SWA layers): magnitude 1.
inline GgufLayerRope gguf_layer_rope(const GgufHparams& h, const GgufWidth& width, double base,
                                     double scale, const std::vector<double>* factors,
                                     std::string rope_type, bool plain = false) {
  const bool yarn = !plain && h.scaling_type == "yarn";
  const std::int64_t n_rot = width.n_rot;
  const auto [lo, hi] = gguf_yarn_corr_dims(h, n_rot, base);
  GgufLayerRope rope{std::move(rope_type), Eigen::VectorXd(n_rot / 2),
                     plain ? 1.0 : gguf_yarn_attn_factor(h)};
  for (Eigen::Index i = 0; i < rope.inv_freq.size(); ++i) {
    const double ff = factors != nullptr ? (*factors)[static_cast<std::size_t>(i)] : 1.0;
    const double extrap =
        std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(n_rot)) / ff;
    const double interp = scale * extrap;
    const double ramp =
        yarn ? 1.0 - std::clamp((static_cast<double>(i) - lo) / std::max(0.001, hi - lo), 0.0, 1.0)
             : 0.0;
    rope.inv_freq[i] = interp * (1.0 - ramp) + extrap * ramp;
    require_positive_finite("inv_freq[" + std::to_string(i) + "]", rope.inv_freq[i]);
  }
  if (yarn) {
    rope.attention_scale *= 1.0 + 0.1 * std::log(1.0 / scale);
    require_positive_finite(h.arch + ".rope.scaling.factor (YaRN magnitude)", rope.attention_scale);
  }
  return rope;
}

// The layer's rotation as a RopeScheme of the vocabulary, reproducing rope.inv_freq and
// rope.attention_scale: "default" or "linear" when that is all it is; "yarn" (beta 32/1, floored
// range, the magnitude given) when no factors apply and the range is ordered; otherwise per-pair
// divisors default_i / inv_i in a "longrope" scheme whose short and long lists are equal.
inline RopeScheme gguf_rope_scheme(const GgufHparams& h, const GgufWidth& width, double base,
                                   double scale, bool has_factors, const GgufLayerRope& rope) {
  RopeScheme scheme;
  scheme.theta = base;
  scheme.head_dim = static_cast<int>(width.head_dim);
  scheme.rotary_dim = static_cast<int>(width.n_rot);
  scheme.pairing =
      h.rope_mode == GgufRopeMode::Norm && !h.permuted ? Pairing::Interleaved : Pairing::RotateHalf;
  if (h.sections) {
    const std::vector<std::int64_t>& s = *h.sections;
    const auto at = [&](std::size_t k) { return k < s.size() ? static_cast<int>(s[k]) : 0; };
    scheme.mrope_section = MropeSections{at(0), at(1), at(2)};
    // IMROPE: ggml_mrope_cache_init's is_imrope, the sections' pairs interleaved (t h w t h w ...).
    if (h.rope_mode == GgufRopeMode::Imrope) scheme.mrope_layout = MropeLayout::Interleaved;
  }
  const bool yarn = rope.rope_type == "yarn";
  const auto [lo, hi] = gguf_yarn_corr_dims(h, width.n_rot, base);
  if (!has_factors && !yarn && rope.attention_scale == 1.0) {
    scheme.rope_type = scale == 1.0 ? "default" : "linear";
    if (scale != 1.0) scheme.params = LinearRopeParams{1.0 / scale};
  } else if (!has_factors && yarn && lo <= hi && base != 1.0) {
    YarnParams yarn_params;
    yarn_params.factor = 1.0 / scale;
    yarn_params.original_max_position_embeddings = h.n_ctx_orig;
    yarn_params.beta_fast = h.beta_fast;
    yarn_params.beta_slow = h.beta_slow;
    yarn_params.attention_factor = rope.attention_scale;
    scheme.rope_type = "yarn";
    scheme.params = yarn_params;
  } else {
    const Eigen::VectorXd plain = default_inv_freq(scheme.rotary_dim, base);
    LongRopeParams divisors;
    for (Eigen::Index i = 0; i < plain.size(); ++i) {
      divisors.short_factor.push_back(plain[i] / rope.inv_freq[i]);
    }
    divisors.long_factor = divisors.short_factor;
    divisors.original_max_position_embeddings = h.n_ctx_orig;
    divisors.attention_factor = rope.attention_scale;
    scheme.rope_type = "longrope";
    scheme.params = divisors;
  }
  return scheme;
}

// kq_scale of the arch's graph builder (src/models/*.cpp), by the row's GgufSoftmaxScale:
//   HeadDim:           head_dim^-0.5 (gpt-oss: n_rot^-0.5 = head_dim, checked; phi2 scales q by
//                      it and passes kq_scale 1); gemma3 / gemma2 set f_attention_scale in
//                      load_arch_hparams: the 27B (gemma3 62 layers, gemma2 46, the row's
//                      embd_head_scale_layers) (n_embd / n_head)^-0.5, the others
//                      key_length^-0.5 (gemma2 scales q by it and passes kq_scale 1)
//   AttentionScaleKey: `f_attention_scale == 0 ? 1/sqrt(n_embd_head) : f_attention_scale`,
//                      f_attention_scale from attention.scale (granite)
//   Mla:               (src/models/deepseek2.cpp, graph builder) mscale^2 / sqrt(key_length_mla)
//                      with mscale = yarn_attn_factor (1 + 0.1 ln(1/s)) (1 + 0.1 L ln(1/s)), s the
//                      global scale
//   RotDim:            n_rot^-0.5 (src/models/bailingmoe.cpp)
//   OutputScaleKey:    attention.output_scale, else the row's default (grok)
// head_dim: the layer's head width (dots3note's SWA layers: key_length_mla_swa).
inline double gguf_softmax_scale(const GgufHparams& h, std::int64_t head_dim) {
  if (h.rules.embd_head_scale_layers > 0 && h.n_layer == h.rules.embd_head_scale_layers) {
    return 1.0 / std::sqrt(static_cast<double>(h.n_embd / h.n_head[0]));
  }
  if (h.rules.softmax == GgufSoftmaxScale::AttentionScaleKey && h.attention_scale != 0.0) {
    return h.attention_scale;
  }
  if (h.rules.softmax == GgufSoftmaxScale::One) return 1.0;
  if (h.rules.softmax == GgufSoftmaxScale::OutputScaleKey) return h.attention_scale;
  if (h.rules.softmax == GgufSoftmaxScale::RotDim) {
    return 1.0 / std::sqrt(static_cast<double>(h.n_rot));
  }
  if (h.rules.softmax == GgufSoftmaxScale::Mla) {
    const double log_f = std::log(1.0 / h.freq_scale);
    const double mscale =
        gguf_yarn_attn_factor(h) * (1.0 + 0.1 * log_f) * (1.0 + 0.1 * h.yarn_log_mul * log_f);
    return mscale * mscale / std::sqrt(static_cast<double>(h.head_dim));
  }
  return 1.0 / std::sqrt(static_cast<double>(head_dim));
}

// The lightning indexer of a layer that owns one: q and k of attention.indexer.key_length
// features, n_rot of them rotated by the layer's frequencies, the first n_rot or the last (hy_v4's
// ggml_rope_set_offset(iq, n_embd_indexer_nope)), in the row's indexer_mode (NEOX: deepseek32's
// LLAMA_ROPE_TYPE_NEOX; NORM: glm-dsa's LLAMA_ROPE_TYPE_NORM, hy_v4's rope_type), a key per token.
// qwen4exp's build_qsa_top_k: ggml_rope_multi with the layer's mode and sections, the keys pooled
// by blocks of key_block = attention.compress_ratios[il] tokens and rotated at blk_pos, the block's
// first position (llama_memory_hybrid_idx::set_input_qsa: sec_pos = pb * r on every section of a
// text block, the first member's M-RoPE position in an image).
//   indexer head: [ rope (n_rot) | nope ]   or, indexer_at_end,   [ nope | rope (n_rot) ]
inline IndexerRope gguf_indexer(const GgufHparams& h, const RopeScheme& layer_rope,
                                std::int64_t key_block) {
  IndexerRope indexer;
  indexer.head_dim = static_cast<int>(h.indexer_head_dim);
  indexer.rope = layer_rope;
  if (!h.rules.qsa) {
    indexer.rope.pairing =
        h.rules.indexer_mode == GgufRopeMode::Norm ? Pairing::Interleaved : Pairing::RotateHalf;
  }
  indexer.rope.head_dim = indexer.rope.rotary_dim;
  if (h.rules.indexer_at_end) indexer.rotary_offset = indexer.head_dim - indexer.rope.rotary_dim;
  indexer.key_block = static_cast<int>(key_block);
  return indexer;
}

// Whether layer il's indexer rotates (GgufIndexer): every RoPE layer, the full layers, the
// layers from leading_dense_block_count on, or the owners of attention.indexer.types.
inline bool gguf_indexed_layer(const GgufHparams& h, std::size_t il) {
  switch (h.rules.indexer) {
    case GgufIndexer::None:
      return false;
    case GgufIndexer::Every:
      return true;
    case GgufIndexer::Full:
      return !h.swa_layers[il];
    case GgufIndexer::AfterDenseLead:
      return static_cast<std::int64_t>(il) >= h.n_layer_dense_lead;
    case GgufIndexer::TypesOrGlm52:
    case GgufIndexer::TypesIfTopK:
      return !h.indexer_owners.empty() && h.indexer_owners[il];
  }
  return false;
}

// deepseek4's RoPE layer (llama_model_deepseek4::graph::build_attention, src/models/deepseek4.cpp):
// q and kv rotate their last n_rot features (ggml_rope_set_offset(q, n_embd_head_nope)) with
//   compress_ratios[il] != 0: attention.compress_rope_freq_base, the context's freq_scale,
//                             ext_factor and betas (YaRN's ramp), attn_factor
//                             dsv4_rope_attn_factor = 1 / (1 + 0.1 ln(1 / freq_scale)) with
//                             YaRN, cancelling rope_yarn's (1 + 0.1 ln(1 / freq_scale)): 1
//   compress_ratios[il] == 0: rope.freq_base, freq_scale 1, ext_factor 0, attn_factor 1
// A ratio-4 layer (CSA) has the lightning indexer (build_lid_top_k): indexer_q of
// attention.indexer.key_length features rotates its last n_rot likewise, in the model's mode.
inline void gguf_compressed_layer(const GgufHparams& h, std::size_t il, LayerPositions& layer,
                                  std::optional<GgufLayerRope>& rope) {
  const std::int64_t ratio = h.compress_ratios[il];
  const GgufWidth width{h.head_dim, h.n_rot};
  const double base = ratio != 0 ? h.freq_base_compress : h.freq_base;
  const double scale = ratio != 0 ? h.freq_scale : 1.0;
  const std::string rope_type =
      ratio != 0 ? gguf_rope_type(GgufRopeKey{h.scaling_type, "", scale}) : "default";
  rope = gguf_layer_rope(h, width, base, scale, nullptr, rope_type, ratio == 0);
  rope->attention_scale = 1.0;
  layer.rope = gguf_rope_scheme(h, width, base, scale, false, *rope);
  layer.rotary_offset = static_cast<int>(width.head_dim - width.n_rot);
  if (ratio != 4) return;
  layer.layer_type = "indexed_attention";
  layer.indexer = gguf_indexer(h, *layer.rope, 0);  // the row's NORM, last n_rot
}

// Layer il: kind, window or chunk, query temperature, and its RoPE (base and scale per
// llama_model::get_rope_freq_base / get_rope_freq_scale).
inline LayerPositions gguf_layer(
    const GgufHparams& h, std::size_t il,
    const std::optional<std::pair<std::string, std::vector<double>>>& factors,
    std::optional<GgufLayerRope>& rope) {
  LayerPositions layer;
  const bool swa = h.swa_layers[il];
  const GgufWidth width =
      swa ? GgufWidth{h.head_dim_swa, h.n_rot_swa} : GgufWidth{h.head_dim, h.n_rot};
  layer.index = static_cast<int>(il);
  layer.head_dim = static_cast<int>(width.head_dim);
  layer.attention.softmax_scale = gguf_softmax_scale(h, width.head_dim);
  if (h.logit_softcap > 0.0) layer.attention.logit_softcap = h.logit_softcap;
  // gpt-oss's attn_sinks tensor joins every layer's softmax (src/models/openai-moe.cpp).
  layer.attention.attention_sinks = h.rules.sinks;
  if (h.recurrent_layers[il]) {
    layer.layer_type = "linear_attention";
    layer.kind = PositionKind::None;
    layer.attention = LayerAttention{};
    return layer;
  }
  if (h.rules.alibi_max_bias > 0.0) {
    layer.kind = PositionKind::Alibi;  // slopes 2^(-max_bias (h + 1) / n_head_log2) (ggml)
    return layer;
  }
  if (swa && h.rules.chunk > 0) {
    layer.layer_type = "chunked_attention";
    layer.attention.attention_chunk_size = h.n_swa;
  } else if (swa) {
    layer.layer_type = "sliding_attention";
    layer.attention.sliding_window = h.n_swa;
  }
  if (!h.rope_layers[il]) {
    layer.kind = PositionKind::None;
    if (h.rules.nope_temperature) {
      layer.attention.query_temperature = QueryTemperature{8192.0, 0.1};  // build_inp_attn_scale
    }
    return layer;
  }
  if (h.rules.compressed_attention) {
    gguf_compressed_layer(h, il, layer, rope);
    return layer;
  }
  // olmo2's SWA layers and the row's GgufRopeCall Plain / Defaults: no YaRN, magnitude 1, no
  // factors; gemma4's SWA layers: no factors.
  const GgufRopeCall call = h.rules.rope_call;
  const bool plain = (swa && h.rules.swa_plain) || call != GgufRopeCall::Ext;
  const double base = call == GgufRopeCall::Defaults ? 10000.0
                      : swa                          ? h.freq_base_swa
                                                     : h.freq_base;
  const double scale = call != GgufRopeCall::Ext ? 1.0 : swa ? h.freq_scale_swa : h.freq_scale;
  const bool use_factors = factors.has_value() && !plain && !(swa && h.rules.factors_global_only);
  const std::string rope_type =
      plain ? "default"
            : gguf_rope_type(GgufRopeKey{h.scaling_type, use_factors ? factors->first : "", scale});
  rope = gguf_layer_rope(h, width, base, scale, use_factors ? &factors->second : nullptr, rope_type,
                         plain);
  layer.rope = gguf_rope_scheme(h, width, base, scale, use_factors, *rope);
  // MLA's k_pe and q_pe follow the nope part (ggml_rope_set_offset(q, n_embd_head_qk_nope)).
  if (h.rules.rotary_at_end) layer.rotary_offset = static_cast<int>(width.head_dim - width.n_rot);
  if (h.temperature) layer.attention.query_temperature = h.temperature;
  const std::int64_t key_block = h.rules.qsa ? h.compress_ratios[il] : 0;
  if (gguf_indexed_layer(h, il) || key_block > 0) {
    layer.layer_type = "indexed_attention";
    layer.indexer = gguf_indexer(h, *layer.rope, key_block);
  } else if (!h.indexer_owners.empty()) {
    layer.layer_type = "indexed_attention";  // a "shared" layer: the last owner's top-k
  }
  return layer;
}

// {arch}.attention.head_count_kv when it is a UINT32 or an integer array (layer 0's), else
// the head count.
inline int gguf_kv_heads(const GgufFile& file, const GgufHparams& h) {
  const std::string key = h.arch + ".attention.head_count_kv";
  const GgufValue* value = file.find(key);
  if (value != nullptr && value->type == GgufType::Uint32) {
    return static_cast<int>(value->unsigned_value);
  }
  if (value != nullptr && value->type == GgufType::Array &&
      gguf_integer_type(value->element_type) && value->count > 0) {
    return static_cast<int>(file.integers(key)->front());
  }
  return static_cast<int>(h.n_head[0]);
}

// The rows' per-file layer rules (GgufArch::sinks_if_tensor, router_layer):
//   dflash:        attn_sinks join layer il's softmax iff blk.il.attn_sinks.weight exists
//                  (load_arch_tensors: TENSOR_NOT_REQUIRED; build_attn gets layer.attn_sinks)
//   graniteswitch: the router, llama.cpp's layer hparams.router_layer = n_layer after the blocks:
//                  build_attn(Qr, Kr, Vr, kq_scale 1, il = R) with no RoPE, one head of
//                  n_embd_head (the signal in feature 0, zero-padded)
inline void add_gguf_draft_layers(const GgufFile& file, const GgufHparams& h, GgufPositions& plan) {
  if (h.rules.sinks_if_tensor) {
    for (LayerPositions& layer : plan.model.layers) {
      const std::string name = "blk." + std::to_string(layer.index) + ".attn_sinks.weight";
      layer.attention.attention_sinks = file.find_tensor(name) != nullptr;
    }
  }
  if (!h.rules.router_layer) return;
  LayerPositions router;
  router.index = static_cast<int>(h.n_layer);
  router.kind = PositionKind::None;
  router.head_dim = static_cast<int>(h.head_dim);
  router.attention.softmax_scale = 1.0;
  plan.model.layers.push_back(std::move(router));
  plan.ropes.emplace_back();
}

// llama.cpp's context size per sequence for a requested context n_ctx (one sequence):
// llama_context::llama_context (src/llama-context.cpp) pads n_ctx and n_ctx_seq up to a multiple
// of 256 (GGML_PAD(n_ctx, 256), llama.cpp PR #17046), so `-c 4000` runs with n_ctx_seq 4096.
inline std::int64_t gguf_padded_context(std::int64_t n_ctx) { return (n_ctx + 255) / 256 * 256; }

}  // namespace detail

// The positional plan of a GGUF model as llama.cpp runs it with a context of n_ctx_seq tokens per
// sequence (nullopt: {arch}.context_length, llama.cpp's n_ctx = 0), padded to a multiple of 256
// as llama.cpp pads it (GgufPositions::n_ctx_seq holds the padded size); n_ctx_seq only changes
// LongRoPE's choice of factors. Throws posemb::Error naming the file and the key.
//
// Example:
//   const posemb::GgufPositions plan = posemb::read_gguf_positions("model.gguf");
//   plan.ropes[0]->inv_freq;              // what ggml rotates layer 0 with
//   plan.model.layers[0].rope_spec();     // the same as a RopeSpec
inline GgufPositions read_gguf_positions(const std::string& path,
                                         std::optional<std::int64_t> n_ctx_seq = std::nullopt) {
  const GgufFile file(path);
  GgufPositions plan;
  try {
    if (n_ctx_seq) require_positive("seq_len", *n_ctx_seq);
    plan.hparams = detail::read_gguf_hparams(file);
    const GgufHparams& h = plan.hparams;
    plan.n_ctx_seq = detail::gguf_padded_context(n_ctx_seq.value_or(h.n_ctx_train));
    const auto factors = detail::gguf_rope_factors(file, h, plan.n_ctx_seq);
    plan.model.model_type = h.arch;
    plan.model.n_heads = static_cast<int>(h.n_head[0]);
    plan.model.n_kv_heads = detail::gguf_kv_heads(file, h);
    plan.model.max_position_embeddings = h.n_ctx_train;
    plan.ropes.resize(static_cast<std::size_t>(h.n_layer));
    for (std::size_t il = 0; il < plan.ropes.size(); ++il) {
      plan.model.layers.push_back(detail::gguf_layer(h, il, factors, plan.ropes[il]));
    }
    detail::add_gguf_draft_layers(file, h, plan);
  } catch (Error& error) {
    // The file's own accessors name it already.
    if (error.context().empty() || error.context().front() != path) error.add_context(path);
    throw;
  }
  return plan;
}

// The plan's ModelPositions alone: the same vocabulary load_model_positions gives for a
// config.json, with pairing in the HF checkpoint's order (GgufPositions::hparams.rope_mode is
// the order of the GGUF's own tensors).
inline ModelPositions load_gguf_positions(const std::string& path,
                                          std::optional<std::int64_t> n_ctx_seq = std::nullopt) {
  return read_gguf_positions(path, n_ctx_seq).model;
}

}  // namespace posemb
