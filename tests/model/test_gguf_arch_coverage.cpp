// Coverage of the pinned llama.cpp's architectures: every name of LLM_ARCH_NAMES (the snapshot
// tests/data/gguf/llama_cpp_archs.txt, written by conformance/llamacpp/arch_names.py from the
// sdist; conformance/llamacpp/test_arch_names.py checks it against the sdist) is a row of
// model/gguf_archs.hpp or has a reason in model/gguf_arch_coverage.hpp, and nothing else is.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "posemb/model/gguf.hpp"

namespace {

std::vector<std::string> llama_cpp_archs() {
  std::ifstream in(std::string(POSEMB_TEST_DATA_DIR) + "/gguf/llama_cpp_archs.txt");
  REQUIRE(in);
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') names.push_back(line);
  }
  return names;
}

}  // namespace

TEST_CASE("every llama.cpp architecture is a row or has a reason, and only those") {
  const std::vector<std::string> names = llama_cpp_archs();
  REQUIRE(names.size() > 100);  // LLM_ARCH_NAMES of llama-cpp-python 0.3.36: 153 names
  const std::set<std::string> pinned(names.begin(), names.end());
  CHECK(pinned.size() == names.size());
  for (const std::string& name : names) {
    CAPTURE(name);
    const bool row = posemb::find_gguf_arch(name) != nullptr;
    const bool gap = posemb::find_gguf_arch_gap(name) != nullptr;
    CHECK(row != gap);  // exactly one of them
  }
  for (const posemb::GgufArch& row : posemb::gguf_archs) {
    const std::string name(row.name), source(row.source);
    CAPTURE(name);
    CHECK(pinned.count(name) == 1);
    CHECK(source.substr(0, 11) == "src/models/");
  }
  for (const posemb::GgufArchGap& gap : posemb::gguf_arch_gaps) {
    const std::string name(gap.name);
    CAPTURE(name);
    CHECK(pinned.count(name) == 1);
  }
}

TEST_CASE("the eleven architectures llama.cpp ran and posemb refused have rows") {
  for (const char* name : {"bloom", "chatglm", "ernie4_5", "falcon", "gemma4", "granite", "olmo2",
                           "phi2", "qwen3next", "smollm3", "stablelm"}) {
    CAPTURE(name);
    CHECK(posemb::find_gguf_arch(name) != nullptr);
  }
}

TEST_CASE("gguf_known_archs lists the table's rows in order") {
  std::string expected;
  for (const posemb::GgufArch& row : posemb::gguf_archs) {
    expected += (expected.empty() ? "" : ", ") + std::string(row.name);
  }
  CHECK(posemb::gguf_known_archs() == expected);
  CHECK(posemb::gguf_known_archs().rfind("llama, llama4, qwen2, ", 0) == 0);
}
