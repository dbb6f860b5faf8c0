// freqs, layers and inspect of a GGUF model file (cmd_gguf.cpp): the same per-layer objects as
// for a config.json, with llama.cpp's run-time semantics (tests/data/gguf/README.md). The
// config commands (cmd_freqs_layers.cpp, cmd_inspect.cpp) hand a GGUF path to these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace posemb::tool {

// A path is read as GGUF when its name ends in ".gguf" (any case) or its first four bytes are
// "GGUF"; any other path (an unreadable one too) is a config.json.
bool is_gguf_path(const std::string& path);

// freqs MODEL.gguf [--layer I] [--seq-len N]: one layer's JSON object; without --layer the
// layers must be alike (UsageError). seq_len: llama.cpp's context size per sequence.
int gguf_freqs(const std::string& path, std::optional<std::int64_t> layer,
               std::optional<std::int64_t> seq_len);
// layers MODEL.gguf [--seq-len N] [--json]: a table, or a JSON array of freqs' objects.
int gguf_layers(const std::string& path, std::optional<std::int64_t> seq_len, bool as_json);
// inspect MODEL.gguf [--seq-len N]: the hyperparameters llama.cpp reads and each distinct
// rotation's pair table.
int gguf_inspect(const std::string& path, std::optional<std::int64_t> seq_len);

}  // namespace posemb::tool
