#!/usr/bin/env python3
"""Benchmark `mpaudit fix` against onnxconverter-common's `auto_convert_mixed_precision` (FP16).

For every model (the real models under ../shared/models, and the generated bench models with --bench-models)
both tools get the same one sample (run_bench.py's deterministic inputs), the same tolerance (every output
element within atol + rtol |ref|, rtol 1e-2, atol 1e-3; mpaudit's default gates, which also refuse NaN/Inf)
and keep the float32 inputs and outputs. Each runs in a fresh process; the table gives per tool the nodes kept
in FP32, the wall time (loading included) and the cost in full-run equivalents: mpaudit's own count (its audit,
the reference and what its incremental mixed runs executed, `cost.total_run_equivalents` in its report), and
for the peer its onnxruntime runs of the whole model (the reference and one per attempt). A failure is recorded
with its reason in the row.

Usage:
    .venv/bin/python bench/fix_bench.py --mpaudit build/mpaudit [--only NAME ...] [--timeout S]
        [--bench-models] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_bench  # noqa: E402  (models and inputs shared with the runtime bench)

RTOL, ATOL = 1e-2, 1e-3

# Runs in a fresh interpreter: the peer prints every attempt, and its time is measured from the load.
PEER_WORKER = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np, onnx
from onnxconverter_common import auto_mixed_precision as amp, float16
cfg = json.loads(sys.argv[1])
runs = [0]
blocked = [[]]
count_runs, convert = amp.get_tensor_values_using_ort, float16.convert_float_to_float16
def counted(*a, **k):
    runs[0] += 1
    return count_runs(*a, **k)
def recorded(*a, **k):
    blocked[0] = list(k.get("node_block_list") or [])
    return convert(*a, **k)
amp.get_tensor_values_using_ort, float16.convert_float_to_float16 = counted, recorded
feeds = {name: np.load(path) for name, path in cfg["inputs"].items()}
result = {"runs": 0, "kept": None, "error": None}
try:
    amp.auto_convert_mixed_precision(onnx.load(cfg["model"]), feeds, rtol=cfg["rtol"], atol=cfg["atol"],
                                     keep_io_types=True)
    result["kept"] = len(blocked[0])
except Exception as e:  # the row records why
    result["error"] = (type(e).__name__ + ": " + str(e)).splitlines()[0][:160]
result["runs"] = runs[0]
result["seconds"] = time.perf_counter() - t0
print("PEER_RESULT " + json.dumps(result))
"""


def run_mpaudit(mpaudit: Path, model: run_bench.BenchModel, inputs: dict, work: Path, timeout: float) -> dict:
    report = work / f"{model.name}.fix.json"
    cmd = [str(mpaudit), "fix", str(model.path), "--target", "fp16", "--quiet", "--json", str(report)]
    for name, path in inputs.items():
        cmd += ["--input", f"{name}={path}"]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    seconds = time.perf_counter() - t0
    if p.returncode not in (0, 1) or not report.exists():
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:160]}
    r = json.loads(report.read_text())
    return {"seconds": seconds, "kept": len(r["keep"]) if r["met"] else None, "met": r["met"],
            "cost": r["cost"]["total_run_equivalents"], "runs": r["cost"]["mixed_runs"],
            "error": None if r["met"] and r["minimal"] else r["note"][:160]}


def run_peer(model: run_bench.BenchModel, inputs: dict, timeout: float) -> dict:
    cfg = {"model": str(model.path), "inputs": {k: str(v) for k, v in inputs.items()}, "rtol": RTOL, "atol": ATOL}
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-c", PEER_WORKER, json.dumps(cfg)], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    seconds = time.perf_counter() - t0
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("PEER_RESULT ")), None)
    if line is None:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:160]}
    r = json.loads(line[len("PEER_RESULT "):])
    r["seconds"] = seconds
    return r


def cell(value, fmt="{}") -> str:
    return "–" if value is None else fmt.format(value)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpaudit", type=Path, required=True)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--timeout", type=float, default=900, help="seconds per tool and model (default 900)")
    ap.add_argument("--bench-models", action="store_true", help="also the generated resnet50, bert_base, lstm")
    ap.add_argument("--models", type=Path, default=run_bench.REPO_ROOT / "build" / "bench-models")
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args()

    models = run_bench.shared_models(run_bench.SHARED_MODELS) if run_bench.SHARED_MODELS.exists() else []
    if args.bench_models:
        generated = run_bench.bench_models(args.models)
        missing = [m.name for m in generated if not m.path.exists()]
        if missing:
            subprocess.run([sys.executable, str(run_bench.REPO_ROOT / "bench" / "make_models.py"), "--out",
                            str(args.models)] + [a for n in missing for a in ("--only", n)], check=True,
                           stdout=sys.stderr)
        models += generated
    if args.only:
        models = [m for m in models if m.name in args.only]
    rows = ["| model | nodes | mpaudit kept | mpaudit s | mpaudit cost | onnxconverter kept | onnxconverter s | "
            "onnxconverter cost | notes |", "|---|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="fix-bench-") as tmp:
        work = Path(tmp)
        for model in models:
            inputs = run_bench.make_inputs(model, work / model.name)
            ours = run_mpaudit(args.mpaudit, model, inputs, work, args.timeout)
            peer = run_peer(model, inputs, args.timeout)
            nodes = len(onnx.load(str(model.path), load_external_data=False).graph.node)
            notes = "; ".join(f"{who}: {r['error']}" for who, r in (("mpaudit", ours), ("onnxconverter", peer))
                              if r.get("error"))
            rows.append(f"| {model.name} | {nodes} | {cell(ours.get('kept'))} | {cell(ours.get('seconds'), '{:.1f}')} | "
                        f"{cell(ours.get('cost'), '{:.2f}')} | {cell(peer.get('kept'))} | "
                        f"{cell(peer.get('seconds'), '{:.1f}')} | {cell(peer.get('runs'))} | {notes} |")
            print(rows[-1], flush=True)
    table = "\n".join(rows)
    print("\n" + table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
