// A translation unit that only names the model vocabulary: it builds a ModelPositions by hand
// and asks it for its RoPE spec, with posemb::posemb alone and a stand-in nlohmann/json.hpp that
// fails to compile ahead of the include path (no_nlohmann/). Exit status 0 when the spec's
// frequencies equal the ones worked out by hand.
#include <posemb/model/positions.hpp>

#include <cmath>
#include <cstdio>

int main() {
  // One RoPE layer, head_dim 4, theta 100: inv_freq = 100^(-2i/4) = 1, 0.1.
  posemb::RopeScheme scheme;
  scheme.theta = 100.0;
  scheme.head_dim = 4;
  scheme.rotary_dim = 4;
  posemb::LayerPositions layer;
  layer.head_dim = 4;
  layer.rope = scheme;
  posemb::ModelPositions model;
  model.layers.push_back(layer);
  const posemb::RopeSpec spec = model.rope_spec();
  const double expected[2] = {1.0, 0.1};
  double max_error = spec.inv_freq.size() == 2 ? 0.0 : 1.0;
  for (int i = 0; i < 2 && i < spec.inv_freq.size(); ++i) {
    max_error = std::fmax(max_error, std::fabs(spec.inv_freq[i] - expected[i]));
  }
  std::printf("ModelPositions without nlohmann-json: %zu layer(s), inv_freq max error %.1e\n",
              model.layers.size(), max_error);
  return max_error <= 1e-15 ? 0 : 1;
}
