"""One report format for every conformance harness (transformers, llama.cpp, the peer libraries).

A report is a list of rows, one per (case, check): the case is what was run (a model family, a
converted GGUF, a peer's scheme), the check what was compared (layers, rope, attention, bias, ...).
Each row has a status (pass, fail, or error: the case could not be run, with the reason), the
largest error seen and the tolerance it was held to. `write` saves it as JSON and markdown; the
harness's exit status is `exit_status(rows)`: non-zero on any row that is not a pass.

    rows = [Row("llama", "rope", "pass", max_error=2.4e-7, tolerance=1e-6)]
    write(rows, "build/conformance/transformers", title="transformers", versions={"transformers": "5.24.0"})
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Iterable

STATUSES = ("pass", "fail", "error")


@dataclasses.dataclass
class Row:
    case: str  # what was run: a model type, a GGUF, a peer's scheme
    check: str  # what was compared: layers, rope, attention, bias, mrope_ids, ...
    status: str  # pass | fail | error (could not run: detail says why)
    max_error: float | None = None  # the largest difference seen (None: an equality check)
    tolerance: float | None = None  # the bound it was held to
    detail: str = ""  # where it failed, the reference's own message, a note

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"Row.status: {self.status!r} is not one of {STATUSES}")


def summary(rows: Iterable[Row]) -> dict:
    """Counts of cases, checks and each status."""
    rows = list(rows)
    counts = {status: sum(1 for r in rows if r.status == status) for status in STATUSES}
    return {"cases": len({r.case for r in rows}), "checks": len(rows), **counts}


def _number(value: float | None) -> str:
    if value is None:
        return ""
    if value == 0 or not math.isfinite(value):
        return str(value)
    return f"{value:.3g}"


def markdown(rows: list[Row], title: str, versions: dict[str, str]) -> str:
    """The table as markdown: a header with versions and counts, then a row per check."""
    counts = summary(rows)
    lines = [f"# {title}", ""]
    lines += [", ".join(f"{name} {version}" for name, version in sorted(versions.items())), ""]
    lines += [
        f"{counts['cases']} cases, {counts['checks']} checks: {counts['pass']} pass, "
        f"{counts['fail']} fail, {counts['error']} error",
        "",
        "| case | check | status | max error | tolerance | detail |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        detail = r.detail.replace("|", "\\|").replace("\n", " ")
        lines.append(
            f"| {r.case} | {r.check} | {r.status} | {_number(r.max_error)} | "
            f"{_number(r.tolerance)} | {detail} |"
        )
    return "\n".join(lines) + "\n"


def write(rows: list[Row], out_dir: str, title: str, versions: dict[str, str]) -> None:
    """Writes out_dir/report.json and out_dir/report.md."""
    os.makedirs(out_dir, exist_ok=True)
    payload = {
        "title": title,
        "versions": versions,
        "summary": summary(rows),
        "rows": [dataclasses.asdict(r) for r in rows],
    }
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump(payload, f, indent=1, allow_nan=True)
        f.write("\n")
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(markdown(rows, title, versions))


def exit_status(rows: Iterable[Row]) -> int:
    """0 when every row passed, 1 otherwise."""
    return 0 if all(r.status == "pass" for r in rows) else 1
