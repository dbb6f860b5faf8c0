// The pass criterion of tests/data/models/README.md for one layer object, shared by the Catch2
// test of the loader (test_model_layers.cpp) and the tool's checker (cli/cli_check.cpp):
//   layer, head_dim, rotary_dim, sliding_window, attention_chunk_size and query_temperature's
//   position_offset: equal JSON integers; positions, rope_type, pairing, bias_placement,
//   mrope_layout: equal strings; attention_sinks: equal booleans; nulls null;
//   attention_scale, softmax_scale, logit_softcap, query_temperature's floor_scale and
//   attn_scale: |got - exp| <= 1e-6 |exp|;
//   inv_freq: equal length, |got - exp| <= 1e-6 max(|exp|, 1e-12) per element.
// Keys of `got` that the expected object lacks are ignored.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace posemb_test {

// "" when `got` matches `expected`, else what differs first.
inline std::string layer_mismatch(const nlohmann::json& got, const nlohmann::json& expected) {
  const auto close = [](double g, double e, double floor) {
    return std::fabs(g - e) <= 1e-6 * std::max(std::fabs(e), floor);
  };
  for (const auto& item : expected.items()) {
    const std::string& key = item.key();
    const nlohmann::json& want = item.value();
    if (!got.contains(key)) return key + ": missing";
    const nlohmann::json& have = got.at(key);
    const std::string where =
        key + ": got " + have.dump().substr(0, 200) + ", expected " + want.dump().substr(0, 200);
    if (want.is_null() || have.is_null()) {
      if (want.is_null() != have.is_null()) return where;
    } else if (key == "inv_freq") {
      if (!have.is_array() || have.size() != want.size()) return where;
      for (std::size_t i = 0; i < want.size(); ++i) {
        if (!have[i].is_number() || !close(have[i].get<double>(), want[i].get<double>(), 1e-12)) {
          return "inv_freq[" + std::to_string(i) + "]: got " + have[i].dump() + ", expected " +
                 want[i].dump();
        }
      }
    } else if (key == "attention_scale" || key == "softmax_scale" || key == "logit_softcap") {
      if (!have.is_number() || !close(have.get<double>(), want.get<double>(), 0.0)) return where;
    } else if (key == "query_temperature") {
      for (const char* field : {"floor_scale", "attn_scale"}) {
        if (!have.contains(field) || !have.at(field).is_number() ||
            !close(have.at(field).get<double>(), want.at(field).get<double>(), 0.0)) {
          return where;
        }
      }
      if (want.contains("position_offset") &&
          (!have.contains("position_offset") || !have.at("position_offset").is_number_integer() ||
           have.at("position_offset") != want.at("position_offset"))) {
        return where;
      }
    } else if (want.is_number_integer()) {
      if (!have.is_number_integer() || have.get<long long>() != want.get<long long>()) return where;
    } else if (have != want) {
      return where;
    }
  }
  return "";
}

}  // namespace posemb_test
