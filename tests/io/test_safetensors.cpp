// Tests for safetensors.hpp and checkpoint_positions.hpp: files the tests write (one file and a
// sharded checkpoint), F32 / F16 / BF16 values against their IEEE encodings, zero-copy views, the
// positional tensors by their HuggingFace names, and an Error naming file and tensor for every
// malformed file.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "posemb/io/safetensors.hpp"
#include "posemb/model/checkpoint_positions.hpp"

namespace {

struct Entry {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
};

std::string f32_bytes(const std::vector<float>& values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::string scratch(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("posemb_st_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

void write_raw(const std::string& path, const std::string& header, const std::string& data) {
  std::string bytes(8, '\0');
  const std::uint64_t n = header.size();
  for (int k = 0; k < 8; ++k)
    bytes[static_cast<std::size_t>(k)] = static_cast<char>((n >> (8 * k)) & 0xFF);
  std::ofstream(path, std::ios::binary) << bytes << header << data;
}

// Writes the entries in order, each after the previous, with a header padded to 8 bytes.
void write_safetensors(const std::string& path, const std::map<std::string, Entry>& entries) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, e] : entries) {
    header[name] = {{"dtype", e.dtype},
                    {"shape", e.shape},
                    {"data_offsets", {data.size(), data.size() + e.bytes.size()}}};
    data += e.bytes;
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string text = header.dump();
  while ((text.size() % 8) != 0) text += ' ';
  write_raw(path, text, data);
}

void refused(const std::string& header, const std::string& data, const std::string& text) {
  CAPTURE(text);
  const std::string path = scratch("bad.safetensors");
  write_raw(path, header, data);
  std::string message;
  try {
    posemb::SafetensorsFile file(path);
  } catch (const posemb::Error& error) {
    message = error.what();
  }
  CAPTURE(message);
  CHECK(message.find(path) != std::string::npos);
  CHECK(message.find(text) != std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace

TEST_CASE("safetensors F32, F16 and BF16 tensors by name") {
  const std::string path = scratch("one.safetensors");
  // 1.0, -2.0, 0.5, 65504, the smallest subnormal 2^-24 and -0 in binary16; 1.0, 2.0 in
  // bfloat16. Written in name order: b (4 bytes), h (12), wpe.weight.
  write_safetensors(
      path,
      {{"wpe.weight", {"F32", {3, 2}, f32_bytes({0, 1, 2, 3, 4, 5})}},
       {"h", {"F16", {6}, std::string("\x00\x3c\x00\xc0\x00\x38\xff\x7b\x01\x00\x00\x80", 12)}},
       {"b", {"BF16", {2}, std::string("\x80\x3f\x00\x40", 4)}}});
  const posemb::SafetensorsFile file(path);
  CHECK(file.metadata().at("format") == "pt");
  const posemb::RowMatrixXf wpe = file.matrix("wpe.weight");
  REQUIRE(wpe.rows() == 3);
  REQUIRE(wpe.cols() == 2);
  CHECK(wpe(2, 1) == 5.0f);
  const auto view = file.f32_view("wpe.weight");
  REQUIRE(view);  // header padded to 8 bytes, 16 bytes before it: the data is aligned
  CHECK((*view)(1, 0) == 2.0f);
  CHECK(view->data() == reinterpret_cast<const float*>(file.bytes(file.tensor("wpe.weight"))));
  const posemb::RowMatrixXf h = file.matrix("h");
  CHECK(h(0, 0) == 1.0f);
  CHECK(h(0, 1) == -2.0f);
  CHECK(h(0, 2) == 0.5f);
  CHECK(h(0, 3) == 65504.0f);
  CHECK(h(0, 4) == std::ldexp(1.0f, -24));
  CHECK(std::signbit(h(0, 5)));  // -0
  CHECK(file.matrix("b")(0, 1) == 2.0f);
  CHECK_FALSE(file.f32_view("h"));
  CHECK_THROWS_WITH(file.matrix("missing"),
                    Catch::Contains(path) && Catch::Contains("missing: no such tensor"));
  std::filesystem::remove(path);
}

TEST_CASE("malformed safetensors files name the file and the tensor") {
  const std::string data = f32_bytes({1, 2, 3, 4});
  refused("{", data, "header: expected a JSON object");
  {
    const std::string path = scratch("short.safetensors");
    std::ofstream(path, std::ios::binary) << std::string("\xff\x00\x00\x00\x00\x00\x00\x00{}", 10);
    std::string message;
    try {
      posemb::SafetensorsFile file(path);
    } catch (const posemb::Error& e) {
      message = e.what();
    }
    CHECK(message.find("header length = 255") != std::string::npos);
    std::filesystem::remove(path);
  }
  refused(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 32]}})", data,
          "w.data_offsets = [0,32]");
  refused(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}})", data,
          "expected 3 x 4 bytes");
  refused(
      R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "v": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
      data, "v: data overlaps w's");
  refused(R"({"w": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 8]}})", data, "w.dtype = Q4");
  refused(R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", data, "w.shape");
}

TEST_CASE("sharded checkpoints and the positional tensors by their names") {
  const std::string dir = scratch("sharded");
  std::filesystem::create_directories(dir);
  write_safetensors(dir + "/model-00001-of-00002.safetensors",
                    {{"model.decoder.embed_positions.weight",
                      {"F32", {4, 2}, f32_bytes({0, 0, 0, 0, 7, 8, 9, 10})}}});
  write_safetensors(dir + "/model-00002-of-00002.safetensors",
                    {{"encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                      {"F32", {2, 3}, f32_bytes({1, 2, 3, 4, 5, 6})}},
                     {"decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                      {"BF16", {1, 1}, std::string("\x80\x3f", 2)}}});
  std::ofstream(dir + "/model.safetensors.index.json")
      << R"({"metadata": {}, "weight_map": {"model.decoder.embed_positions.weight": "model-00001-of-00002.safetensors",
            "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight": "model-00002-of-00002.safetensors",
            "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight": "model-00002-of-00002.safetensors",
            "listed.but.absent": "model-00002-of-00002.safetensors"}})";
  const posemb::SafetensorsCheckpoint weights(dir + "/model.safetensors.index.json");
  const posemb::CheckpointPositionTable opt = posemb::learned_position_table(weights, "opt");
  CHECK(opt.offset == 2);
  CHECK(opt.tensor_name == "model.decoder.embed_positions.weight");
  CHECK(opt.table(opt.offset + 0, 1) == 8.0f);  // position 0 is row 2
  const posemb::RowMatrixXf encoder = posemb::t5_relative_bias_table(weights, false);
  CHECK(encoder.rows() == 2);
  CHECK(encoder(1, 2) == 6.0f);
  CHECK(posemb::t5_relative_bias_table(weights, true)(0, 0) == 1.0f);
  CHECK_THROWS_WITH(posemb::learned_position_table(weights, "gpt2"),
                    Catch::Contains("no tensor named wpe.weight, transformer.wpe.weight"));
  CHECK_THROWS_WITH(weights.matrix("listed.but.absent"),
                    Catch::Contains("model-00002-of-00002.safetensors") &&
                        Catch::Contains("listed.but.absent: no such tensor"));
  CHECK_THROWS_WITH(posemb::t5_relative_bias_table(weights, false, 1),
                    Catch::Contains("encoder.block.1"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("BERT and RoBERTa tables: RoBERTa's rows start at padding_idx + 1") {
  // modeling_roberta.py create_position_ids_from_input_ids: the first non-padding token gets
  // position id padding_idx + 1, so position p is row p + pad_token_id + 1.
  const std::string path = scratch("roberta.safetensors");
  write_safetensors(path, {{"roberta.embeddings.position_embeddings.weight",
                            {"F32", {6, 1}, f32_bytes({10, 11, 12, 13, 14, 15})}}});
  const posemb::SafetensorsCheckpoint weights(path);
  const posemb::CheckpointPositionTable roberta =
      posemb::learned_position_table(weights, "roberta");
  CHECK(roberta.offset == 2);
  CHECK(roberta.table(roberta.offset + 0, 0) == 12.0f);
  CHECK(posemb::learned_position_table(weights, "xlm-roberta", 3).offset == 4);
  CHECK_THROWS_WITH(posemb::learned_position_table(weights, "roberta", -1),
                    Catch::Contains("pad_token_id = -1"));
  CHECK_THROWS_WITH(posemb::learned_position_table(weights, "bert"),
                    Catch::Contains("bert.embeddings.position_embeddings.weight"));
  write_safetensors(
      path, {{"embeddings.position_embeddings.weight", {"F32", {2, 1}, f32_bytes({5, 6})}}});
  const posemb::CheckpointPositionTable bert =
      posemb::learned_position_table(posemb::SafetensorsCheckpoint(path), "bert");
  CHECK(bert.offset == 0);
  CHECK(bert.table(0, 0) == 5.0f);
  std::filesystem::remove(path);
}

TEST_CASE("FoPE coefficients of a block, with or without the model prefix") {
  // The FoPE authors' OLMo FourierEmbedding: transformer.blocks.<i>.pos_emb.{sin,cos}_coef,
  // [n_kv_heads, D_in, D_out]; values laid out in C order.
  const std::string path = scratch("fope.safetensors");
  const std::vector<float> sin = {1, 2, 3, 4, 5, 6}, cos = {-1, -2, -3, -4, -5, -6};
  write_safetensors(
      path, {{"model.transformer.blocks.2.pos_emb.sin_coef", {"F32", {1, 3, 2}, f32_bytes(sin)}},
             {"model.transformer.blocks.2.pos_emb.cos_coef", {"F32", {1, 3, 2}, f32_bytes(cos)}},
             {"transformer.blocks.0.pos_emb.sin_coef", {"F32", {6}, f32_bytes(sin)}},
             {"transformer.blocks.0.pos_emb.cos_coef", {"F32", {1, 3, 2}, f32_bytes(cos)}}});
  const posemb::SafetensorsCheckpoint weights(path);
  const posemb::CheckpointFopeCoefficients coef = posemb::fope_checkpoint_coefficients(weights, 2);
  CHECK(coef.sin_coef == sin);
  CHECK(coef.cos_coef == cos);
  CHECK(coef.sin_shape == std::vector<std::int64_t>{1, 3, 2});
  CHECK(coef.cos_name == "model.transformer.blocks.2.pos_emb.cos_coef");
  CHECK_THROWS_WITH(posemb::fope_checkpoint_coefficients(weights, 0),
                    Catch::Contains("transformer.blocks.0.pos_emb.sin_coef: 1 dimensions"));
  CHECK_THROWS_WITH(posemb::fope_checkpoint_coefficients(weights, 1),
                    Catch::Contains("no tensor named transformer.blocks.1.pos_emb.sin_coef, "
                                    "model.transformer.blocks.1.pos_emb.sin_coef"));
  CHECK_THROWS_WITH(posemb::fope_checkpoint_coefficients(weights, -1),
                    Catch::Contains("block = -1"));
  std::filesystem::remove(path);
}
