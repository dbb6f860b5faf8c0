// Tests for gguf_file.hpp: hostile files (every refusal of tests/data/gguf/README.md §2 is a
// posemb::Error naming the key or the byte offset, never a crash or a giant allocation), the
// value types, and that reading the plan of a file with a 1 GiB sparse tensor region touches
// none of that region.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "io/gguf_writer.hpp"
#include "posemb/io/gguf_file.hpp"
#include "posemb/model/gguf.hpp"

using test_gguf::GgufWriter;
using test_gguf::put;
using test_gguf::put_string;

namespace {

std::string scratch(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("posemb_gguf_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// Writes bytes to a scratch file and checks that reading its plan throws naming `text`.
void refused(const std::string& bytes, const std::string& text) {
  CAPTURE(text);
  const std::string path = scratch("hostile.gguf");
  GgufWriter::write_bytes(path, bytes);
  std::string message;
  try {
    posemb::read_gguf_positions(path);
  } catch (const posemb::Error& error) {
    message = error.what();
  }
  CAPTURE(message);
  CHECK(message.find(text) != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
  std::filesystem::remove(path);
}

GgufWriter llama() { return test_gguf::model_writer("llama", 2, 4096, 256, 4); }

}  // namespace

TEST_CASE("GGUF files that are not GGUF are refused naming the offset") {
  refused("GGJT" + llama().bytes().substr(4), "magic = 'GGJT' at offset 0");
  refused(llama().version(1).bytes(), "version = 1");
  refused("GGUF\x03", "truncated: version needs 4 bytes at offset 4, the file has 1");
  const std::string whole = llama().bytes();
  const std::string header = llama().header();
  refused(header.substr(0, header.size() - 3), "truncated: value needs 4 bytes at offset");
  // Counts the rest of the file cannot hold, before anything is allocated.
  std::string huge_kv = whole;
  huge_kv.replace(16, 8, std::string("\xff\xff\xff\xff\xff\xff\xff\x0f", 8));
  refused(huge_kv, "metadata count = 1152921504606846975: expected at most");
  std::string huge_tensors = whole;
  huge_tensors.replace(8, 8, std::string("\x00\x00\x00\x00\x00\x01\x00\x00", 8));
  refused(huge_tensors, "tensor count");
  std::string long_key;
  put(long_key, std::uint64_t(1) << 40, 8);
  refused(GgufWriter().raw("general.architecture", 8, long_key).bytes(),
          "truncated: value needs 1099511627776 bytes");
}

TEST_CASE("GGUF keys and values are checked, naming the key") {
  refused(llama().raw("x", 13, "").bytes(), "x: type = 13: expected a GGUF value type 0..12");
  refused(llama().raw("", 4, std::string(4, '\0')).bytes(), "expected a non-empty key");
  refused(llama().u32("llama.block_count", 2).bytes(), "llama.block_count: duplicate key");
  refused(llama().raw("\xff\xfe", 4, std::string(4, '\0')).bytes(), "expected a UTF-8 key");
  refused(llama().raw("b", 7, "\x02").bytes(), "b: value = 2: expected a BOOL of 0 or 1");
  std::string array;
  put(array, 4, 4);                       // UINT32 elements
  put(array, std::uint64_t(1) << 40, 8);  // more than the file holds
  refused(llama().raw("arr", 9, array).bytes(), "arr: array count = 1099511627776");
  std::string nested;
  for (int depth = 0; depth < 20; ++depth) {
    put(nested, 9, 4);
    put(nested, 1, 8);
  }
  put(nested, 4, 4);
  put(nested, 0, 8);
  refused(llama().raw("deep", 9, nested).bytes(), "deep: array depth");
  refused(llama().alignment(48).bytes(), "general.alignment = 48: expected a power of two");
  refused(llama().str("general.alignment", "32").bytes(), "general.alignment: type STRING");
}

TEST_CASE("GGUF tensor infos are checked") {
  refused(llama().info("w", {}, 0, 0).bytes(), "w.n_dims = 0: expected 1..4");
  refused(llama().info("w", {1, 1, 1, 1, 1}, 0, 0).bytes(), "w.n_dims = 5");
  refused(llama().info("w", {4}, 40, 0).bytes(), "w.type = 40: expected < 40");
  refused(llama().info("w", {4}, 0, 8).bytes(),
          "w.offset = 8: expected a multiple of the alignment 32");
  refused(llama().info("w", {4}, 0, 0).info("w", {4}, 0, 32).bytes(),
          "expected a name not used before");
  refused(llama().info(std::string(64, 'n'), {4}, 0, 0).bytes(), "name length = 64");
  // A rope tensor whose data lies past the end of the file.
  refused(llama().info("rope_freqs.weight", {32}, 0, 1 << 20).bytes(),
          "rope_freqs.weight = data at offset");
}

TEST_CASE("llama.cpp's loader refusals name the key") {
  refused(test_gguf::model_writer("bert", 2, 512, 256, 4).bytes(),
          "general.architecture = \"bert\": expected one of");
  refused(GgufWriter().str("general.architecture", "llama").bytes(), "llama.block_count: missing");
  refused(GgufWriter().u32("x", 1).bytes(), "general.architecture: missing");
  refused(llama().str("llama.rope.freq_base", "1e6").bytes(),
          "llama.rope.freq_base: type STRING: expected FLOAT32");
  refused(llama().str("llama.rope.scaling.type", "dynamic").bytes(),
          "llama.rope.scaling.type = \"dynamic\"");
  refused(llama().u32("llama.rope.dimension_count", 32).bytes(),
          "llama.rope.dimension_count = 32: expected head_dim = 64 for llama");
  refused(test_gguf::model_writer("gptneox", 2, 512, 256, 4)
              .u32("gptneox.rope.dimension_count", 15)
              .bytes(),
          "gptneox.rope.dimension_count = 15: expected an even number");
  refused(test_gguf::model_writer("qwen2vl", 2, 512, 256, 4).bytes(),
          "qwen2vl.rope.dimension_sections: missing");
  refused(test_gguf::model_writer("qwen2vl", 2, 512, 256, 4)
              .ints("qwen2vl.rope.dimension_sections", {16, 24, 0, 0})
              .bytes(),
          "1 to 4 sections summing to 1 .. n_rot / 2 = 32");
  refused(llama().tensor("rope_freqs.weight", std::vector<float>(16, 1.0f)).bytes(),
          "rope_freqs.weight = type 0 with 1 dims, ne[0] = 16");
  std::vector<float> factors(32, 1.0f);
  factors[3] = -1.0f;
  refused(llama().tensor("rope_freqs.weight", factors).bytes(), "rope_freqs.weight[3] = -1");
  refused(test_gguf::model_writer("llama", 100000, 4096, 256, 4).bytes(),
          "llama.block_count = 100000");
  refused(test_gguf::model_writer("llama", 2, 0, 256, 4).bytes(), "llama.context_length = 0");
}

TEST_CASE("every GGUF value type is read") {
  const std::string path = scratch("types.gguf");
  std::string u64;
  put(u64, 9223372036854775813ull, 8);
  GgufWriter w = llama();
  w.u32("u32", 4000000000u)
      .f32("f32", 0.5f)
      .str("s", "caf\xc3\xa9")
      .raw("u64", 10, u64)
      .ints("arr", {-3, 7})
      .raw("i8", 1, "\xfe");
  w.write(path);
  const posemb::GgufFile file(path);
  CHECK(file.version() == 3);
  CHECK(*file.uint32("u32") == 4000000000u);
  CHECK(*file.float32("f32") == 0.5);
  CHECK(*file.string("s") == "caf\xc3\xa9");
  CHECK(file.find("u64")->unsigned_value == 9223372036854775813ull);
  CHECK(*file.integers("arr") == std::vector<std::int64_t>{-3, 7});
  CHECK(file.find("i8")->signed_value == -2);
  CHECK_FALSE(file.uint32("absent"));
  CHECK_THROWS_WITH(file.uint32("f32"), Catch::Contains("f32: type FLOAT32: expected UINT32"));
  std::filesystem::remove(path);
}

// The rope tensor sits after a 1 GiB tensor whose data is a hole in a sparse file. After reading
// the plan, mincore() on the file's pages says which are in the page cache: none of the hole's
// (a read through the mapping, or read(), would have brought them in). This proves the reader
// does not touch the weights; it does not measure readahead of the pages it does touch.
TEST_CASE("reading the plan touches only the header and the rope tensor") {
  const std::string path = scratch("sparse.gguf");
  const std::uint64_t gib = std::uint64_t(1) << 30;
  GgufWriter w = llama();
  w.info("token_embd.weight", {gib / 4}, 0, 0).info("rope_freqs.weight", {32}, 0, gib);
  const std::string header = w.bytes();
  const std::uint64_t data_start = (header.size() + 31) / 32 * 32;
  {
    const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, header.data(), header.size(), 0) == static_cast<ssize_t>(header.size()));
    std::string freqs;
    for (int i = 0; i < 32; ++i) put(freqs, test_gguf::float_bits(i < 16 ? 1.0f : 8.0f), 4);
    const auto at = static_cast<off_t>(data_start + gib);
    REQUIRE(::pwrite(fd, freqs.data(), freqs.size(), at) == static_cast<ssize_t>(freqs.size()));
    ::close(fd);
  }
  const posemb::GgufPositions plan = posemb::read_gguf_positions(path);
  CHECK(plan.ropes[0]->rope_type == "llama3");
  CHECK(plan.ropes[0]->inv_freq[31] == Approx(std::pow(10000.0, -62.0 / 64.0) / 8.0));

  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  const std::uint64_t size = data_start + gib + 128;
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  REQUIRE(map != MAP_FAILED);
  const long page = ::sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> resident((size + static_cast<std::uint64_t>(page) - 1) /
                                      static_cast<std::uint64_t>(page));
  REQUIRE(::mincore(map, size, resident.data()) == 0);
  std::size_t resident_in_hole = 0;
  // The hole: from the page after the header to the page before the rope tensor.
  const std::size_t first = 1, last = static_cast<std::size_t>((data_start + gib) /
                                                               static_cast<std::uint64_t>(page));
  for (std::size_t p = first; p + 1 < last; ++p) resident_in_hole += resident[p] & 1u;
  CHECK(resident_in_hole == 0);
  ::munmap(map, size);
  ::close(fd);
  std::filesystem::remove(path);
}
