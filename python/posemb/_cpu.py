"""The CPU check run before the extension loads.

The extension is compiled for a baseline of instruction sets (posemb._build.BASELINE_ISA, read
from the compiler's flags at build time: SSE2 alone for a portable wheel, whose faster kernels are
chosen at run time). Loading it on a CPU without one of them would end the process with SIGILL at
the first such instruction; check_baseline raises ImportError naming the instruction set instead.
The CPU's flags come from /proc/cpuinfo (Linux); where it cannot be read, nothing is checked.
"""


def cpu_flags(path="/proc/cpuinfo"):
    """The CPU's feature flags as a set ("sse2", "avx2", ...), or None where unknown."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def missing_isa(baseline, flags):
    """The names of the baseline's instruction sets, (name, flag) pairs, absent from flags."""
    if flags is None:
        return []
    return [name for name, flag in baseline if flag not in flags]


def check_baseline(baseline=None, flags=None):
    """Raises ImportError naming every baseline instruction set this CPU lacks."""
    if baseline is None:
        from ._build import BASELINE_ISA as baseline
    missing = missing_isa(baseline, cpu_flags() if flags is None else flags)
    if missing:
        raise ImportError(
            "posemb: this build of the extension needs the instruction set(s) "
            + ", ".join(missing)
            + ", which this CPU lacks; build it without -march (a portable build: "
            "the faster kernels are chosen at run time)"
        )
