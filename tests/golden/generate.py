"""Writes every golden file into the folder given with --out (the build's golden/ folder).

Run with the reference environment scripts/setup.sh makes:
    .venv-ref/bin/python tests/golden/generate.py --out build/golden [--only NAME ...]
Each generator module has `generate(out_dir)` and lists the files it writes in `FILES`.
"""

import argparse
import hashlib
import importlib
import os
import sys
import time

sys.dont_write_bytecode = True  # the generators live in the source tree: leave no __pycache__ there
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

GENERATORS = ["gen_models", "gen_tal", "gen_musgd", "gen_augment", "gen_schedule", "gen_groups", "gen_census"]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", nargs="*", default=None, help="generator module names to run")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import common

    common.setup_torch()
    for name in args.only or GENERATORS:
        start = time.perf_counter()
        module = importlib.import_module(name)
        module.generate(args.out)
        print(f"golden: {name} wrote {', '.join(module.FILES)} in {time.perf_counter() - start:.1f} s", flush=True)
    if args.only is None:  # the build's output: every file with its checksum (same machine, same bytes)
        files = sorted(f for m in GENERATORS for f in importlib.import_module(m).FILES)
        lines = [f"{hashlib.sha256(open(os.path.join(args.out, f), 'rb').read()).hexdigest()}  {f}\n" for f in files]
        with open(os.path.join(args.out, "SHA256SUMS.tmp"), "w") as out:
            out.writelines(lines)
        os.replace(os.path.join(args.out, "SHA256SUMS.tmp"), os.path.join(args.out, "SHA256SUMS"))


if __name__ == "__main__":
    main()
