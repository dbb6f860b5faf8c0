// posemb_cli_check: compares the posemb tool's outputs with golden values, with an independent
// scalar RoPE formula and with the library's own calls. Exit status 0 when the check passes.
//
//   freqs GOT.json EXPECTED.json
//       rotary_dim equal; inv_freq and attention_scale within 1e-6 relative
//       (tests/data/hf/README.md); pairing is "interleaved" or "rotate_half".
//   layers GOT.json EXPECTED.json
//       GOT is `posemb layers --json`: one object per layer of EXPECTED's "layers", each matching
//       by tests/data/models/README.md's criterion (layer_check.hpp).
//   layer GOT.json EXPECTED.json I
//       GOT is `posemb freqs` (one object) and matches element I of EXPECTED's "layers".
//   same GOT.npy EXPECTED.npy          GOT equals EXPECTED bit for bit (dtype, shape, values).
//   transposed GOT.npy EXPECTED.npy    GOT is EXPECTED [b, s, h, d] as [b, h, s, d], bit for bit.
//   close GOT.npy EXPECTED.npy
//       same dtype and shape, |got - expected| <= 1e-5 * max(1, max |expected|) (tests/data/fope).
//   values GOT.npy EXPECTED.json TOLERANCE
//       float32 or int64 GOT equal to {"shape": [...], "values": [...]} within TOLERANCE
//       (absolute); the string "-inf" stands for minus infinity, which must match exactly.
//   rope-formula X.npy GOT.npy THETA ROTARY_DIM PAIRING LAYOUT OFFSET
//       GOT is plain RoPE of X at positions OFFSET + s, computed here in double from RoFormer's
//       formula (theta_i = p * THETA^(-2i/ROTARY_DIM)), not by the library; tolerance
//       1e-5 * max(1, max |GOT|) for float32 X, 1e-12 for float64.
//   rope-library CONFIG X.npy GOT.npy LAYOUT OFFSET PAIRING ROLE
//       GOT equals, bit for bit, the library's rotate_inplace (Xpos for xPos configs) of X with
//       the config's spec at seq_len = max position + 1 (PAIRING "config" keeps its pairing).
//   multimodal CASE_DIR OUT_DIR
//       one case of tests/data/multimodal by its README's pass criterion: OUT_DIR holds the
//       tool's Y.npy (apply: Y's shape, X's dtype, finite, |got - Y| <= atol) or P.npy
//       (mrope-index: equal exactly) and its stdout.json (seq_len, rope_delta; freqs: rotary_dim,
//       inv_freq within the case's rtol, attention_scale within 1e-6, mrope_section, mrope_layout)
//   to-f64 X.npy OUT.npy        writes X as float64
//   zeros OUT.npy D0 D1 ...     writes float32 zeros of that shape
//   reshape X.npy OUT.npy D0 D1 ...
//                               writes float32 X's values in their order under another shape of
//                               the same size (e.g. [1, 32, 8, 64] as [1, 32, 16, 32])
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "posemb/model/config.hpp"
#include "posemb/io/npy.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/xpos.hpp"
#include "../model/layer_check.hpp"
#include "../reference.hpp"

namespace {

using posemb::NpyArray;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  return nlohmann::json::parse(in);
}

std::vector<double> as_doubles(const NpyArray& array) {
  if (array.dtype == "<f8") return array.values<double>();
  if (array.dtype == "<i8") {
    const std::vector<std::int64_t> values = array.values<std::int64_t>();
    return std::vector<double>(values.begin(), values.end());
  }
  const std::vector<float> values = array.values<float>();
  return std::vector<double>(values.begin(), values.end());
}

bool fail(const std::string& message) {
  std::cerr << "FAIL: " << message << "\n";
  return false;
}

bool check_freqs(const std::string& got_path, const std::string& expected_path) {
  const nlohmann::json got = read_json(got_path);
  const nlohmann::json expected = read_json(expected_path);
  if (got.at("rotary_dim") != expected.at("rotary_dim")) {
    return fail("rotary_dim " + got.at("rotary_dim").dump() +
                " != " + expected.at("rotary_dim").dump());
  }
  const std::string pairing = got.at("pairing").get<std::string>();
  if (pairing != "interleaved" && pairing != "rotate_half") return fail("pairing = " + pairing);
  const auto& g = got.at("inv_freq");
  const auto& e = expected.at("inv_freq");
  if (g.size() != e.size())
    return fail("inv_freq has " + std::to_string(g.size()) + " values, expected " +
                std::to_string(e.size()));
  double worst = 0.0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    const double expected_value = e[i].get<double>();
    const double error = std::fabs(g[i].get<double>() - expected_value);
    if (!(error <= 1e-6 * std::fabs(expected_value))) {
      return fail("inv_freq[" + std::to_string(i) + "] = " + g[i].dump() + ", expected " +
                  e[i].dump());
    }
    if (expected_value != 0.0) worst = std::max(worst, error / std::fabs(expected_value));
  }
  const double gs = got.at("attention_scale").get<double>();
  const double es = expected.at("attention_scale").get<double>();
  if (!(std::fabs(gs - es) <= 1e-6 * std::fabs(es))) {
    return fail("attention_scale = " + std::to_string(gs) + ", expected " + std::to_string(es));
  }
  std::printf("ok: %zu inverse frequencies, max relative error %.3g\n", e.size(), worst);
  return true;
}

bool check_layers(const std::string& got_path, const std::string& expected_path) {
  const nlohmann::json got = read_json(got_path);
  const nlohmann::json expected = read_json(expected_path).at("layers");
  if (!got.is_array() || got.size() != expected.size()) {
    return fail("got " + std::to_string(got.size()) + " layers, expected " +
                std::to_string(expected.size()));
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const std::string mismatch = posemb_test::layer_mismatch(got[i], expected[i]);
    if (!mismatch.empty()) return fail("layer " + std::to_string(i) + ": " + mismatch);
  }
  std::printf("ok: %zu layers\n", expected.size());
  return true;
}

bool check_layer(const std::string& got_path, const std::string& expected_path, std::size_t index) {
  const nlohmann::json got = read_json(got_path);
  const nlohmann::json expected = read_json(expected_path).at("layers").at(index);
  const std::string mismatch = posemb_test::layer_mismatch(got, expected);
  if (!mismatch.empty()) return fail("layer " + std::to_string(index) + ": " + mismatch);
  std::printf("ok: layer %zu\n", index);
  return true;
}

bool same_layout(const NpyArray& got, const NpyArray& expected) {
  if (got.dtype != expected.dtype) return fail("dtype " + got.dtype + " != " + expected.dtype);
  if (got.shape != expected.shape) return fail("shapes differ");
  return true;
}

bool check_close(const std::string& got_path, const std::string& expected_path) {
  const NpyArray got = posemb::read_npy(got_path), expected = posemb::read_npy(expected_path);
  if (!same_layout(got, expected)) return false;
  const std::vector<double> g = as_doubles(got), e = as_doubles(expected);
  double scale = 1.0, worst = 0.0;
  for (double v : e) scale = std::max(scale, std::fabs(v));
  for (std::size_t i = 0; i < e.size(); ++i) {
    const double error = std::fabs(g[i] - e[i]);
    if (!(error <= 1e-5 * scale)) {
      return fail("element " + std::to_string(i) + ": " + std::to_string(g[i]) + " vs " +
                  std::to_string(e[i]));
    }
    worst = std::max(worst, error);
  }
  std::printf("ok: %zu values, max |difference| %.3g (bound %.3g)\n", e.size(), worst,
              1e-5 * scale);
  return true;
}

bool check_values(const std::string& got_path, const std::string& expected_path, double tolerance) {
  const NpyArray got = posemb::read_npy(got_path);
  const nlohmann::json expected = read_json(expected_path);
  if (got.dtype != "<f4" && got.dtype != "<i8")
    return fail("dtype " + got.dtype + ", expected <f4 or <i8");
  if (got.shape != expected.at("shape").get<std::vector<std::int64_t>>())
    return fail("shape differs");
  std::vector<double> g;
  if (got.dtype == "<i8") {
    for (std::int64_t value : got.values<std::int64_t>()) g.push_back(static_cast<double>(value));
  } else {
    for (float value : got.values<float>()) g.push_back(value);
  }
  const auto& e = expected.at("values");
  if (e.size() != g.size())
    return fail("expected file has " + std::to_string(e.size()) + " values");
  double worst = 0.0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (e[i].is_string()) {
      if (e[i] != "-inf") return fail("bad expected value " + e[i].dump());
      if (!(std::isinf(g[i]) && g[i] < 0))
        return fail("element " + std::to_string(i) + " = " + std::to_string(g[i]) +
                    ", expected -inf");
      continue;
    }
    const double error = std::fabs(g[i] - e[i].get<double>());
    if (!(error <= tolerance)) {
      return fail("element " + std::to_string(i) + " = " + std::to_string(g[i]) + ", expected " +
                  e[i].dump());
    }
    worst = std::max(worst, error);
  }
  std::printf("ok: %zu values, max |difference| %.3g\n", g.size(), worst);
  return true;
}

// x: [batch, seq, heads, head_dim] (bshd) or [batch, heads, seq, head_dim] (bhsd).
// Element index of (b, s, h, k).
std::size_t element(const std::vector<std::int64_t>& shape, bool bshd, std::int64_t b,
                    std::int64_t s, std::int64_t h, std::int64_t k) {
  return bshd ? static_cast<std::size_t>(((b * shape[1] + s) * shape[2] + h) * shape[3] + k)
              : static_cast<std::size_t>(((b * shape[1] + h) * shape[2] + s) * shape[3] + k);
}

bool check_rope_formula(const std::string& x_path, const std::string& got_path, double theta,
                        int rotary_dim, const std::string& pairing, const std::string& layout,
                        std::int64_t offset) {
  const NpyArray x = posemb::read_npy(x_path), got = posemb::read_npy(got_path);
  if (!same_layout(got, x)) return false;
  const std::vector<double> xv = as_doubles(x), gv = as_doubles(got);
  const bool bshd = layout == "bshd";
  const auto& shape = x.shape;
  const std::int64_t seq = bshd ? shape[1] : shape[2], heads = bshd ? shape[2] : shape[1];
  std::vector<double> want = xv;
  const posemb::Pairing pairs =
      pairing == "interleaved" ? posemb::Pairing::Interleaved : posemb::Pairing::RotateHalf;
  Eigen::VectorXd head(shape[3]);
  for (std::int64_t b = 0; b < shape[0]; ++b) {
    for (std::int64_t s = 0; s < seq; ++s) {
      for (std::int64_t h = 0; h < heads; ++h) {
        for (std::int64_t k = 0; k < shape[3]; ++k) head[k] = xv[element(shape, bshd, b, s, h, k)];
        const Eigen::VectorXd y =
            test_reference::reference_rope(head, offset + s, rotary_dim, theta, pairs);
        for (std::int64_t k = 0; k < shape[3]; ++k) want[element(shape, bshd, b, s, h, k)] = y[k];
      }
    }
  }
  double scale = 1.0, worst = 0.0;
  for (double v : want) scale = std::max(scale, std::fabs(v));
  const double bound = x.dtype == "<f4" ? 1e-5 * scale : 1e-12 * scale;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double error = std::fabs(gv[i] - want[i]);
    if (!(error <= bound))
      return fail("element " + std::to_string(i) + ": " + std::to_string(gv[i]) + " vs " +
                  std::to_string(want[i]));
    worst = std::max(worst, error);
  }
  if (gv == xv) return fail("the output equals the input");
  std::printf("ok: %zu values, max |difference| from the formula %.3g (bound %.3g)\n", want.size(),
              worst, bound);
  return true;
}

template <class T>
bool library_matches(const posemb::ModelPositions& model, const NpyArray& x, const NpyArray& got,
                     const std::string& layout, std::int64_t offset, const std::string& pairing,
                     const std::string& role) {
  std::vector<T> want = x.values<T>();
  const auto& s = x.shape;
  const std::int64_t seq = layout == "bshd" ? s[1] : s[2];
  posemb::RopeSpec spec = model.rope_spec(offset + seq);
  if (pairing != "config") {
    spec.pairing =
        pairing == "interleaved" ? posemb::Pairing::Interleaved : posemb::Pairing::RotateHalf;
  }
  posemb::TensorMap4<T> map(want.data(), s[0], s[1], s[2], s[3]);
  const auto tensor_layout =
      layout == "bshd" ? posemb::TensorLayout::BSHD : posemb::TensorLayout::BHSD;
  if (model.xpos) {
    posemb::rotate_inplace(
        map, offset,
        posemb::Xpos{posemb::XposSpec{spec, *model.xpos},
                     role == "key" ? posemb::XposRole::Key : posemb::XposRole::Query},
        posemb::RotateOptions().with_layouts(tensor_layout));
  } else {
    posemb::rotate_inplace(map, offset, spec, posemb::RotateOptions().with_layouts(tensor_layout));
  }
  if (got.values<T>() != want) return fail("the tool's output differs from the library call");
  if (want == x.values<T>()) return fail("the library call left X unchanged");
  std::printf("ok: %zu values identical to the library call\n", want.size());
  return true;
}

bool check_rope_library(const std::string& config_path, const std::string& x_path,
                        const std::string& got_path, const std::string& layout, std::int64_t offset,
                        const std::string& pairing, const std::string& role) {
  const posemb::ModelPositions model = posemb::load_model_positions(config_path);
  const NpyArray x = posemb::read_npy(x_path), got = posemb::read_npy(got_path);
  if (!same_layout(got, x)) return false;
  return x.dtype == "<f8" ? library_matches<double>(model, x, got, layout, offset, pairing, role)
                          : library_matches<float>(model, x, got, layout, offset, pairing, role);
}

// got == expected bit for bit (same dtype and shape), or, with `transposed`, got is expected with
// axes 1 and 2 swapped ([b, s, h, d] <-> [b, h, s, d]).
bool check_same(const std::string& got_path, const std::string& expected_path, bool transposed) {
  const NpyArray got = posemb::read_npy(got_path), expected = posemb::read_npy(expected_path);
  if (got.dtype != expected.dtype) return fail("dtype " + got.dtype + " != " + expected.dtype);
  std::vector<std::int64_t> shape = expected.shape;
  if (transposed) {
    if (shape.size() != 4) return fail("expected a 4-D array to transpose");
    std::swap(shape[1], shape[2]);
  }
  if (got.shape != shape) return fail("shapes differ");
  const std::vector<double> g = as_doubles(got), e = as_doubles(expected);
  for (std::size_t i = 0; i < e.size(); ++i) {
    std::size_t at = i;
    if (transposed) {  // i indexes expected [b, s, h, d]; at indexes got [b, h, s, d]
      const auto& d = expected.shape;
      const std::int64_t k = std::int64_t(i) % d[3], h = std::int64_t(i) / d[3] % d[2],
                         s = std::int64_t(i) / (d[3] * d[2]) % d[1],
                         b = std::int64_t(i) / (d[3] * d[2] * d[1]);
      at = static_cast<std::size_t>(((b * d[2] + h) * d[1] + s) * d[3] + k);
    }
    if (!(g[at] == e[i])) {
      return fail("element " + std::to_string(i) + ": " + std::to_string(g[at]) + " vs " +
                  std::to_string(e[i]));
    }
  }
  std::printf("ok: %zu values identical%s\n", e.size(), transposed ? " (transposed)" : "");
  return true;
}

}  // namespace

namespace {

// One case of tests/data/multimodal (its README's pass criteria): OUT holds the tool's outputs
// (Y.npy or P.npy, and stdout.json).
bool check_multimodal(const std::string& case_dir, const std::string& out_dir) {
  const nlohmann::json meta = read_json(case_dir + "/case.json");
  const std::string command = meta.at("command").get<std::string>();
  if (command == "apply" || command == "apply-vision") {
    const NpyArray x = posemb::read_npy(case_dir + "/X.npy");
    const NpyArray expected = posemb::read_npy(case_dir + "/Y.npy");
    const NpyArray got = posemb::read_npy(out_dir + "/Y.npy");
    if (got.dtype != x.dtype) return fail("dtype " + got.dtype + ", expected X's " + x.dtype);
    if (got.shape != expected.shape) return fail("shape differs from Y.npy's");
    const double atol = meta.at("atol").get<double>();
    const std::vector<double> g = as_doubles(got), e = as_doubles(expected);
    double worst = 0.0;
    for (std::size_t i = 0; i < e.size(); ++i) {
      if (!std::isfinite(g[i])) return fail("value " + std::to_string(i) + " is not finite");
      worst = std::max(worst, std::fabs(g[i] - e[i]));
    }
    std::printf("max |got - Y| = %.3e (atol %.0e)\n", worst, atol);
    return worst <= atol ? true : fail("max |got - Y| over atol");
  }
  const nlohmann::json got = read_json(out_dir + "/stdout.json");
  const nlohmann::json& expect = meta.at("expect");
  if (command == "mrope-index") {
    const NpyArray p = posemb::read_npy(out_dir + "/P.npy");
    const NpyArray expected = posemb::read_npy(case_dir + "/P.npy");
    if (p.dtype != "<i8" || p.shape != expected.shape ||
        p.values<std::int64_t>() != expected.values<std::int64_t>()) {
      return fail("P.npy differs from the case's (int64 [3, seq], exactly)");
    }
    for (const char* key : {"seq_len", "rope_delta"}) {
      if (got.at(key) != expect.at(key)) {
        return fail(std::string(key) + " = " + got.at(key).dump() + ", expected " +
                    expect.at(key).dump());
      }
    }
    return true;
  }
  if (command == "freqs") {
    if (got.at("rotary_dim") != expect.at("rotary_dim")) return fail("rotary_dim differs");
    const auto& g = got.at("inv_freq");
    const auto& e = expect.at("inv_freq");
    if (g.size() != e.size()) return fail("inv_freq has another length");
    for (std::size_t i = 0; i < e.size(); ++i) {
      const double error = std::fabs(g[i].get<double>() - e[i].get<double>());
      if (!(error <= meta.at("rtol").get<double>() * std::fabs(e[i].get<double>()))) {
        return fail("inv_freq[" + std::to_string(i) + "] = " + g[i].dump() + ", expected " +
                    e[i].dump());
      }
    }
    if (!(std::fabs(got.at("attention_scale").get<double>() -
                    expect.at("attention_scale").get<double>()) <= 1e-6)) {
      return fail("attention_scale differs");
    }
    for (const char* key : {"mrope_section", "mrope_layout"}) {
      if (got.at(key) != expect.at(key)) {
        return fail(std::string(key) + " = " + got.at(key).dump() + ", expected " +
                    expect.at(key).dump());
      }
    }
    return true;
  }
  return fail("unknown command " + command);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  try {
    bool ok = false;
    if (a.size() == 3 && a[0] == "freqs") {
      ok = check_freqs(a[1], a[2]);
    } else if (a.size() == 3 && a[0] == "layers") {
      ok = check_layers(a[1], a[2]);
    } else if (a.size() == 4 && a[0] == "layer") {
      ok = check_layer(a[1], a[2], std::stoul(a[3]));
    } else if (a.size() == 3 && a[0] == "close") {
      ok = check_close(a[1], a[2]);
    } else if (a.size() == 4 && a[0] == "values") {
      ok = check_values(a[1], a[2], std::stod(a[3]));
    } else if (a.size() == 8 && a[0] == "rope-formula") {
      ok = check_rope_formula(a[1], a[2], std::stod(a[3]), std::stoi(a[4]), a[5], a[6],
                              std::stoll(a[7]));
    } else if (a.size() == 8 && a[0] == "rope-library") {
      ok = check_rope_library(a[1], a[2], a[3], a[4], std::stoll(a[5]), a[6], a[7]);
    } else if (a.size() == 3 && (a[0] == "same" || a[0] == "transposed")) {
      ok = check_same(a[1], a[2], a[0] == "transposed");
    } else if (a.size() == 3 && a[0] == "multimodal") {
      ok = check_multimodal(a[1], a[2]);
    } else if (a.size() == 3 && a[0] == "to-f64") {
      const NpyArray x = posemb::read_npy(a[1]);
      const std::vector<double> values = as_doubles(x);
      posemb::write_npy(a[2], values.data(), x.shape);
      ok = true;
    } else if (a.size() >= 3 && a[0] == "zeros") {
      std::vector<std::int64_t> shape;
      std::int64_t count = 1;
      for (std::size_t i = 2; i < a.size(); ++i) count *= shape.emplace_back(std::stoll(a[i]));
      const std::vector<float> zeros(static_cast<std::size_t>(count), 0.0f);
      posemb::write_npy(a[1], zeros.data(), shape);
      ok = true;
    } else if (a.size() >= 4 && a[0] == "reshape") {
      const NpyArray x = posemb::read_npy(a[1]);
      std::vector<std::int64_t> shape;
      std::int64_t count = 1;
      for (std::size_t i = 3; i < a.size(); ++i) count *= shape.emplace_back(std::stoll(a[i]));
      const std::vector<float> values = x.values<float>();
      if (count != static_cast<std::int64_t>(values.size())) {
        return fail("reshape: " + std::to_string(values.size()) + " values do not fill the shape")
                   ? 0
                   : 1;
      }
      posemb::write_npy(a[2], values.data(), shape);
      ok = true;
    } else {
      std::cerr << "usage: see the comment at the top of tests/cli/cli_check.cpp\n";
      return 2;
    }
    return ok ? 0 : 1;
  } catch (const std::exception& error) {
    std::cerr << "FAIL: " << error.what() << "\n";
    return 1;
  }
}
