// The C API's FoPE: a handle over a copy of a checkpoint's coefficients, its rotation (the
// forward, the inverse, and the transpose: the gradient with respect to x), and the gradients
// with respect to the coefficients (rotary/fope_backward.hpp).
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "boundary.hpp"
#include "handles.hpp"
#include "posemb/rotary/fope_backward.hpp"
#include "rotate.hpp"

using posemb::c_api::guarded;
using posemb::c_api::require_pointer;

namespace {

posemb::FopeConfig config_of(const posemb_fope_config* c) {
  require_pointer(c, "config", "a posemb_fope_config");
  posemb::FopeConfig config;
  config.head_dim = c->head_dim;
  config.n_heads = c->n_heads;
  config.n_kv_heads = c->n_kv_heads;
  config.theta = c->theta;
  config.train_length = c->train_length;
  config.floor_ratio = c->floor_ratio;
  config.drop_clipped = c->drop_clipped != 0;
  config.d_out = c->d_out;
  config.padding_sin = c->padding_sin;
  config.num_inv_freq = c->num_inv_freq;
  return config;
}

posemb_fope_config c_config_of(const posemb::FopeConfig& config) {
  posemb_fope_config c{};
  c.head_dim = config.head_dim;
  c.n_heads = config.n_heads;
  c.n_kv_heads = config.n_kv_heads;
  c.theta = config.theta;
  c.train_length = config.train_length;
  c.floor_ratio = config.floor_ratio;
  c.drop_clipped = config.drop_clipped;
  c.d_out = config.d_out;
  c.padding_sin = config.padding_sin;
  c.num_inv_freq = config.num_inv_freq;
  return c;
}

const posemb::Fope& fope_of(const posemb_fope* fope) {
  return require_pointer(fope, "fope", "a posemb_fope")->fope;
}

// The elements of one coefficient array, [n_kv_heads, D_in, D_out].
std::size_t coefficient_count(const posemb::Fope& fope) {
  return static_cast<std::size_t>(fope.n_kv_heads()) * static_cast<std::size_t>(fope.d_in()) *
         static_cast<std::size_t>(fope.d_out());
}

// The D_out the arrays of `count` elements give a config whose d_out is 0.
int d_out_of(const posemb::FopeConfig& config, std::size_t count) {
  if (config.d_out != 0) return config.d_out;
  const auto [resolved, frequencies] = posemb::resolve_fope_config(config);
  const auto per_slot =
      static_cast<std::size_t>(resolved.n_kv_heads) * static_cast<std::size_t>(frequencies.d_in());
  if (count == 0 || count % per_slot != 0) {
    posemb::detail::fail("count", count,
                         "expected n_kv_heads * D_in * D_out with n_kv_heads * D_in = " +
                             std::to_string(per_slot));
  }
  // Beyond head_dim / 2 slots resolve_fope_config refuses it; the bound keeps the int exact.
  return static_cast<int>(std::min<std::size_t>(count / per_slot, 1u << 30));
}

}  // namespace

extern "C" {

posemb_status posemb_model_layer_fope_config(const posemb_model* model, int64_t layer,
                                             posemb_fope_config* out) {
  return guarded([&] {
    const posemb::LayerPositions& l =
        require_pointer(model, "model", "a posemb_model")->model.layer(layer);
    require_pointer(out, "out", "a posemb_fope_config to write");
    if (l.kind != posemb::PositionKind::Fope || !model->model.fope) {
      posemb::detail::fail("layer", layer,
                           std::string("expected a layer of kind fope (this one is ") +
                               posemb::to_string(l.kind) + ")");
    }
    *out = c_config_of(*model->model.fope);
  });
}

posemb_status posemb_fope_dims(const posemb_fope_config* config, int32_t* d_in, int32_t* d_out) {
  return guarded([&] {
    const posemb::FopeConfig c = config_of(config);
    require_pointer(d_in, "d_in", "an int32_t to write");
    require_pointer(d_out, "d_out", "an int32_t to write");
    const auto [resolved, frequencies] = posemb::resolve_fope_config(c);
    *d_in = frequencies.d_in();
    *d_out = resolved.d_out;
  });
}

posemb_status posemb_fope_create(const posemb_fope_config* config, const float* sin_coef,
                                 const float* cos_coef, size_t count, posemb_fope** out) {
  return guarded([&] {
    posemb::FopeConfig c = config_of(config);
    require_pointer(sin_coef, "sin_coef", "a pointer to [n_kv_heads, D_in, D_out] floats");
    require_pointer(cos_coef, "cos_coef", "a pointer to [n_kv_heads, D_in, D_out] floats");
    require_pointer(out, "out", "a posemb_fope* to write");
    c.d_out = d_out_of(c, count);
    const auto [resolved, frequencies] = posemb::resolve_fope_config(c);
    const std::vector<std::int64_t> shape = {resolved.n_kv_heads, frequencies.d_in(),
                                             resolved.d_out};
    const auto want = static_cast<std::size_t>(shape[0] * shape[1] * shape[2]);
    if (count != want) {
      posemb::detail::fail("count", count,
                           "expected n_kv_heads * D_in * D_out = " + std::to_string(want));
    }
    std::vector<float> sin(sin_coef, sin_coef + count), cos(cos_coef, cos_coef + count);
    posemb::Fope fope = posemb::fope_with_coefficients(c, sin.data(), shape, cos.data(), shape);
    // Moving the vectors keeps their buffers, which the Fope maps.
    *out = new posemb_fope{std::move(sin), std::move(cos), std::move(fope)};
  });
}

void posemb_fope_free(posemb_fope* fope) { delete fope; }

posemb_status posemb_fope_rotate_inplace(const posemb_fope* fope, posemb_dtype dtype, void* x,
                                         const posemb_shape* shape,
                                         const posemb_positions* positions,
                                         posemb_rotation rotation) {
  return guarded([&] {
    posemb::c_api::rotate_inplace_c(fope_of(fope), dtype, x, shape, rotation,
                                    posemb::c_api::token_positions(positions));
  });
}

posemb_status posemb_fope_coefficient_gradients(const posemb_fope* fope, posemb_dtype dtype,
                                                const void* x, const void* grad,
                                                const posemb_shape* shape,
                                                const posemb_positions* positions,
                                                double* grad_sin_coef, double* grad_cos_coef,
                                                size_t capacity) {
  return guarded([&] {
    const posemb::Fope& f = fope_of(fope);
    require_pointer(x, "x", "a pointer to the forward's input");
    require_pointer(grad, "grad", "a pointer to dL/dy");
    require_pointer(grad_sin_coef, "grad_sin_coef", "a buffer of n_kv_heads * D_in * D_out");
    require_pointer(grad_cos_coef, "grad_cos_coef", "a buffer of n_kv_heads * D_in * D_out");
    const std::size_t need = coefficient_count(f);
    if (capacity < need) {
      posemb::detail::fail("capacity", capacity,
                           "expected >= n_kv_heads * D_in * D_out = " + std::to_string(need));
    }
    const posemb::c_api::CheckedShape s = posemb::c_api::checked_shape(shape, "shape");
    posemb::c_api::with_dtype(dtype, x, [&](const auto* data) {
      using T = std::remove_const_t<std::remove_pointer_t<decltype(data)>>;
      using Map = Eigen::TensorMap<const Eigen::Tensor<T, 4, Eigen::RowMajor>>;
      const Map xs(data, s.dims), gs(static_cast<const T*>(grad), s.dims);
      posemb::c_api::with_positions(positions, s, [&](const posemb::Positions& at) {
        const posemb::FopeCoefficientGradients g =
            posemb::fope_coefficient_gradients(xs, gs, at, f, s.layout);
        std::copy(g.sin_coef.data(), g.sin_coef.data() + need, grad_sin_coef);
        std::copy(g.cos_coef.data(), g.cos_coef.data() + need, grad_cos_coef);
      });
    });
  });
}

}  // extern "C"
