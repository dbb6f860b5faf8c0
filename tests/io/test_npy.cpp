// Tests for npy.hpp: reading files NumPy wrote, write/read round trips, and an Error for every
// kind of malformed file.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "posemb/io/npy.hpp"

using Catch::Matchers::Contains;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "posemb_npy_XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }

  // Writes raw bytes to `name` and returns its path.
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream out(file(name), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out);
    return file(name);
  }

 private:
  std::filesystem::path path_;
};

// A .npy file with the given header dict text and data bytes, built by hand from the format
// description (magic, version, little-endian header length, header padded with spaces to a
// multiple of 64 and ended by '\n').
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  const std::size_t n = header.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  return out + header + data;
}

const std::string kFloat2x3 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

std::string zero_bytes(std::size_t n) { return std::string(n, '\0'); }

}  // namespace

TEST_CASE("reads the drift-table arrays NumPy wrote", "[npy]") {
  const std::string dir = std::string(POSEMB_DATA_DIR) + "/drift_table/";
  const posemb::NpyArray x_q = posemb::read_npy(dir + "x_q.npy");
  const posemb::NpyArray x_k = posemb::read_npy(dir + "x_k.npy");
  const posemb::NpyArray wq = posemb::read_npy(dir + "Wq.npy");
  const posemb::NpyArray wk = posemb::read_npy(dir + "Wk.npy");
  CHECK(x_q.dtype == "<f4");
  CHECK(x_q.shape == std::vector<std::int64_t>{64});
  CHECK(wq.dtype == "<f4");
  CHECK(wq.shape == std::vector<std::int64_t>{64, 64});
  CHECK(wq.size() == 4096);
  CHECK(wq.bytes.size() == 4096 * 4);

  // README: |x_q| = 8.2795 (4 decimals).
  const std::vector<float> xq = x_q.values<float>();
  const Eigen::VectorXd q_in = Eigen::Map<const Eigen::VectorXf>(xq.data(), 64).cast<double>();
  CHECK(q_in.norm() == Approx(8.2795).margin(5e-5));

  // README: with no positional encoding the score (x_q @ Wq) . (x_k @ Wk) is -5.8183. This
  // checks the C (row-major) order of the (64, 64) matrices: a transposed read gives another value.
  using RowMajorXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const std::vector<float> wq_values = wq.values<float>();
  const std::vector<float> wk_values = wk.values<float>();
  const std::vector<float> xk = x_k.values<float>();
  const Eigen::MatrixXd wq_m =
      Eigen::Map<const RowMajorXf>(wq_values.data(), 64, 64).cast<double>();
  const Eigen::MatrixXd wk_m =
      Eigen::Map<const RowMajorXf>(wk_values.data(), 64, 64).cast<double>();
  const Eigen::VectorXd k_in = Eigen::Map<const Eigen::VectorXf>(xk.data(), 64).cast<double>();
  const double score = (wq_m.transpose() * q_in).dot(wk_m.transpose() * k_in);
  CHECK(score == Approx(-5.8183).margin(1e-4));
  const double transposed_score = (wq_m * q_in).dot(wk_m * k_in);
  CHECK(std::abs(transposed_score - score) > 1e-2);
}

TEST_CASE("reads int64 and 3-D float32 arrays NumPy wrote", "[npy]") {
  const std::string dir = std::string(POSEMB_TEST_DATA_DIR) + "/npy/";
  // FoPE conformance positions 0 .. 127 (see tests/data/npy/README.md).
  const posemb::NpyArray positions = posemb::read_npy(dir + "positions_0_127.npy");
  CHECK(positions.dtype == "<i8");
  CHECK(positions.shape == std::vector<std::int64_t>{128});
  const std::vector<std::int64_t> values = positions.values<std::int64_t>();
  REQUIRE(values.size() == 128);
  for (std::int64_t i = 0; i < 128; ++i) CHECK(values[static_cast<std::size_t>(i)] == i);

  const posemb::NpyArray coef = posemb::read_npy(dir + "cos_coef_2x3x3.npy");
  CHECK(coef.dtype == "<f4");
  CHECK(coef.shape == std::vector<std::int64_t>{2, 3, 3});
  const std::vector<float> coef_values = coef.values<float>();
  REQUIRE(coef_values.size() == 18);
  // The first data bytes of the file are c9 d4 87 3f: the float32 with bits 0x3f87d4c9
  // (1.06118...).
  std::uint32_t bits = 0;
  std::memcpy(&bits, &coef_values[0], sizeof bits);
  CHECK(bits == 0x3f87d4c9u);
  CHECK(coef_values[0] == Approx(1.06118).margin(1e-5));
}

TEST_CASE("write_npy reproduces NumPy's files byte for byte", "[npy]") {
  TempDir tmp;
  const std::vector<std::string> files = {
      std::string(POSEMB_DATA_DIR) + "/drift_table/x_q.npy",
      std::string(POSEMB_DATA_DIR) + "/drift_table/Wq.npy",
      std::string(POSEMB_TEST_DATA_DIR) + "/npy/positions_0_127.npy",
      std::string(POSEMB_TEST_DATA_DIR) + "/npy/cos_coef_2x3x3.npy"};
  for (const std::string& original : files) {
    INFO(original);
    const posemb::NpyArray array = posemb::read_npy(original);
    const std::string copy = tmp.file("copy.npy");
    if (array.dtype == "<f4") {
      posemb::write_npy(copy, array.values<float>().data(), array.shape);
    } else {
      posemb::write_npy(copy, array.values<std::int64_t>().data(), array.shape);
    }
    CHECK(slurp(copy) == slurp(original));
  }
}

TEMPLATE_TEST_CASE("write_npy / read_npy round trip", "[npy]", float, double, std::int64_t) {
  TempDir tmp;
  const std::vector<std::vector<std::int64_t>> shapes = {{},           {5}, {2, 3},
                                                         {1, 2, 3, 4}, {0}, {3, 0}};
  for (const auto& shape : shapes) {
    std::int64_t count = 1;
    for (auto d : shape) count *= d;
    INFO("ndim = " << shape.size() << ", count = " << count);
    std::vector<TestType> data(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < data.size(); ++i) {
      // Distinct values with fractions and signs (large magnitudes for int64).
      if constexpr (std::is_same_v<TestType, std::int64_t>) {
        data[i] = (i % 2 ? -1 : 1) * (static_cast<std::int64_t>(i) << 40) + 7;
      } else {
        data[i] = static_cast<TestType>((i % 2 ? -1.0 : 1.0) * (static_cast<double>(i) + 0.1));
      }
    }
    const std::string path = tmp.file("round_trip.npy");
    posemb::write_npy(path, data.data(), shape);

    // The header is a multiple of 64 bytes long and ends in '\n'.
    const std::string bytes = slurp(path);
    REQUIRE(bytes.size() >= 10);
    const std::size_t header_len =
        static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    CHECK((10 + header_len) % 64 == 0);
    CHECK(bytes[10 + header_len - 1] == '\n');
    CHECK(bytes.size() == 10 + header_len + data.size() * sizeof(TestType));

    const posemb::NpyArray array = posemb::read_npy(path);
    CHECK(array.shape == shape);
    CHECK(array.size() == count);
    CHECK(array.values<TestType>() == data);
  }
}

TEST_CASE("the shape tuple is written as Python writes it", "[npy]") {
  TempDir tmp;
  const double value = 1.5;
  auto header_of = [&](const std::vector<std::int64_t>& shape) {
    posemb::write_npy(tmp.file("h.npy"), &value, shape);
    const std::string bytes = slurp(tmp.file("h.npy"));
    return bytes.substr(10, bytes.find('}') - 10 + 1);
  };
  CHECK(header_of({}) == "{'descr': '<f8', 'fortran_order': False, 'shape': (), }");
  CHECK(header_of({1}) == "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }");
  CHECK(header_of({1, 1}) == "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1), }");
}

TEST_CASE("reads format versions 2.0 and 3.0 (uint32 header length)", "[npy]") {
  TempDir tmp;
  const float values[6] = {1, 2, 3, 4, 5, 6};
  const std::string data(reinterpret_cast<const char*>(values), sizeof values);
  for (int major : {2, 3}) {
    const auto array = posemb::read_npy(tmp.write("v.npy", npy_bytes(kFloat2x3, data, major)));
    CHECK(array.shape == std::vector<std::int64_t>{2, 3});
    CHECK(array.values<float>() == std::vector<float>(values, values + 6));
  }
}

TEST_CASE("malformed .npy files throw an Error naming the file and the problem", "[npy]") {
  TempDir tmp;
  const std::string six_floats = zero_bytes(24);

  SECTION("missing file") {
    const std::string path = tmp.file("does_not_exist.npy");
    CHECK_THROWS_AS(posemb::read_npy(path), posemb::Error);
    CHECK_THROWS_WITH(posemb::read_npy(path), Contains(path) && Contains("cannot open"));
  }
  SECTION("bad magic") {
    std::string bytes = npy_bytes(kFloat2x3, six_floats);
    bytes[1] = 'X';
    const std::string path = tmp.write("magic.npy", bytes);
    CHECK_THROWS_WITH(posemb::read_npy(path), Contains(path) && Contains("bad magic"));
    CHECK_THROWS_WITH(posemb::read_npy(tmp.write("short.npy", "\x93NUM")), Contains("bad magic"));
    const std::string empty = tmp.write("empty.npy", "");
    CHECK_THROWS_WITH(posemb::read_npy(empty),
                      "posemb: " + empty + ": empty file: expected a .npy file");
  }
  SECTION("unsupported format version") {
    std::string bytes = npy_bytes(kFloat2x3, six_floats);
    bytes[6] = 4;
    CHECK_THROWS_WITH(posemb::read_npy(tmp.write("v4.npy", bytes)),
                      Contains("npy format version = 4"));
  }
  SECTION("unsupported dtype") {
    for (const std::string dtype : {"<f2", ">f4", ">f8", "<i4", "|u1", "<c8", "|b1"}) {
      INFO(dtype);
      const std::string dict =
          "{'descr': '" + dtype + "', 'fortran_order': False, 'shape': (2, 3), }";
      CHECK_THROWS_WITH(posemb::read_npy(tmp.write("dtype.npy", npy_bytes(dict, six_floats))),
                        Contains("npy dtype = " + dtype) && Contains("expected <f4"));
    }
  }
  SECTION("Fortran order") {
    const std::string dict = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }";
    CHECK_THROWS_WITH(posemb::read_npy(tmp.write("fortran.npy", npy_bytes(dict, six_floats))),
                      Contains("fortran_order = True") && Contains("expected False"));
  }
  SECTION("malformed shape") {
    for (const std::string shape : {"(2, -3)", "(2, x)", "[2, 3]", "2, 3", "(2,,3)", "(,)", "(2 3)",
                                    "(2.0, 3)", "(1234567890123456,)", ""}) {
      INFO(shape);
      const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
      const std::string path = tmp.write("shape.npy", npy_bytes(dict, six_floats));
      CHECK_THROWS_AS(posemb::read_npy(path), posemb::Error);
      CHECK_THROWS_WITH(posemb::read_npy(path), Contains("npy shape"));
    }
  }
  SECTION("missing header entries") {
    CHECK_THROWS_WITH(
        posemb::read_npy(tmp.write(
            "no_shape.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, }", six_floats))),
        Contains("no 'shape' entry"));
    CHECK_THROWS_WITH(
        posemb::read_npy(tmp.write(
            "no_descr.npy", npy_bytes("{'fortran_order': False, 'shape': (2, 3), }", six_floats))),
        Contains("no 'descr' entry"));
  }
  SECTION("truncated header") {
    const std::string full = npy_bytes(kFloat2x3, six_floats);
    // Only one of the two header-length bytes.
    CHECK_THROWS_WITH(posemb::read_npy(tmp.write("len.npy", full.substr(0, 9))),
                      Contains("truncated npy header"));
    // The header length says 54 bytes; the file ends after 20 of them.
    CHECK_THROWS_WITH(posemb::read_npy(tmp.write("header.npy", full.substr(0, 30))),
                      Contains("truncated npy header"));
    // A version 2.0 header length that claims 4 GiB.
    std::string huge = npy_bytes(kFloat2x3, six_floats, 2);
    huge[8] = huge[9] = huge[10] = huge[11] = '\xff';
    CHECK_THROWS_WITH(posemb::read_npy(tmp.write("huge.npy", huge)),
                      Contains("npy header length = 4294967295"));
  }
  SECTION("truncated data") {
    const std::string path = tmp.write("data.npy", npy_bytes(kFloat2x3, zero_bytes(23)));
    CHECK_THROWS_WITH(posemb::read_npy(path),
                      Contains(path) && Contains("truncated npy data: 23 bytes, expected 24"));
    const std::string dict =
        "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776, 2), }";
    CHECK_THROWS_WITH(posemb::read_npy(tmp.write("too_large.npy", npy_bytes(dict, ""))),
                      Contains("too large"));
  }
}

// "Unreadable" is a path through a regular file (ENOTDIR): it fails for root too, where a
// chmod 000 file would not.
TEST_CASE("files that cannot be opened or read throw an Error naming the file", "[npy]") {
  TempDir tmp;
  const std::string directory = tmp.file("a_directory.npy");
  REQUIRE(std::filesystem::create_directory(directory));
  CHECK_THROWS_AS(posemb::read_npy(directory), posemb::Error);
  CHECK_THROWS_WITH(posemb::read_npy(directory),
                    "posemb: " + directory + ": cannot read .npy file: Is a directory");
  const std::string under_file = tmp.write("plain", "x") + "/x.npy";
  CHECK_THROWS_WITH(posemb::read_npy(under_file),
                    "posemb: " + under_file + ": cannot open .npy file: Not a directory");
  const std::string missing = tmp.file("missing.npy");
  CHECK_THROWS_WITH(posemb::read_npy(missing),
                    "posemb: " + missing + ": cannot open .npy file: No such file or directory");
}

// A pipe cannot seek: its data is read as it arrives, and a short one is truncated data.
TEST_CASE("reads a .npy file from a pipe", "[npy]") {
  TempDir tmp;
  const std::string fifo = tmp.file("pipe.npy");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  const auto read_through_pipe = [&](const std::string& bytes) {
    std::thread writer([&] {
      std::ofstream out(fifo, std::ios::binary);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    });
    struct Join {
      std::thread& thread;
      ~Join() { thread.join(); }
    } join{writer};
    return posemb::read_npy(fifo);
  };
  std::string data;
  for (int i = 0; i < 6; ++i) {
    const float value = 0.5f + static_cast<float>(i);
    data.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  const posemb::NpyArray array = read_through_pipe(npy_bytes(kFloat2x3, data));
  CHECK(array.shape == std::vector<std::int64_t>{2, 3});
  CHECK(array.values<float>() == std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f});
  CHECK_THROWS_WITH(read_through_pipe(npy_bytes(kFloat2x3, data.substr(0, 23))),
                    Contains("truncated npy data: 23 bytes, expected 24"));
}

TEST_CASE("values<T>() with the wrong T throws", "[npy]") {
  TempDir tmp;
  const float f[2] = {1.0f, 2.0f};
  posemb::write_npy(tmp.file("f.npy"), f, {2});
  const posemb::NpyArray floats = posemb::read_npy(tmp.file("f.npy"));
  CHECK_THROWS_WITH(floats.values<double>(),
                    Contains("npy dtype = <f4") && Contains("expected <f8"));
  CHECK_THROWS_WITH(floats.values<std::int64_t>(), Contains("expected <i8"));
  const std::int64_t i[1] = {3};
  posemb::write_npy(tmp.file("i.npy"), i, {1});
  CHECK_THROWS_WITH(posemb::read_npy(tmp.file("i.npy")).values<float>(),
                    Contains("npy dtype = <i8") && Contains("expected <f4"));
}

TEST_CASE("write_npy rejects bad shapes and unwritable paths", "[npy]") {
  TempDir tmp;
  const float f[1] = {1.0f};
  CHECK_THROWS_WITH(posemb::write_npy(tmp.file("neg.npy"), f, {2, -1}),
                    Contains("shape[1] = -1") && Contains("expected >= 0"));
  CHECK_THROWS_WITH(posemb::write_npy(tmp.file("no_such_dir/x.npy"), f, {1}),
                    Contains("cannot open for writing"));
  // 25000 dimensions of 1 do not fit a version 1.0 header (uint16 length).
  CHECK_THROWS_WITH(posemb::write_npy(tmp.file("wide.npy"), f, std::vector<std::int64_t>(25000, 1)),
                    Contains("shape.size() = 25000"));
}
