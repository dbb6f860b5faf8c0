// A small GGUF writer for the tests (ggml docs/gguf.md layout, little-endian): metadata of any
// type, F32 tensors with their data, and tensor infos whose data is not written (a model's
// weights, left out or placed far away in a sparse file). Also the raw pieces, for hostile files.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace test_gguf {

inline void put(std::string& out, std::uint64_t value, int bytes) {
  for (int k = 0; k < bytes; ++k) out += static_cast<char>((value >> (8 * k)) & 0xFF);
}
inline void put_string(std::string& out, const std::string& text) {
  put(out, text.size(), 8);
  out += text;
}
inline std::uint32_t float_bits(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

class GgufWriter {
 public:
  // A kv with a raw value (type id and its encoded bytes).
  GgufWriter& raw(const std::string& key, std::uint32_t type, const std::string& value) {
    std::string kv;
    put_string(kv, key);
    put(kv, type, 4);
    kv_ += kv + value;
    ++kv_count_;
    return *this;
  }
  GgufWriter& u32(const std::string& key, std::uint32_t value) {
    std::string v;
    put(v, value, 4);
    return raw(key, 4, v);
  }
  GgufWriter& f32(const std::string& key, float value) {
    std::string v;
    put(v, float_bits(value), 4);
    return raw(key, 6, v);
  }
  GgufWriter& str(const std::string& key, const std::string& value) {
    std::string v;
    put_string(v, value);
    return raw(key, 8, v);
  }
  // An ARRAY of INT32 (type 5) or UINT32 (type 4).
  GgufWriter& ints(const std::string& key, const std::vector<std::int64_t>& values,
                   std::uint32_t element_type = 5) {
    std::string v;
    put(v, element_type, 4);
    put(v, values.size(), 8);
    for (const std::int64_t x : values) put(v, static_cast<std::uint64_t>(x), 4);
    return raw(key, 9, v);
  }
  GgufWriter& boolean(const std::string& key, bool value) {
    return raw(key, 7, std::string(1, value ? '\1' : '\0'));
  }
  // An ARRAY of BOOL (type 7), one byte each.
  GgufWriter& bools(const std::string& key, const std::vector<bool>& values) {
    std::string v;
    put(v, 7, 4);
    put(v, values.size(), 8);
    for (const bool x : values) v += x ? '\1' : '\0';
    return raw(key, 9, v);
  }
  // A 1-D F32 tensor whose data is written.
  GgufWriter& tensor(const std::string& name, const std::vector<float>& data) {
    std::string bytes;
    for (const float x : data) put(bytes, float_bits(x), 4);
    while ((data_.size() % alignment_) != 0) data_ += '\0';
    info(name, {data.size()}, 0, data_.size());
    data_ += bytes;
    return *this;
  }
  // A tensor info only (its data is not written).
  GgufWriter& info(const std::string& name, const std::vector<std::uint64_t>& ne,
                   std::uint32_t ggml_type, std::uint64_t offset) {
    put_string(tensors_, name);
    put(tensors_, ne.size(), 4);
    for (const std::uint64_t n : ne) put(tensors_, n, 8);
    put(tensors_, ggml_type, 4);
    put(tensors_, offset, 8);
    ++tensor_count_;
    return *this;
  }
  GgufWriter& version(std::uint32_t v) {
    version_ = v;
    return *this;
  }
  GgufWriter& alignment(std::uint32_t a) {
    alignment_ = a;
    return u32("general.alignment", a);
  }

  // The header up to the end of the tensor infos.
  std::string header() const {
    std::string out = "GGUF";
    put(out, version_, 4);
    put(out, tensor_count_, 8);
    put(out, kv_count_, 8);
    return out + kv_ + tensors_;
  }
  // The whole file: header, padding to the alignment, data.
  std::string bytes() const {
    std::string out = header();
    while ((out.size() % alignment_) != 0) out += '\0';
    return out + data_;
  }
  void write(const std::string& path) const { write_bytes(path, bytes()); }

  static void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

 private:
  std::uint32_t version_ = 3;
  std::uint32_t alignment_ = 32;
  std::uint64_t kv_count_ = 0, tensor_count_ = 0;
  std::string kv_, tensors_, data_;
};

// The metadata every loadable model has: arch, layers, context, width, heads.
inline GgufWriter model_writer(const std::string& arch, std::uint32_t layers, std::uint32_t context,
                               std::uint32_t embd, std::uint32_t heads) {
  GgufWriter w;
  w.str("general.architecture", arch)
      .u32(arch + ".block_count", layers)
      .u32(arch + ".context_length", context)
      .u32(arch + ".embedding_length", embd)
      .u32(arch + ".attention.head_count", heads);
  return w;
}

}  // namespace test_gguf
