"""Shared fixtures of the posemb Python tests.

ctest runs this suite with PYTHONPATH=<build>/python (the built package), POSEMB_TEST_DATA (the
golden data, tests/data) and POSEMB_TOOL (the built `posemb` tool, the reference the golden cases
are compared with bit for bit).
"""
import json
import os
import subprocess

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("POSEMB_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
DATA = os.environ.get("POSEMB_TEST_DATA", os.path.join(SOURCE_DIR, "tests", "data"))


def data_path(*parts):
    return os.path.join(DATA, *parts)


@pytest.fixture(scope="session")
def tool():
    """Runs the posemb tool: tool("freqs", path) -> stdout; raises on a non-zero exit."""
    path = os.environ.get("POSEMB_TOOL")
    if not path:
        pytest.skip("POSEMB_TOOL is not set (ctest sets it when the tool is built)")

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
