// One subcommand of the posemb tool. main (posemb.cpp) adds every command to the CLI11 app in
// the order of its list, parses the command line once, and runs the command that was given.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <vector>

namespace posemb::tool {

class Command {
 public:
  virtual ~Command() = default;
  // Adds the subcommand, its help text and its options (stored in this object) to app.
  virtual CLI::App* add_to(CLI::App& app) = 0;
  // Runs the subcommand after a successful parse; returns the exit status. Throws UsageError
  // (exit status 2) or posemb::Error (1); main prints the one "posemb: error:" line.
  virtual int run() = 0;
};

// One factory per subcommand, defined in its group's file.
std::unique_ptr<Command> inspect_command();      // cmd_inspect.cpp
std::unique_ptr<Command> freqs_command();        // cmd_freqs_layers.cpp
std::unique_ptr<Command> layers_command();       // cmd_freqs_layers.cpp
std::unique_ptr<Command> apply_command();        // cmd_apply.cpp
std::unique_ptr<Command> mrope_index_command();  // cmd_mrope_index.cpp
std::unique_ptr<Command> alibi_command();        // cmd_bias.cpp
std::unique_ptr<Command> buckets_command();      // cmd_bias.cpp
std::unique_ptr<Command> bias_command();         // cmd_bias.cpp
std::unique_ptr<Command> sinusoidal_command();   // cmd_sinusoidal.cpp
std::unique_ptr<Command> diff_command();         // cmd_diff.cpp
std::unique_ptr<Command> vectors_command();      // cmd_vectors.cpp

}  // namespace posemb::tool
