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
  NoRowYet,   // RoPE; llama.cpp runs it, posemb has no row for it yet
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
    case GgufArchReason::NoRowYet:
      return "RoPE";
  }
  return "unknown";
}

struct GgufArchGap {
  std::string_view name;
  GgufArchReason reason = GgufArchReason::NoRowYet;
  std::string_view rope;  // llama_model_rope_type
  bool hybrid = false;    // llm_arch_is_hybrid
};

inline constexpr GgufArchGap gguf_arch_gaps[] = {
    {"clip", GgufArchReason::NotAModel, "none"},
    {"deci", GgufArchReason::NoRowYet, "norm"},
    {"grok", GgufArchReason::NoRowYet, "neox"},
    {"gpt2", GgufArchReason::NoRope, "none"},
    {"gptj", GgufArchReason::NoRope, "none"},
    {"mpt", GgufArchReason::NoRope, "none"},
    {"baichuan", GgufArchReason::NoRowYet, "norm"},
    {"starcoder", GgufArchReason::NoRowYet, "norm"},
    {"refact", GgufArchReason::NoRope, "none"},
    {"bert", GgufArchReason::Encoder, "neox"},
    {"modern-bert", GgufArchReason::Encoder, "neox"},
    {"nomic-bert", GgufArchReason::Encoder, "neox"},
    {"nomic-bert-moe", GgufArchReason::Encoder, "neox"},
    {"neo-bert", GgufArchReason::Encoder, "norm"},
    {"jina-bert-v2", GgufArchReason::Encoder, "none"},
    {"jina-bert-v3", GgufArchReason::Encoder, "neox"},
    {"eurobert", GgufArchReason::Encoder, "neox"},
    {"qwen", GgufArchReason::NoRowYet, "neox"},
    {"qwen3vl", GgufArchReason::NoRowYet, "imrope"},
    {"qwen3vlmoe", GgufArchReason::NoRowYet, "imrope"},
    {"qwen35", GgufArchReason::NoRowYet, "imrope", true},
    {"qwen35moe", GgufArchReason::NoRowYet, "imrope", true},
    {"qwen4exp", GgufArchReason::NoRowYet, "imrope", true},
    {"phimoe", GgufArchReason::NoRowYet, "neox"},
    {"plamo", GgufArchReason::NoRowYet, "neox"},
    {"plamo2", GgufArchReason::NoRowYet, "neox", true},
    {"plamo3", GgufArchReason::NoRowYet, "neox"},
    {"codeshell", GgufArchReason::NoRowYet, "neox"},
    {"orion", GgufArchReason::NoRowYet, "neox"},
    {"internlm2", GgufArchReason::NoRowYet, "norm"},
    {"minicpm", GgufArchReason::NoRowYet, "norm"},
    {"minicpm3", GgufArchReason::NoRowYet, "neox"},
    {"gemma", GgufArchReason::NoRowYet, "neox"},
    {"gemma3n", GgufArchReason::NoRowYet, "neox"},
    {"gemma4-assistant", GgufArchReason::NoRowYet, "neox"},
    {"gemma-embedding", GgufArchReason::Encoder, "neox"},
    {"mamba", GgufArchReason::Recurrent, "none"},
    {"mamba2", GgufArchReason::Recurrent, "none"},
    {"maple", GgufArchReason::NoRowYet, "neox"},
    {"jamba", GgufArchReason::NoRope, "none", true},
    {"falcon-h1", GgufArchReason::NoRowYet, "neox", true},
    {"xverse", GgufArchReason::NoRowYet, "norm"},
    {"cohere2", GgufArchReason::NoRowYet, "norm"},
    {"cohere2moe", GgufArchReason::NoRowYet, "norm"},
    {"dbrx", GgufArchReason::NoRowYet, "neox"},
    {"olmo", GgufArchReason::NoRowYet, "norm"},
    {"olmoe", GgufArchReason::NoRowYet, "neox"},
    {"muse-glimmer", GgufArchReason::NoRowYet, "norm"},
    {"openelm", GgufArchReason::NoRowYet, "neox"},
    {"arctic", GgufArchReason::NoRowYet, "norm"},
    {"deepseek", GgufArchReason::NoRowYet, "norm"},
    {"deepseek2-ocr", GgufArchReason::NoRowYet, "norm"},
    {"deepseek32", GgufArchReason::NoRowYet, "norm"},
    {"deepseek4", GgufArchReason::NoRowYet, "norm", true},
    {"glm-dsa", GgufArchReason::NoRowYet, "norm"},
    {"bitnet", GgufArchReason::NoRowYet, "neox"},
    {"t5", GgufArchReason::NoRope, "none"},
    {"t5encoder", GgufArchReason::Encoder, "none"},
    {"jais", GgufArchReason::NoRope, "none"},
    {"jais2", GgufArchReason::NoRowYet, "neox"},
    {"nemotron", GgufArchReason::NoRowYet, "neox"},
    {"nemotron_h", GgufArchReason::NoRope, "none", true},
    {"nemotron_h_moe", GgufArchReason::NoRope, "none", true},
    {"exaone", GgufArchReason::NoRowYet, "neox"},
    {"exaone4", GgufArchReason::NoRowYet, "neox"},
    {"exaone-moe", GgufArchReason::NoRowYet, "neox"},
    {"rwkv6", GgufArchReason::Recurrent, "none"},
    {"rwkv6qwen2", GgufArchReason::Recurrent, "none"},
    {"rwkv7", GgufArchReason::Recurrent, "none"},
    {"arwkv7", GgufArchReason::Recurrent, "none"},
    {"granitemoe", GgufArchReason::NoRowYet, "norm"},
    {"granitehybrid", GgufArchReason::NoRowYet, "norm", true},
    {"graniteswitch", GgufArchReason::NoRowYet, "norm"},
    {"chameleon", GgufArchReason::NoRowYet, "norm"},
    {"wavtokenizer-dec", GgufArchReason::NoRope, "none"},
    {"plm", GgufArchReason::NoRowYet, "norm"},
    {"bailingmoe", GgufArchReason::NoRowYet, "norm"},
    {"bailingmoe2", GgufArchReason::NoRowYet, "neox"},
    {"bailingmoe3", GgufArchReason::NoRowYet, "norm/neox or mrope by its sections", true},
    {"dots1", GgufArchReason::NoRowYet, "neox"},
    {"dots3note", GgufArchReason::NoRowYet, "norm"},
    {"arcee", GgufArchReason::NoRowYet, "norm"},
    {"afmoe", GgufArchReason::NoRowYet, "neox"},
    {"laguna", GgufArchReason::NoRowYet, "neox"},
    {"hunyuan-moe", GgufArchReason::NoRowYet, "neox"},
    {"hunyuan_vl", GgufArchReason::NoRowYet, "norm/neox or mrope by its sections"},
    {"hy_v3", GgufArchReason::NoRowYet, "neox"},
    {"hy_v4", GgufArchReason::NoRowYet, "norm"},
    {"lfm2", GgufArchReason::NoRowYet, "neox", true},
    {"lfm2moe", GgufArchReason::NoRowYet, "neox", true},
    {"dream", GgufArchReason::NoRowYet, "neox"},
    {"smallthinker", GgufArchReason::NoRowYet, "neox"},
    {"llada", GgufArchReason::NoRowYet, "norm"},
    {"llada-moe", GgufArchReason::NoRowYet, "neox"},
    {"seed_oss", GgufArchReason::NoRowYet, "neox"},
    {"grovemoe", GgufArchReason::NoRowYet, "neox"},
    {"apertus", GgufArchReason::NoRowYet, "neox"},
    {"minimax-01", GgufArchReason::NoRowYet, "neox", true},
    {"hrm_text", GgufArchReason::NoRowYet, "neox"},
    {"minimax-m2", GgufArchReason::NoRowYet, "neox"},
    {"minimax-m3", GgufArchReason::NoRowYet, "neox"},
    {"cogvlm", GgufArchReason::NoRowYet, "neox"},
    {"rnd1", GgufArchReason::NoRowYet, "neox"},
    {"pangu-embedded", GgufArchReason::NoRowYet, "neox"},
    {"mistral3", GgufArchReason::NoRowYet, "norm"},
    {"eagle3", GgufArchReason::NoRowYet, "norm"},
    {"dflash", GgufArchReason::NoRowYet, "mrope"},
    {"mistral4", GgufArchReason::NoRowYet, "norm"},
    {"paddleocr", GgufArchReason::NoRowYet, "mrope"},
    {"mimo2", GgufArchReason::NoRowYet, "neox"},
    {"step35", GgufArchReason::NoRowYet, "neox"},
    {"spark2_5", GgufArchReason::NoRowYet, "neox"},
    {"llama-embed", GgufArchReason::NoRowYet, "norm"},
    {"maincoder", GgufArchReason::NoRowYet, "norm"},
    {"kimi-linear", GgufArchReason::NoRope, "none", true},
    {"kimi-k3", GgufArchReason::NoRope, "none", true},
    {"glm5-next", GgufArchReason::NoRope, "none", true},
    {"talkie", GgufArchReason::NoRowYet, "neox"},
    {"mellum", GgufArchReason::NoRowYet, "neox"},
    {"nanbeige", GgufArchReason::NoRowYet, "norm"},
    {"qwen3tts", GgufArchReason::NoRowYet, "imrope"},
    {"pockettts", GgufArchReason::NoRowYet, "norm"},
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
         "); posemb has no row for it: posemb's gap, not a broken file";
}

}  // namespace posemb
