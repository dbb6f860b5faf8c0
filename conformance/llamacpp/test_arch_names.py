"""The snapshot of the pinned llama.cpp's architecture names (tests/data/gguf/llama_cpp_archs.txt,
which the C++ test test_gguf_arch_coverage checks against posemb's GGUF table) is LLM_ARCH_NAMES of
the sdist's src/llama-arch.cpp, extracted now by arch_names.py.

    pytest conformance/llamacpp/test_arch_names.py   (the sdist unpacked: setup.sh; ci.sh runs it)

The sdist's tree: $POSEMB_LLAMA_CPP, else $POSEMB_CACHE (default /var/cache/posemb)/src/
llama_cpp_python-0.3.36/vendor/llama.cpp. Without it the test fails saying how to get it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from arch_names import arch_names, snapshot  # noqa: E402

SNAPSHOT = HERE.parent.parent / "tests" / "data" / "gguf" / "llama_cpp_archs.txt"


def llama_cpp_tree() -> Path:
    explicit = os.environ.get("POSEMB_LLAMA_CPP")
    if explicit:
        return Path(explicit)
    cache = Path(os.environ.get("POSEMB_CACHE", "/var/cache/posemb"))
    return cache / "src" / "llama_cpp_python-0.3.36" / "vendor" / "llama.cpp"


def test_snapshot_is_the_pinned_llama_cpp_arch_list():
    tree = llama_cpp_tree()
    assert (tree / "src" / "llama-arch.cpp").is_file(), (
        f"{tree}: no llama.cpp tree; run conformance/llamacpp/setup.sh VENV (it unpacks the "
        "llama-cpp-python 0.3.36 sdist) or set POSEMB_LLAMA_CPP")
    assert snapshot(SNAPSHOT) == arch_names(tree), (
        "tests/data/gguf/llama_cpp_archs.txt differs from the sdist; regenerate it with "
        "conformance/llamacpp/arch_names.py (its docstring) and give every new name a row or a "
        "reason (include/posemb/model/gguf_archs.hpp, gguf_arch_coverage.hpp)")


def test_extraction_reads_names_in_order(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "llama-arch.cpp").write_text(
        'static const std::map<llm_arch, const char *> LLM_ARCH_NAMES = {\n'
        '    { LLM_ARCH_CLIP,  "clip"  }, // dummy\n'
        '    { LLM_ARCH_LLAMA, "llama" },\n'
        '    { LLM_ARCH_UNKNOWN, "(unknown)" },\n'
        '};\n')
    assert arch_names(tmp_path) == ["clip", "llama"]
