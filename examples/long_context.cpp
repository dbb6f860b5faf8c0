// long_context: what a model's long-context RoPE scaling does to each rotary pair.
//
//   long_context CONFIG.json [--seq-len N]
//
// Reads a HuggingFace config.json (see examples/configs/) and prints, per rotary pair, the
// default and scaled frequency (radians per token), the divisor default/scaled, the scaled
// wavelength in tokens, how many full turns the default frequency makes within the original
// context L0, and the band (posemb/model/report.hpp, shared with `posemb inspect`): kept
// (unchanged), interpolated (divided by the factor s), ramp (between the two), ntk (dynamic NTK's
// grown base), rescaled (LongRoPE's per-pair divisors), zero (proportional RoPE's pairs that never
// rotate) or clipped (FoPE). Then the attention factor, pairing and rotary_dim. A model whose
// layers differ (Gemma 3's sliding and global layers) gets its layer pattern and one table per
// RoPE scheme.
#include <posemb/model/config.hpp>

#include "posemb/model/report.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

using posemb::two_pi;

int usage() {
  std::cerr << "usage: long_context CONFIG.json [--seq-len N]\n";
  return 2;
}

// One table: every pair of one rotary scheme.
void print_pairs(const posemb::report::PairFrequencies& f, int head_dim,
                 std::optional<std::int64_t> seq_len) {
  const std::optional<std::int64_t> L0 = f.original_context;
  std::printf("theta: %g  rotary_dim: %d  pairing: %s  original context L0: %s  seq_len: %s\n",
              f.theta, f.rotary_dim, posemb::to_string(f.pairing),
              L0 ? std::to_string(*L0).c_str() : "-",
              seq_len ? std::to_string(*seq_len).c_str() : "-");
  std::printf("\n%4s  %14s  %14s  %9s  %16s  %12s  %s\n", "pair", "default", "scaled", "divisor",
              "wavelength", "turns_in_L0", "band");
  std::map<std::string, int> bands;
  for (std::size_t i = 0; i < f.pairs.size(); ++i) {
    const posemb::report::PairFrequency& pair = f.pairs[i];
    ++bands[pair.band];
    const std::string turns = L0 ? std::to_string(static_cast<long long>(std::floor(
                                       static_cast<double>(*L0) * pair.default_inv_freq / two_pi)))
                                 : "-";
    std::printf("%4zu  %14.8g  %14.8g  %9.5g  %16.6g  %12s  %s\n", i, pair.default_inv_freq,
                pair.inv_freq, pair.default_inv_freq / pair.inv_freq, two_pi / pair.inv_freq,
                turns.c_str(), pair.band.c_str());
  }
  std::printf("\nbands:");
  for (const auto& [name, count] : bands) std::printf(" %s %d", name.c_str(), count);
  std::printf("\nattention factor (multiplies cos and sin): %.17g\n", f.attention_scale);
  std::printf("pairing: %s  rotary_dim: %d of head_dim %d\n", posemb::to_string(f.pairing),
              f.rotary_dim, head_dim);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) return usage();
  std::optional<std::int64_t> seq_len;
  if (argc == 4) {
    if (std::string(argv[2]) != "--seq-len") return usage();
    char* end = nullptr;
    const long long n = std::strtoll(argv[3], &end, 10);
    if (end == argv[3] || *end != '\0' || n < 0) return usage();
    seq_len = n;
  }
  try {
    const posemb::ModelPositions m = posemb::load_model_positions(argv[1]);
    const posemb::PositionKind kind = m.kind();
    std::printf(
        "config: %s\nmodel_type: %s\nkind: %s\nheads: %d  kv_heads: %d  "
        "max_position_embeddings: %s\n%s\n",
        argv[1], m.model_type.empty() ? "(none)" : m.model_type.c_str(), posemb::to_string(kind),
        m.n_heads, m.n_kv_heads,
        m.max_position_embeddings ? std::to_string(*m.max_position_embeddings).c_str() : "-",
        posemb::report::layer_pattern(m).c_str());
    if (kind == posemb::PositionKind::Fope && m.fope) {
      print_pairs(posemb::report::fope_pair_frequencies(*m.fope), m.fope->head_dim, seq_len);
      return 0;
    }
    // Each distinct RoPE scheme once, under the first layer that uses it.
    std::vector<const posemb::LayerPositions*> shown;
    for (const posemb::LayerPositions& layer : m.layers) {
      if (!layer.rope) continue;
      bool seen = false;
      for (const auto* other : shown) seen = seen || *other->rope == *layer.rope;
      if (seen) continue;
      std::printf("\nlayer %d (%s): rope_type %s\n", layer.index, layer.layer_type.c_str(),
                  layer.rope->rope_type.c_str());
      print_pairs(
          posemb::report::rope_pair_frequencies(*layer.rope, seq_len, m.max_position_embeddings),
          layer.head_dim, seq_len);
      shown.push_back(&layer);
    }
  } catch (const posemb::Error& error) {
    std::cerr << error.what() << "\n";
    return 1;
  }
  return 0;
}
