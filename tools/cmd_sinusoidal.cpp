// posemb sinusoidal --dim D --max-len L [--layout interleaved|concat] [--base B] --output T.npy:
// T[p, :] for p = 0 .. max_len - 1 (sinusoidal.hpp), float32 [max_len, dim].
#include <cstdint>
#include <string>

#include "arguments.hpp"
#include "command.hpp"
#include "npy_files.hpp"
#include "posemb/absolute/sinusoidal.hpp"

namespace posemb::tool {
namespace {

class SinusoidalCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* sinusoidal = app.add_subcommand(
        "sinusoidal",
        "Write the sinusoidal table T: float32 [max_len, dim] (Vaswani et al. 2017), sin(p w_i) "
        "and cos(p w_i) with w_i = base^(-2i/dim).");
    add_integer(sinusoidal, "--dim", dim_, 2, 1 << 30, "Embedding width (even)")->required();
    add_integer(sinusoidal, "--max-len", max_len_, std::int64_t{1}, int64_max,
                "Number of positions")
        ->required();
    sinusoidal
        ->add_option("--layout", layout_,
                     "interleaved: sin at 2i, cos at 2i+1; concat: sin at i, cos at dim/2+i")
        ->check(CLI::IsMember({"interleaved", "concat"}))
        ->capture_default_str();
    add_positive_number(sinusoidal, "--base", base_, "Frequency base");
    sinusoidal->add_option("--output", output_, "T.npy")->required();
    return sinusoidal;
  }

  int run() override {
    if (dim_ % 2 != 0)
      throw UsageError("--dim = " + std::to_string(dim_) + ": expected an even number");
    if (max_len_ > max_output_elements / dim_) {
      throw UsageError("--max-len * --dim = " + std::to_string(max_len_) + " * " +
                       std::to_string(dim_) + ": expected at most 2^28 elements");
    }
    const EmbeddingTable<float> table = sinusoidal_table<float>(
        max_len_, dim_, base_,
        layout_ == "concat" ? SinusoidalLayout::Concat : SinusoidalLayout::Interleaved);
    write_npy_atomic(output_, table.data(), {max_len_, dim_});
    return 0;
  }

 private:
  int dim_ = 0;
  std::int64_t max_len_ = 0;
  std::string layout_ = "interleaved", output_;
  double base_ = 10000.0;
};

}  // namespace

std::unique_ptr<Command> sinusoidal_command() { return std::make_unique<SinusoidalCommand>(); }

}  // namespace posemb::tool
