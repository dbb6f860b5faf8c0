// long_context: what a model's long-context RoPE scaling does to each rotary pair.
//
//   long_context CONFIG.json [--seq-len N]
//
// Reads a HuggingFace config.json (see examples/configs/) and prints, per rotary pair, the
// default and scaled frequency (radians per token), the divisor default/scaled, the scaled
// wavelength in tokens, how many full turns the default frequency makes within the original
// context L0, and the band (posemb::pair_frequencies): kept (unchanged), interpolated (divided
// by the factor s), ramp (between the two), ntk (dynamic NTK's grown base), rescaled
// (LongRoPE's per-pair divisors) or clipped (FoPE). Then the attention factor, pairing and
// rotary_dim.
#include <posemb/config.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>

namespace {

constexpr double two_pi = 6.283185307179586476925286766559;

int usage() {
  std::cerr << "usage: long_context CONFIG.json [--seq-len N]\n";
  return 2;
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
    std::printf("config: %s\nmodel_type: %s\nkind: %s\n", argv[1],
                m.model_type.empty() ? "(none)" : m.model_type.c_str(), posemb::to_string(m.kind));
    if (m.kind != posemb::PositionKind::Rope && m.kind != posemb::PositionKind::Fope) return 0;

    const posemb::PairFrequencies f = posemb::pair_frequencies(m, seq_len);
    const std::optional<std::int64_t> L0 = f.original_context;
    std::printf("rope_type: %s  theta: %g  head_dim: %d  rotary_dim: %d  pairing: %s\n",
                m.rope_type.c_str(), f.theta, m.head_dim, f.rotary_dim,
                posemb::to_string(f.pairing));
    std::printf(
        "heads: %d  kv_heads: %d  max_position_embeddings: %s  original context L0: %s  "
        "seq_len: %s\n",
        m.n_heads, m.n_kv_heads,
        m.max_position_embeddings ? std::to_string(*m.max_position_embeddings).c_str() : "-",
        L0 ? std::to_string(*L0).c_str() : "-", seq_len ? std::to_string(*seq_len).c_str() : "-");
    std::printf("\n%4s  %14s  %14s  %9s  %16s  %12s  %s\n", "pair", "default", "scaled", "divisor",
                "wavelength", "turns_in_L0", "band");
    std::map<std::string, int> bands;
    for (std::size_t i = 0; i < f.pairs.size(); ++i) {
      const posemb::PairFrequency& pair = f.pairs[i];
      ++bands[pair.band];
      const std::string turns =
          L0 ? std::to_string(static_cast<long long>(
                   std::floor(static_cast<double>(*L0) * pair.default_inv_freq / two_pi)))
             : "-";
      std::printf("%4zu  %14.8g  %14.8g  %9.5g  %16.6g  %12s  %s\n", i, pair.default_inv_freq,
                  pair.inv_freq, pair.default_inv_freq / pair.inv_freq, two_pi / pair.inv_freq,
                  turns.c_str(), pair.band.c_str());
    }
    std::printf("\nbands:");
    for (const auto& [name, count] : bands) std::printf(" %s %d", name.c_str(), count);
    std::printf("\nattention factor (multiplies cos and sin): %.17g\n", f.attention_scale);
    std::printf("pairing: %s  rotary_dim: %d of head_dim %d\n", posemb::to_string(f.pairing),
                f.rotary_dim, m.head_dim);
  } catch (const posemb::Error& error) {
    std::cerr << error.what() << "\n";
    return 1;
  }
  return 0;
}
