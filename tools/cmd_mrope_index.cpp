// posemb mrope-index CONFIG.json --segments SPEC --output P.npy [--resume RULE]: the M-RoPE
// positions int64 [3, seq] of a prompt layout and the rope delta (mrope_positions.hpp), by the
// config's get_rope_index rules; --resume replaces where positions resume after a vision segment.
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
    mrope_index->add_option("--resume", resume_,
                            "where positions resume after a vision segment: past_largest (past "
                            "its largest position on any axis: Qwen's own code, transformers <= "
                            "4.57, the default) or spatial_extent (max(H, W) / merge past its "
                            "start: transformers 5.x)");
    return mrope_index;
  }

  int run() override {
    const ModelPositions model = load_model_positions(config_path_);
    if (!model.mrope_index) {
      throw Error(config_path_ + ": the model_type has no M-RoPE position rules; expected " +
                  mrope_model_types());
    }
    MropeIndexRules rules = *model.mrope_index;
    std::vector<MropeSegment> segments;
    try {
      segments = parse_mrope_segments(segments_);
    } catch (const Error& error) {
      throw UsageError("--segments: " + error.message());
    }
    try {
      if (!resume_.empty()) rules.resume = mrope_resume_of(resume_, "--resume");
    } catch (const Error& error) {
      throw UsageError(error.message());
    }
    const MropeIndex index = with_context(config_path_ + " --segments " + segments_,
                                          [&] { return mrope_position_ids(segments, rules); });
    write_npy_atomic(output_, index.positions.data(), {3, index.seq_len()});
    std::cout << "{\"seq_len\": " << index.seq_len() << ", \"rope_delta\": " << index.rope_delta
              << "}\n";
    return 0;
  }

 private:
  std::string config_path_, segments_, output_, resume_;
};

}  // namespace

std::unique_ptr<Command> mrope_index_command() { return std::make_unique<MropeIndexCommand>(); }

}  // namespace posemb::tool
