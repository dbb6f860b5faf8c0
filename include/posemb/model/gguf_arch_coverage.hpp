// Every architecture of the pinned llama.cpp (LLM_ARCH_NAMES, src/llama-arch.cpp of
// llama-cpp-python 0.3.36's sdist) that has no row in gguf_archs.hpp, with the reason. The test
// (tests/model/test_gguf_arch_coverage.cpp) checks that every name of the snapshot
// tests/data/gguf/llama_cpp_archs.txt (conformance/llamacpp/arch_names.py regenerates it) is a row
// or here, and nothing else; conformance/llamacpp/test_arch_names.py checks the snapshot against
// the sdist.
//
// The columns: the reason, llama_model_rope_type's answer (src/llama-model.cpp; "none":
// LLAMA_ROPE_TYPE_NONE), and whether llm_arch_is_hybrid (src/llama-arch.cpp) says its layers mix
// attention with recurrent blocks.
#pragma once

#include <string>
#include <string_view>

namespace posemb {

enum class GgufArchReason {
  NotAModel,  // llama.cpp's placeholder (clip: "dummy, only used by llama-quantize")
  Recurrent,  // llm_arch_is_recurrent: state-space / RWKV layers, no positions
  Encoder,    // a bidirectional embedding model (BERT family, T5 encoder): no decoder to plan
  NoRope,     // LLAMA_ROPE_TYPE_NONE: learned absolute, ALiBi, T5 buckets or no positions;
              // llama.cpp runs it, posemb has no row for it yet
};

inline const char* to_string(GgufArchReason reason) {
  switch (reason) {
    case GgufArchReason::NotAModel:
      return "llama.cpp's placeholder architecture, not a model it runs";
    case GgufArchReason::Recurrent:
      return "a recurrent model without positions";
    case GgufArchReason::Encoder:
      return "an encoder (embedding) model";
    case GgufArchReason::NoRope:
      return "positions without RoPE";
  }
  return "unknown";
}

struct GgufArchGap {
  std::string_view name;
  GgufArchReason reason;
  std::string_view rope;  // llama_model_rope_type
  bool hybrid = false;    // llm_arch_is_hybrid
  std::string_view note;  // the evidence (src/models/<arch>.cpp)
};

inline constexpr GgufArchGap gguf_arch_gaps[] = {
    {"clip", GgufArchReason::NotAModel, "none", false, ""},
    {"gpt2", GgufArchReason::NoRope, "none", false, ""},
    {"gptj", GgufArchReason::NoRope, "none", false, ""},
    {"mpt", GgufArchReason::NoRope, "none", false, ""},
    {"starcoder", GgufArchReason::NoRope, "norm", false,
     "learned absolute positions: pos_embd added to the token embedding, no ggml_rope"},
    {"refact", GgufArchReason::NoRope, "none", false, ""},
    {"bert", GgufArchReason::Encoder, "neox", false, ""},
    {"modern-bert", GgufArchReason::Encoder, "neox", false, ""},
    {"nomic-bert", GgufArchReason::Encoder, "neox", false, ""},
    {"nomic-bert-moe", GgufArchReason::Encoder, "neox", false, ""},
    {"neo-bert", GgufArchReason::Encoder, "norm", false, ""},
    {"jina-bert-v2", GgufArchReason::Encoder, "none", false, ""},
    {"jina-bert-v3", GgufArchReason::Encoder, "neox", false, ""},
    {"eurobert", GgufArchReason::Encoder, "neox", false, ""},
    {"gemma-embedding", GgufArchReason::Encoder, "neox", false, ""},
    {"mamba", GgufArchReason::Recurrent, "none", false, ""},
    {"mamba2", GgufArchReason::Recurrent, "none", false, ""},
    {"jamba", GgufArchReason::NoRope, "none", true, ""},
    {"t5", GgufArchReason::NoRope, "none", false, ""},
    {"t5encoder", GgufArchReason::Encoder, "none", false, ""},
    {"jais", GgufArchReason::NoRope, "none", false, ""},
    {"nemotron_h", GgufArchReason::NoRope, "none", true, ""},
    {"nemotron_h_moe", GgufArchReason::NoRope, "none", true, ""},
    {"rwkv6", GgufArchReason::Recurrent, "none", false, ""},
    {"rwkv6qwen2", GgufArchReason::Recurrent, "none", false, ""},
    {"rwkv7", GgufArchReason::Recurrent, "none", false, ""},
    {"arwkv7", GgufArchReason::Recurrent, "none", false, ""},
    {"wavtokenizer-dec", GgufArchReason::NoRope, "none", false, ""},
    {"llama-embed", GgufArchReason::Encoder, "norm", false,
     "llama's graph built with embed = true: bidirectional, an embedding model"},
    {"kimi-linear", GgufArchReason::NoRope, "none", true, ""},
    {"kimi-k3", GgufArchReason::NoRope, "none", true, ""},
    {"glm5-next", GgufArchReason::NoRope, "none", true, ""},
};

// The reason an architecture has no row, nullptr when it has none (a row, or not llama.cpp's).
inline const GgufArchGap* find_gguf_arch_gap(std::string_view name) {
  for (const GgufArchGap& gap : gguf_arch_gaps) {
    if (gap.name == name) return &gap;
  }
  return nullptr;
}

// What to tell a user whose GGUF names an architecture posemb has no row for: whether the pinned
// llama.cpp runs it (posemb's gap) or does not know it (a broken or foreign file).
inline std::string gguf_arch_verdict(std::string_view name) {
  const std::string quoted = "\"" + std::string(name) + "\"";
  const GgufArchGap* gap = find_gguf_arch_gap(name);
  if (gap == nullptr) {
    return quoted +
           " is not an architecture of the pinned llama.cpp (llama-cpp-python 0.3.36), "
           "which refuses it too: a broken or foreign file";
  }
  if (gap->reason == GgufArchReason::NotAModel) return quoted + " is " + to_string(gap->reason);
  return "llama.cpp (llama-cpp-python 0.3.36) runs " + quoted + " (" + to_string(gap->reason) +
         ", rope type " + std::string(gap->rope) + (gap->hybrid ? ", hybrid layers" : "") +
         (gap->note.empty() ? "" : "; " + std::string(gap->note)) +
         "); posemb has no row for it: posemb's gap, not a broken file";
}

}  // namespace posemb
