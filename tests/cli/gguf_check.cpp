// The checker of the GGUF, diff and --weights cases of the posemb tool (gguf_cli_tests.cmake):
//   freqs OUT.json EXPECTED.json I    the tool's object against expected.json's freqs[I].expect
//                                     (tests/data/gguf/README.md §7: ints, strings, lists, nulls
//                                     exact; scales 1e-6 relative; inv_freq 1e-6 max(|e|, 1e-12))
//   diff OUT.json EXPECTED.json I     the (layer, field) pairs of `diff --json` against diff[I]
//   write-gguf DIR                    hostile GGUF files and a 48-layer model with two configs
//   write-weights DIR                 safetensors checkpoints (tables by the formulas below),
//                                     malformed ones, token embeddings x.npy and positions.npy
//   write-fope CASE_DIR DIR           FoPE checkpoints carrying CASE_DIR's sin_coef.npy and
//                                     cos_coef.npy (the conformance coefficients) under the
//                                     authors' state-dict names, and a two-block config
//   learned Y.npy X.npy ROWS OFFSET (--offset K | P.npy)
//                                     Y = float32(X + table[p + OFFSET]) in float64, table by
//                                     formula
//   t5 BIAS.npy EXPECTED.json HEADS SHIFT
//                                     BIAS[h, i, j] = b(i, j) + 100 h + SHIFT, b the bucket ids
//                                     worked out by hand in EXPECTED.json (its head 0)
// Exit status 0 when the check holds, else 1 with the reason.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "io/gguf_writer.hpp"
#include "posemb/io/npy.hpp"

namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

bool fail(const std::string& reason) {
  std::cerr << "check failed: " << reason << "\n";
  return false;
}

bool close_relative(double got, double expected, double floor) {
  return std::fabs(got - expected) <= 1e-6 * std::max(std::fabs(expected), floor);
}

// One key of a freqs object (README §7).
bool same_value(const std::string& key, const nlohmann::json& got, const nlohmann::json& e) {
  if (key == "inv_freq") {
    if (!got.is_array() || got.size() != e.size()) return false;
    for (std::size_t i = 0; i < e.size(); ++i) {
      if (!close_relative(got[i].get<double>(), e[i].get<double>(), 1e-12)) return false;
    }
    return true;
  }
  if (e.is_null() || got.is_null()) return e.is_null() && got.is_null();
  if (key == "attention_scale" || key == "softmax_scale") {
    return got.is_number() && close_relative(got.get<double>(), e.get<double>(), 0.0);
  }
  if (key == "query_temperature") {
    for (const char* part : {"floor_scale", "attn_scale"}) {
      if (!close_relative(got.at(part).get<double>(), e.at(part).get<double>(), 0.0)) return false;
    }
    return true;
  }
  return got == e;
}

bool check_freqs(const std::string& out, const std::string& expected_path, std::size_t index) {
  const nlohmann::json got = read_json(out);
  const nlohmann::json expected = read_json(expected_path);
  const nlohmann::json& expect = expected.at("freqs").at(index).at("expect");
  if (expect.size() < 14) return fail("expected.json: fewer than the 14 keys of a layer object");
  for (const auto& [key, e] : expect.items()) {
    if (!got.contains(key)) return fail("no key " + key);
    if (!same_value(key, got.at(key), e)) {
      return fail(key + ": got " + got.at(key).dump() + " expected " + e.dump());
    }
  }
  std::printf("ok: %zu keys\n", expect.size());
  return true;
}

using Entry = std::pair<std::string, std::string>;  // (layer, field)

std::set<Entry> entries(const nlohmann::json& list) {
  std::set<Entry> out;
  for (const nlohmann::json& d : list)
    out.insert({d.at("layer").dump(), d.at("field").get<std::string>()});
  return out;
}

bool check_diff(const std::string& out, const std::string& expected_path, std::size_t index) {
  const std::set<Entry> got = entries(read_json(out));
  const std::set<Entry> expected =
      entries(read_json(expected_path).at("diff").at(index).at("expect"));
  for (const Entry& e : expected) {
    if (got.count(e) == 0) return fail("missing layer " + e.first + " " + e.second);
  }
  for (const Entry& g : got) {
    if (expected.count(g) == 0) return fail("extra layer " + g.first + " " + g.second);
  }
  std::printf("ok: %zu differences\n", got.size());
  return true;
}

// ---- GGUF files ----

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A llama config.json of `layers` layers, hidden 4096, 32 heads, context 8192.
std::string llama_config(int layers, double theta) {
  return nlohmann::json{{"model_type", "llama"},    {"num_hidden_layers", layers},
                        {"hidden_size", 4096},      {"num_attention_heads", 32},
                        {"num_key_value_heads", 8}, {"max_position_embeddings", 8192},
                        {"rope_theta", theta}}
      .dump();
}

void write_gguf(const std::string& dir) {
  using test_gguf::GgufWriter;
  using test_gguf::model_writer;
  // 48 layers: a faithful conversion (base 500000) and a config with another base.
  model_writer("llama", 48, 8192, 4096, 32)
      .f32("llama.rope.freq_base", 500000.0f)
      .write(dir + "/llama48.gguf");
  write_text(dir + "/llama48.json", llama_config(48, 500000.0));
  write_text(dir + "/llama48_theta1e4.json", llama_config(48, 10000.0));
  write_text(dir + "/llama47.json", llama_config(47, 500000.0));
  // Loader refusals: a known key with the wrong type, a missing key, an unknown architecture.
  model_writer("llama", 2, 4096, 256, 2)
      .str("llama.rope.freq_base", "1e6")
      .write(dir + "/freq_base_string.gguf");
  GgufWriter()
      .str("general.architecture", "llama")
      .u32("llama.context_length", 4096)
      .u32("llama.embedding_length", 256)
      .u32("llama.attention.head_count", 2)
      .write(dir + "/no_block_count.gguf");
  model_writer("mamba9", 2, 4096, 256, 2).write(dir + "/unknown_arch.gguf");
  // An architecture the pinned llama.cpp runs that posemb has no row for (mamba: recurrent).
  model_writer("mamba", 2, 4096, 256, 2).write(dir + "/no_row_arch.gguf");
  // Format refusals: a file cut short, a count the file cannot hold, a rope tensor past the end.
  const std::string whole = model_writer("llama", 2, 4096, 256, 2).header();
  GgufWriter::write_bytes(dir + "/truncated.gguf", whole.substr(0, whole.size() - 3));
  std::string huge = whole;
  for (int k = 16; k < 24; ++k) huge[static_cast<std::size_t>(k)] = '\x7f';  // metadata count
  GgufWriter::write_bytes(dir + "/huge_count.gguf", huge);
  model_writer("llama", 2, 4096, 256, 2)
      .info("rope_freqs.weight", {64}, 0, 1 << 20)
      .write(dir + "/rope_freqs_past_end.gguf");
}

// ---- safetensors files ----

// The learned tables: row r, column c holds 0.25 + r + c / 32 (exact in float32).
float table_value(std::int64_t row, std::int64_t col) {
  return 0.25f + static_cast<float>(row) + static_cast<float>(col) / 32.0f;
}

constexpr std::int64_t width = 8;  // d of the test models

std::string f32_bytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

std::string learned_table(std::int64_t rows) {
  std::vector<float> values;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < width; ++c) values.push_back(table_value(r, c));
  }
  return f32_bytes(values);
}

// T5 tables [buckets, heads]: b + 100 h + shift.
std::string t5_table(std::int64_t buckets, std::int64_t heads, float shift) {
  std::vector<float> values;
  for (std::int64_t b = 0; b < buckets; ++b) {
    for (std::int64_t h = 0; h < heads; ++h)
      values.push_back(static_cast<float>(b + 100 * h) + shift);
  }
  return f32_bytes(values);
}

struct Tensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::string bytes;
};

void write_safetensors_raw(const std::string& path, const std::string& header,
                           const std::string& data) {
  std::string out;
  test_gguf::put(out, header.size(), 8);
  std::ofstream(path, std::ios::binary) << out << header << data;
}

// F32 tensors one after the other.
void write_safetensors(const std::string& path, const std::vector<Tensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const Tensor& t : tensors) {
    header[t.name] = {{"dtype", "F32"},
                      {"shape", t.shape},
                      {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  write_safetensors_raw(path, header.dump(), data);
}

void write_weights(const std::string& dir) {
  const Tensor lm_head{"lm_head.weight", {2, width}, learned_table(2)};
  write_safetensors(dir + "/gpt2.safetensors",
                    {lm_head, {"wpe.weight", {16, width}, learned_table(16)}});
  write_safetensors(dir + "/gpt2_prefixed.safetensors",
                    {{"transformer.wpe.weight", {16, width}, learned_table(16)}, lm_head});
  // OPT, sharded: the table (max_position_embeddings 16 + offset 2 rows) in the second shard.
  write_safetensors(dir + "/opt-00001-of-00002.safetensors", {lm_head});
  write_safetensors(dir + "/opt-00002-of-00002.safetensors",
                    {{"model.decoder.embed_positions.weight", {18, width}, learned_table(18)}});
  write_text(
      dir + "/opt.safetensors.index.json",
      nlohmann::json{{"metadata", {{"total_size", 0}}},
                     {"weight_map",
                      {{"lm_head.weight", "opt-00001-of-00002.safetensors"},
                       {"model.decoder.embed_positions.weight", "opt-00002-of-00002.safetensors"}}}}
          .dump());
  const std::string bias = ".layer.0.SelfAttention.relative_attention_bias.weight";
  write_safetensors(dir + "/t5.safetensors",
                    {{"encoder.block.0" + bias, {32, 2}, t5_table(32, 2, 0)},
                     {"decoder.block.0" + bias, {32, 2}, t5_table(32, 2, 10000)}});
  std::vector<Tensor> umt5;
  for (int k = 0; k < 3; ++k) {
    umt5.push_back(
        {"encoder.block." + std::to_string(k) + bias, {32, 6}, t5_table(32, 6, 1000.0f * k)});
    umt5.push_back({"decoder.block." + std::to_string(k) + bias,
                    {32, 6},
                    t5_table(32, 6, 10000.0f + 1000.0f * k)});
  }
  write_safetensors(dir + "/umt5.safetensors", umt5);
  // BERT (prefixed), RoBERTa (rows p + 2), XLM-RoBERTa with pad_token_id 3 (rows p + 4, bare).
  write_safetensors(
      dir + "/bert.safetensors",
      {{"bert.embeddings.position_embeddings.weight", {16, width}, learned_table(16)}});
  write_safetensors(
      dir + "/roberta.safetensors",
      {lm_head, {"roberta.embeddings.position_embeddings.weight", {18, width}, learned_table(18)}});
  write_safetensors(dir + "/xlm_roberta.safetensors",
                    {{"embeddings.position_embeddings.weight", {20, width}, learned_table(20)}});
  write_safetensors(dir + "/no_table.safetensors", {lm_head});
  std::string past_end;
  test_gguf::put(past_end, 1000, 8);  // a header of 1000 bytes in a file of 10
  write_text(dir + "/header_past_end.safetensors", past_end + "{}");
  write_safetensors_raw(dir + "/bad_json.safetensors", "{\"wpe.weight\": [", "");
  const std::string short_header =
      R"({"wpe.weight":{"dtype":"F32","shape":[16,8],"data_offsets":[0,512]}})";
  write_safetensors_raw(dir + "/data_past_end.safetensors", short_header, std::string(100, '\0'));
  // Token embeddings x [2, 5, 8] = (b, s, c) -> b - s / 4 + c / 8, positions [2, 5].
  std::vector<float> x;
  for (int b = 0; b < 2; ++b) {
    for (int s = 0; s < 5; ++s) {
      for (int c = 0; c < width; ++c) x.push_back(static_cast<float>(b) - s / 4.0f + c / 8.0f);
    }
  }
  posemb::write_npy(dir + "/x.npy", x.data(), {2, 5, width});
  std::vector<double> x64;  // x + 1/3: values float32 cannot hold
  for (const float value : x) x64.push_back(double(value) + 1.0 / 3.0);
  posemb::write_npy(dir + "/x64.npy", x64.data(), {2, 5, width});
  const std::vector<std::int64_t> positions = {0, 1, 2, 3, 4, 15, 9, 0, 7, 3};
  posemb::write_npy(dir + "/positions.npy", positions.data(), {2, 5});
}

// ---- expected values ----

bool check_learned(const std::vector<std::string>& a) {
  const posemb::NpyArray y = posemb::read_npy(a[1]), x = posemb::read_npy(a[2]);
  const std::int64_t rows = std::stoll(a[3]), offset = std::stoll(a[4]);
  if (y.dtype != "<f4" || y.shape != x.shape) return fail("Y is not float32 of X's shape");
  std::vector<std::int64_t> p;  // [batch, seq] positions
  const std::int64_t batch = x.shape[0], seq = x.shape[1], d = x.shape[2];
  if (a[5] == "--offset") {
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int64_t s = 0; s < seq; ++s) p.push_back(std::stoll(a[6]) + s);
    }
  } else {
    p = posemb::read_npy(a[5]).values<std::int64_t>();
  }
  std::vector<double> xs;
  if (x.dtype == "<f8") {
    xs = x.values<double>();
  } else {
    for (const float value : x.values<float>()) xs.push_back(value);
  }
  const std::vector<float> ys = y.values<float>();
  for (std::int64_t token = 0; token < batch * seq; ++token) {
    const std::int64_t row = p[static_cast<std::size_t>(token)] + offset;
    if (row < 0 || row >= rows) return fail("row " + std::to_string(row) + " outside the table");
    for (std::int64_t c = 0; c < d; ++c) {
      const auto k = static_cast<std::size_t>(token * d + c);
      const float expected = static_cast<float>(xs[k] + double(table_value(row, c)));
      if (ys[k] != expected) {
        return fail("y[" + std::to_string(k) + "] = " + std::to_string(ys[k]) + ", expected " +
                    std::to_string(expected));
      }
    }
  }
  std::printf("ok: %zu values exact\n", ys.size());
  return true;
}

bool check_t5(const std::vector<std::string>& a) {
  const posemb::NpyArray got = posemb::read_npy(a[1]);
  const nlohmann::json expected = read_json(a[2]);
  const std::int64_t heads = std::stoll(a[3]);
  const double shift = std::stod(a[4]);
  const std::vector<std::int64_t> shape = expected.at("shape").get<std::vector<std::int64_t>>();
  const std::int64_t cells = shape[1] * shape[2];
  if (got.shape != std::vector<std::int64_t>{heads, shape[1], shape[2]})
    return fail("shape differs");
  const std::vector<float> values = got.values<float>();
  for (std::int64_t h = 0; h < heads; ++h) {
    for (std::int64_t k = 0; k < cells; ++k) {
      const double bucket = expected.at("values").at(static_cast<std::size_t>(k)).get<double>();
      const double e = bucket + 100.0 * static_cast<double>(h) + shift;
      if (values[static_cast<std::size_t>(h * cells + k)] != e) {
        return fail("bias[" + std::to_string(h) + "][" + std::to_string(k) +
                    "] != " + std::to_string(e));
      }
    }
  }
  std::printf("ok: %zu values exact\n", values.size());
  return true;
}

// FoPE: fope.safetensors holds zeros in block 0 and the case's coefficients in block 1
// (`transformer.blocks.<i>.pos_emb.{sin,cos}_coef`); fope_model_prefix.safetensors the
// coefficients in block 0 under `model.`; fope_2d.safetensors a 2-D sin_coef; two_blocks.json
// is the case's config with num_hidden_layers 2.
void write_fope(const std::string& case_dir, const std::string& dir) {
  const posemb::NpyArray sin = posemb::read_npy(case_dir + "/sin_coef.npy");
  const posemb::NpyArray cos = posemb::read_npy(case_dir + "/cos_coef.npy");
  const std::string sin_bytes = f32_bytes(sin.values<float>());
  const std::string cos_bytes = f32_bytes(cos.values<float>());
  const std::string zeros(sin_bytes.size(), '\0');
  const std::string block = "transformer.blocks.";
  write_safetensors(dir + "/fope.safetensors",
                    {{block + "0.pos_emb.sin_coef", sin.shape, zeros},
                     {block + "0.pos_emb.cos_coef", cos.shape, zeros},
                     {block + "1.pos_emb.sin_coef", sin.shape, sin_bytes},
                     {block + "1.pos_emb.cos_coef", cos.shape, cos_bytes}});
  write_safetensors(dir + "/fope_model_prefix.safetensors",
                    {{"model." + block + "0.pos_emb.cos_coef", cos.shape, cos_bytes},
                     {"model." + block + "0.pos_emb.sin_coef", sin.shape, sin_bytes}});
  const std::int64_t rows = sin.shape[0] * sin.shape[1];
  write_safetensors(dir + "/fope_2d.safetensors",
                    {{block + "0.pos_emb.sin_coef", {rows, sin.shape[2]}, sin_bytes},
                     {block + "0.pos_emb.cos_coef", cos.shape, cos_bytes}});
  nlohmann::json config = read_json(case_dir + "/config.json");
  config["num_hidden_layers"] = 2;
  write_text(dir + "/two_blocks.json", config.dump());
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  try {
    bool ok = false;
    if (a.size() == 4 && a[0] == "freqs") {
      ok = check_freqs(a[1], a[2], std::stoul(a[3]));
    } else if (a.size() == 4 && a[0] == "diff") {
      ok = check_diff(a[1], a[2], std::stoul(a[3]));
    } else if (a.size() == 2 && a[0] == "write-gguf") {
      std::filesystem::create_directories(a[1]);
      write_gguf(a[1]);
      ok = true;
    } else if (a.size() == 2 && a[0] == "write-weights") {
      std::filesystem::create_directories(a[1]);
      write_weights(a[1]);
      ok = true;
    } else if (a.size() == 3 && a[0] == "write-fope") {
      std::filesystem::create_directories(a[2]);
      write_fope(a[1], a[2]);
      ok = true;
    } else if (a.size() >= 6 && a[0] == "learned") {
      ok = check_learned(a);
    } else if (a.size() == 5 && a[0] == "t5") {
      ok = check_t5(a);
    } else {
      std::cerr << "usage: see the comment at the top of gguf_check.cpp\n";
    }
    return ok ? 0 : 1;
  } catch (const std::exception& error) {
    std::cerr << "check failed: " << error.what() << "\n";
    return 1;
  }
}
