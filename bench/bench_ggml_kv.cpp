// posemb's append_rotated against llama.cpp's two ops for a new token's keys and values: the
// graph llama_kv_cache builds (llama.cpp src/llama-kv-cache.cpp, cpy_k / cpy_v, the version
// llama-cpp-python 0.3.36 vendors): ggml_rope_ext (NEOX) of K into its own tensor, then
// ggml_set_rows of K and of V into the cache at the tokens' slots (k_idxs / v_idxs), the cache
// [kv_size, kv_heads * head_dim] of ggml type F32, F16, BF16 or Q8_0 (flash-attention layout: V
// not transposed). posemb writes the same bytes' layout: kv_cache(BSHD, 1, kv_size, ...). Built
// only against a ggml (bench/CMakeLists.txt: POSEMB_GGML_LIB_DIR or POSEMB_GGML_DIR).
//
// Cases: prefill K, V [1, 2048, 8, 128] float32 at positions and slots 0..2047 of a 4096-slot
// cache, 1 and 2 threads (ggml through a persistent threadpool, as llama.cpp computes); decode:
// one token at position and slot 20000 of a 32768-slot cache, one graph computed per call, one
// thread. Before timing, both caches are read back with ggml's own to_float and compared: max
// |ggml - posemb| / max |x| must be below 0.02 (ggml's float32 angles and q8_0 rounding differ
// from posemb's by far less; a wrong pairing, slot or layout by O(1)). Timing alternates which
// runs first; the row is the median over iterations of ggml time / posemb time.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ggml-cpu.h"
#include "ggml.h"
#include "harness.hpp"
#include "posemb/kv/append.hpp"
#include "posemb/machine/isa.hpp"
#include "posemb/rotary/rope.hpp"

namespace {

constexpr int kHeadDim = 128, kKvHeads = 8, kRow = kHeadDim * kKvHeads;
constexpr double kBase = 500000.0;
constexpr double kCheckLimit = 0.02;

using namespace posemb::bench;
using posemb::CacheDtype;

struct Dtype {
  const char* name;
  CacheDtype posemb;
  ggml_type ggml;
};
const Dtype kDtypes[] = {{"float32", CacheDtype::Float32, GGML_TYPE_F32},
                         {"float16", CacheDtype::Float16, GGML_TYPE_F16},
                         {"bfloat16", CacheDtype::BFloat16, GGML_TYPE_BF16},
                         {"q8_0", CacheDtype::Q8_0, GGML_TYPE_Q8_0}};

// One step's inputs: K, V [tokens, kv_heads, head_dim] float32 at positions = slots.
struct Step {
  std::vector<float> keys, values;
  std::vector<std::int32_t> positions;  // ggml's rope positions
  std::vector<std::int64_t> slots;      // [1, tokens]: the slot of each token
  Step(int tokens, std::int64_t first, unsigned seed) : keys(std::size_t(tokens) * kRow) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    for (float& v : keys) v = dist(gen);
    values = keys;
    std::reverse(values.begin(), values.end());
    for (int t = 0; t < tokens; ++t) {
      positions.push_back(static_cast<std::int32_t>(first + t));
      slots.push_back(first + t);
    }
  }
  int tokens() const { return static_cast<int>(slots.size()); }
};

// ggml: rope of K into its own tensor, then set_rows of K and V into the caches (a context
// without allocation: every tensor's data is memory owned here).
struct GgmlAppend {
  ggml_context* context = nullptr;
  ggml_cgraph* graph = nullptr;
  ggml_threadpool* pool = nullptr;
  ggml_cplan plan{};
  std::vector<std::uint8_t> work;
  std::vector<float> rotated;

  GgmlAppend(Step& step, const Dtype& dtype, void* k_cache, void* v_cache, std::int64_t kv_size,
             int threads)
      : rotated(step.keys.size()) {
    ggml_init_params params{};
    params.mem_size = 1 << 20;
    params.no_alloc = true;
    context = ggml_init(params);
    const std::int64_t n = step.tokens();
    ggml_tensor* k = ggml_new_tensor_3d(context, GGML_TYPE_F32, kHeadDim, kKvHeads, n);
    ggml_tensor* v = ggml_new_tensor_2d(context, GGML_TYPE_F32, kRow, n);
    ggml_tensor* pos = ggml_new_tensor_1d(context, GGML_TYPE_I32, n);
    ggml_tensor* idx = ggml_new_tensor_1d(context, GGML_TYPE_I64, n);
    ggml_tensor* kc = ggml_new_tensor_2d(context, dtype.ggml, kRow, kv_size);
    ggml_tensor* vc = ggml_new_tensor_2d(context, dtype.ggml, kRow, kv_size);
    k->data = step.keys.data();
    v->data = step.values.data();
    pos->data = step.positions.data();
    idx->data = step.slots.data();
    kc->data = k_cache;
    vc->data = v_cache;
    ggml_tensor* r = ggml_rope_ext(context, k, pos, nullptr, kHeadDim, GGML_ROPE_TYPE_NEOX, 0,
                                   float(kBase), 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    r->data = rotated.data();
    graph = ggml_new_graph(context);
    ggml_build_forward_expand(
        graph, ggml_set_rows(context, kc, ggml_reshape_2d(context, r, kRow, n), idx));
    ggml_build_forward_expand(graph, ggml_set_rows(context, vc, v, idx));
    ggml_threadpool_params pool_params = ggml_threadpool_params_default(threads);
    pool = ggml_threadpool_new(&pool_params);
    plan = ggml_graph_plan(graph, threads, pool);
    work.resize(plan.work_size + 1);
    plan.work_data = work.data();
  }
  ~GgmlAppend() {
    ggml_threadpool_free(pool);
    ggml_free(context);
  }
  // The graph, then the pool paused: unpaused, its workers poll for work after each compute
  // (ggml_graph_compute_poll_for_work: 1024 * 128 * poll rounds, poll 50 by default), holding the
  // core posemb's second thread runs on next; paused, they wait on a condition variable, and the
  // next compute wakes them (ggml_graph_compute_kickoff), a cost counted in ggml's time.
  void run() {
    ggml_graph_compute(graph, &plan);
    ggml_threadpool_pause(pool);
  }
};

// A cache buffer of kv_size rows of the dtype.
std::vector<std::uint8_t> cache_bytes(const Dtype& dtype, std::int64_t kv_size) {
  return std::vector<std::uint8_t>(std::size_t(kv_size) * ggml_row_size(dtype.ggml, kRow));
}

// ggml's to_float for F32 (its type traits have none).
void copy_floats(const void* x, float* y, std::int64_t n) {
  std::memcpy(y, x, std::size_t(n) * sizeof(float));
}

// max |a - b| over the step's slots of two caches read with ggml's to_float, / max |x|.
double cache_difference(const Step& step, const Dtype& dtype, const std::uint8_t* a,
                        const std::uint8_t* b) {
  const ggml_to_float_t to_float =
      dtype.ggml == GGML_TYPE_F32 ? copy_floats : ggml_get_type_traits(dtype.ggml)->to_float;
  const std::size_t row_bytes = ggml_row_size(dtype.ggml, kRow);
  std::vector<float> ra(kRow), rb(kRow);
  double worst = 0, scale = 0;
  for (float x : step.keys) scale = std::max(scale, double(std::abs(x)));
  for (const std::int64_t slot : step.slots) {
    to_float(a + slot * row_bytes, ra.data(), kRow);
    to_float(b + slot * row_bytes, rb.data(), kRow);
    for (int i = 0; i < kRow; ++i) worst = std::max(worst, double(std::abs(ra[i] - rb[i])));
  }
  return worst / scale;
}

struct Row {
  std::string name;
  double k_difference, v_difference, ggml_time, posemb_time, speedup;
};

// One case: both appends into their own caches, checked against each other, then timed.
bool run_case(const std::string& name, Step& step, const Dtype& dtype, std::int64_t kv_size,
              int threads, int iterations, std::vector<Row>& rows) {
  auto gk = cache_bytes(dtype, kv_size), gv = gk, pk = gk, pv = gk;
  GgmlAppend ggml(step, dtype, gk.data(), gv.data(), kv_size, threads);
  const posemb::RopeSpec spec = posemb::default_rope_spec(kHeadDim, kBase);
  const posemb::KvCache cache =
      posemb::kv_cache(posemb::CacheLayout::BSHD, 1, kv_size, kKvHeads,
                       {pk.data(), dtype.posemb, kHeadDim}, {pv.data(), dtype.posemb, kHeadDim});
  const int n = step.tokens();
  posemb::TensorMap4<const float> keys(step.keys.data(), 1, n, kKvHeads, kHeadDim);
  posemb::TensorMap4<const float> values(step.values.data(), 1, n, kKvHeads, kHeadDim);
  const posemb::SlotMapping slots(step.slots.data(), 1, n);
  const std::int64_t first = step.slots.front();
  const auto posemb_run = [&] {
    posemb::append_rotated(keys, values, first, spec, slots, cache, posemb::Threads{threads});
  };
  ggml.run();
  posemb_run();
  Row row{name,
          cache_difference(step, dtype, gk.data(), pk.data()),
          cache_difference(step, dtype, gv.data(), pv.data()),
          0,
          0,
          0};
  if (!(row.k_difference < kCheckLimit && row.v_difference < kCheckLimit)) {
    std::printf("check %s: K %.2e, V %.2e of the value scale: FAILED, not timing\n", name.c_str(),
                row.k_difference, row.v_difference);
    return false;
  }
  const PairSeries series = time_pairs(
      iterations, [&] { ggml.run(); }, posemb_run, Order::Alternate);
  row.ggml_time = series.median_baseline();
  row.posemb_time = series.median_measured();
  row.speedup = series.median_speedup();
  rows.push_back(row);
  return true;
}

}  // namespace

int main() {
  ggml_cpu_init();
  print_header(std::string("posemb append_rotated (kernels at level ") +
               posemb::to_string(posemb::isa_level()) +
               ") against ggml_rope_ext + ggml_set_rows (llama.cpp's KV-cache write).");
  std::vector<Row> rows;
  Step prefill(2048, 0, 1u), decode(1, 20000, 2u);
  for (const Dtype& dtype : kDtypes) {
    for (int threads : {1, 2}) {
      const std::string name = std::string("prefill [1, 2048, 8, 128] ") + dtype.name +
                               ", threads " + std::to_string(threads);
      if (!run_case(name, prefill, dtype, 4096, threads, 41, rows)) return 1;
    }
    const std::string name = std::string("decode 1 token into 32768 slots ") + dtype.name;
    if (!run_case(name, decode, dtype, 32768, 1, 20001, rows)) return 1;
  }
  std::printf("\n%-50s %10s %10s %11s %11s %9s\n", "case", "K diff", "V diff", "ggml", "posemb",
              "speedup");
  for (const Row& row : rows) {
    const bool per_token = row.name.rfind("decode", 0) == 0;
    const double unit = per_token ? 1e6 : 1e3;
    const char* suffix = per_token ? "us" : "ms";
    std::printf("%-50s %10.2e %10.2e %9.3f%s %9.3f%s %8.2fx\n", row.name.c_str(), row.k_difference,
                row.v_difference, row.ggml_time * unit, suffix, row.posemb_time * unit, suffix,
                row.speedup);
  }
  std::printf(
      "\nK/V diff: max |ggml cache - posemb cache| / max |x|, both read with ggml's to_float;\n"
      "speedup: median of ggml time / posemb time per iteration.\n");
  return 0;
}
