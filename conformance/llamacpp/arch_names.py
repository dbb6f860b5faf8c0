"""The architecture names of the pinned llama.cpp: LLM_ARCH_NAMES in src/llama-arch.cpp, in its
order, without LLM_ARCH_UNKNOWN's "(unknown)". tests/data/gguf/llama_cpp_archs.txt is its output
(the C++ test checks every name there is a row of model/gguf_archs.hpp or has a reason in
model/gguf_arch_coverage.hpp; test_arch_names.py checks the snapshot against the sdist).

    python conformance/llamacpp/arch_names.py \\
        /var/cache/posemb/src/llama_cpp_python-0.3.36/vendor/llama.cpp \\
        > tests/data/gguf/llama_cpp_archs.txt
"""
import re
import sys
from pathlib import Path

HEADER = """\
# LLM_ARCH_NAMES of the pinned llama.cpp (llama-cpp-python 0.3.36's sdist, src/llama-arch.cpp),
# one name a line. Regenerate:
#   python conformance/llamacpp/arch_names.py \\
#       /var/cache/posemb/src/llama_cpp_python-0.3.36/vendor/llama.cpp \\
#       > tests/data/gguf/llama_cpp_archs.txt
"""


def arch_names(llama_cpp: Path) -> list[str]:
    """The names of LLM_ARCH_NAMES, in order; raises if the table is not found."""
    text = (llama_cpp / "src" / "llama-arch.cpp").read_text()
    table = re.search(r"LLM_ARCH_NAMES\s*=\s*\{(.*?)\n\};", text, re.S)
    if table is None:
        raise SystemExit(f"{llama_cpp}/src/llama-arch.cpp: no LLM_ARCH_NAMES table")
    pairs = re.findall(r"\{\s*(LLM_ARCH_\w+)\s*,\s*\"([^\"]*)\"\s*\}", table.group(1))
    return [name for arch, name in pairs if arch != "LLM_ARCH_UNKNOWN"]


def snapshot(path: Path) -> list[str]:
    """The names of a snapshot file (comment lines dropped)."""
    lines = path.read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: arch_names.py LLAMA_CPP_DIR")
    sys.stdout.write(HEADER + "".join(name + "\n" for name in arch_names(Path(sys.argv[1]))))
