"""The import-time CPU check (posemb._cpu): an extension built for instruction sets the CPU lacks
is refused with an ImportError naming them, before it is loaded (not SIGILL at the first such
instruction)."""
import os
import subprocess
import sys

import pytest

import posemb
from posemb import _build, _cpu


def test_this_cpu_has_the_baseline():
    assert _build.BASELINE_ISA, "x86-64 builds assume at least SSE2"
    assert _cpu.missing_isa(_build.BASELINE_ISA, _cpu.cpu_flags()) == []


def test_cpuinfo_flags_are_read(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    assert _cpu.cpu_flags(str(cpuinfo)) == {"fpu", "sse2", "avx2"}
    assert _cpu.cpu_flags(str(tmp_path / "absent")) is None


def test_every_missing_instruction_set_is_named():
    baseline = (("SSE2", "sse2"), ("AVX2", "avx2"), ("AVX512_FP16", "avx512_fp16"))
    with pytest.raises(ImportError, match=r"instruction set\(s\) AVX2, AVX512_FP16, which this CPU lacks"):
        _cpu.check_baseline(baseline, flags={"sse2"})
    _cpu.check_baseline(baseline, flags={"sse2", "avx2", "avx512_fp16"})
    assert _cpu.missing_isa(baseline, None) == []  # flags unknown: nothing is checked


# A CPU without the build's baseline, simulated: posemb._cpu is loaded first with cpu_flags
# reporting no instruction set, then `import posemb` must raise ImportError naming the baseline and
# leave the extension unloaded.
REFUSED_IMPORT = """
import importlib.util, os, sys
package = importlib.util.find_spec("posemb")
path = os.path.join(os.path.dirname(package.origin), "_cpu.py")
spec = importlib.util.spec_from_file_location("posemb._cpu", path)
cpu = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cpu)
cpu.cpu_flags = lambda path="/proc/cpuinfo": {"fpu"}
sys.modules["posemb._cpu"] = cpu
try:
    import posemb
except ImportError as e:
    assert "posemb._posemb" not in sys.modules, "the extension was loaded"
    print(e)
    sys.exit(0)
sys.exit("posemb imported on a CPU without its baseline")
"""


def test_import_on_a_cpu_without_the_baseline_raises_import_error():
    result = subprocess.run([sys.executable, "-c", REFUSED_IMPORT], capture_output=True, text=True,
                            env=os.environ.copy())
    assert result.returncode == 0, result.stderr + result.stdout
    for name, _ in _build.BASELINE_ISA:
        assert name in result.stdout
    assert "which this CPU lacks" in result.stdout
    assert posemb.__version__  # the real import (this process) went through
