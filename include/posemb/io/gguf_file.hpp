// GGUF, llama.cpp's model file: the metadata (typed key-value pairs) and the tensor directory,
// read from a memory-mapped file without reading any tensor data; the data of a tensor is read
// only when asked for (f32_tensor), so a 100 GB model costs the pages its header spans.
//
// Layout (ggml docs/gguf.md; GGUF v3, v2 has the same layout; little-endian):
//   "GGUF"  uint32 version  uint64 tensor_count  uint64 kv_count
//   kv_count x  { gguf_string key, uint32 type, value }
//               gguf_string = uint64 length + bytes; value types 0..12 (GgufType); an ARRAY is
//               uint32 element type + uint64 count + elements (arrays may nest)
//   tensor_count x { gguf_string name, uint32 n_dims (1..4), uint64 ne[n_dims],
//                    uint32 ggml type, uint64 offset (from the start of the data) }
//   padding to general.alignment (UINT32 power of two, default 32), then the data.
//
// Hostile files: every count and length is checked against the bytes left before anything is
// allocated or read (a kv takes at least 13 bytes, a tensor info 32, an array element its size,
// a string element 8, a nested array 12), so no file makes the reader allocate more than the
// file could hold, crash or hang. Every refusal is a posemb::Error naming the file and the key
// when the fault is in a key or its value, else the byte offset:
//   "posemb: model.gguf: magic = 'GGJT' at offset 0: expected 'GGUF'"
//   "posemb: model.gguf: truncated: tensor count needs 8 bytes at offset 16, the file has 3"
//   "posemb: model.gguf: llama.rope.freq_base: type STRING: expected FLOAT32"
// Not read: big-endian files, split files (split.*); arrays nested deeper than 16 are refused.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "posemb/detail/mapped_file.hpp"
#include "posemb/error.hpp"

namespace posemb {

// The value types of GGUF metadata (gguf.h enum gguf_type).
enum class GgufType : std::uint32_t {
  Uint8 = 0,
  Int8 = 1,
  Uint16 = 2,
  Int16 = 3,
  Uint32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  Uint64 = 10,
  Int64 = 11,
  Float64 = 12,
};

inline const char* to_string(GgufType type) {
  static const char* const names[] = {"UINT8",  "INT8",    "UINT16", "INT16",  "UINT32",
                                      "INT32",  "FLOAT32", "BOOL",   "STRING", "ARRAY",
                                      "UINT64", "INT64",   "FLOAT64"};
  const auto index = static_cast<std::uint32_t>(type);
  return index < 13 ? names[index] : "unknown";
}

// One metadata value. Scalars are decoded; a STRING views the mapped file; an ARRAY keeps its
// element type, count and where its elements start (GgufFile::integers decodes them).
struct GgufValue {
  GgufType type = GgufType::Uint8;
  std::uint64_t offset = 0;                 // of the value's bytes in the file
  std::uint64_t unsigned_value = 0;         // UINT8/16/32/64, BOOL
  std::int64_t signed_value = 0;            // INT8/16/32/64
  double float_value = 0.0;                 // FLOAT32/64
  std::string_view string_value;            // STRING
  GgufType element_type = GgufType::Uint8;  // ARRAY
  std::uint64_t count = 0;                  // ARRAY
  std::uint64_t elements_offset = 0;        // ARRAY: where its elements start in the file
};

// One entry of the tensor directory.
struct GgufTensorInfo {
  std::string_view name;
  std::uint32_t n_dims = 0;
  std::uint64_t ne[4] = {1, 1, 1, 1};  // ne[0] the fastest-varying dimension (ggml order)
  std::uint32_t ggml_type = 0;         // 0 = F32 (ggml.h enum ggml_type)
  std::uint64_t offset = 0;            // from the start of the data section
  std::uint64_t info_offset = 0;       // where this entry starts in the file
};

namespace detail {

// Well-formed UTF-8 (RFC 3629: no overlongs, no surrogates, at most U+10FFFF).
inline bool valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t length = c < 0x80           ? 1
                         : (c >> 5) == 0x6  ? 2
                         : (c >> 4) == 0xE  ? 3
                         : (c >> 3) == 0x1E ? 4
                                            : 0;
    if (length == 0 || i + length > text.size()) return false;
    std::uint32_t code = length == 1 ? c : c & (0x7Fu >> length);
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3Fu);
    }
    const std::uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < smallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
      return false;
    i += length;
  }
  return true;
}

// Bytes of one element of a fixed-size type; 0 for STRING and ARRAY.
inline std::uint64_t gguf_type_size(GgufType type) {
  switch (type) {
    case GgufType::Uint8:
    case GgufType::Int8:
    case GgufType::Bool:
      return 1;
    case GgufType::Uint16:
    case GgufType::Int16:
      return 2;
    case GgufType::Uint32:
    case GgufType::Int32:
    case GgufType::Float32:
      return 4;
    case GgufType::Uint64:
    case GgufType::Int64:
    case GgufType::Float64:
      return 8;
    default:
      return 0;
  }
}

// A little-endian reader over the mapped bytes that never reads past the end: each read first
// checks the bytes left and throws "truncated: <what> needs N bytes at offset P, the file has L".
class GgufCursor {
 public:
  GgufCursor(const std::uint8_t* data, std::uint64_t size) : data_(data), size_(size) {}

  std::uint64_t offset() const { return offset_; }
  std::uint64_t left() const { return size_ - offset_; }

  void need(std::uint64_t bytes, const std::string& what) const {
    if (bytes > left()) {
      throw Error("truncated: " + what + " needs " + std::to_string(bytes) + " bytes at offset " +
                  std::to_string(offset_) + ", the file has " + std::to_string(left()));
    }
  }
  std::uint64_t unsigned_int(std::uint64_t bytes, const std::string& what) {
    need(bytes, what);
    std::uint64_t value = 0;
    for (std::uint64_t k = 0; k < bytes; ++k) value |= std::uint64_t(data_[offset_ + k]) << (8 * k);
    offset_ += bytes;
    return value;
  }
  std::uint32_t u32(const std::string& what) {
    return static_cast<std::uint32_t>(unsigned_int(4, what));
  }
  std::uint64_t u64(const std::string& what) { return unsigned_int(8, what); }
  // gguf_string: uint64 length, then the bytes (viewed, not copied).
  std::string_view string(const std::string& what) {
    const std::uint64_t length = u64(what + " length");
    need(length, what);
    const std::string_view text(reinterpret_cast<const char*>(data_ + offset_),
                                static_cast<std::size_t>(length));
    offset_ += length;
    return text;
  }
  void skip(std::uint64_t bytes, const std::string& what) {
    need(bytes, what);
    offset_ += bytes;
  }

 private:
  const std::uint8_t* data_;
  std::uint64_t size_;
  std::uint64_t offset_ = 0;
};

// Decodes a fixed-size scalar of `type` that the cursor has checked to be there.
inline void read_gguf_scalar(GgufCursor& cursor, GgufType type, GgufValue& value) {
  const std::uint64_t size = gguf_type_size(type);
  const std::uint64_t bits = cursor.unsigned_int(size, "value");
  switch (type) {
    case GgufType::Int8:
      value.signed_value = static_cast<std::int8_t>(bits);
      break;
    case GgufType::Int16:
      value.signed_value = static_cast<std::int16_t>(bits);
      break;
    case GgufType::Int32:
      value.signed_value = static_cast<std::int32_t>(bits);
      break;
    case GgufType::Int64:
      value.signed_value = static_cast<std::int64_t>(bits);
      break;
    case GgufType::Float32: {
      const auto word = static_cast<std::uint32_t>(bits);
      float f = 0.0f;
      std::memcpy(&f, &word, sizeof f);
      value.float_value = f;
      break;
    }
    case GgufType::Float64:
      std::memcpy(&value.float_value, &bits, sizeof bits);
      break;
    case GgufType::Bool:
      if (bits > 1) fail("value", bits, "expected a BOOL of 0 or 1");
      value.unsigned_value = bits;
      break;
    default:
      value.unsigned_value = bits;
      break;
  }
}

inline GgufType read_gguf_type(GgufCursor& cursor, const std::string& what) {
  const std::uint64_t at = cursor.offset();
  const std::uint32_t type = cursor.u32(what);
  if (type > 12) {
    fail(what, type, "expected a GGUF value type 0..12 (at offset " + std::to_string(at) + ")");
  }
  return static_cast<GgufType>(type);
}

constexpr int max_gguf_array_depth = 16;

inline bool gguf_integer_type(GgufType type) {
  return type == GgufType::Uint8 || type == GgufType::Int8 || type == GgufType::Uint16 ||
         type == GgufType::Int16 || type == GgufType::Uint32 || type == GgufType::Int32 ||
         type == GgufType::Uint64 || type == GgufType::Int64;
}

// The integer in a decoded integer value; throws for a UINT64 past INT64_MAX.
inline std::int64_t gguf_integer(const GgufValue& value, GgufType type) {
  if (type == GgufType::Int8 || type == GgufType::Int16 || type == GgufType::Int32 ||
      type == GgufType::Int64) {
    return value.signed_value;
  }
  if (value.unsigned_value > std::uint64_t(INT64_MAX)) {
    fail("value", value.unsigned_value, "expected an integer below 2^63");
  }
  return static_cast<std::int64_t>(value.unsigned_value);
}

// Checks and skips the elements of an array whose header was read.
inline void skip_gguf_array(GgufCursor& cursor, const GgufValue& array, int depth) {
  if (depth > max_gguf_array_depth) {
    fail("array depth", depth,
         "expected arrays nested at most " + std::to_string(max_gguf_array_depth) + " deep");
  }
  const std::uint64_t size = gguf_type_size(array.element_type);
  const std::uint64_t least = size != 0 ? size : array.element_type == GgufType::String ? 8 : 12;
  if (array.count > cursor.left() / least) {
    fail("array count", array.count,
         "expected at most " + std::to_string(cursor.left() / least) + " elements of " +
             to_string(array.element_type) + " in the " + std::to_string(cursor.left()) +
             " bytes left at offset " + std::to_string(cursor.offset()));
  }
  for (std::uint64_t k = 0; k < array.count; ++k) {
    if (array.element_type == GgufType::String) {
      cursor.string("array element");
    } else if (array.element_type == GgufType::Array) {
      GgufValue inner;
      inner.type = GgufType::Array;
      inner.element_type = read_gguf_type(cursor, "array element type");
      inner.count = cursor.u64("array count");
      skip_gguf_array(cursor, inner, depth + 1);
    } else {
      GgufValue element;
      read_gguf_scalar(cursor, array.element_type, element);
    }
  }
}

}  // namespace detail

// A GGUF file's metadata and tensor directory, checked as the header comment says.
//
// Example:
//   const posemb::GgufFile file("model.gguf");
//   const std::string arch = file.string("general.architecture").value();
//   std::optional<double> base = file.float32(arch + ".rope.freq_base");
//   std::optional<std::vector<float>> freqs = file.f32_tensor("rope_freqs.weight");
class GgufFile {
 public:
  static constexpr std::uint32_t default_alignment = 32;
  static constexpr std::uint32_t ggml_type_count = 40;  // ggml.h GGML_TYPE_COUNT
  static constexpr std::size_t max_key_length = 65535;
  static constexpr std::size_t max_tensor_name_length = 63;  // GGML_MAX_NAME - 1

  explicit GgufFile(const std::string& path) : file_(path, "model file", "a GGUF file") {
    try {
      parse();
    } catch (Error& error) {
      error.add_context(path);
      throw;
    }
  }

  const std::string& path() const { return file_.path(); }
  std::uint64_t file_size() const { return file_.size(); }
  std::uint32_t version() const { return version_; }
  std::uint32_t alignment() const { return alignment_; }
  std::uint64_t data_offset() const { return data_offset_; }  // start of the data section
  const std::map<std::string_view, GgufValue>& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  const GgufValue* find(std::string_view key) const {
    const auto it = metadata_.find(key);
    return it == metadata_.end() ? nullptr : &it->second;
  }
  const GgufTensorInfo* find_tensor(std::string_view name) const {
    if (tensor_names_.count(name) == 0) return nullptr;
    for (const GgufTensorInfo& tensor : tensors_) {
      if (tensor.name == name) return &tensor;
    }
    return nullptr;
  }

  // Typed values; nullopt when the key is absent, Error "<file>: <key>: type T: expected U" when
  // it holds another type.
  std::optional<std::string> string(const std::string& key) const {
    const GgufValue* value = typed(key, GgufType::String, "STRING");
    if (value == nullptr) return std::nullopt;
    return std::string(value->string_value);
  }
  std::optional<std::uint32_t> uint32(const std::string& key) const {
    const GgufValue* value = typed(key, GgufType::Uint32, "UINT32");
    if (value == nullptr) return std::nullopt;
    return static_cast<std::uint32_t>(value->unsigned_value);
  }
  std::optional<double> float32(const std::string& key) const {
    const GgufValue* value = typed(key, GgufType::Float32, "FLOAT32");
    if (value == nullptr) return std::nullopt;
    return value->float_value;
  }
  // An array of integers (any integer element type), decoded.
  std::optional<std::vector<std::int64_t>> integers(const std::string& key) const {
    const GgufValue* value = typed(key, GgufType::Array, "ARRAY");
    if (value == nullptr) return std::nullopt;
    if (!detail::gguf_integer_type(value->element_type)) {
      wrong(key, std::string("ARRAY of ") + to_string(value->element_type), "an ARRAY of integers");
    }
    return elements(*value, key);
  }

  // An ARRAY of BOOL or integers as 0/1 flags (llama_model_loader::get_arr reads either into a
  // per-layer array); throws when the key is absent or holds another type.
  std::vector<std::int64_t> flags(const std::string& key) const {
    const GgufValue* value = typed(key, GgufType::Array, "ARRAY");
    if (value == nullptr) throw Error(key, ": missing").add_context(path());
    if (value->element_type != GgufType::Bool && !detail::gguf_integer_type(value->element_type)) {
      wrong(key, std::string("ARRAY of ") + to_string(value->element_type),
            "an ARRAY of BOOL or integers");
    }
    std::vector<std::int64_t> out = elements(*value, key);
    for (std::int64_t& x : out) x = x != 0 ? 1 : 0;
    return out;
  }

  // The data of an F32 tensor, nullopt when the file has no tensor of that name. Throws unless
  // its type is F32 and its data lies inside the file.
  std::optional<std::vector<float>> f32_tensor(std::string_view name) const {
    const GgufTensorInfo* tensor = find_tensor(name);
    if (tensor == nullptr) return std::nullopt;
    const std::string label(name);
    if (tensor->ggml_type != 0) fail_file(label + ".type", tensor->ggml_type, "expected F32 (0)");
    std::uint64_t elements = 1;
    for (std::uint32_t d = 0; d < tensor->n_dims; ++d) elements *= tensor->ne[d];  // checked
    const std::uint64_t begin = data_offset_ + tensor->offset;
    if (tensor->offset > file_.size() || begin > file_.size() ||
        elements > (file_.size() - begin) / 4) {
      fail_file(label,
                "data at offset " + std::to_string(begin) + ", " + std::to_string(elements) +
                    " floats",
                "expected data inside the file of " + std::to_string(file_.size()) + " bytes");
    }
    std::vector<float> out(static_cast<std::size_t>(elements));
    std::memcpy(out.data(), file_.data() + begin, static_cast<std::size_t>(elements) * 4);
    return out;
  }

 private:
  template <class Value>
  [[noreturn]] void fail_file(const std::string& name, const Value& value,
                              const std::string& expected) const {
    try {
      fail(name, value, expected);
    } catch (Error& error) {
      throw error.add_context(path());
    }
  }
  // The elements of an ARRAY of integers or BOOL (a BOOL is its byte, 0 or 1), decoded.
  std::vector<std::int64_t> elements(const GgufValue& value, const std::string& key) const {
    detail::GgufCursor cursor(file_.data(), file_.size());
    cursor.skip(value.elements_offset, "array");
    std::vector<std::int64_t> out;
    out.reserve(static_cast<std::size_t>(value.count));  // checked against the file at parse
    for (std::uint64_t k = 0; k < value.count; ++k) {
      GgufValue element;
      detail::read_gguf_scalar(cursor, value.element_type, element);
      try {
        out.push_back(detail::gguf_integer(element, value.element_type));
      } catch (Error& error) {
        throw error.add_context(path()).add_context(key);
      }
    }
    return out;
  }
  [[noreturn]] void wrong(const std::string& key, const std::string& type,
                          const std::string& expected) const {
    throw Error(key, ": type " + type + ": expected " + expected).add_context(path());
  }
  const GgufValue* typed(const std::string& key, GgufType type, const char* name) const {
    const GgufValue* value = find(key);
    if (value != nullptr && value->type != type) wrong(key, to_string(value->type), name);
    return value;
  }

  void parse();
  void parse_header(detail::GgufCursor& cursor, std::uint64_t& tensor_count,
                    std::uint64_t& kv_count);
  void parse_kv(detail::GgufCursor& cursor);
  void parse_tensor_info(detail::GgufCursor& cursor);

  detail::MappedFile file_;
  std::uint32_t version_ = 0;
  std::uint32_t alignment_ = default_alignment;
  std::uint64_t data_offset_ = 0;
  std::map<std::string_view, GgufValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::set<std::string_view> tensor_names_;
};

inline void GgufFile::parse_header(detail::GgufCursor& cursor, std::uint64_t& tensor_count,
                                   std::uint64_t& kv_count) {
  cursor.need(4, "magic");
  const std::string magic(reinterpret_cast<const char*>(file_.data()), 4);
  if (magic != "GGUF") {
    std::string shown;
    for (const char c : magic) shown += (c >= 32 && c < 127) ? c : '?';
    fail("magic", "'" + shown + "' at offset 0", "expected 'GGUF' (not a GGUF file)");
  }
  cursor.skip(4, "magic");
  version_ = cursor.u32("version");
  if (version_ != 2 && version_ != 3) fail("version", version_, "expected 2 or 3 (at offset 4)");
  tensor_count = cursor.u64("tensor count");
  kv_count = cursor.u64("metadata count");
  // Each kv takes >= 13 bytes, each tensor info >= 32: refuse counts the file cannot hold.
  if (kv_count > cursor.left() / 13) {
    fail("metadata count", kv_count,
         "expected at most " + std::to_string(cursor.left() / 13) + " pairs in the " +
             std::to_string(cursor.left()) + " bytes after offset 24");
  }
  if (tensor_count > (cursor.left() - 13 * kv_count) / 32) {
    fail("tensor count", tensor_count,
         "expected at most " + std::to_string((cursor.left() - 13 * kv_count) / 32) +
             " tensors in the " + std::to_string(cursor.left()) + " bytes after offset 24");
  }
}

inline void GgufFile::parse_kv(detail::GgufCursor& cursor) {
  const std::uint64_t at = cursor.offset();
  const std::string_view key = cursor.string("key at offset " + std::to_string(at));
  const std::string where = "key at offset " + std::to_string(at);
  if (key.empty()) fail(where, "\"\"", "expected a non-empty key");
  if (key.size() > max_key_length) {
    fail(where, key.size(), "expected a key of at most 65535 bytes");
  }
  if (!detail::valid_utf8(key)) fail(where, "(invalid bytes)", "expected a UTF-8 key");
  const std::string name(key);
  if (metadata_.count(key) != 0)
    throw Error(name, ": duplicate key at offset " + std::to_string(at));
  try {
    GgufValue value;
    value.type = detail::read_gguf_type(cursor, "type");
    value.offset = cursor.offset();
    if (value.type == GgufType::String) {
      value.string_value = cursor.string("value");
      if (!detail::valid_utf8(value.string_value))
        fail("value", "(invalid bytes)", "expected UTF-8");
    } else if (value.type == GgufType::Array) {
      value.element_type = detail::read_gguf_type(cursor, "array element type");
      value.count = cursor.u64("array count");
      value.elements_offset = cursor.offset();
      detail::skip_gguf_array(cursor, value, 1);
    } else {
      detail::read_gguf_scalar(cursor, value.type, value);
    }
    metadata_.emplace(key, value);
  } catch (Error& error) {
    throw error.add_context(name);
  }
}

inline void GgufFile::parse_tensor_info(detail::GgufCursor& cursor) {
  GgufTensorInfo info;
  info.info_offset = cursor.offset();
  const std::string where = "tensor info at offset " + std::to_string(info.info_offset);
  info.name = cursor.string(where + ": name");
  if (info.name.size() > max_tensor_name_length) {
    fail(where + ": name length", info.name.size(), "expected at most 63 bytes");
  }
  if (!detail::valid_utf8(info.name)) fail(where + ": name", "(invalid bytes)", "expected UTF-8");
  const std::string name(info.name);
  info.n_dims = cursor.u32(name + ": n_dims");
  if (info.n_dims == 0 || info.n_dims > 4) fail(name + ".n_dims", info.n_dims, "expected 1..4");
  std::uint64_t elements = 1;
  for (std::uint32_t d = 0; d < info.n_dims; ++d) {
    info.ne[d] = cursor.u64(name + ": ne");
    if (info.ne[d] > std::uint64_t(INT64_MAX) ||
        (info.ne[d] != 0 && elements > std::uint64_t(INT64_MAX) / info.ne[d])) {
      fail(name + ".ne[" + std::to_string(d) + "]", info.ne[d],
           "expected an element count below 2^63");
    }
    elements *= info.ne[d];
  }
  info.ggml_type = cursor.u32(name + ": type");
  if (info.ggml_type >= ggml_type_count) fail(name + ".type", info.ggml_type, "expected < 40");
  info.offset = cursor.u64(name + ": offset");
  if (!tensor_names_.insert(info.name).second) {
    fail(where + ": name", name, "expected a name not used before");
  }
  tensors_.push_back(info);
}

inline void GgufFile::parse() {
  detail::GgufCursor cursor(file_.data(), file_.size());
  std::uint64_t tensor_count = 0, kv_count = 0;
  parse_header(cursor, tensor_count, kv_count);
  for (std::uint64_t k = 0; k < kv_count; ++k) parse_kv(cursor);
  if (const GgufValue* alignment = find("general.alignment")) {
    if (alignment->type != GgufType::Uint32) {
      throw Error("general.alignment",
                  std::string(": type ") + to_string(alignment->type) + ": expected UINT32");
    }
    const std::uint64_t a = alignment->unsigned_value;
    if (a == 0 || (a & (a - 1)) != 0) fail("general.alignment", a, "expected a power of two");
    alignment_ = static_cast<std::uint32_t>(a);
  }
  tensors_.reserve(static_cast<std::size_t>(tensor_count));  // <= bytes left / 32
  for (std::uint64_t k = 0; k < tensor_count; ++k) parse_tensor_info(cursor);
  for (const GgufTensorInfo& info : tensors_) {
    if (info.offset % alignment_ != 0) {
      fail(std::string(info.name) + ".offset", info.offset,
           "expected a multiple of the alignment " + std::to_string(alignment_));
    }
  }
  // The data starts at the next multiple of the alignment (it may lie past the end of a file
  // holding metadata only).
  data_offset_ = cursor.offset() + (alignment_ - cursor.offset() % alignment_) % alignment_;
}

}  // namespace posemb
