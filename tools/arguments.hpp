// The posemb tool's arguments, parsed once for every subcommand: numeric options checked in the
// tool's own words ("--seq-len = -5: expected an integer >= 1", exit status 2), the --layout and
// --pairing names, the sequence length a scaled scheme is built for, the query and key positions
// of a bias, and the size cap of the tables the tool writes.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "npy_files.hpp"
#include "posemb/error.hpp"
#include "posemb/model/load.hpp"
#include "posemb/tensor.hpp"

namespace posemb::tool {

// The largest table the tool builds (alibi, buckets, bias, sinusoidal): 2^28 values, 1 GiB of
// float32.
constexpr std::int64_t max_output_elements = std::int64_t(1) << 28;

constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
constexpr int int_max = std::numeric_limits<int>::max();

// printf("%.17g"): every double printed with full precision.
std::string full_precision(double value);
// value with `decimals` digits after the point.
std::string fixed(double value, int decimals);

// ---- numeric options ----

// add_integer(app, "--seq-len", target, 1, max, "...") stores the checked value in target
// (std::int64_t, int, or std::optional of one); the accepted range is appended to the help text.
CLI::Option* add_integer(CLI::App* app, const std::string& flag, std::int64_t& target,
                         std::int64_t min, std::int64_t max, const std::string& description);
CLI::Option* add_integer(CLI::App* app, const std::string& flag,
                         std::optional<std::int64_t>& target, std::int64_t min, std::int64_t max,
                         const std::string& description);
CLI::Option* add_integer(CLI::App* app, const std::string& flag, int& target, int min, int max,
                         const std::string& description);
CLI::Option* add_integer(CLI::App* app, const std::string& flag, std::optional<int>& target,
                         int min, int max, const std::string& description);

// A finite number > 0 (a frequency base, ALiBi's max bias); the help text gives target's default.
CLI::Option* add_positive_number(CLI::App* app, const std::string& flag, double& target,
                                 const std::string& description);

// The CONFIG argument of a subcommand that reads a model: config.json (required).
void add_config_argument(CLI::App* app, std::string& config_path);

// --strict of a subcommand that reads a model (inspect, freqs, layers, apply).
void add_strict_flag(CLI::App* app, bool& strict);

// The model of config.json; with strict, a key the reader did not use (ModelPositions::
// unused_keys) is a UsageError naming it: "CONFIG: --strict: rope_scaling.banana is not used".
ModelPositions load_config(const std::string& config_path, bool strict);

// --seq-len of a subcommand that reports or applies a scaled scheme (dynamic NTK, LongRoPE);
// `when_absent` ends the help text, e.g. "default: none known".
void add_seq_len_option(CLI::App* app, std::optional<std::int64_t>& seq_len,
                        const std::string& when_absent);

// --layer, when given, must name one of the model's `layer_count` layers (UsageError).
void check_layer(std::optional<std::int64_t> layer, std::size_t layer_count,
                 const std::string& config_path);

// ---- names ----

// --layout / --output-layout: "bshd" or "bhsd" (CLI11 checks the name; this converts it).
TensorLayout layout_named(const std::string& name);
// The axes a layout's name stands for: "[batch, seq, heads, head_dim]" for bshd.
const char* layout_axes(TensorLayout layout);
// --pairing: "interleaved" or "rotate_half".
Pairing pairing_named(const std::string& name);

// ---- positions ----

// The sequence length a scaled scheme is built for: --seq-len when given, else as HuggingFace
// max(position) + 1 (ceil(max) + 1 for fractional positions: the same comparisons with whole
// lengths), 0 for no token, int64's largest for a position too large to add 1 to.
std::int64_t sequence_length(std::optional<std::int64_t> seq_len, double max_position);

// --q-len and --k-len (required) and --q-offset of a subcommand that writes [q_len, k_len]:
// queries at positions q_offset + i, keys at 0 .. k_len - 1; q_offset >= min_offset.
struct QueryKeyOptions {
  std::int64_t q_len = 0, k_len = 0;
  std::optional<std::int64_t> q_offset;

  void add_to(CLI::App* app, std::int64_t min_offset);
  // The first query position: --q-offset, by default the last q_len of the k_len key positions
  // (decode with a cache); throws UsageError when the last query's position overflows int64.
  std::int64_t query_offset() const;
  // Throws UsageError unless heads * q_len * k_len <= max_output_elements (without heads: a
  // table of q_len * k_len).
  void check_size(std::optional<std::int64_t> heads) const;
  PositionVector query_positions() const;  // q_offset + i, i < q_len
  PositionVector key_positions() const;    // j, j < k_len
};

// ---- errors ----

// The library names its parameters; the tool names its flags: "posemb: max_bias = 0: ..." from
// the library becomes UsageError "--max-bias = 0: ...". Rethrows `error` unchanged when it does
// not name `parameter`.
[[noreturn]] void rethrow_as_flag(const Error& error, const std::string& parameter,
                                  const std::string& flag);

// Returns f(); a posemb::Error it throws gets `context` in front ("posemb: config.json: ...").
template <class F>
auto with_context(const std::string& context, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (Error& error) {
    error.add_context(context);
    throw;
  }
}

}  // namespace posemb::tool
