// posemb mrope-index CONFIG.json --segments SPEC --output P.npy: the M-RoPE positions int64
// [3, seq] of a prompt layout and the rope delta (mrope_positions.hpp), by the config's
// get_rope_index rules.
#include <iostream>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "command.hpp"
#include "npy_files.hpp"
#include "posemb/model/config.hpp"
#include "posemb/rotary/mrope_positions.hpp"

namespace posemb::tool {
namespace {

class MropeIndexCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* mrope_index = app.add_subcommand(
        "mrope-index",
        "Write the M-RoPE positions int64 [3, seq] of a prompt layout and print {\"seq_len\", "
        "\"rope_delta\"}, by the config's get_rope_index rules (Qwen2-VL, Qwen2.5-VL, Qwen3-VL).");
    add_config_argument(mrope_index, config_path_);
    mrope_index
        ->add_option("--segments", segments_,
                     "text:N,image:TxHxW,video:TxHxW[@S] (grids before the merge; S seconds "
                     "per temporal grid)")
        ->required();
    mrope_index->add_option("--output", output_, "P.npy: int64 [3, seq]")->required();
    return mrope_index;
  }

  int run() override {
    const ModelPositions model = load_model_positions(config_path_);
    if (!model.mrope_index) {
      throw Error(config_path_ + ": the model_type has no M-RoPE position rules; expected " +
                  mrope_model_types());
    }
    std::vector<MropeSegment> segments;
    try {
      segments = parse_mrope_segments(segments_);
    } catch (const Error& error) {
      throw UsageError("--segments: " + error.message());
    }
    const MropeIndex index = with_context(config_path_ + " --segments " + segments_, [&] {
      return mrope_position_ids(segments, *model.mrope_index);
    });
    write_npy_atomic(output_, index.positions.data(), {3, index.seq_len()});
    std::cout << "{\"seq_len\": " << index.seq_len() << ", \"rope_delta\": " << index.rope_delta
              << "}\n";
    return 0;
  }

 private:
  std::string config_path_, segments_, output_;
};

}  // namespace

std::unique_ptr<Command> mrope_index_command() { return std::make_unique<MropeIndexCommand>(); }

}  // namespace posemb::tool
