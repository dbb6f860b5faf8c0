// Writes the C++ results of every case the C API test and the bindings run (cases.h), through
// the C++ API, as bit patterns in hex, one record a line (see README.md):
//   reference_dump DATA_DIR > reference.txt
// DATA_DIR is tests/data: every hf/ and models/ case (each NAME[.seqN].expected.json: its config
// at that seq_len) and every gguf/ directory with a model.gguf.
#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cases.h"
#include "posemb/absolute/gradient.hpp"
#include "posemb/bias/alibi.hpp"
#include "posemb/bias/relative_bias_gradient.hpp"
#include "posemb/bias/relative_bias.hpp"
#include "posemb/kv/append.hpp"
#include "posemb/model/gguf.hpp"
#include "posemb/model/load.hpp"
#include "posemb/rotary/backward.hpp"
#include "posemb/rotary/fope_backward.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/rotate.hpp"

namespace fs = std::filesystem;

namespace {

template <class T>
using Map4 = Eigen::TensorMap<Eigen::Tensor<T, 4, Eigen::RowMajor>>;

std::uint64_t bits_of(double value) {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// The bit pattern of a stored value (float32, or the 16 bits of a half or bfloat16).
template <class T>
std::uint32_t bits_of_storage(T value) {
  if constexpr (sizeof(T) == 4) {
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
  } else {
    std::uint16_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
  }
}

template <class T>
T storage_of_bits(std::uint32_t bits) {
  T value;
  if constexpr (sizeof(T) == 4) {
    std::memcpy(&value, &bits, sizeof value);
  } else {
    const auto half_bits = static_cast<std::uint16_t>(bits);
    std::memcpy(static_cast<void*>(&value), &half_bits, sizeof value);
  }
  return value;
}

template <class T>
constexpr int dtype_id() {
  return std::is_same_v<T, float> ? 0 : std::is_same_v<T, Eigen::half> ? 1 : 2;
}

template <class T>
std::vector<T> case_input(std::size_t n) {
  std::vector<T> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = storage_of_bits<T>(posemb_case_input_bits(dtype_id<T>(), static_cast<std::uint32_t>(i)));
  }
  return x;
}

template <class T>
void print_values(const char* head, const std::vector<T>& values) {
  std::printf("%s %zu", head, values.size());
  for (const T& v : values) std::printf(" %x", bits_of_storage(v));
  std::printf("\n");
}

posemb::PositionMatrix ids(const std::int64_t* values, Eigen::Index rows, Eigen::Index cols) {
  return Eigen::Map<const posemb::PositionMatrix>(values, rows, cols);
}

// Rotation variant v of cases.h on a [2, 3, 2, head_dim] input of storage type T.
template <class T>
std::vector<T> rotate_variant(const posemb::RopeSpec& spec, int v) {
  using posemb::TensorLayout;
  const Eigen::Index b = POSEMB_CASE_BATCH, s = POSEMB_CASE_SEQ, h = POSEMB_CASE_HEADS,
                     d = spec.head_dim;
  std::vector<T> x = case_input<T>(static_cast<std::size_t>(b * s * h * d));
  if (v == 0) {
    Map4<T> map(x.data(), b, s, h, d);
    posemb::rotate_inplace(map, std::int64_t{1000000}, spec);
    return x;
  }
  if (v == 1) {
    std::vector<T> out(static_cast<std::size_t>(b * h * POSEMB_CASE_OUT_SEQ * d), T(0.0f));
    Map4<T> in(x.data(), b, s, h, d), to(out.data(), b, h, POSEMB_CASE_OUT_SEQ, d);
    const posemb::PositionMatrix p = ids(posemb_case_ids, b, s);
    posemb::rotate(in, to, posemb::Positions(p), spec,
                   posemb::RotateOptions()
                       .with_layouts(posemb::Layouts(TensorLayout::BSHD, TensorLayout::BHSD,
                                                     POSEMB_CASE_OUT_OFFSET))
                       .inverse());
    return out;
  }
  if (v == 2) {
    const posemb::RopeTable<float> table(spec, 0, POSEMB_CASE_TABLE_COUNT);
    Map4<T> map(x.data(), b, h, s, d);
    posemb::rotate_inplace(map, std::int64_t{10}, table,
                           posemb::RotateOptions().with_layouts(TensorLayout::BHSD));
    return x;
  }
  Map4<T> map(x.data(), b, s, h, d);
  const posemb::PositionMatrix p = ids(posemb_case_long_ids, 1, s);
  posemb::rotate_inplace(map, posemb::Positions(p), spec);
  return x;
}

void print_rotations(int layer, const posemb::RopeSpec& spec) {
  for (int v = 0; v < POSEMB_CASE_VARIANTS; ++v) {
    char head[64];
    std::snprintf(head, sizeof head, "rot %d 0 %d", layer, v);
    print_values(head, rotate_variant<float>(spec, v));
    std::snprintf(head, sizeof head, "rot %d 1 %d", layer, v);
    print_values(head, rotate_variant<Eigen::half>(spec, v));
    std::snprintf(head, sizeof head, "rot %d 2 %d", layer, v);
    print_values(head, rotate_variant<Eigen::bfloat16>(spec, v));
  }
}

bool same_spec(const posemb::RopeSpec& a, const posemb::RopeSpec& b) {
  return a.inv_freq.size() == b.inv_freq.size() && a.inv_freq == b.inv_freq &&
         a.attention_scale == b.attention_scale && a.pairing == b.pairing &&
         a.rotary_dim == b.rotary_dim && a.rotary_offset == b.rotary_offset &&
         a.head_dim == b.head_dim;
}

void print_layer(const posemb::ModelPositions& model, const posemb::LayerPositions& l) {
  const posemb::LayerAttention& a = l.attention;
  const bool softmax_scale = l.softmax_attention() && a.softmax_scale.has_value();
  const posemb::QueryTemperature t = a.query_temperature.value_or(posemb::QueryTemperature{});
  const posemb::T5Buckets t5 = l.relative_bias.value_or(posemb::T5Buckets{});
  std::printf("layer %d %d %d %s %d %d %" PRIx64 " %d %" PRId64 " %d %" PRId64 " %d %" PRIx64
              " %" PRIx64 " %" PRId64 " %d %" PRIx64 " %d %d %d %d %d %d\n",
              l.index, static_cast<int>(l.kind), l.head_dim,
              l.rope ? l.rope->rope_type.c_str() : "-", l.softmax_attention() ? 1 : 0,
              softmax_scale ? 1 : 0, bits_of(softmax_scale ? *a.softmax_scale : 0.0),
              a.sliding_window.has_value(), a.sliding_window.value_or(0),
              a.attention_chunk_size.has_value(), a.attention_chunk_size.value_or(0),
              a.query_temperature.has_value(), bits_of(a.query_temperature ? t.floor_scale : 0.0),
              bits_of(a.query_temperature ? t.attn_scale : 0.0),
              a.query_temperature ? t.position_offset : 0, a.logit_softcap.has_value(),
              bits_of(a.logit_softcap.value_or(0.0)), a.attention_sinks ? 1 : 0,
              a.bias_placement == posemb::BiasPlacement::BeforeScale ? 1 : 0,
              l.relative_bias.has_value(), l.relative_bias ? t5.num_buckets : 0,
              l.relative_bias ? t5.max_distance : 0, l.relative_bias && t5.bidirectional ? 1 : 0);
  (void)model;
}

void print_rope(int layer, const posemb::RopeSpec& spec) {
  std::printf("rope %d %d %d %d %d %" PRIx64 " %td", layer, spec.head_dim, spec.rotary_dim,
              spec.rotary_offset, spec.pairing == posemb::Pairing::Interleaved ? 0 : 1,
              bits_of(spec.attention_scale), static_cast<std::ptrdiff_t>(spec.inv_freq.size()));
  for (Eigen::Index i = 0; i < spec.inv_freq.size(); ++i) {
    std::printf(" %" PRIx64, bits_of(spec.inv_freq[i]));
  }
  std::printf("\n");
}

// One case: the model's records, or its error.
void print_case(const char* format, const fs::path& data, const std::string& relative,
                std::int64_t seq_len) {
  std::printf("case %s %s %" PRId64 "\n", format, relative.c_str(), seq_len);
  const std::optional<std::int64_t> length =
      seq_len > 0 ? std::optional<std::int64_t>(seq_len) : std::nullopt;
  const std::string path = (data / relative).string();
  try {
    const posemb::ModelPositions model = std::strcmp(format, "gguf") == 0
                                             ? posemb::load_gguf_positions(path, length)
                                             : posemb::load_model_positions(path);
    std::printf("model %zu %d %d\n", model.layers.size(), model.n_heads, model.n_kv_heads);
    std::vector<posemb::RopeSpec> rotated;
    for (const posemb::LayerPositions& l : model.layers) {
      print_layer(model, l);
      if (l.kind != posemb::PositionKind::Rope) continue;
      const posemb::RopeSpec spec = l.rope_spec(length);
      print_rope(l.index, spec);
      const auto seen = [&](const posemb::RopeSpec& s) { return same_spec(s, spec); };
      if (std::none_of(rotated.begin(), rotated.end(), seen)) {
        rotated.push_back(spec);
        print_rotations(l.index, spec);
      }
    }
  } catch (const posemb::Error& error) {
    std::printf("error %s\n", error.what());
  }
  std::printf("end\n");
}

void print_json_cases(const fs::path& data, const std::string& folder) {
  const std::string suffix = ".expected.json";
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(data / folder)) {
    const std::string file = entry.path().filename().string();
    if (file.size() > suffix.size() &&
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0) {
      files.push_back(file);
    }
  }
  std::sort(files.begin(), files.end());
  for (const std::string& file : files) {
    std::string name = file.substr(0, file.size() - suffix.size());
    std::int64_t seq_len = 0;
    const std::size_t dot = name.rfind(".seq");
    if (dot != std::string::npos) {
      seq_len = std::stoll(name.substr(dot + 4));
      name.resize(dot);
    }
    print_case("config", data, folder + "/" + name + ".json", seq_len);
  }
}

void print_gguf_cases(const fs::path& data) {
  std::vector<std::string> dirs;
  for (const auto& entry : fs::directory_iterator(data / "gguf")) {
    if (fs::exists(entry.path() / "model.gguf")) dirs.push_back(entry.path().filename().string());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const std::string& dir : dirs) print_case("gguf", data, "gguf/" + dir + "/model.gguf", 0);
}

template <class T>
void print_mrope(int layout) {
  const posemb::MropeSpec spec = posemb::make_mrope_spec(
      posemb::default_rope_spec(128, 1000000.0),
      {posemb_case_mrope_sections[layout][0], posemb_case_mrope_sections[layout][1],
       posemb_case_mrope_sections[layout][2]},
      layout == 0 ? posemb::MropeLayout::Chunked : posemb::MropeLayout::Interleaved);
  std::vector<T> x = case_input<T>(POSEMB_CASE_BATCH * POSEMB_CASE_SEQ * POSEMB_CASE_HEADS * 128);
  Map4<T> map(x.data(), POSEMB_CASE_BATCH, POSEMB_CASE_SEQ, POSEMB_CASE_HEADS, 128);
  posemb::MropePositionTensor thw(3, 1, POSEMB_CASE_SEQ);
  std::copy(posemb_case_mrope_ids, posemb_case_mrope_ids + 9, thw.data());
  posemb::rotate_inplace(map, posemb::MropePositions(thw), spec);
  char head[32];
  std::snprintf(head, sizeof head, "mrope %d %d", layout, dtype_id<T>());
  print_values(head, x);
}

void print_biases() {
  for (int n = 1; n <= 20; ++n) {
    const Eigen::VectorXd slopes = posemb::alibi_slopes(n);
    std::printf("slopes %d", n);
    for (Eigen::Index h = 0; h < n; ++h) std::printf(" %" PRIx64, bits_of(slopes[h]));
    std::printf("\n");
  }
  posemb::PositionVector q = ids(posemb_case_alibi_q, 3, 1), k(10);
  for (int j = 0; j < 10; ++j) k[j] = j;
  for (int form = 0; form < 2; ++form) {
    const auto bias = posemb::alibi_bias<float>(posemb::alibi_slopes(12), q, k,
                                                form == 0 ? posemb::AlibiForm::Causal
                                                          : posemb::AlibiForm::Symmetric);
    char head[32];
    std::snprintf(head, sizeof head, "alibi %d", form);
    print_values(head, std::vector<float>(bias.data(), bias.data() + bias.size()));
  }
  posemb::PositionVector tq = ids(posemb_case_t5_q, 3, 1), tk(POSEMB_CASE_T5_KEYS);
  for (int j = 0; j < POSEMB_CASE_T5_KEYS; ++j) tk[j] = 7 * j;
  const std::vector<float> weights = case_input<float>(32 * POSEMB_CASE_T5_HEADS);
  for (int bidirectional = 1; bidirectional >= 0; --bidirectional) {
    const posemb::T5Buckets buckets{32, 128, bidirectional == 1};
    const posemb::BucketMatrix b = posemb::t5_bucket_matrix(buckets, tq, tk);
    std::printf("t5buckets %d %td", bidirectional, static_cast<std::ptrdiff_t>(b.size()));
    for (Eigen::Index i = 0; i < b.size(); ++i) std::printf(" %" PRId64, b.data()[i]);
    std::printf("\n");
    const posemb::T5BiasTable<float> table(buckets, weights.data(), 32, POSEMB_CASE_T5_HEADS);
    const auto bias = posemb::t5_bias(table, tq, tk);
    char head[32];
    std::snprintf(head, sizeof head, "t5bias %d", bidirectional);
    print_values(head, std::vector<float>(bias.data(), bias.data() + bias.size()));
  }
}

// The C++ message of a failure the C test provokes through the C API.
void print_error(const char* name, const std::function<void()>& body) {
  try {
    body();
    std::printf("cxxerror %s (none)\n", name);
  } catch (const posemb::Error& error) {
    std::printf("cxxerror %s %s\n", name, error.what());
  }
}

void print_errors(const fs::path& data) {
  const std::string gpt2 = (data / "models" / "gpt2.json").string();
  print_error("odd_rotary_dim", [] { posemb::default_rope_spec(posemb::RotaryDims{64, 7}); });
  print_error("rotary_dim_above_head_dim", [] {
    posemb::default_rope_spec(posemb::RotaryDims{64, 128});
  });
  print_error("layer_out_of_range", [&] { posemb::load_model_positions(gpt2).layer(99); });
  print_error("rope_of_learned_layer",
              [&] { posemb::load_model_positions(gpt2).layer(0).rope_spec(); });
  print_error("missing_file", [&] {
    posemb::load_model_positions((data / "models" / "no-such-config.json").string());
  });
  print_error("table_position", [] {
    const posemb::RopeTable<float> table(posemb::default_rope_spec(64), 0, 64);
    std::vector<float> x(64);
    Map4<float> map(x.data(), 1, 1, 1, 64);
    posemb::rotate_inplace(map, std::int64_t{100}, table);
  });
  print_error("mrope_sum", [] {
    posemb::make_mrope_spec(posemb::default_rope_spec(128), {16, 24, 20},
                            posemb::MropeLayout::Chunked);
  });
  print_error("alibi_heads", [] { posemb::alibi_slopes(0); });
  print_error("head_dim_mismatch", [] {
    std::vector<float> x(32);
    Map4<float> map(x.data(), 1, 1, 1, 32);
    posemb::rotate_inplace(map, std::int64_t{0}, posemb::default_rope_spec(64));
  });
  const posemb::ModelPositions strict = posemb::parse_model_positions(POSEMB_CASE_STRICT_CONFIG);
  std::printf("strict %zu %s\n", strict.unused_keys.size(),
              strict.unused_keys.empty() ? "-" : strict.unused_keys.front().c_str());
}

// ---- KV append (--kv): kv records and kvcxxerror messages

// A cache of the kv case (cases.h) of `layout` (0 BHSD, 1 BSHD, 2 PAGED) over k, v.
posemb::KvCache kv_case_cache(int layout, posemb::CacheDtype dtype, void* k, void* v) {
  const posemb::CacheBuffer keys{k, dtype, POSEMB_CASE_KV_DIM, 0.37f};
  const posemb::CacheBuffer values{v, dtype, POSEMB_CASE_KV_VDIM, 1.9f};
  if (layout == 2) {
    return posemb::paged_kv_cache(POSEMB_CASE_KV_PAGED_SLOTS, POSEMB_CASE_KV_BLOCK,
                                  POSEMB_CASE_HEADS, keys, values);
  }
  return posemb::kv_cache(layout == 0 ? posemb::CacheLayout::BHSD : posemb::CacheLayout::BSHD,
                          POSEMB_CASE_BATCH, POSEMB_CASE_KV_MAX_SEQ, POSEMB_CASE_HEADS, keys,
                          values);
}

void print_bytes(const std::vector<unsigned char>& bytes) {
  std::printf(" %zu ", bytes.size());
  for (const unsigned char b : bytes) std::printf("%02x", b);
}

void print_kv_cases() {
  const posemb::RopeSpec spec = posemb::default_rope_spec(POSEMB_CASE_KV_DIM, 10000.0);
  const posemb::RopeTable<float> table(spec, 0, POSEMB_CASE_TABLE_COUNT);
  const Eigen::Index b = POSEMB_CASE_BATCH, s = POSEMB_CASE_SEQ, h = POSEMB_CASE_HEADS;
  std::vector<float> k =
      case_input<float>(static_cast<std::size_t>(b * s * h * POSEMB_CASE_KV_DIM));
  std::vector<float> v(static_cast<std::size_t>(b * s * h * POSEMB_CASE_KV_VDIM));
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = storage_of_bits<float>(posemb_case_input_bits(0, static_cast<std::uint32_t>(4096 + i)));
  }
  const posemb::TensorMap4<const float> keys(k.data(), b, s, h, POSEMB_CASE_KV_DIM);
  const posemb::TensorMap4<const float> values(v.data(), b, s, h, POSEMB_CASE_KV_VDIM);
  const posemb::PositionMatrix at = ids(posemb_case_ids, b, s);
  for (int source = 0; source < 2; ++source) {
    for (int layout = 0; layout < 3; ++layout) {
      const posemb::SlotMapping slots(posemb_case_kv_slots[layout == 2 ? 1 : 0], b, s);
      for (int dtype = 0; dtype < 5; ++dtype) {
        for (int threads = 1; threads <= 2; ++threads) {
          const auto d = static_cast<posemb::CacheDtype>(dtype);
          const posemb::KvCache probe = kv_case_cache(layout, d, &k, &v);
          std::vector<unsigned char> kc(static_cast<std::size_t>(probe.bytes(probe.keys)), 0xA5);
          std::vector<unsigned char> vc(static_cast<std::size_t>(probe.bytes(probe.values)), 0xA5);
          const posemb::KvCache cache = kv_case_cache(layout, d, kc.data(), vc.data());
          if (source == 0) {
            posemb::append_rotated(keys, values, posemb::Positions(at), spec, slots, cache,
                                   posemb::Threads{threads});
          } else {
            posemb::append_rotated(keys, values, std::int64_t{5}, table, slots, cache,
                                   posemb::Threads{threads});
          }
          std::printf("kv %d %d %d %d", source, layout, dtype, threads);
          print_bytes(kc);
          print_bytes(vc);
          std::printf("\n");
        }
      }
    }
  }
}

// The C++ messages of the KV failures c_api_test.c provokes, each on a fresh 0xA5 cache.
void print_kv_errors() {
  const posemb::RopeSpec spec = posemb::default_rope_spec(POSEMB_CASE_KV_DIM, 10000.0);
  std::vector<float> k(64 * 4, 0.5f), v(64 * 4, 0.5f);
  std::vector<unsigned char> kc(4096, 0xA5), vc(4096, 0xA5);
  const auto one = [&](Eigen::Index d) {
    return posemb::TensorMap4<const float>(k.data(), 1, 2, 1, d);
  };
  const auto append = [&](const posemb::KvCache& cache, const std::int64_t* slots,
                          Eigen::Index d = POSEMB_CASE_KV_DIM, Eigen::Index dv = 32) {
    posemb::append_rotated(one(d), posemb::TensorMap4<const float>(v.data(), 1, 2, 1, dv),
                           std::int64_t{0}, spec, posemb::SlotMapping(slots, 1, 2), cache);
  };
  const auto contiguous = [&](posemb::CacheDtype dtype, float scale, Eigen::Index d = 64,
                              Eigen::Index dv = 32) {
    return posemb::kv_cache(posemb::CacheLayout::BSHD, 1, 8, 1, {kc.data(), dtype, d, scale},
                            {vc.data(), dtype, dv, scale});
  };
  const std::int64_t ok[2] = {0, 1}, past[2] = {0, 8}, twice[2] = {3, 3};
  print_error("kv_slot_range", [&] { append(contiguous(posemb::CacheDtype::Float32, 1), past); });
  print_error("kv_slot_twice", [&] { append(contiguous(posemb::CacheDtype::Float32, 1), twice); });
  print_error("kv_block_size", [&] {
    posemb::paged_kv_cache(16, 5, 1, {kc.data(), posemb::CacheDtype::Float32, 64, 1},
                           {vc.data(), posemb::CacheDtype::Float32, 32, 1});
  });
  print_error("kv_fp8_scale", [&] { append(contiguous(posemb::CacheDtype::Fp8E4m3, 0), ok); });
  print_error("kv_fp8_scale_nan",
              [&] { append(contiguous(posemb::CacheDtype::Fp8E4m3, std::nanf("")), ok); });
  print_error("kv_q8_head_dim",
              [&] { append(contiguous(posemb::CacheDtype::Q8_0, 1, 64, 48), ok, 64, 48); });
  print_error("kv_overlap", [&] {
    append(posemb::kv_cache(posemb::CacheLayout::BSHD, 1, 8, 1,
                            {kc.data(), posemb::CacheDtype::Float32, 64, 1},
                            {kc.data() + 64, posemb::CacheDtype::Float32, 32, 1}),
           ok);
  });
  print_error("kv_head_dim",
              [&] { append(contiguous(posemb::CacheDtype::Float32, 1, 32), ok, 32); });
}

}  // namespace

// ---- gradients (grad_reference.txt)

void print_doubles(const char* head, const double* values, std::size_t n) {
  std::printf("%s %zu", head, n);
  for (std::size_t i = 0; i < n; ++i) std::printf(" %" PRIx64, bits_of(values[i]));
  std::printf("\n");
}

// FoPE config c of cases.h.
posemb::FopeConfig fope_case_config(int c) {
  posemb::FopeConfig config;
  config.head_dim = POSEMB_CASE_FOPE_DIM;
  config.n_heads = POSEMB_CASE_FOPE_HEADS;
  config.n_kv_heads = POSEMB_CASE_FOPE_KV_HEADS;
  config.train_length = 512;
  config.d_out = c == 0 ? 4 : 0;
  config.num_inv_freq = c == 0 ? 0 : 3;
  return config;
}

template <class T>
void print_fope_case(int c, const std::vector<float>& sin_coef, const std::vector<float>& cos_coef,
                     const std::vector<std::int64_t>& shape) {
  const posemb::Fope fope = posemb::fope_with_coefficients(fope_case_config(c), sin_coef.data(),
                                                           shape, cos_coef.data(), shape);
  const Eigen::Index b = POSEMB_CASE_BATCH, s = POSEMB_CASE_SEQ, h = POSEMB_CASE_FOPE_HEADS,
                     d = POSEMB_CASE_FOPE_DIM;
  const std::size_t n = static_cast<std::size_t>(b * s * h * d);
  std::vector<T> x = case_input<T>(n), grad(n);
  for (std::size_t i = 0; i < n; ++i) {
    grad[i] = storage_of_bits<T>(
        posemb_case_input_bits(dtype_id<T>(), static_cast<std::uint32_t>(4096 + i)));
  }
  const posemb::PositionMatrix at = ids(posemb_case_ids, 2, 3);
  const Map4<T> xs(x.data(), b, s, h, d), gs(grad.data(), b, s, h, d);
  const posemb::FopeCoefficientGradients g = posemb::fope_coefficient_gradients(xs, gs, at, fope);
  std::vector<T> y = x, tr = grad;
  posemb::rotate_inplace(Map4<T>(y.data(), b, s, h, d), at, fope);
  posemb::rotate_backward_inplace(Map4<T>(tr.data(), b, s, h, d), at, fope);
  char head[48];
  std::snprintf(head, sizeof head, "fope %d %d rot", c, dtype_id<T>());
  print_values(head, y);
  std::snprintf(head, sizeof head, "fope %d %d tr", c, dtype_id<T>());
  print_values(head, tr);
  std::snprintf(head, sizeof head, "fope %d %d dsin", c, dtype_id<T>());
  print_doubles(head, g.sin_coef.data(), static_cast<std::size_t>(g.sin_coef.size()));
  std::snprintf(head, sizeof head, "fope %d %d dcos", c, dtype_id<T>());
  print_doubles(head, g.cos_coef.data(), static_cast<std::size_t>(g.cos_coef.size()));
}

void print_fope_cases() {
  for (int c = 0; c < 2; ++c) {
    const auto [config, frequencies] = posemb::resolve_fope_config(fope_case_config(c));
    const std::vector<std::int64_t> shape = {config.n_kv_heads, frequencies.d_in(), config.d_out};
    const std::size_t count = static_cast<std::size_t>(shape[0] * shape[1] * shape[2]);
    std::vector<float> sin_coef(count), cos_coef(count);
    for (std::size_t i = 0; i < count; ++i) {
      sin_coef[i] =
          storage_of_bits<float>(posemb_case_input_bits(0, static_cast<std::uint32_t>(i)));
      cos_coef[i] =
          storage_of_bits<float>(posemb_case_input_bits(0, static_cast<std::uint32_t>(64 + i)));
    }
    print_fope_case<float>(c, sin_coef, cos_coef, shape);
    print_fope_case<Eigen::bfloat16>(c, sin_coef, cos_coef, shape);
  }
}

void print_table_gradients() {
  std::vector<float> g =
      case_input<float>(POSEMB_CASE_BATCH * POSEMB_CASE_SEQ * POSEMB_CASE_TABLE_D);
  const Eigen::TensorMap<const Eigen::Tensor<float, 3, Eigen::RowMajor>> grad(
      g.data(), POSEMB_CASE_BATCH, POSEMB_CASE_SEQ, POSEMB_CASE_TABLE_D);
  for (int c = 0; c < 2; ++c) {
    const posemb::PositionMatrix at = ids(posemb_case_table_ids, 2, 3);
    const posemb::EmbeddingTable<double> table =
        c == 0 ? posemb::position_table_gradient(grad, at, POSEMB_CASE_TABLE_LEN)
               : posemb::position_table_gradient(grad, 2, POSEMB_CASE_TABLE_LEN);
    char head[32];
    std::snprintf(head, sizeof head, "tablegrad %d", c);
    print_doubles(head, table.data(), static_cast<std::size_t>(table.size()));
  }
  posemb::PositionVector tq = ids(posemb_case_t5_q, 3, 1), tk(POSEMB_CASE_T5_KEYS);
  for (int j = 0; j < POSEMB_CASE_T5_KEYS; ++j) tk[j] = 7 * j;
  std::vector<float> bias = case_input<float>(POSEMB_CASE_T5_HEADS * 3 * POSEMB_CASE_T5_KEYS);
  const Eigen::TensorMap<const Eigen::Tensor<float, 3, Eigen::RowMajor>> d_bias(
      bias.data(), POSEMB_CASE_T5_HEADS, 3, POSEMB_CASE_T5_KEYS);
  for (int bidirectional = 1; bidirectional >= 0; --bidirectional) {
    const auto table =
        posemb::t5_table_gradient(d_bias, posemb::T5Buckets{32, 128, bidirectional == 1}, tq, tk);
    char head[32];
    std::snprintf(head, sizeof head, "t5grad %d", bidirectional);
    print_doubles(head, table.data(), static_cast<std::size_t>(table.size()));
  }
}

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--grad") == 0) {
    print_fope_cases();
    print_table_gradients();
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--kv") == 0) {
    print_kv_cases();
    print_kv_errors();
    return 0;
  }
  if (argc != 2) {
    std::fprintf(stderr,
                 "usage: reference_dump DATA_DIR | reference_dump --kv | reference_dump --grad\n");
    return 2;
  }
  const fs::path data = argv[1];
  print_json_cases(data, "hf");
  print_json_cases(data, "models");
  print_gguf_cases(data);
  for (int layout = 0; layout < 2; ++layout) {
    print_mrope<float>(layout);
    print_mrope<Eigen::half>(layout);
    print_mrope<Eigen::bfloat16>(layout);
  }
  print_biases();
  print_errors(data);
  return 0;
}
