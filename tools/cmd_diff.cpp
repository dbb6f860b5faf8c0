// posemb diff MODEL.gguf CONFIG.json [--seq-len N] [--json]: where the GGUF will not run the
// config's scheme. Every layer and field of freqs' object is compared (posemb/model/diff.hpp:
// llama.cpp's run-time semantics on the GGUF side, HuggingFace's on the config side); an entry
// where llama.cpp genuinely differs from transformers on a faithful conversion carries a note.
//
// Exit status: 0 the two agree, 3 they differ, 2 usage error (the GGUF must come first and the
// config second), 1 an unreadable, malformed or refused file.
#include <cstdint>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "command.hpp"
#include "gguf_commands.hpp"
#include "posemb/model/diff.hpp"

namespace posemb::tool {
namespace {

constexpr int exit_differ = 3;

bool readable(const std::string& path) { return static_cast<bool>(std::ifstream(path)); }

class DiffCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* diff = app.add_subcommand(
        "diff",
        "Compare what llama.cpp runs for a GGUF with the scheme of the config.json it was "
        "converted from: one line per (layer, field) that differs, \"layer I FIELD: gguf V "
        "config V\" (inv_freq by its worst pair), with a note where llama.cpp genuinely differs "
        "from transformers. Exit status: 0 they agree, 3 they differ, 2 usage error, 1 an "
        "unreadable, malformed or refused file.");
    diff->add_option("MODEL.gguf", gguf_path_, "The GGUF file (first)")->required();
    diff->add_option("CONFIG.json", config_path_, "The HuggingFace config.json (second)")
        ->required();
    add_seq_len_option(diff, seq_len_,
                       "llama.cpp's context size per sequence and HF's sequence length; default: "
                       "the GGUF's context_length, HF none");
    diff->add_flag("--json", as_json_,
                   "A JSON array [{\"layer\", \"field\", \"gguf\", \"config\"[, \"note\"]}, ...]");
    return diff;
  }

  int run() override {
    check_order();
    const std::vector<PlanDifference> differences =
        diff_gguf_config(gguf_path_, config_path_, seq_len_);
    std::cout << (as_json_ ? differences_json(differences) : differences_text(differences));
    return differences.empty() ? 0 : exit_differ;
  }

 private:
  // The GGUF first, the config second (an unreadable first file is left to the reader: exit 1).
  void check_order() const {
    const std::string usage = ": expected posemb diff MODEL.gguf CONFIG.json";
    if (readable(gguf_path_) && !is_gguf_path(gguf_path_)) {
      throw UsageError(gguf_path_ +
                       ": not a GGUF file (the name does not end in .gguf and it "
                       "does not start with \"GGUF\")" +
                       usage);
    }
    if (is_gguf_path(config_path_)) {
      throw UsageError(config_path_ + ": a GGUF file where the config.json belongs" + usage);
    }
  }

  std::string gguf_path_, config_path_;
  std::optional<std::int64_t> seq_len_;
  bool as_json_ = false;
};

}  // namespace

std::unique_ptr<Command> diff_command() { return std::make_unique<DiffCommand>(); }

}  // namespace posemb::tool
