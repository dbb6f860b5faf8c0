// posemb: inspect and apply a model's positional scheme, with .npy files in and out.
//
//   posemb inspect CONFIG.json [--seq-len N]                          cmd_inspect.cpp
//   posemb freqs CONFIG.json [--layer I] [--seq-len N]                 cmd_freqs_layers.cpp
//   posemb layers CONFIG.json [--seq-len N] [--json]                   cmd_freqs_layers.cpp
//     (inspect, freqs, layers of MODEL.gguf: llama.cpp's semantics)    cmd_gguf.cpp
//   posemb diff MODEL.gguf CONFIG.json [--seq-len N] [--json]          cmd_diff.cpp
//   posemb apply CONFIG.json --input X.npy --output Y.npy ...          cmd_apply.cpp
//     (--weights W.safetensors: a learned table; also bias --weights)  checkpoint_weights.cpp
//   posemb mrope-index CONFIG.json --segments SPEC --output P.npy      cmd_mrope_index.cpp
//   posemb alibi | buckets | bias ... --output B.npy                   cmd_bias.cpp
//   posemb sinusoidal --dim D --max-len L ... --output T.npy           cmd_sinusoidal.cpp
//   posemb vectors CONFIG.json --positions LIST --output DIR ...      cmd_vectors.cpp
//   posemb --version [--verbose]
//
// Exit status: 0 on success (diff: 0 when the GGUF and the config agree, 3 when they differ),
// 2 for a usage error, 1 for anything else (an unreadable, malformed or refused file among
// them: a hostile GGUF or safetensors file, a missing tensor), with one line
// "posemb: error: ..." on stderr naming the file, key, tensor, byte offset or argument at fault.
// The tables the tool builds hold at most 2^28 values (max_output_elements). Outputs are
// written to a temporary file and renamed, so nothing is written to --output on failure.
//
// Adding a subcommand:
//   1. tools/cmd_<name>.cpp: a class deriving from Command (command.hpp) whose add_to() adds the
//      subcommand and its options (shared ones from arguments.hpp: add_config_argument,
//      add_seq_len_option, add_integer, QueryKeyOptions, layout and pairing names) and whose
//      run() does the work, throwing UsageError (exit 2) or posemb::Error (exit 1); and its
//      factory `std::unique_ptr<Command> <name>_command()`.
//   2. Declare the factory in command.hpp and add it to `commands` below (the order of --help).
//   3. Add the file to posemb_tool_sources in tools/CMakeLists.txt and its cases to
//      tests/cli/cli_tests.cmake.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <functional>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "command.hpp"
#include "npy_files.hpp"
#include "posemb/error.hpp"
#include "posemb/machine/isa.hpp"
#include "posemb/machine/streaming_stores.hpp"
#include "posemb/version.hpp"

namespace {

using posemb::tool::Command;

// Every subcommand, in the order --help lists them.
std::vector<std::unique_ptr<Command>> commands() {
  namespace tool = posemb::tool;
  std::vector<std::unique_ptr<Command>> all;
  all.push_back(tool::inspect_command());
  all.push_back(tool::freqs_command());
  all.push_back(tool::layers_command());
  all.push_back(tool::diff_command());
  all.push_back(tool::apply_command());
  all.push_back(tool::mrope_index_command());
  all.push_back(tool::alibi_command());
  all.push_back(tool::buckets_command());
  all.push_back(tool::bias_command());
  all.push_back(tool::sinusoidal_command());
  all.push_back(tool::vectors_command());
  return all;
}

// One line: CLI11 messages may span several.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

int error_exit(const std::string& message, int status) {
  std::cerr << "posemb: error: " << one_line(message) << std::endl;
  return status;
}

// Runs the parsed command; every failure becomes one "posemb: error:" line and its status.
int run(Command& command) {
  try {
    return command.run();
  } catch (const posemb::tool::UsageError& error) {
    return error_exit(error.what(), 2);
  } catch (const std::bad_alloc&) {
    return error_exit("out of memory", 1);
  } catch (const posemb::Error& error) {
    return error_exit(error.message(), 1);
  } catch (const std::exception& error) {
    return error_exit(error.what(), 1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Inspect and apply a model's positional scheme (HuggingFace config.json, or a GGUF "
      "file with llama.cpp's semantics), with .npy files in and out.",
      "posemb"};
  app.require_subcommand(1);
  app.fallthrough(false);
  // --version --verbose adds the kernels' instruction-set level and the streaming-store setting
  // with the cache it was derived from (posemb/machine/cache_topology.hpp).
  const bool verbose_version = std::any_of(
      argv + 1, argv + argc, [](const char* arg) { return std::string(arg) == "--verbose"; });
  app.set_version_flag(
      "--version", std::function<std::string()>([verbose_version] {
        std::string text = std::string("posemb ") + posemb::version_string;
        if (!verbose_version) return text;
        return text + "\nkernels: level " + posemb::to_string(posemb::isa_level()) +
               " (best on this CPU: " + posemb::to_string(posemb::best_isa_level()) + ")\n" +
               posemb::describe_streaming_stores();
      }),
      "Print the posemb version and exit (with --verbose: the kernels' instruction-set level, "
      "the streaming-store threshold and the last-level cache it comes from)");
  app.footer(
      "Size cap: the tables the tool builds (alibi, buckets, bias, sinusoidal, and the "
      "table apply adds for a sinusoidal model) hold at most 2^28 values (1 GiB of float32); "
      "a larger request is refused. MODEL.gguf (a name ending in .gguf, or a file starting "
      "with \"GGUF\") is read with llama.cpp's run-time semantics by inspect, freqs, "
      "layers and diff. Exit status: 0 on success (diff: 0 when the GGUF and the config "
      "agree, 3 when they differ), 2 for a usage error, 1 for anything else: an "
      "unreadable, malformed or refused file (a GGUF or safetensors file, the message "
      "naming the key, tensor or byte offset), a missing tensor; always with one line "
      "\"posemb: error: ...\" on stderr.");
  const std::vector<std::unique_ptr<Command>> all = commands();
  std::vector<CLI::App*> subcommands;
  for (const std::unique_ptr<Command>& command : all) subcommands.push_back(command->add_to(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(error);
    return error_exit(error.what(), 2);
  } catch (const posemb::tool::UsageError& error) {  // a numeric option's text (add_integer)
    return error_exit(error.what(), 2);
  }
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (*subcommands[i]) return run(*all[i]);
  }
  return error_exit("no subcommand", 2);
}
