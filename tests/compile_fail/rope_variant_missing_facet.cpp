// Must not compile: a rope variant without its bands facet (model/rope_variants/variant.hpp).
#include <posemb/model/rope_variants.hpp>

namespace {

struct NoBands : posemb::RopeVariantDefaults {
  using Params = posemb::DefaultRopeParams;
  static constexpr const char* name = "no_bands";
  template <class Context>
  static Params read(const Context&) {
    return {};
  }
  static std::optional<double> factor(const Params&) { return std::nullopt; }
  static posemb::RopeSpec spec(const Params&, const posemb::RopeBasis& b,
                               std::optional<std::int64_t>) {
    return posemb::default_rope_spec(b.dims, b.theta, b.pairing);
  }
  static constexpr const char* no_hf_float32 = "none";
  static double float32_steps(const Params&, std::optional<std::int64_t>) { return 0.0; }
  static constexpr const char* no_gguf = "none";
};

[[maybe_unused]] constexpr bool checked = posemb::detail::check_rope_variant<NoBands>();

}  // namespace
