// Typed, key-naming access to one JSON object (nlohmann-json), for the config.json reader.
// Every accessor throws posemb::Error naming the key with its path ("rope_scaling.factor").
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "posemb/error.hpp"

namespace posemb::detail {

// The key paths a reader looked at ("rope_scaling.factor"): what the config reader used, so that
// it can name the keys it did not (config/unused_keys.hpp).
using KeyLog = std::set<std::string>;

class JsonReader {
 public:
  // path: the object's own key path ("" for the root, "rope_scaling." for a block); log: where
  // every key present that is looked up is recorded (nullptr: nowhere).
  JsonReader(const nlohmann::json& object, std::string path, KeyLog* log = nullptr)
      : object_(object), path_(std::move(path)), log_(log) {}

  // A reader of a nested object that records into the same log.
  JsonReader child(const nlohmann::json& object, std::string path) const {
    return JsonReader(object, std::move(path), log_);
  }

  // A reader of `merged`, this object with some keys replaced: the keys of `overrides` (and
  // everything under them) are named override_path + key ("per_layer_config.5.head_dim"), the
  // others as here. `merged` and `overrides` must outlive the reader.
  JsonReader overridden(const nlohmann::json& merged, const nlohmann::json& overrides,
                        std::string override_path) const {
    JsonReader reader(merged, path_, log_);
    reader.overrides_ = &overrides;
    reader.override_path_ = std::move(override_path);
    return reader;
  }

  const nlohmann::json& json() const { return object_; }

  // The value at key, or nullptr when absent or null.
  const nlohmann::json* find(const std::string& key) const {
    const auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return nullptr;
    if (log_ != nullptr) log_->insert(name(key));
    return &*it;
  }
  bool has(const std::string& key) const { return find(key) != nullptr; }
  // The value at key like find(), not recorded as used (a comparison, not a reading).
  const nlohmann::json* peek(const std::string& key) const {
    const auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  // Whether key is present, null or not (an explicit null differs from an absent key).
  bool contains(const std::string& key) const { return object_.contains(key); }
  // The key's path; a nested path ("rope_parameters.factor") by its first name.
  std::string name(const std::string& key) const {
    if (overrides_ != nullptr && overrides_->contains(key.substr(0, key.find('.')))) {
      return override_path_ + key;
    }
    return path_ + key;
  }

  [[noreturn]] void wrong_type(const std::string& key, const std::string& expected) const {
    fail(name(key), find(key)->dump(), "expected " + expected);
  }
  [[noreturn]] void missing(const std::string& key, const std::string& why) const {
    throw Error(name(key), ": missing; " + why);
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
    if (auto x = as_integer(*value)) return x;
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
  // Python truthiness of a bool or a number (Llama 4 writes attn_temperature_tuning: 4).
  std::optional<bool> truthy(const std::string& key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (value->is_boolean()) return value->get<bool>();
    if (value->is_number()) return value->get<double>() != 0.0;
    wrong_type(key, "true, false or a number");
  }
  std::optional<std::string> string(const std::string& key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_string()) wrong_type(key, "a string");
    return value->get<std::string>();
  }
  // The object at key (nullptr when absent or null); anything but an object throws.
  const nlohmann::json* object(const std::string& key) const {
    const nlohmann::json* value = find(key);
    if (value != nullptr && !value->is_object()) wrong_type(key, "an object or null");
    return value;
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
  std::optional<std::vector<std::int64_t>> integers(const std::string& key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_array()) wrong_type(key, "a list of integers");
    std::vector<std::int64_t> out;
    for (const auto& item : *value) {
      const auto x = as_integer(item);
      if (!x) wrong_type(key, "a list of integers");
      out.push_back(*x);
    }
    return out;
  }
  std::optional<std::vector<std::string>> strings(const std::string& key) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_array()) wrong_type(key, "a list of strings");
    std::vector<std::string> out;
    for (const auto& item : *value) {
      if (!item.is_string()) wrong_type(key, "a list of strings");
      out.push_back(item.get<std::string>());
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
  // The first key present, or nullptr.
  const char* first_key(std::initializer_list<const char*> keys) const {
    for (const char* key : keys) {
      if (has(key)) return key;
    }
    return nullptr;
  }

 private:
  static std::optional<std::int64_t> as_integer(const nlohmann::json& value) {
    if (value.is_number_integer()) return value.get<std::int64_t>();
    if (value.is_number_float()) {
      const double x = value.get<double>();
      if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9.0e15) {
        return static_cast<std::int64_t>(x);
      }
    }
    return std::nullopt;
  }

  const nlohmann::json& object_;
  std::string path_;
  KeyLog* log_;
  const nlohmann::json* overrides_ = nullptr;  // the keys named under override_path_
  std::string override_path_;
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

}  // namespace posemb::detail
