"""run.pinned_row, the verdict of a full run: it passes only when the rows that do not pass are
exactly the pinned ones, and names a new non-pass row and a pinned row that passes.

    pytest conformance/llamacpp/test_pinned.py   (posemb importable; no llama.cpp needed)
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..")]

from grid import case_name, yarn_cases  # noqa: E402
from report import Row  # noqa: E402
from run import EXPECTED_NOT_PASS, pinned_row  # noqa: E402


def pinned_rows() -> list[Row]:
    rows = [Row(case, check, "fail") for case, check in sorted(EXPECTED_NOT_PASS)]
    return rows + [Row(case_name(c), "grid", "fail") for c in yarn_cases()]


def test_exactly_the_pinned_rows_pass():
    rows = pinned_rows() + [Row("llama n_ctx 256", "diff", "pass")]
    assert pinned_row(rows).status == "pass"


def test_a_new_failure_fails_and_is_named():
    row = pinned_row(pinned_rows() + [Row("llama n_ctx 256", "diff", "fail")])
    assert row.status == "fail"
    assert "('llama n_ctx 256', 'diff')" in row.detail


def test_an_error_row_counts_as_not_passing():
    row = pinned_row(pinned_rows() + [Row("qwen2 n_ctx 256", "load", "error")])
    assert row.status == "fail"


def test_a_pinned_row_that_passes_fails_and_is_named():
    rows = [r for r in pinned_rows() if r.case != "gptj"] + [Row("gptj", "convert", "pass")]
    row = pinned_row(rows)
    assert row.status == "fail"
    assert "pinned but passing: [('gptj', 'convert')]" in row.detail
