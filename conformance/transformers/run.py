"""The transformers conformance harness: every tiny model (tiny_models.py) run through its own
modeling code next to posemb; writes build/conformance/transformers/report.{json,md} and exits
non-zero on any row that is not a pass.

    PYTHONPATH=build/dev/python python conformance/transformers/run.py [--out DIR] [--posemb-build DIR]
        [--cases llama gemma2 ...] [--skip-coverage] [--v4-python /work/venvs/hf4/bin/python]
        [--saved-by 5.24.0] [--transformers X.Y.Z]

--transformers X.Y.Z builds build/venv-transformers-X.Y.Z (torch 2.13.0 first, then transformers
X.Y.Z and the harness's own pins) and runs the harness there. --saved-by X.Y.Z saves every case's
config.json with transformers X.Y.Z (its venv, built the same way) and checks that posemb reads
the same layers from it as from the config this transformers saved (one `saved_by` row per case).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

from rope_case import MROPE_TYPES, rope_case  # noqa: E402 (found through the path above)


def _args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "conformance", "transformers"))
    parser.add_argument("--posemb-build", help="a build folder whose python/ holds the posemb package")
    parser.add_argument("--cases", nargs="*", help="tiny_models case names (default: all)")
    parser.add_argument("--skip-coverage", action="store_true")
    parser.add_argument("--v4-python", help="a python with transformers 4.57.6 "
                        "(requirements-v4.txt): also compare the v4-format configs (v4.py)")
    parser.add_argument("--transformers", metavar="X.Y.Z", help="run the harness under "
                        "transformers X.Y.Z instead (a venv of its own, built once)")
    parser.add_argument("--saved-by", metavar="X.Y.Z", help="also compare posemb's layers of the "
                        "configs transformers X.Y.Z saves with those of this one's")
    return parser.parse_args()


# The harness's own pins besides transformers (python/requirements-test.txt): what it imports.
HARNESS_PINS = ("numpy==2.4.6", "safetensors==0.8.0", "gguf==0.19.0")


def transformers_python(version: str) -> str:
    """The python of build/venv-transformers-<version>, built on first use: torch 2.13.0 alone
    first (the local CPU wheel), then transformers <version> and HARNESS_PINS as pip resolves
    them (transformers does not depend on torch, so torch stays)."""
    import subprocess

    venv = os.path.join(ROOT, "build", f"venv-transformers-{version}")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "torch==2.13.0"], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", f"transformers=={version}",
                        *HARNESS_PINS], check=True)
    return python


def _rerun_under(version: str) -> None:
    """Runs this harness under transformers <version> with the other arguments; exits with its
    status."""
    import subprocess

    argv, skip = [], False
    for arg in sys.argv[1:]:
        if skip or arg.startswith("--transformers="):
            skip = False
            continue
        if arg == "--transformers":
            skip = True
            continue
        argv.append(arg)
    python = transformers_python(version)
    sys.exit(subprocess.run([python, os.path.abspath(__file__), *argv]).returncode)


def saved_by_rows(version: str, names: list[str], out_dir: str, tool: str) -> list:
    """One row per case: posemb's `layers --json` of the config.json transformers <version>
    saves against that of the config.json this transformers saved (out_dir/models/<case>)."""
    import json
    import subprocess

    import report

    folder = os.path.join(out_dir, f"saved-by-{version}")
    os.makedirs(folder, exist_ok=True)
    subprocess.run([transformers_python(version), os.path.join(HERE, "save_configs.py"), folder,
                    *names], check=True)
    saved = json.load(open(os.path.join(folder, "saved.json")))
    rows = []
    for name in names:
        mine = os.path.join(out_dir, "models", name, "config.json")
        if name in saved["failed"]:
            rows.append(report.Row(name, "saved_by", "error",
                                   detail=f"transformers {version}: {saved['failed'][name]}"))
            continue
        if not os.path.exists(mine):
            continue  # the case did not save a model here: its build row says why
        plans = [subprocess.run([tool, "layers", "--json", path], capture_output=True, text=True)
                 for path in (mine, os.path.join(folder, name, "config.json"))]
        same = all(p.returncode == 0 for p in plans) and plans[0].stdout == plans[1].stdout
        rows.append(report.Row(name, "saved_by", "pass" if same else "fail",
                               detail=f"posemb layers of the config saved by transformers "
                                      f"{version} and by this one: "
                                      f"{'the same' if same else 'differ'}"
                                      + "".join(f"; {p.stderr.strip()[:160]}" for p in plans
                                                if p.returncode != 0)))
    return rows


# (case, check) rows that do not pass because transformers departs from the original model code;
# the evidence is in docs/conformance-transformers.md ("Pinned departures"). The harness exits 0
# only when the non-pass rows are exactly these: a new failure or a fixed departure both fail.
EXPECTED_NOT_PASS = {
    # build_alibi_tensor (modeling_falcon.py) rounds the slopes to bfloat16, as the original
    # modelling_RW.py of tiiuae/falcon-rw-1b; posemb's default slopes are the paper's, unrounded
    # (alibi_slopes(round_to="bfloat16") reproduces Falcon's: the *_bfloat16 rows pass).
    ("falcon-alibi", "alibi_slopes"),
    ("falcon-alibi", "alibi_bias"),
    # PhimoeRotaryEmbedding.forward (v5 modeling_phimoe.py) recomputes inv_freq with
    # rope_init_fn(self.config), no seq_len: the short factors stay past
    # original_max_position_embeddings while its mscale switches to long_mscale. v4's forward
    # (4.57.6) passes seq_len, so its factors switch with the mscale; posemb follows that pairing.
    ("phimoe", "rope"),
    ("phimoe", "rope_hf_float32"),
    ("phimoe", "rope_hf_float32_buffer"),
    ("phimoe", "rope_whole_head"),
    ("phimoe", "rope_whole_head_hf_float32"),
    # Qwen2VLModel.get_rope_index (v5) advances text after a video by max(h, w) / merge, not
    # past the video's largest temporal id as v4 and the original Qwen2-VL code do.
    ("qwen2_vl", "mrope_ids"),
    # The same rule in Qwen2_5_VLModel.get_rope_index (v5): after a video the text resumes at
    # max(h, w) / merge past the video's start, inside its scaled temporal ids; Qwen's own
    # training code (qwen-vl-finetune, rope2d.py get_rope_index_25) and 4.57.6 resume past the
    # largest id. posemb's resume="spatial_extent" gives v5's (the mrope_ids_v5 rows pass).
    ("qwen2_5_vl", "mrope_ids"),
}


def _pinned_rows(rows):
    """One row comparing the non-pass (case, check) set with EXPECTED_NOT_PASS."""
    import report

    seen = {(r.case, r.check) for r in rows if r.status != "pass"}
    new, gone = sorted(seen - EXPECTED_NOT_PASS), sorted(EXPECTED_NOT_PASS - seen)
    return report.Row("pinned", "expected_not_pass", "fail" if new or gone else "pass",
                      detail=f"{len(seen)} non-pass rows; pinned {len(EXPECTED_NOT_PASS)}; "
                             f"not pinned: {new or 'none'}; pinned but passing: {gone or 'none'}")


def _runner(name, model_type, tool):
    """The check a case gets: ALiBi, T5 bias, a learned table, or a rope forward."""
    import bias_checks
    import learned_checks

    if model_type in ("bloom", "mpt") or name == "falcon-alibi":
        return bias_checks.alibi_case
    if model_type in ("t5", "mt5", "umt5"):
        return bias_checks.t5_case
    if model_type == "mistral3":
        return bias_checks.vision_case
    if model_type in ("gpt2", "opt", "bert", "roberta"):
        return lambda case, out: learned_checks.learned_case(case, out, tool)
    if model_type in MROPE_TYPES:
        def both(case, out):
            rows, counts = rope_case(case, out)
            return rows + bias_checks.mrope_case(case, out), counts
        return both
    return rope_case


def _sweeps(out_dir):
    """Runs coverage.SWEEP's sweep cases: ({model_type: rows}, every sweep row)."""
    import coverage
    import report
    import sweep

    sweeps, every = {}, []
    start = time.time()
    for model_type in coverage.SWEEP:
        try:
            case_rows, _ = rope_case(sweep.register(model_type), out_dir)
        except Exception as error:  # reported in the coverage row, never dropped
            case_rows = [report.Row(f"sweep/{model_type}", "build", "error",
                                    detail=f"{type(error).__name__}: {str(error)[:200]}")]
        sweeps[model_type] = case_rows
        every += case_rows
    print(f"sweep: {len(sweeps)} types, {time.time() - start:.0f} s", flush=True)
    return sweeps, every


def _v4_comparison(args, cases):
    """v4.py in-process (this transformers) and under --v4-python: out/v4/report.{md,json}, one
    row per (case, check) saying whether the two versions agree. Informational: disagreements
    are findings (docs/conformance-transformers.md), not failures of posemb."""
    import json
    import subprocess

    import report
    import transformers
    import v4

    start = time.time()
    models = os.path.join(args.out, "models")
    v5_rows = v4.run(models, cases)
    out = os.path.join(args.out, "v4", "rows-4.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    subprocess.run([args.v4_python, os.path.join(HERE, "v4.py"), "--posemb-build",
                    os.path.abspath(args.posemb_build or "."), "--models", models, "--out", out,
                    "--cases", *cases], check=True)
    other = json.load(open(out))
    versions = (transformers.__version__, other["transformers"])
    rows = v4.compare(v5_rows, other["rows"], versions)
    report.write(rows, os.path.join(args.out, "v4"), "the v4-format configs: transformers "
                 f"{versions[0]} against {versions[1]} (pass: the same status against posemb)",
                 {"transformers": f"{versions[0]} / {versions[1]}"})
    counts = report.summary(rows)
    print(f"v4 comparison: {len(cases)} cases, {counts['checks']} checks, {counts['fail']} "
          f"disagree, {time.time() - start:.0f} s", flush=True)


def _tool(build):
    """The posemb command-line tool of a build folder (or on PATH)."""
    import shutil

    path = os.path.join(build, "tools", "posemb") if build else None
    return path if path and os.path.exists(path) else shutil.which("posemb") or "posemb"


def main():
    args = _args()
    if args.transformers:
        _rerun_under(args.transformers)
    if args.posemb_build:
        sys.path.insert(0, os.path.join(os.path.abspath(args.posemb_build), "python"))
    import torch
    import transformers

    import coverage
    import report
    import rope_utils
    import tiny_models

    import posemb

    torch.set_num_threads(1)
    start = time.time()
    rows, layers, positions, families = [], 0, 0, set()
    names = args.cases or list(tiny_models.CASES)
    for name in names:
        model_type = tiny_models.CASES[name].model_type
        runner = _runner(name, model_type, _tool(args.posemb_build))
        try:
            case_rows, counts = runner(name, args.out)
            rows += case_rows
            layers += counts["layers"]
            positions += counts["positions"]
            families.add(model_type)
        except Exception as error:  # the case could not be built or run: an error row
            rows.append(report.Row(name, "build", "error", detail=f"{type(error).__name__}: {error}"))
            traceback.print_exc()
        print(f"{name}: {time.time() - start:.0f} s", flush=True)
    table = coverage.posemb_table(ROOT)
    outside = sorted(families - table)
    rows.append(report.Row("families", "family_table", "pass" if not outside else "fail",
                           detail=f"{len(families)} families run, {len(families & table)} in posemb's "
                                  f"table of {len(table)}; not in it: {outside or 'none'}"))
    if not args.cases:
        rows += rope_utils.rows(args.out)
    if args.saved_by:
        rope_names = [n for n in names if _runner(n, tiny_models.CASES[n].model_type, None)
                      is rope_case]
        rows += saved_by_rows(args.saved_by, rope_names, args.out, _tool(args.posemb_build))
    if args.v4_python:
        _v4_comparison(args, [n for n in names if _runner(n, tiny_models.CASES[n].model_type,
                                                          None) is rope_case])
    cover_ok = True
    if not args.skip_coverage:
        sweeps, sweep_rows = _sweeps(args.out)
        cover, cover_counts = coverage.rows(ROOT, tiny_models.CASES, sweeps)
        report.write(cover + sweep_rows, os.path.join(args.out, "coverage"), "transformers model "
                     "types with positional fields: posemb cases, sweep cases, reasons and gaps",
                     {"transformers": transformers.__version__, "posemb": posemb.__version__})
        cover_ok = all(r.status == "pass" for r in cover)
        print(f"coverage: {cover_counts}{'' if cover_ok else ' (coverage rows that do not pass)'}",
              flush=True)
    pinned = _pinned_rows(rows) if not args.cases else None
    if pinned is not None:
        rows.append(pinned)
    versions = {"transformers": transformers.__version__, "torch": torch.__version__.split("+")[0],
                "posemb": posemb.__version__}
    report.write(rows, args.out, "posemb against transformers' own modeling code", versions)
    counts = report.summary(rows)
    print(f"families {len(families)}, layers {layers}, positions {positions}, checks "
          f"{counts['checks']}, failures {counts['fail']}, errors {counts['error']}, "
          f"{time.time() - start:.0f} s")
    print(pinned.detail if pinned else "pinned departures not checked (--cases given)")
    status = 0 if pinned is not None and pinned.status == "pass" else report.exit_status(rows)
    sys.exit(status or (0 if cover_ok else 1))


if __name__ == "__main__":
    main()
