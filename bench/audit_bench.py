#!/usr/bin/env python3
"""What low precision and the audit cost, as ratios to onnxruntime on the same machine and inputs.

For each bench model (the ResNet-50-style CNN and the BERT-base-style encoder from bench/make_models.py):
  - onnxruntime FP32 inference (CPU EP, default optimisations): median of --runs session.run calls;
  - `mpaudit run` in FP32 and with `--precision fp16` (emulated FP16): median of --runs runs;
  - `mpaudit audit --target fp16` on one sample (reference + propagated + isolated + every probe):
    median of --audits runs of the audit's own wall time (model load excluded, as for the others),
    and the share of it spent in probes (`audit-timing:` line of `--timing`);
  - audit/ORT: each of the --audits rounds times onnxruntime (median of --runs) and then one audit, back
    to back; the ratio is the median of the rounds' ratios.
Prints a markdown table: ORT ms | run fp32 ms | run fp16 ms | fp16/fp32 | audit ms | audit/ORT | probes %.

Usage: .venv/bin/python bench/audit_bench.py --mpaudit build/mpaudit [--threads 2] [--runs 7] [--audits 3]
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_bench  # noqa: E402  (shares model generation, inputs and the onnxruntime worker)

AUDIT_RE = re.compile(r"audit-timing: total_ms=(?P<total>[0-9.]+) execute_ms=(?P<execute>[0-9.]+) "
                      r"convert_ms=(?P<convert>[0-9.]+) probes_ms=(?P<probes>[0-9.]+) reference_ms=[0-9.]+ "
                      r"consequences_ms=(?P<consequences>[0-9.]+) advice_ms=(?P<advice>[0-9.]+)")


def mpaudit_run_median(args, model, inputs, extra: list[str]) -> float:
    cmd = [str(args.mpaudit), "run", str(model.path), "--threads", str(args.threads), "--repeat", str(args.runs)]
    for name, path in inputs.items():
        cmd += ["--input", f"{name}={path}"]
    out = subprocess.run(cmd + extra, capture_output=True, text=True, check=True).stdout
    return float(run_bench.TIMING_RE.search(out)["median"])


def audit_once(args, model, inputs) -> tuple[float, float, float]:
    cmd = [str(args.mpaudit), "audit", str(model.path), "--threads", str(args.threads), "--target", "fp16",
           "--timing", "--quiet", "--fail-on", "unsafe_nodes>1000000"]
    for name, path in inputs.items():
        cmd += ["--input", f"{name}={path}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    m = AUDIT_RE.search(out)
    # The consequence tracing's share of the audit, with the verification of a failing audit's advice (which
    # audits again) counted on top of the audit itself.
    return float(m["total"]), float(m["probes"]), float(m["consequences"]) + float(m["advice"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpaudit", type=Path, required=True)
    parser.add_argument("--models", type=Path, default=run_bench.REPO_ROOT / "build" / "bench-models")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--audits", type=int, default=5)
    parser.add_argument("--only", action="append")
    run_bench.add_blas_option(parser)
    args = parser.parse_args()
    run_bench.apply_blas_option(args)
    rows = ["| model | ORT fp32 ms | run fp32 ms | run fp16 ms | fp16/fp32 | audit ms | audit/ORT | probes % | "
            "consequences % |",
            "|---|---|---|---|---|---|---|---|---|"]
    for model in run_bench.bench_models(args.models):
        if args.only and model.name not in args.only:
            continue
        if not model.path.exists():
            subprocess.run([sys.executable, str(Path(__file__).parent / "make_models.py"), "--out", str(args.models)],
                           check=True)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            inputs = run_bench.make_inputs(model, work / "inputs")
            (work / "ort").mkdir()
            # This machine's speed drifts by up to 2x over minutes: each round measures onnxruntime and then
            # one audit back to back, and the ratio is the median of the rounds' ratios.
            orts, audits = [], []
            for _ in range(args.audits):
                ort_side, _ = run_bench.ort_round(model, inputs, args_for_ort(args), work, work / "ort")
                if ort_side.error:
                    raise SystemExit(f"{model.name}: {ort_side.error}")
                orts.append(ort_side.medians[0])
                audits.append(audit_once(args, model, inputs))
            ort = statistics.median(orts)
            fp32 = mpaudit_run_median(args, model, inputs, [])
            fp16 = mpaudit_run_median(args, model, inputs, ["--precision", "fp16"])
            audit_ms = statistics.median(a[0] for a in audits)
            ratio = statistics.median(a[0] / o for a, o in zip(audits, orts))
            probes = statistics.median(a[1] / a[0] for a in audits)
            consequences = statistics.median(a[2] / (a[0] - a[2]) for a in audits)
        rows.append(f"| {model.name} | {ort:.1f} | {fp32:.1f} | {fp16:.1f} | {fp16 / fp32:.2f} | {audit_ms:.1f} | "
                    f"{ratio:.2f} | {100 * probes:.1f} | {100 * consequences:.1f} |")
        print(rows[-1], flush=True)
    print("\n".join(rows))
    return 0


def args_for_ort(args):
    return argparse.Namespace(threads=args.threads, runs=args.runs, timeout=600)


if __name__ == "__main__":
    sys.exit(main())
