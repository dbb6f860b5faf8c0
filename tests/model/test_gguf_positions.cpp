// Tests for gguf.hpp, layer_plan.hpp and diff.hpp: every public case of tests/data/gguf exactly
// as its README's pass criterion states (per-layer objects against expected.json, computed by
// an independent float64 reference from llama.cpp's code; the (layer, field) set of each diff;
// the errors of malformed files), and properties of llama.cpp's semantics on GGUF files the
// tests write (gguf_writer.hpp) for the architectures no public case covers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/gguf_writer.hpp"
#include "posemb/model/diff.hpp"
#include "posemb/model/gguf.hpp"
#include "posemb/model/layer_plan.hpp"

using nlohmann::json;
using test_gguf::GgufWriter;

namespace {

const std::string data_dir = std::string(POSEMB_TEST_DATA_DIR) + "/gguf/";

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return json::parse(in);
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(data_dir)) {
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// "--layer I", "--seq-len N" of a case's args.
std::pair<int, std::optional<std::int64_t>> parse_args(const json& args) {
  int layer = 0;
  std::optional<std::int64_t> seq_len;
  for (std::size_t k = 0; k + 1 < args.size(); k += 2) {
    const std::string flag = args[k].get<std::string>();
    const std::string value = args[k + 1].get<std::string>();
    if (flag == "--layer") layer = std::stoi(value);
    if (flag == "--seq-len") seq_len = std::stoll(value);
  }
  return {layer, seq_len};
}

bool relative_close(double got, double expected) {
  return std::abs(got - expected) <= 1e-6 * std::abs(expected);
}

// The README's pass criterion for one object: ints, strings, lists, nulls exact; the scales and
// the temperature within 1e-6 relative; inv_freq within 1e-6 * max(|exp|, 1e-12) per element.
void check_object(const json& got, const json& expected) {
  for (const auto& [key, value] : expected.items()) {
    CAPTURE(key);
    REQUIRE(got.contains(key));
    const json& actual = got.at(key);
    if (key == "inv_freq") {
      REQUIRE(actual.size() == value.size());
      for (std::size_t i = 0; i < value.size(); ++i) {
        CAPTURE(i);
        const double e = value[i].get<double>();
        CHECK(std::abs(actual[i].get<double>() - e) <= 1e-6 * std::max(std::abs(e), 1e-12));
      }
    } else if (key == "attention_scale" || key == "softmax_scale") {
      REQUIRE(actual.is_number() == value.is_number());
      if (value.is_number()) CHECK(relative_close(actual.get<double>(), value.get<double>()));
    } else if (key == "query_temperature" && !value.is_null()) {
      REQUIRE(actual.is_object());
      CHECK(
          relative_close(actual["floor_scale"].get<double>(), value["floor_scale"].get<double>()));
      CHECK(relative_close(actual["attn_scale"].get<double>(), value["attn_scale"].get<double>()));
    } else {
      CHECK(actual == value);
    }
  }
}

std::set<std::pair<json, std::string>> difference_set(const json& entries) {
  std::set<std::pair<json, std::string>> out;
  for (const json& entry : entries) out.emplace(entry["layer"], entry["field"].get<std::string>());
  return out;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

TEST_CASE("every public GGUF case holds as its README states") {
  const std::vector<std::string> names = case_names();
  // The 8 public cases of the contract, the 5 extra-family files written with ggml's gguf API and
  // the 5 llama.cpp conversions' key/values written with gguf-py (make_llamacpp_archs.py).
  const auto prefixed = [&](const char* prefix) {
    return std::count_if(names.begin(), names.end(),
                         [&](const std::string& name) { return name.rfind(prefix, 0) == 0; });
  };
  REQUIRE(names.size() == 18);
  REQUIRE(prefixed("ggml-") == 5);
  REQUIRE(prefixed("llamacpp-") == 5);
  for (const std::string& name : names) {
    CAPTURE(name);
    const std::string dir = data_dir + name + "/";
    const json expected = read_json(dir + "expected.json");
    const std::string gguf = dir + "model.gguf", config = dir + "config.json";
    for (const json& run : expected.value("freqs", json::array())) {
      CAPTURE(run["args"].dump());
      const auto [layer, seq_len] = parse_args(run["args"]);
      const posemb::GgufPositions plan = posemb::read_gguf_positions(gguf, seq_len);
      const std::vector<posemb::LayerPlan> layers = posemb::gguf_layer_plans(plan);
      REQUIRE(layer < static_cast<int>(layers.size()));
      check_object(json::parse(posemb::layer_plan_json(layers[static_cast<std::size_t>(layer)])),
                   run["expect"]);
    }
    for (const json& run : expected.value("diff", json::array())) {
      CAPTURE(run["args"].dump());
      const auto seq_len = parse_args(run["args"]).second;
      const auto differences = posemb::diff_gguf_config(gguf, config, seq_len);
      CHECK((differences.empty() ? 0 : 3) == run["exit"].get<int>());
      const json printed = json::parse(posemb::differences_json(differences));
      CHECK(difference_set(printed) == difference_set(run["expect"]));
      // The text form has one line per difference.
      const std::string text = posemb::differences_text(differences);
      CHECK(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) ==
            differences.size());
    }
    if (expected.contains("error")) {
      for (const json& command : expected["error"]["commands"]) {
        CAPTURE(command.dump());
        std::string message;
        try {
          if (command[0] == "diff") {
            posemb::diff_gguf_config(gguf, config, std::nullopt);
          } else {
            posemb::read_gguf_positions(gguf);
          }
        } catch (const posemb::Error& error) {
          message = error.what();
        }
        REQUIRE(!message.empty());
        CHECK(message.find('\n') == std::string::npos);
        for (const json& part : expected["error"]["message_contains"]) {
          CHECK(lower(message).find(lower(part.get<std::string>())) != std::string::npos);
        }
      }
    }
  }
}

TEST_CASE("the faithful conversions' differences carry llama.cpp's reasons") {
  const auto mistral =
      posemb::diff_gguf_config(data_dir + "mistral-7b-v0.1/model.gguf",
                               data_dir + "mistral-7b-v0.1/config.json", std::nullopt);
  REQUIRE(mistral.size() == 32);
  for (const posemb::PlanDifference& d : mistral) {
    CHECK(d.field == "sliding_window");
    CHECK(d.gguf == "null");
    CHECK(d.config == "4096");
    CHECK(d.note.find("no sliding window") != std::string::npos);
  }
  const std::string phi = data_dir + "phi-3.5-mini-instruct/";
  for (const auto& d :
       posemb::diff_gguf_config(phi + "model.gguf", phi + "config.json", std::nullopt)) {
    CHECK_FALSE(d.note.empty());
  }
  // The broken conversion's differences have no excuse.
  const std::string codellama = data_dir + "codellama-7b-instruct-freq-base-missing/";
  const auto broken =
      posemb::diff_gguf_config(codellama + "model.gguf", codellama + "config.json", std::nullopt);
  REQUIRE(broken.size() == 32);
  for (const auto& d : broken) CHECK(d.note.empty());
  CHECK(posemb::differences_text(broken).find("layer 0 inv_freq: gguf ") == 0);
}

TEST_CASE("the vocabulary's RoPE specs reproduce llama.cpp's frequencies on every case") {
  for (const std::string& name : case_names()) {
    if (name.rfind("malformed", 0) == 0) continue;
    CAPTURE(name);
    for (const std::optional<std::int64_t> n_ctx :
         {std::optional<std::int64_t>(), std::optional<std::int64_t>(4096)}) {
      const posemb::GgufPositions plan =
          posemb::read_gguf_positions(data_dir + name + "/model.gguf", n_ctx);
      for (std::size_t il = 0; il < plan.ropes.size(); ++il) {
        if (!plan.ropes[il]) continue;
        // The spec does not depend on the sequence length: llama.cpp chose at load time.
        for (const auto seq_len :
             {std::optional<std::int64_t>(), std::optional<std::int64_t>(1 << 20)}) {
          const posemb::RopeSpec spec = plan.model.layers[il].rope_spec(seq_len);
          REQUIRE(spec.inv_freq.size() == plan.ropes[il]->inv_freq.size());
          for (Eigen::Index i = 0; i < spec.inv_freq.size(); ++i) {
            CHECK(spec.inv_freq[i] == Approx(plan.ropes[il]->inv_freq[i]).epsilon(1e-14));
          }
          CHECK(spec.attention_scale == Approx(plan.ropes[il]->attention_scale).epsilon(1e-15));
        }
      }
    }
  }
}

TEST_CASE("llama4: NoPE every 4th layer with temperature, chunked layers, interleaved") {
  // load_hparams for LLM_ARCH_LLAMA4: n_no_rope_layer_step 4, chunked SWA 8192 with pattern 4
  // (il % 4 < 3); chunked layers use rope.freq_base_swa. llama_model_rope_type: NORM, and
  // Llama4Model does not permute, so the pairs are interleaved in the HF checkpoint too.
  const std::string path = (std::filesystem::temp_directory_path() / "posemb_llama4.gguf").string();
  test_gguf::model_writer("llama4", 8, 8192, 512, 4)
      .f32("llama4.rope.freq_base", 500000.0f)
      .f32("llama4.rope.freq_base_swa", 10000.0f)
      .write(path);
  const posemb::GgufPositions plan = posemb::read_gguf_positions(path);
  for (std::size_t il = 0; il < 8; ++il) {
    CAPTURE(il);
    const posemb::LayerPositions& layer = plan.model.layers[il];
    const bool nope = (il + 1) % 4 == 0;
    CHECK((layer.kind == posemb::PositionKind::None) == nope);
    CHECK(layer.attention.query_temperature.has_value() == nope);
    CHECK(layer.attention.attention_chunk_size ==
          (nope ? std::nullopt : std::optional<std::int64_t>(8192)));
    CHECK(*layer.attention.softmax_scale == Approx(1.0 / std::sqrt(128.0)));
    if (nope) continue;
    CHECK(layer.rope->pairing == posemb::Pairing::Interleaved);
    CHECK(plan.ropes[il]->inv_freq[1] == Approx(std::pow(10000.0, -2.0 / 128.0)).epsilon(1e-15));
  }
  // With attention.sliding_window 0: no chunks, only the last layer without RoPE.
  test_gguf::model_writer("llama4", 8, 8192, 512, 4)
      .u32("llama4.attention.sliding_window", 0)
      .write(path);
  const posemb::GgufPositions full = posemb::read_gguf_positions(path);
  for (std::size_t il = 0; il < 8; ++il) {
    CHECK((full.model.layers[il].kind == posemb::PositionKind::None) == (il == 7));
    CHECK_FALSE(full.model.layers[il].attention.attention_chunk_size);
  }
  std::filesystem::remove(path);
}

TEST_CASE("gemma3 YaRN: SWA layers keep base 10000 and scale 1, global layers YaRN's") {
  // rope_yarn: magnitude get_mscale(F) / (1 + 0.1 ln F) * (1 + 0.1 ln(1 / scale)); with F = 8 a
  // global layer gets 1 + 0.1 ln 8, an SWA layer (scale 1) get_mscale(8) / (1 + 0.1 ln 8) = 1.
  const std::string path = (std::filesystem::temp_directory_path() / "posemb_gemma3.gguf").string();
  test_gguf::model_writer("gemma3", 6, 131072, 2560, 8)
      .u32("gemma3.attention.key_length", 256)
      .u32("gemma3.attention.sliding_window", 1024)
      .f32("gemma3.rope.freq_base", 1000000.0f)
      .str("gemma3.rope.scaling.type", "yarn")
      .f32("gemma3.rope.scaling.factor", 8.0f)
      .u32("gemma3.rope.scaling.original_context_length", 16384)
      .write(path);
  const posemb::GgufPositions plan = posemb::read_gguf_positions(path);
  CHECK(plan.ropes[0]->attention_scale == Approx(1.0).epsilon(1e-15));
  CHECK(plan.ropes[5]->attention_scale == Approx(1.0 + 0.1 * std::log(8.0)).epsilon(1e-15));
  CHECK(plan.ropes[0]->inv_freq[1] == Approx(std::pow(10000.0, -2.0 / 256.0)).epsilon(1e-15));
  // The global layer's slowest pair is fully interpolated (ramp 1): base^(-254/256) / 8.
  CHECK(plan.ropes[5]->inv_freq[127] == Approx(std::pow(1e6, -254.0 / 256.0) / 8.0).epsilon(1e-14));
  CHECK(plan.ropes[5]->inv_freq[0] == 1.0);  // the fastest pair is kept
  CHECK(plan.model.layers[0].attention.sliding_window == 1024);
  CHECK_FALSE(plan.model.layers[5].attention.sliding_window);
  CHECK(*plan.model.layers[5].attention.softmax_scale == Approx(1.0 / 16.0));
  std::filesystem::remove(path);
}

TEST_CASE("LongRoPE factors chosen by the context size padded to 256, as llama.cpp") {
  // llama_context::llama_context: n_ctx_seq = GGML_PAD(n_ctx, 256); get_rope_factors: long
  // when n_ctx_seq > n_ctx_orig_yarn. With an original context of 4000, a requested 3900 runs
  // as 4096 > 4000 (long factors); 3840 stays 3840 (short). Short factors 1, long factors 4.
  const std::string path = (std::filesystem::temp_directory_path() / "posemb_phi3.gguf").string();
  test_gguf::model_writer("phi3", 2, 131072, 256, 4)
      .u32("phi3.rope.scaling.original_context_length", 4000)
      .tensor("rope_factors_long.weight", std::vector<float>(32, 4.0f))
      .tensor("rope_factors_short.weight", std::vector<float>(32, 1.0f))
      .write(path);
  const double plain_pair1 = std::pow(10000.0, -2.0 / 64.0);
  const posemb::GgufPositions padded = posemb::read_gguf_positions(path, 3900);
  CHECK(padded.n_ctx_seq == 4096);
  CHECK(padded.ropes[0]->inv_freq[1] == Approx(plain_pair1 / 4.0).epsilon(1e-15));
  const posemb::GgufPositions exact = posemb::read_gguf_positions(path, 3840);
  CHECK(exact.n_ctx_seq == 3840);
  CHECK(exact.ropes[0]->inv_freq[1] == Approx(plain_pair1).epsilon(1e-15));
  CHECK(posemb::read_gguf_positions(path, 1).n_ctx_seq == 256);
  CHECK(posemb::read_gguf_positions(path).n_ctx_seq == 131072);
  std::filesystem::remove(path);
}

TEST_CASE("qwen2vl: three sections are M-RoPE, a non-zero fourth is refused naming the key") {
  // ggml_mrope_cache_init: sections [t, h, w, e]; llama.cpp fills the fourth position stream with
  // the text position or 0 depending on the batch, so a non-zero e has no single meaning.
  const std::string path =
      (std::filesystem::temp_directory_path() / "posemb_qwen2vl.gguf").string();
  test_gguf::model_writer("qwen2vl", 2, 32768, 1024, 8)
      .f32("qwen2vl.rope.freq_base", 1000000.0f)
      .ints("qwen2vl.rope.dimension_sections", {16, 24, 24, 0})
      .write(path);
  const posemb::GgufPositions plan = posemb::read_gguf_positions(path);
  CHECK(plan.hparams.rope_mode == posemb::GgufRopeMode::Mrope);
  CHECK(plan.model.layers[1].rope->mrope_section == posemb::MropeSections{16, 24, 24});
  CHECK(plan.model.layers[1].rope->pairing == posemb::Pairing::RotateHalf);
  test_gguf::model_writer("qwen2vl", 2, 32768, 1024, 8)
      .ints("qwen2vl.rope.dimension_sections", {16, 24, 20, 4})
      .write(path);
  CHECK_THROWS_WITH(posemb::read_gguf_positions(path),
                    Catch::Contains("qwen2vl.rope.dimension_sections[3] = 4: expected 0") &&
                        Catch::Contains(path));
  std::filesystem::remove(path);
}

TEST_CASE("glm4: M-RoPE only when the first two sections are positive (use_mrope)") {
  // llama_model_rope_type: LLM_ARCH_GLM4 -> hparams.use_mrope() ? MROPE : NORM, use_mrope() being
  // rope_sections[0] > 0 && rope_sections[1] > 0 (src/llama-hparams.cpp).
  const std::string path = (std::filesystem::temp_directory_path() / "posemb_glm4.gguf").string();
  const auto write = [&](const std::vector<std::int64_t>& sections) {
    test_gguf::model_writer("glm4", 1, 32768, 4096, 32)
        .u32("glm4.attention.key_length", 128)
        .u32("glm4.rope.dimension_count", 64)
        .ints("glm4.rope.dimension_sections", sections)
        .write(path);
    return posemb::read_gguf_positions(path);
  };
  const posemb::GgufPositions mrope = write({8, 12, 12, 0});
  CHECK(mrope.hparams.rope_mode == posemb::GgufRopeMode::Mrope);
  CHECK(mrope.model.layers[0].rope->mrope_section == posemb::MropeSections{8, 12, 12});
  const posemb::GgufPositions norm = write({32, 0, 0, 0});
  CHECK(norm.hparams.rope_mode == posemb::GgufRopeMode::Norm);
  CHECK_FALSE(norm.model.layers[0].rope->mrope_section);
  CHECK(norm.model.layers[0].rope->pairing == posemb::Pairing::Interleaved);
  std::filesystem::remove(path);
}

TEST_CASE("gemma2 and gpt-oss: softcap and sinks on the layer's attention, even layers SWA") {
  // src/models/gemma2.cpp: attn_soft_cap with attn_logit_softcapping (50 in the file);
  // src/models/openai-moe.cpp: attn_sinks on every layer; load_swa_pattern(ml, 2) for both.
  const posemb::GgufPositions gemma2 =
      posemb::read_gguf_positions(data_dir + "llamacpp-gemma2/model.gguf");
  for (const posemb::LayerPositions& layer : gemma2.model.layers) {
    CHECK(layer.attention.logit_softcap == 50.0);
    CHECK_FALSE(layer.attention.attention_sinks);
  }
  CHECK(gemma2.model.layers[0].layer_type == "sliding_attention");
  CHECK(gemma2.model.layers[1].layer_type != "sliding_attention");
  const posemb::GgufPositions oss =
      posemb::read_gguf_positions(data_dir + "llamacpp-gpt-oss/model.gguf");
  for (const posemb::LayerPositions& layer : oss.model.layers) {
    CHECK(layer.attention.attention_sinks);
    CHECK_FALSE(layer.attention.logit_softcap);
  }
  CHECK(oss.model.layers[0].attention.sliding_window == 128);
  CHECK_FALSE(oss.model.layers[1].attention.sliding_window);
  // A gemma2 without the key: llama_hparams' default 50; a 46-layer gemma2 (the 27B) scales by
  // (n_embd / n_head)^-0.5 = (4608 / 32)^-0.5.
  const std::string path = (std::filesystem::temp_directory_path() / "posemb_gemma2.gguf").string();
  test_gguf::model_writer("gemma2", 46, 8192, 4608, 32)
      .u32("gemma2.attention.key_length", 128)
      .write(path);
  const posemb::GgufPositions big = posemb::read_gguf_positions(path);
  CHECK(big.model.layers[0].attention.logit_softcap == 50.0);
  CHECK(big.model.layers[0].attention.sliding_window == 4096);
  CHECK(*big.model.layers[0].attention.softmax_scale == Approx(1.0 / 12.0).epsilon(1e-15));
  std::filesystem::remove(path);
}

TEST_CASE("gpt-oss without attention.sliding_window is refused naming the key") {
  // src/models/openai-moe.cpp: get_key(LLM_KV_ATTENTION_SLIDING_WINDOW, n_swa), required.
  const std::string path = (std::filesystem::temp_directory_path() / "posemb_oss.gguf").string();
  test_gguf::model_writer("gpt-oss", 2, 4096, 64, 2).write(path);
  CHECK_THROWS_WITH(posemb::read_gguf_positions(path),
                    Catch::Contains("gpt-oss.attention.sliding_window: missing"));
  std::filesystem::remove(path);
}

TEST_CASE("deepseek2: MLA head, rope slice, yarn_log_multiplier in the softmax scale") {
  // src/models/deepseek2.cpp: rope_yarn_log_mul = 0.1f / 0.1f = 1; yarn_attn_factor (src/
  // llama-context.cpp) get_mscale(40, 1) / get_mscale(40, 1) / (1 + 0.1 ln 40), so rope_yarn's
  // magnitude is 1 and kq_scale = (1 + 0.1 ln 40)^2 / sqrt(192).
  const posemb::GgufPositions plan =
      posemb::read_gguf_positions(data_dir + "llamacpp-deepseek2/model.gguf");
  const double m = 1.0 + 0.1 * std::log(40.0);
  for (std::size_t il = 0; il < 2; ++il) {
    CHECK(plan.model.layers[il].head_dim == 192);
    CHECK(plan.ropes[il]->inv_freq.size() == 32);
    CHECK(plan.ropes[il]->attention_scale == Approx(1.0).epsilon(1e-12));
    CHECK(*plan.model.layers[il].attention.softmax_scale ==
          Approx(m * m / std::sqrt(192.0)).epsilon(1e-12));
  }
  // Without yarn_log_multiplier: yarn_attn_factor get_mscale(40, 1) / (1 + 0.1 ln 40) = 1,
  // magnitude 1 + 0.1 ln 40, kq_scale ((1 + 0.1 ln 40) * 1)^2 / sqrt(192); without the MLA keys
  // the head is key_length.
  const std::string path = (std::filesystem::temp_directory_path() / "posemb_ds2.gguf").string();
  test_gguf::model_writer("deepseek2", 2, 163840, 64, 2)
      .u32("deepseek2.attention.key_length", 96)
      .u32("deepseek2.rope.dimension_count", 64)
      .str("deepseek2.rope.scaling.type", "yarn")
      .f32("deepseek2.rope.scaling.factor", 40.0f)
      .u32("deepseek2.rope.scaling.original_context_length", 4096)
      .write(path);
  const posemb::GgufPositions plain = posemb::read_gguf_positions(path);
  CHECK(plain.model.layers[0].head_dim == 96);
  CHECK(plain.ropes[0]->attention_scale == Approx(m).epsilon(1e-12));
  CHECK(*plain.model.layers[0].attention.softmax_scale ==
        Approx(m * m / std::sqrt(96.0)).epsilon(1e-12));
  std::filesystem::remove(path);
}

TEST_CASE("an architecture without a row is refused naming it and whether llama.cpp runs it") {
  const std::string path = (std::filesystem::temp_directory_path() / "posemb_arch.gguf").string();
  // mamba: in LLM_ARCH_NAMES and llm_arch_is_recurrent; llama.cpp runs it, posemb has no row.
  test_gguf::model_writer("mamba", 2, 4096, 64, 2).write(path);
  CHECK_THROWS_WITH(posemb::read_gguf_positions(path),
                    Catch::Contains("general.architecture = \"mamba\": expected one of") &&
                        Catch::Contains("qwen2moe") && Catch::Contains("gemma2") &&
                        Catch::Contains("command-r") && Catch::Contains("gpt-oss") &&
                        Catch::Contains("deepseek2") &&
                        Catch::Contains("llama.cpp (llama-cpp-python 0.3.36) runs \"mamba\"") &&
                        Catch::Contains("posemb's gap, not a broken file"));
  // A name llama.cpp does not know: a broken or foreign file.
  test_gguf::model_writer("lama", 2, 4096, 64, 2).write(path);
  CHECK_THROWS_WITH(posemb::read_gguf_positions(path),
                    Catch::Contains("\"lama\" is not an architecture of the pinned llama.cpp") &&
                        Catch::Contains("a broken or foreign file"));
  std::filesystem::remove(path);
}

TEST_CASE("a GGUF plan's size is bounded: block_count and its rotary pairs") {
  // positions.hpp: at most 4096 layers and 2^17 rotary pairs, named by block_count.
  const std::string path = (std::filesystem::temp_directory_path() / "posemb_size.gguf").string();
  test_gguf::model_writer("llama", 4096, 4096, 64, 1).write(path);
  CHECK(posemb::read_gguf_positions(path).model.layers.size() == 4096);  // 131072 pairs
  test_gguf::model_writer("llama", 4097, 4096, 2, 1).write(path);
  CHECK_THROWS_WITH(posemb::read_gguf_positions(path),
                    Catch::Contains("llama.block_count = 4097") && Catch::Contains("1 .. 4096"));
  test_gguf::model_writer("llama", 4096, 4096, 66, 1).write(path);
  CHECK_THROWS_WITH(posemb::read_gguf_positions(path),
                    Catch::Contains("llama.block_count = 4096") &&
                        Catch::Contains("at most 131072 (135168 or more)"));
  std::filesystem::remove(path);
}
