"""Shared fixtures of the posemb Python tests.

ctest runs this suite with PYTHONPATH=<build>/python (the built package), POSEMB_TEST_DATA (the
golden data, tests/data) and POSEMB_TOOL (the built `posemb` tool, the reference the golden cases
are compared with bit for bit). Against an installed wheel (.ci/check-wheel) none is set: the
package is the interpreter's, the data is this checkout's and the tool the one the wheel put in
the interpreter's scripts folder (the venv's bin/).
"""
import json
import os
import subprocess
import sysconfig

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("POSEMB_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
DATA = os.environ.get("POSEMB_TEST_DATA", os.path.join(SOURCE_DIR, "tests", "data"))


def data_path(*parts):
    return os.path.join(DATA, *parts)


def installed_tool():
    """The posemb tool a wheel installed next to this interpreter, or None."""
    path = os.path.join(sysconfig.get_path("scripts"), "posemb")
    return path if os.access(path, os.X_OK) else None


@pytest.fixture(scope="session")
def tool():
    """Runs the posemb tool: tool("freqs", path) -> stdout; raises on a non-zero exit."""
    path = os.environ.get("POSEMB_TOOL") or installed_tool()
    if not path:
        pytest.skip("POSEMB_TOOL is not set (ctest sets it when the tool is built) and no tool is installed")

    def run(*args):
        result = subprocess.run([path, *map(str, args)], capture_output=True, text=True)
        if result.returncode != 0:
            raise AssertionError(f"posemb {' '.join(map(str, args))}: {result.stderr}")
        return result.stdout

    run.path = path
    return run


def tool_json(tool, *args):
    return json.loads(tool(*args))


def bits_equal(a, b):
    """Equal bit for bit: same dtype, shape and bytes (NaN and -0.0 included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# Hypothesis profiles of the property tests (test_properties_*.py): "default" (CI: derandomized,
# a few thousand examples in all, about a minute on one core) and "thorough" (random, ten times
# as many); HYPOTHESIS_PROFILE picks one.
try:
    from hypothesis import HealthCheck, settings

    _checks = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
    settings.register_profile("default", max_examples=100, deadline=None, derandomize=True,
                              database=None, suppress_health_check=_checks)
    settings.register_profile("thorough", max_examples=1000, deadline=None,
                              suppress_health_check=_checks)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
except ImportError:  # the property tests skip themselves without hypothesis
    pass
