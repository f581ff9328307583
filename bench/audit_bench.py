#!/usr/bin/env python3
"""What low precision and the audit cost, as ratios to onnxruntime on the same machine and inputs.

For each bench model (the ResNet-50-style CNN, the BERT-base-style encoder and the LSTM from bench/make_models.py):
  - onnxruntime FP32 inference (CPU EP, default optimisations): median of --runs session.run calls;
  - `mpaudit run` in FP32 and with `--precision fp16` (emulated FP16): median of --runs runs;
  - `mpaudit audit --target fp16` on one sample (reference + propagated + isolated + every probe), once per
    `--isolated` mode (--isolated, default: all and suspects): median of --audits runs of the audit's own wall
    time (model load excluded, as for the others), and the share of it spent in probes (`audit-timing:` line
    of `--timing`);
  - audit/ORT: each of the --audits rounds times onnxruntime (median of --runs) and then one audit per mode,
    back to back; the ratio is the median of the rounds' ratios; the geometric mean over the models follows
    each mode's rows.
  - peak memory: the peak RSS of the audit process (largest over the rounds) against that of the FP32 `run`
    process on the same inputs (the issue's bound: an audit holds at most 2x what one run holds).
Prints two markdown tables: ORT ms | run fp32 ms | run fp16 ms | fp16/fp32 | isolated | audit ms | audit/ORT |
probes % | consequences % | run RSS MB | audit RSS MB | RSS audit/run, and where each audit's time went (`--timing`'s phases, medians over the rounds, ms):
reference run, propagated run, isolated runs, round/convert, probes, consequence tracing, the rest (all within
the audit's time), and writing the JSON report (after it).

Usage: .venv/bin/python bench/audit_bench.py --mpaudit build/mpaudit [--threads 2] [--runs 7] [--audits 5]
           [--isolated all suspects] [--only NAME]
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

TIMING_RE = re.compile(r"audit-timing: (?P<fields>.*)")
# The phases of total_ms (`other`: what the others leave, e.g. building the report), then the writing of the
# JSON report, which `audit` times after total_ms.
PHASES = ["reference", "propagated", "isolated", "convert", "probes", "consequences", "other", "report"]


def checked(cmd: list[str], work: Path) -> run_bench.Proc:
    p = run_bench.run_measured(cmd, work, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def mpaudit_run(args, model, inputs, extra: list[str], work: Path) -> tuple[float, float | None]:
    """The median of --runs runs in ms, and the process's peak RSS in MB."""
    cmd = [str(args.mpaudit), "run", str(model.path), "--threads", str(args.threads), "--repeat", str(args.runs)]
    for name, path in inputs.items():
        cmd += ["--input", f"{name}={path}"]
    p = checked(cmd + extra, work)
    return float(run_bench.TIMING_RE.search(p.stdout)["median"]), p.max_rss_mb


def audit_once(args, model, inputs, isolated: str, work: Path) -> dict[str, float]:
    """The audit's `--timing` figures in ms: total, the phases of PHASES, and advice (outside total); and
    the process's peak RSS in MB (`rss`)."""
    cmd = [str(args.mpaudit), "audit", str(model.path), "--threads", str(args.threads), "--target", "fp16",
           "--timing", "--quiet", "--fail-on", "unsafe_nodes>1000000", "--isolated", isolated,
           "--json", str(work / "report.json")]
    for name, path in inputs.items():
        cmd += ["--input", f"{name}={path}"]
    p = checked(cmd, work)
    t = {k.removesuffix("_ms"): float(v) for k, v in
         (f.split("=") for f in TIMING_RE.search(p.stdout)["fields"].split())}
    t["rss"] = p.max_rss_mb if p.max_rss_mb is not None else float("nan")
    # execute_ms holds the reference and isolated node runs; the propagated run is the rest of it.
    t["propagated"] = t["execute"] - t["reference"] - t["isolated"]
    t["other"] = t["total"] - sum(t[p] for p in PHASES if p not in ("other", "report"))
    return t


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpaudit", type=Path, required=True)
    parser.add_argument("--models", type=Path, default=run_bench.REPO_ROOT / "build" / "bench-models")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--audits", type=int, default=5)
    parser.add_argument("--only", action="append")
    parser.add_argument("--isolated", nargs="+", default=["all", "suspects"], choices=["all", "suspects", "off"])
    run_bench.add_blas_option(parser)
    args = parser.parse_args()
    run_bench.apply_blas_option(args)
    rows = ["| model | ORT fp32 ms | run fp32 ms | run fp16 ms | fp16/fp32 | isolated | audit ms | audit/ORT | "
            "probes % | consequences % | run RSS MB | audit RSS MB | RSS audit/run |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    phase_rows = ["| model | isolated | total ms | " + " | ".join(PHASES) + " |",
                  "|---|---|---:|" + "---:|" * len(PHASES)]
    ratios: dict[str, list[float]] = {mode: [] for mode in args.isolated}
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
            # one audit per mode back to back, and the ratio is the median of the rounds' ratios.
            orts, audits = [], {mode: [] for mode in args.isolated}
            for _ in range(args.audits):
                ort_side, _ = run_bench.ort_round(model, inputs, args_for_ort(args), work, work / "ort")
                if ort_side.error:
                    raise SystemExit(f"{model.name}: {ort_side.error}")
                orts.append(ort_side.medians[0])
                for mode in args.isolated:
                    audits[mode].append(audit_once(args, model, inputs, mode, work))
            ort = statistics.median(orts)
            fp32, run_rss = mpaudit_run(args, model, inputs, [], work)
            fp16, _ = mpaudit_run(args, model, inputs, ["--precision", "fp16"], work)
        for mode, runs in audits.items():
            audit_ms = statistics.median(a["total"] for a in runs)
            ratio = statistics.median(a["total"] / o for a, o in zip(runs, orts))
            ratios[mode].append(ratio)
            probes = statistics.median(a["probes"] / a["total"] for a in runs)
            # The consequence tracing's share of the audit, with the verification of a failing audit's advice
            # (which audits again) counted on top of the audit itself.
            consequences = statistics.median((a["consequences"] + a["advice"]) / (a["total"] - a["consequences"])
                                             for a in runs)
            # Peak memory: the largest over the rounds, against one FP32 `run` of the same inputs.
            audit_rss = max(a["rss"] for a in runs)
            rss_ratio = audit_rss / run_rss if run_rss else float("nan")
            rows.append(f"| {model.name} | {ort:.1f} | {fp32:.1f} | {fp16:.1f} | {fp16 / fp32:.2f} | {mode} | "
                        f"{audit_ms:.1f} | {ratio:.2f} | {100 * probes:.1f} | {100 * consequences:.1f} | "
                        f"{run_rss or float('nan'):.0f} | {audit_rss:.0f} | {rss_ratio:.2f} |")
            print(rows[-1], flush=True)
            phase_rows.append(f"| {model.name} | {mode} | {audit_ms:.1f} | " +
                              " | ".join(f"{statistics.median(a[p] for a in runs):.1f}" for p in PHASES) + " |")
    geo = [f"geometric mean of audit/ORT, --isolated {mode}: {run_bench.geomean(r):.2f}"
           for mode, r in ratios.items() if r]
    print("\n".join(rows + [""] + geo + [""] + phase_rows))
    return 0


def args_for_ort(args):
    return argparse.Namespace(threads=args.threads, runs=args.runs, timeout=600)


if __name__ == "__main__":
    sys.exit(main())
