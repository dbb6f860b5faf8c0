"""Saves the config.json of tiny_models cases with the transformers installed here (the config
class's save_pretrained, no weights), for run.py --saved-by: the same model saved by two versions.

    python conformance/transformers/save_configs.py OUT_DIR [case ...]   # OUT_DIR/<case>/config.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__))]


def main():
    import transformers

    import tiny_models

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args()
    saved, failed = [], {}
    for name in args.cases or list(tiny_models.CASES):
        try:
            tiny_models.config_for(name).save_pretrained(
                os.path.join(args.out_dir, name))
            saved.append(name)
        except Exception as error:  # reported to the caller, which makes it a row
            failed[name] = f"{type(error).__name__}: {str(error)[:200]}"
    with open(os.path.join(args.out_dir, "saved.json"), "w") as file:
        json.dump({"transformers": transformers.__version__, "saved": saved, "failed": failed},
                  file, indent=1)


if __name__ == "__main__":
    main()
