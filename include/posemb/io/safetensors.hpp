// safetensors checkpoints (huggingface/safetensors docs): a memory-mapped file whose JSON header
// names each tensor's dtype, shape and byte range, and sharded checkpoints through
// model.safetensors.index.json ({"weight_map": {tensor: shard file}}). Only the header and the
// tensors asked for are read. F32 tensors are viewed in place when the data is 4-byte aligned
// (f32_view); F16 / BF16 / F32 convert to float32 (matrix).
//
// Layout: uint64 little-endian N, N bytes of JSON {"name": {"dtype": "F32", "shape": [r, c],
// "data_offsets": [begin, end]}, ..., "__metadata__": {string: string}}, then the data (offsets
// from the end of the header).
//
// Bad files are posemb::Error naming the file and the tensor: header length past the end, bad
// JSON, offsets outside the data or overlapping, a byte count that does not match dtype and
// shape, an unknown dtype, a missing tensor. Needs nlohmann-json (as config.hpp).
//
// Example:
//   const posemb::SafetensorsCheckpoint weights("model.safetensors.index.json");
//   const Eigen::MatrixXf wpe = weights.matrix("transformer.wpe.weight");  // [n_positions, d]
#pragma once

#include <nlohmann/json.hpp>

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "posemb/detail/mapped_file.hpp"
#include "posemb/error.hpp"

namespace posemb {

using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct SafetensorsTensor {
  std::string name;
  std::string dtype;                 // "F32", "F16", "BF16", ...
  std::vector<std::int64_t> shape;   // [] for a scalar
  std::uint64_t begin = 0, end = 0;  // byte range in the data section
};

namespace detail {

// Bytes per element of a safetensors dtype; 0 when unknown.
inline std::uint64_t safetensors_dtype_size(const std::string& dtype) {
  static const std::map<std::string, std::uint64_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"I64", 8}, {"U64", 8},     {"F64", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

// IEEE binary16 -> float.
inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h >> 15) << 31;
  const std::uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FFu;
  float magnitude = 0.0f;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  std::uint32_t bits = 0;
  std::memcpy(&bits, &magnitude, sizeof bits);
  bits |= sign;
  float out = 0.0f;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

// One header entry, checked: dtype known, shape of integers >= 0, offsets inside the data and
// matching dtype size x elements.
inline SafetensorsTensor read_safetensors_entry(const std::string& name,
                                                const nlohmann::json& entry,
                                                std::uint64_t data_size) {
  SafetensorsTensor tensor;
  tensor.name = name;
  if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() ||
      !entry.contains("shape") || !entry["shape"].is_array() || !entry.contains("data_offsets") ||
      !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2) {
    throw Error(name,
                ": expected {\"dtype\": string, \"shape\": [...], \"data_offsets\": [begin, end]}");
  }
  tensor.dtype = entry["dtype"].get<std::string>();
  const std::uint64_t size = safetensors_dtype_size(tensor.dtype);
  if (size == 0) fail(name + ".dtype", tensor.dtype, "expected a safetensors dtype");
  std::uint64_t elements = 1;
  for (const auto& n : entry["shape"]) {
    if (!n.is_number_unsigned())
      fail(name + ".shape", entry["shape"].dump(), "expected integers >= 0");
    const auto dim = n.get<std::uint64_t>();
    if (dim != 0 && elements > (std::uint64_t(1) << 62) / dim) {
      fail(name + ".shape", entry["shape"].dump(), "expected fewer than 2^62 elements");
    }
    elements *= dim;
    tensor.shape.push_back(static_cast<std::int64_t>(dim));
  }
  const auto& offsets = entry["data_offsets"];
  if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
    fail(name + ".data_offsets", offsets.dump(), "expected two integers >= 0");
  }
  tensor.begin = offsets[0].get<std::uint64_t>();
  tensor.end = offsets[1].get<std::uint64_t>();
  if (tensor.begin > tensor.end || tensor.end > data_size) {
    fail(name + ".data_offsets", offsets.dump(),
         "expected begin <= end <= the data's " + std::to_string(data_size) + " bytes");
  }
  if (elements > (std::uint64_t(1) << 62) / size || tensor.end - tensor.begin != elements * size) {
    fail(name + ".data_offsets", offsets.dump(),
         "expected " + std::to_string(elements) + " x " + std::to_string(size) + " bytes for " +
             tensor.dtype + " of shape " + entry["shape"].dump());
  }
  return tensor;
}

}  // namespace detail

// One .safetensors file.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path)
      : file_(path, "safetensors file", "a safetensors file") {
    try {
      parse();
    } catch (Error& error) {
      throw error.add_context(path);
    }
  }

  const std::string& path() const { return file_.path(); }
  const std::map<std::string, SafetensorsTensor>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const SafetensorsTensor* find(const std::string& name) const {
    const auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }
  const SafetensorsTensor& tensor(const std::string& name) const {
    const SafetensorsTensor* found = find(name);
    if (found == nullptr) throw Error(name, ": no such tensor").add_context(path());
    return *found;
  }

  // The raw bytes of a tensor, in place.
  const std::uint8_t* bytes(const SafetensorsTensor& t) const { return data_ + t.begin; }

  // An F32 tensor viewed in place as [rows, cols] (a 1-D tensor: [1, n]; more dims: the last
  // is cols); nullopt unless F32 and 4-byte aligned in memory.
  std::optional<Eigen::Map<const RowMatrixXf>> f32_view(const std::string& name) const {
    const SafetensorsTensor& t = tensor(name);
    const std::uint8_t* at = bytes(t);
    if (t.dtype != "F32" || reinterpret_cast<std::uintptr_t>(at) % alignof(float) != 0) {
      return std::nullopt;
    }
    const auto [rows, cols] = matrix_shape(t);
    return Eigen::Map<const RowMatrixXf>(reinterpret_cast<const float*>(at), rows, cols);
  }

  // An F32 / F16 / BF16 tensor as float32 [rows, cols] (shape as f32_view).
  RowMatrixXf matrix(const std::string& name) const {
    const SafetensorsTensor& t = tensor(name);
    if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16") {
      throw Error(name + ".dtype", " = " + t.dtype + ": expected F32, F16 or BF16")
          .add_context(path());
    }
    const auto [rows, cols] = matrix_shape(t);
    RowMatrixXf out(rows, cols);
    const std::uint8_t* at = bytes(t);
    for (Eigen::Index k = 0; k < out.size(); ++k) {
      const auto i = static_cast<std::size_t>(k);
      if (t.dtype == "F32") {
        std::memcpy(out.data() + k, at + 4 * i, 4);
      } else {
        std::uint16_t h = 0;
        std::memcpy(&h, at + 2 * i, 2);
        if (t.dtype == "F16") {
          out.data()[k] = detail::half_to_float(h);
        } else {
          const std::uint32_t bits = std::uint32_t(h) << 16;
          std::memcpy(out.data() + k, &bits, 4);
        }
      }
    }
    return out;
  }

 private:
  static std::pair<Eigen::Index, Eigen::Index> matrix_shape(const SafetensorsTensor& t) {
    Eigen::Index rows = 1, cols = t.shape.empty() ? 1 : t.shape.back();
    for (std::size_t d = 0; d + 1 < t.shape.size(); ++d) rows *= t.shape[d];
    return {rows, cols};
  }

  void parse();

  detail::MappedFile file_;
  const std::uint8_t* data_ = nullptr;
  std::map<std::string, SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

inline void SafetensorsFile::parse() {
  if (file_.size() < 8) fail("header length", file_.size(), "expected a file of at least 8 bytes");
  std::uint64_t header_length = 0;
  for (int k = 0; k < 8; ++k) header_length |= std::uint64_t(file_.data()[k]) << (8 * k);
  if (header_length > file_.size() - 8) {
    fail("header length", header_length,
         "expected at most the " + std::to_string(file_.size() - 8) + " bytes after it");
  }
  const char* text = reinterpret_cast<const char*>(file_.data() + 8);
  const nlohmann::json header = nlohmann::json::parse(text, text + header_length, nullptr, false);
  if (header.is_discarded() || !header.is_object()) {
    throw Error("header", ": expected a JSON object (" + std::to_string(header_length) + " bytes)");
  }
  data_ = file_.data() + 8 + header_length;
  const std::uint64_t data_size = file_.size() - 8 - header_length;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw Error("__metadata__", ": expected an object of strings");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) throw Error("__metadata__." + key, ": expected a string");
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    tensors_[name] = detail::read_safetensors_entry(name, entry, data_size);
  }
  std::vector<const SafetensorsTensor*> by_offset;
  for (const auto& [name, t] : tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](auto* a, auto* b) { return a->begin < b->begin; });
  for (std::size_t k = 1; k < by_offset.size(); ++k) {
    if (by_offset[k]->begin < by_offset[k - 1]->end) {
      throw Error(by_offset[k]->name, ": data overlaps " + by_offset[k - 1]->name + "'s");
    }
  }
}

// A checkpoint: one .safetensors file, or the shards a model.safetensors.index.json lists
// (shard paths relative to the index), each opened once, on first use.
class SafetensorsCheckpoint {
 public:
  explicit SafetensorsCheckpoint(const std::string& path) : path_(path) {
    if (path.size() < 5 || path.compare(path.size() - 5, 5, ".json") != 0) {
      shards_.emplace(path, std::make_unique<SafetensorsFile>(path));
      single_ = path;
      return;
    }
    std::ifstream in(path);
    if (!in) throw Error(path + ": cannot open safetensors index");
    const nlohmann::json index = nlohmann::json::parse(in, nullptr, false);
    if (index.is_discarded() || !index.is_object() || !index.contains("weight_map") ||
        !index["weight_map"].is_object()) {
      throw Error(path + ": weight_map: expected {\"weight_map\": {tensor: file}}");
    }
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    for (const auto& [name, file] : index["weight_map"].items()) {
      if (!file.is_string()) throw Error(path + ": weight_map." + name + ": expected a file name");
      weight_map_[name] = (dir / file.get<std::string>()).string();
    }
  }

  const std::string& path() const { return path_; }
  bool contains(const std::string& name) const {
    if (!single_.empty()) return shard(single_).find(name) != nullptr;
    return weight_map_.count(name) != 0;
  }
  // The file holding `name`; throws naming the checkpoint and the tensor when none does.
  const SafetensorsFile& file_of(const std::string& name) const {
    if (!single_.empty()) return shard(single_);
    const auto it = weight_map_.find(name);
    if (it == weight_map_.end()) throw Error(name, ": no such tensor").add_context(path_);
    return shard(it->second);
  }
  RowMatrixXf matrix(const std::string& name) const { return file_of(name).matrix(name); }

 private:
  const SafetensorsFile& shard(const std::string& file) const {
    auto it = shards_.find(file);
    if (it == shards_.end())
      it = shards_.emplace(file, std::make_unique<SafetensorsFile>(file)).first;
    return *it->second;
  }

  std::string path_, single_;
  std::map<std::string, std::string> weight_map_;
  mutable std::map<std::string, std::unique_ptr<SafetensorsFile>> shards_;
};

}  // namespace posemb
