// posemb diff MODEL.gguf CONFIG.json [--seq-len N] [--json]: where the GGUF will not run the
// config's scheme. Every layer and field of freqs' object is compared (posemb/model/diff.hpp:
// llama.cpp's run-time semantics on the GGUF side, HuggingFace's on the config side); an entry
// where llama.cpp genuinely differs from transformers on a faithful conversion carries a note.
// posemb diff --engine vllm --max-model-len N CONFIG.json [--seq-len N] [--json]: where vLLM
// 0.33.0 run with that max_model_len departs from transformers (posemb/model/engine_vllm.hpp).
//
// Exit status: 0 the two agree, 3 they differ, 2 usage error (the GGUF must come first and the
// config second; --engine vllm takes the config alone and needs --max-model-len), 1 an
// unreadable, malformed or refused file.
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
#include "posemb/model/engine_vllm.hpp"

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
    diff->add_option("MODEL.gguf", gguf_path_,
                     "The GGUF file (first); with --engine vllm the config.json alone")
        ->required();
    diff->add_option("CONFIG.json", config_path_, "The HuggingFace config.json (second)");
    diff->add_option("--engine", engine_,
                     "The engine whose view is compared with the config: llama.cpp (the GGUF, "
                     "the default) or vllm (vLLM 0.33.0's rotary layers, from the config alone)")
        ->check(CLI::IsMember({"llama.cpp", "vllm"}));
    diff->add_option("--max-model-len", max_model_len_,
                     "vLLM's max_model_len (--engine vllm): LongRoPE's factors and the dynamic "
                     "NTK cache depend on it")
        ->check(CLI::PositiveNumber);
    add_seq_len_option(diff, seq_len_,
                       "llama.cpp's context size per sequence and HF's sequence length; default: "
                       "the GGUF's context_length, HF none");
    diff->add_flag("--json", as_json_,
                   "A JSON array [{\"layer\", \"field\", \"gguf\", \"config\"[, \"note\"]}, ...]");
    return diff;
  }

  int run() override {
    const bool vllm = engine_ == "vllm";
    vllm ? check_vllm() : check_order();
    const std::vector<PlanDifference> differences =
        vllm ? diff_vllm_config(gguf_path_, *max_model_len_, seq_len_)
             : diff_gguf_config(gguf_path_, config_path_, seq_len_);
    const std::string name = vllm ? "vllm" : "gguf";
    std::cout << (as_json_ ? differences_json(differences, name)
                           : differences_text(differences, name));
    return differences.empty() ? 0 : exit_differ;
  }

 private:
  // --engine vllm: the config alone (in the first place), with --max-model-len.
  void check_vllm() const {
    const std::string usage = ": expected posemb diff --engine vllm --max-model-len N CONFIG.json";
    if (!config_path_.empty()) throw UsageError(config_path_ + ": a second file" + usage);
    if (is_gguf_path(gguf_path_)) {
      throw UsageError(gguf_path_ + ": a GGUF file where the config.json belongs" + usage);
    }
    if (!max_model_len_) throw UsageError("--max-model-len is missing" + usage);
  }

  // The GGUF first, the config second (an unreadable first file is left to the reader: exit 1).
  void check_order() const {
    const std::string usage = ": expected posemb diff MODEL.gguf CONFIG.json";
    if (max_model_len_) throw UsageError("--max-model-len needs --engine vllm" + usage);
    if (config_path_.empty()) throw UsageError("CONFIG.json is required" + usage);
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

  std::string gguf_path_, config_path_, engine_ = "llama.cpp";
  std::optional<std::int64_t> max_model_len_;
  std::optional<std::int64_t> seq_len_;
  bool as_json_ = false;
};

}  // namespace

std::unique_ptr<Command> diff_command() { return std::make_unique<DiffCommand>(); }

}  // namespace posemb::tool
