"""The coverage table of docs/conformance-llamacpp.md from a full run's report and work folder:
one line per case of the harness (every transformers-harness case and this harness's extras)
with the converter's verdict, the GGUF architecture, posemb's reading, llama.cpp's loading and the
ROPE nodes compared.

    python conformance/llamacpp/coverage_table.py [--work build/llamacpp] \\
        [--report build/conformance/llamacpp/report.json] > table.md
"""

from __future__ import annotations

import argparse
import json
import os


def gguf_arch(path: str) -> str:
    """general.architecture of a GGUF (gguf-py), "" when unreadable."""
    import gguf as gguf_py

    try:
        reader = gguf_py.GGUFReader(path)
        return bytes(reader.fields["general.architecture"].parts[-1]).decode()
    except Exception:
        return ""


def cell(rows: list[dict], check: str) -> str:
    """'pass' / the status and a short detail of a case's rows of one check ('' if none)."""
    chosen = [r for r in rows if r["check"] == check]
    if not chosen:
        return ""
    bad = [r for r in chosen if r["status"] != "pass"]
    if not bad:
        return "pass" if len(chosen) == 1 else f"pass ({len(chosen)})"
    detail = bad[0]["detail"].replace("|", "\\|").replace("\n", " ")
    return f"**{bad[0]['status']}** ({len(bad)}/{len(chosen)}): {detail[:160]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="build/llamacpp")
    parser.add_argument("--report", default="build/conformance/llamacpp/report.json")
    args = parser.parse_args()
    report = json.load(open(args.report))
    rows = report["rows"] if isinstance(report, dict) else report
    converted = json.load(open(os.path.join(args.work, "converted.json")))
    print("| case | converter | arch | read (posemb) | load (llama.cpp) | params | rotation | diff |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for case, verdict in converted.items():
        mine = [r for r in rows if r["case"] == case or r["case"].startswith(case + " n_ctx ")]
        if verdict != "ok":
            print(f"| {case} | `{verdict[:90]}` | | | | | | |")
            continue
        arch = gguf_arch(os.path.join(args.work, "gguf", case + ".gguf"))
        cells = [cell(mine, c) for c in ("read", "load", "params", "rotation", "diff")]
        print(f"| {case} | converted | {arch} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
