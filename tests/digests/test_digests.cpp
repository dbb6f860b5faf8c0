// Bit for bit across machines (posemb/machine/isa.hpp): the outputs of a fixed set of calls (RoPE
// in both pairings and four storage types, every scaled variant, cos/sin tables and HF's float32
// path at positions up to 10^7, FoPE, M-RoPE in both layouts, the KV-cache conversions) hashed
// per call, FNV-1a 64 of the output's raw bytes, against the digests in
// tests/data/digests/digests.txt, written on x86-64 at its best level (avx2 or avx512).
//
//   every level with FMA     x86-64 avx2 and avx512, aarch64 neon and portable (aarch64 always
//                            has FMA): every digest equal
//   a level without FMA      x86-64 portable in a default build: the digests of the calls with
//                            no FMA in them (the conversions) equal; the rest measured against
//                            the best level, value by value, and printed with the largest
//                            difference in ulps of the call's largest output (the rotation
//                            bound of detail/rotate.hpp: 3 ulps of |a| + |b|)
//
// The inputs are splitmix64 draws made into floats with exact arithmetic, so that every machine
// starts from the same bits. Regenerate the digests (after a deliberate change of results) with
//   POSEMB_WRITE_DIGESTS=tests/data/digests/digests.txt build/test/tests/test_digests
// on an x86-64 machine with AVX2 (tests/data/digests/README.md).
#include <catch2/catch.hpp>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "posemb/detail/half_io.hpp"
#include "posemb/detail/stream_copy.hpp"
#include "posemb/kv/convert.hpp"
#include "posemb/machine/isa.hpp"
#include "posemb/rotary/fope.hpp"
#include "posemb/rotary/hf_float32.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/rotate.hpp"
#include "posemb/rotary/scaled.hpp"
#include "machine/fused_levels.hpp"

namespace {

using posemb::IsaLevel;
using posemb::Pairing;
using posemb::RotaryDims;
template <class T>
using Tensor4 = posemb::Tensor4<T>;

constexpr const char* digests_file = POSEMB_TEST_DATA_DIR "/digests/digests.txt";

// FNV-1a, 64 bits (offset basis 14695981039346656037, prime 1099511628211) of `n` bytes.
std::uint64_t fnv1a(const unsigned char* bytes, std::size_t n) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= bytes[i];
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex(std::uint64_t h) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

// splitmix64 (Steele, Lea, Flood 2014): the same sequence on every machine.
struct SplitMix {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-2, 2): 24 random bits times 2^-22, exact in float.
  float uniform() {
    return static_cast<float>(static_cast<std::int64_t>(next() >> 40) - (1 << 23)) * 0x1p-22f;
  }
};

// The outputs of one call: its raw bytes and, for the comparison without FMA, its values.
struct Output {
  std::vector<unsigned char> bytes;
  std::vector<double> values;
  double epsilon = 0.0;  // the output type's machine epsilon; 0: not floating point
};

template <class T>
Output output_of(const T* data, std::size_t n) {
  Output out;
  out.bytes.resize(n * sizeof(T));
  std::memcpy(out.bytes.data(), data, out.bytes.size());
  for (std::size_t i = 0; i < n; ++i) out.values.push_back(static_cast<double>(data[i]));
  out.epsilon = static_cast<double>(Eigen::NumTraits<T>::epsilon());
  return out;
}

// x: [batch 1, seq, heads 2, head_dim], drawn from `seed`.
template <class T>
Tensor4<T> activations(Eigen::Index seq, Eigen::Index head_dim, std::uint64_t seed) {
  Tensor4<T> x(1, seq, 2, head_dim);
  SplitMix draw{seed};
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<T>(draw.uniform());
  return x;
}

// Positions from 0 to 10^7 (the drift the double angles exist for), around 2^k and odd ones.
const std::vector<std::int64_t> far_positions = {
    0, 1, 2, 7, 255, 4096, 8191, 65537, 131071, 1000003, 4194304, 8388607, 9999991, 10000000};

posemb::PositionMatrix position_row(const std::vector<std::int64_t>& values) {
  posemb::PositionMatrix positions(1, static_cast<Eigen::Index>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    positions(0, static_cast<Eigen::Index>(i)) = values[i];
  }
  return positions;
}

template <class T, class Source>
Output rotated_far(const Source& source, int head_dim, std::uint64_t seed) {
  const Tensor4<T> x =
      activations<T>(static_cast<Eigen::Index>(far_positions.size()), head_dim, seed);
  const Tensor4<T> y = posemb::rotated(x, position_row(far_positions), source);
  return output_of(y.data(), static_cast<std::size_t>(y.size()));
}

// A named call and whether FMA takes part in its arithmetic.
struct Call {
  std::string name;
  bool fused;
  std::function<Output()> run;
};

const char* pairing_name(Pairing pairing) {
  return pairing == Pairing::Interleaved ? "interleaved" : "rotate_half";
}

// The scaled variants (rotary/scaled.hpp), each at published settings (Qwen2.5's YaRN, Llama
// 3.1's llama3, a Phi-3-shaped LongRoPE at seq_len 10^7, Gemma 3's proportional).
std::vector<std::pair<std::string, posemb::RopeSpec>> scaled_specs(Pairing pairing) {
  const RotaryDims dims{128, 128};
  posemb::YarnParams yarn;
  yarn.factor = 4.0;
  yarn.original_max_position_embeddings = 32768;
  posemb::LongRopeParams longrope;
  longrope.original_max_position_embeddings = 4096;
  longrope.factor = 32.0;
  for (int i = 0; i < 64; ++i) {
    longrope.short_factor.push_back(1.0 + 0.01 * i);
    longrope.long_factor.push_back(1.0 + 0.5 * i);
  }
  posemb::ProportionalParams proportional;
  proportional.partial_rotary_factor = 0.25;
  proportional.factor = 8.0;
  return {
      {"default", posemb::default_rope_spec(dims, 10000.0, pairing)},
      {"linear", posemb::linear_rope_spec(dims, 10000.0, 4.0, pairing)},
      {"ntk", posemb::ntk_rope_spec(dims, 10000.0, 4.0, pairing)},
      {"dynamic_ntk", posemb::dynamic_ntk_rope_spec(dims, 10000.0, 2.0, 4096, 10000000, pairing)},
      {"yarn", posemb::yarn_rope_spec(dims, 1000000.0, yarn, pairing)},
      {"llama3", posemb::llama3_rope_spec(dims, 500000.0, posemb::Llama3Params{}, pairing)},
      {"longrope", posemb::longrope_rope_spec(dims, 10000.0, longrope, 10000000, pairing)},
      {"proportional", posemb::proportional_rope_spec(128, 1000000.0, proportional, pairing)}};
}

void add_rope_calls(std::vector<Call>& calls, Pairing pairing) {
  const std::string p = pairing_name(pairing);
  for (const auto& [name, spec] : scaled_specs(pairing)) {
    calls.push_back({"rope." + name + ".float." + p, true,
                     [spec = spec] { return rotated_far<float>(spec, 128, 1); }});
  }
  const posemb::RopeSpec plain = posemb::default_rope_spec(RotaryDims{128, 128}, 10000.0, pairing);
  calls.push_back(
      {"rope.default.double." + p, true, [=] { return rotated_far<double>(plain, 128, 2); }});
  calls.push_back(
      {"rope.default.half." + p, true, [=] { return rotated_far<Eigen::half>(plain, 128, 3); }});
  calls.push_back({"rope.default.bfloat16." + p, true,
                   [=] { return rotated_far<Eigen::bfloat16>(plain, 128, 4); }});
  const posemb::RopeSpec partial = posemb::default_rope_spec(RotaryDims{96, 32}, 10000.0, pairing);
  calls.push_back(
      {"rope.partial.float." + p, true, [=] { return rotated_far<float>(partial, 96, 5); }});
  // The cos/sin generator alone: 64 rows of a table ending at 10^7 - 1.
  calls.push_back({"cos_sin.table.float." + p, true, [=] {
                     const posemb::RopeTable<float> table(plain, 9999936, 64);
                     std::vector<float> rows;
                     for (Eigen::Index r = 0; r < 64; ++r) {
                       for (Eigen::Index i = 0; i < 64; ++i) {
                         rows.push_back(table.cos_row(9999936 + r)[i]);
                         rows.push_back(table.sin_row(9999936 + r)[i]);
                       }
                     }
                     return output_of(rows.data(), rows.size());
                   }});
  // transformers' float32 arithmetic, op by op (rotary/hf_float32.hpp).
  calls.push_back({"hf_float32.llama3.float." + p, true, [=] {
                     return rotated_far<float>(
                         posemb::hf_float32_llama3(RotaryDims{128, 128}, 500000.0,
                                                   posemb::Llama3Params{}, pairing),
                         128, 6);
                   }});
}

void add_fope_mrope_calls(std::vector<Call>& calls) {
  // FoPE with seeded coefficients (posemb::SeededNormal: libm's log, sin and cos) and with
  // sigma 0 (the identity mixture, no libm).
  for (double sigma : {0.3, 0.0}) {
    posemb::FopeConfig config;
    config.head_dim = 128;
    config.n_heads = 2;
    config.train_length = 4096;
    config.sigma = sigma;
    config.seed = 7;
    calls.push_back({std::string("fope.float.sigma_") + (sigma == 0.0 ? "0" : "0.3"), true,
                     [=] { return rotated_far<float>(posemb::make_fope(config), 128, 7); }});
  }
  for (posemb::MropeLayout layout :
       {posemb::MropeLayout::Chunked, posemb::MropeLayout::Interleaved}) {
    const posemb::MropeSpec spec = posemb::make_mrope_spec(
        posemb::default_rope_spec(RotaryDims{128, 128}, 1000000.0),
        layout == posemb::MropeLayout::Chunked ? posemb::MropeSections{16, 24, 24}
                                               : posemb::MropeSections{24, 20, 20},
        layout);
    const std::string name =
        layout == posemb::MropeLayout::Chunked ? "mrope.chunked.float" : "mrope.interleaved.float";
    calls.push_back({name, true, [=] {
                       const auto n = static_cast<Eigen::Index>(far_positions.size());
                       posemb::PositionMatrix thw(3, n);
                       for (Eigen::Index i = 0; i < n; ++i) {
                         const std::int64_t t = far_positions[static_cast<std::size_t>(i)];
                         thw(0, i) = t;
                         thw(1, i) = t / 3 + i;
                         thw(2, i) = t / 7 + 2 * i;
                       }
                       const Tensor4<float> x = activations<float>(n, 128, 8);
                       const Tensor4<float> y =
                           posemb::rotated(x, posemb::MropePositions(thw), spec);
                       return output_of(y.data(), static_cast<std::size_t>(y.size()));
                     }});
  }
}

// The KV-cache conversions of 4 rows of 96 values: draws, with specials in row 0 (signed
// zeros, infinities, a NaN, float16 and fp8 subnormals, values that round to even).
void add_conversion_calls(std::vector<Call>& calls) {
  for (posemb::CacheDtype dtype : {posemb::CacheDtype::Float16, posemb::CacheDtype::BFloat16,
                                   posemb::CacheDtype::Fp8E4m3, posemb::CacheDtype::Q8_0}) {
    for (float scale : {1.0f, 0.37f}) {
      if (dtype != posemb::CacheDtype::Fp8E4m3 && scale != 1.0f) continue;
      std::string name = std::string("kv.") + posemb::to_string(dtype);
      if (dtype == posemb::CacheDtype::Fp8E4m3) name += scale == 1.0f ? ".scale_1" : ".scale_0.37";
      calls.push_back(
          {name, false, [=] {
             constexpr Eigen::Index rows = 4, n = 96;
             std::vector<float> in(static_cast<std::size_t>(rows * n));
             SplitMix draw{9};
             for (float& v : in) v = draw.uniform() * 300.0f;
             const float specials[] = {0.0f,     -0.0f,    INFINITY,   -INFINITY,     NAN,
                                       0x1p-20f, -0x1p-9f, 0x1.002p0f, 1.0009765625f, 65504.0f,
                                       70000.0f, 448.0f,   500.0f,     0x1.0101p-7f};
             std::copy(std::begin(specials), std::end(specials), in.begin());
             const Eigen::Index bytes = posemb::cache_row_bytes(dtype, n);
             std::vector<unsigned char> out(static_cast<std::size_t>(rows * bytes));
             posemb::detail::convert_rows(in.data(), n, out.data(), bytes, rows, n, dtype, scale);
             Output result;
             result.bytes = out;
             return result;
           }});
    }
  }
}

// The raw bytes of `values` (an output compared by its digest alone).
template <class T>
Output bytes_of(const std::vector<T>& values) {
  Output out;
  out.bytes.resize(values.size() * sizeof(T));
  std::memcpy(out.bytes.data(), values.data(), out.bytes.size());
  return out;
}

// The half-precision array conversions (detail/half_io.hpp: narrow, widen) of 1003 values (a
// tail after every vector width): draws over [-2^16, 2^16) and, first, specials (signed zeros,
// infinities, the quiet NaN of each sign, float16 subnormals and overflow, bfloat16 ties and
// float32 subnormals). Widening starts from 16-bit patterns spread over the whole range.
void add_half_calls(std::vector<Call>& calls) {
  const auto narrowed = [](auto tag) {
    using H = decltype(tag);
    constexpr Eigen::Index n = 1003;
    std::vector<float> in(static_cast<std::size_t>(n));
    SplitMix draw{10};
    for (float& v : in) v = draw.uniform() * 32768.0f;
    const float specials[] = {0.0f,     -0.0f,       INFINITY,    -INFINITY, NAN,
                              -NAN,     0x1p-20f,    -0x1p-24f,   0x1p-25f,  65504.0f,
                              65520.0f, 0x1.0101p0f, 0x1.0181p0f, 0x1p-140f, -0x1.8p-130f};
    std::copy(std::begin(specials), std::end(specials), in.begin());
    std::vector<H> out(static_cast<std::size_t>(n));
    posemb::detail::narrow(in.data(), out.data(), n);
    return bytes_of(out);
  };
  const auto widened = [](auto tag) {
    using H = decltype(tag);
    constexpr Eigen::Index n = 1003;
    std::vector<H> in(static_cast<std::size_t>(n));
    for (Eigen::Index i = 0; i < n; ++i) {
      auto bits = static_cast<std::uint16_t>(i * 65521 / n + i % 7);
      // float16 NaNs left out: their payloads widen as each machine's conversion keeps them.
      if (std::is_same_v<H, Eigen::half> && (bits & 0x7C00u) == 0x7C00u) bits &= 0xFC00u;
      in[static_cast<std::size_t>(i)] = Eigen::numext::bit_cast<H>(bits);
    }
    std::vector<float> out(static_cast<std::size_t>(n));
    posemb::detail::widen(in.data(), out.data(), n);
    return bytes_of(out);
  };
  calls.push_back({"half.narrow.float16", false, [=] { return narrowed(Eigen::half()); }});
  calls.push_back({"half.narrow.bfloat16", false, [=] { return narrowed(Eigen::bfloat16()); }});
  calls.push_back({"half.widen.float16", false, [=] { return widened(Eigen::half()); }});
  calls.push_back({"half.widen.bfloat16", false, [=] { return widened(Eigen::bfloat16()); }});
}

// The streaming copy (detail/stream_copy.hpp) of 1000 bytes at every destination offset 0..63
// into one buffer, each copy over the last: the bytes of the source whatever the stores.
void add_stream_copy_call(std::vector<Call>& calls) {
  calls.push_back({"stream_copy.bytes", false, [] {
                     std::vector<unsigned char> source(1000);
                     SplitMix draw{11};
                     for (unsigned char& byte : source)
                       byte = static_cast<unsigned char>(draw.next());
                     alignas(64) unsigned char buffer[1152] = {};
                     Output result;
                     for (std::size_t offset = 0; offset < 64; ++offset) {
                       source[0] = static_cast<unsigned char>(offset);
                       posemb::detail::stream_copy(buffer + offset, source.data(), source.size());
                       posemb::detail::stream_fence();
                       result.bytes.insert(result.bytes.end(), buffer, buffer + sizeof buffer);
                     }
                     return result;
                   }});
}

const std::vector<Call>& calls() {
  static const std::vector<Call> all = [] {
    std::vector<Call> list;
    add_rope_calls(list, Pairing::RotateHalf);
    add_rope_calls(list, Pairing::Interleaved);
    add_fope_mrope_calls(list);
    add_conversion_calls(list);
    add_half_calls(list);
    add_stream_copy_call(list);
    return list;
  }();
  return all;
}

std::map<std::string, std::string> golden_digests() {
  std::map<std::string, std::string> digests;
  std::ifstream file(digests_file);
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, digest;
    fields >> name >> digest;
    digests[name] = digest;
  }
  return digests;
}

std::string digest_of(const Output& output) {
  return hex(fnv1a(output.bytes.data(), output.bytes.size()));
}

using test_support::level_is_fused;

// Restores the level the program started with.
struct LevelGuard {
  IsaLevel saved = posemb::isa_level();
  ~LevelGuard() { posemb::set_isa_level(saved); }
};

// The largest |a - b| over the values, in ulps (machine epsilon) of the largest |b|.
double largest_difference_ulps(const Output& a, const Output& b) {
  double diff = 0.0, largest = 0.0;
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    diff = std::max(diff, std::abs(a.values[i] - b.values[i]));
    largest = std::max(largest, std::abs(b.values[i]));
  }
  return diff / (b.epsilon * largest);
}

}  // namespace

TEST_CASE("digests: POSEMB_WRITE_DIGESTS writes the digests of the best level") {
  const char* path = std::getenv("POSEMB_WRITE_DIGESTS");
  if (path == nullptr || *path == '\0') return;
  REQUIRE(level_is_fused(posemb::best_isa_level()));
  LevelGuard guard;
  posemb::set_isa_level(posemb::best_isa_level());
  std::ofstream file(path);
  file << "# FNV-1a 64 of each call's output bytes (tests/digests/test_digests.cpp); written by\n"
       << "#   POSEMB_WRITE_DIGESTS=tests/data/digests/digests.txt build/test/tests/test_digests\n"
       << "# on " << posemb::detail::isa_machine.name << " at level "
       << posemb::to_string(posemb::isa_level()) << ".\n";
  for (const Call& call : calls()) file << call.name << ' ' << digest_of(call.run()) << '\n';
  REQUIRE(file.good());
}

TEST_CASE("digests: every level with FMA reproduces every digest bit for bit") {
  if (std::getenv("POSEMB_WRITE_DIGESTS") != nullptr) return;
  const std::map<std::string, std::string> golden = golden_digests();
  REQUIRE(golden.size() == calls().size());
  LevelGuard guard;
  for (IsaLevel level : posemb::supported_isa_levels()) {
    posemb::set_isa_level(level);
    for (const Call& call : calls()) {
      if (!level_is_fused(level) && call.fused) continue;
      INFO(posemb::detail::isa_machine.name << " level " << posemb::to_string(level) << ": "
                                            << call.name);
      REQUIRE(golden.count(call.name) == 1);
      CHECK(digest_of(call.run()) == golden.at(call.name));
    }
  }
}

TEST_CASE("digests: a level without FMA, within 3 ulps of the fused results") {
  LevelGuard guard;
  const IsaLevel best = posemb::best_isa_level();
  for (IsaLevel level : posemb::supported_isa_levels()) {
    if (level_is_fused(level)) continue;
    for (const Call& call : calls()) {
      if (!call.fused) continue;
      posemb::set_isa_level(best);
      const Output fused = call.run();
      posemb::set_isa_level(level);
      const Output unfused = call.run();
      const double ulps = largest_difference_ulps(unfused, fused);
      std::size_t differing = 0;
      for (std::size_t i = 0; i < fused.values.size(); ++i) {
        differing += fused.values[i] != unfused.values[i] ? 1u : 0u;
      }
      std::printf(
          "level %s (no FMA) against %s: %-36s %5zu of %5zu values differ, by up to %.2f ulps\n",
          posemb::to_string(level), posemb::to_string(best), call.name.c_str(), differing,
          fused.values.size(), ulps);
      INFO(call.name);
      CHECK(ulps <= 3.0);
    }
  }
}
