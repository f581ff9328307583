#!/usr/bin/env python3
"""The same audits on the CPU and on CUDA must reach the same verdicts (issue 16, "What must hold").

For every model given, runs `mpaudit audit` twice with the same inputs, seed and samples, once with
--device cpu and once with --device cuda, and compares the reports:
- every node's verdict per target, and every target's gate, must be equal (exit 1 otherwise);
- node metrics may differ only within summation order and library algorithms: the table prints, per model
  and target, the largest difference in propagated SQNR over the nodes, and where it is;
- the wall time of each audit, and the CUDA audit's fallbacks (nodes it ran on the CPU, by op and reason).

Usage: check_cuda_audits.py --mpaudit build/mpaudit [--samples N] [--out DIR] MODEL[:INPUT=FILE,...] ...
Exit 77 (skipped) where no CUDA device is usable, as `mpaudit devices` says.
"""
from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cuda_available(mpaudit: str) -> bool:
    devices = subprocess.run([mpaudit, "devices"], capture_output=True, text=True).stdout
    return any(line.startswith("cuda:0") and " available:" in line for line in devices.splitlines())


def audit(mpaudit: str, model: str, inputs: list[str], device: str, report: Path, samples: int,
          targets: list[str]) -> tuple[int, float, str]:
    command = [mpaudit, "audit", model, *inputs, "--device", device, "--samples", str(samples), "--seed", "7",
               "--quiet", "--no-verify-advice", "--json", str(report)]
    for target in targets:
        command += ["--target", target]
    start = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True)
    return run.returncode, time.perf_counter() - start, run.stderr.strip()


def verdicts(report: dict) -> dict[tuple[str, str], str]:
    return {(n["name"], t): v["verdict"] for n in report["nodes"] for t, v in n["targets"].items()}


def sqnr(report: dict) -> dict[tuple[str, str], float]:
    out = {}
    for node in report["nodes"]:
        for tensor in node.get("tensors", []):
            for target, stats in tensor.get("targets", {}).items():
                value = (stats.get("propagated") or {}).get("sqnr_db")
                if isinstance(value, (int, float)):
                    out[(tensor["name"], target)] = float(value)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpaudit", required=True)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--target", action="append", default=None)
    parser.add_argument("--out", type=Path, default=None, help="keep the reports here")
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    if not cuda_available(args.mpaudit):
        print("no usable CUDA device (mpaudit devices): skipped")
        return 77
    targets = args.target or ["fp16", "bf16"]
    out = args.out or Path(tempfile.mkdtemp(prefix="mpaudit-cuda-audits-"))
    out.mkdir(parents=True, exist_ok=True)
    disagreements = 0
    print(f"{'model':28} {'target':8} {'verdicts':>9} {'differ':>6} {'max |dSQNR| dB':>15}  where"
          f"{'':18} {'cpu s':>7} {'cuda s':>7} {'speed-up':>8}")
    for spec in args.models:
        model, _, input_list = spec.partition(":")
        inputs = [arg for pair in filter(None, input_list.split(",")) for arg in ("--input", pair)]
        name = Path(model).stem
        results = {}
        for device in ("cpu", "cuda"):
            report_path = out / f"{name}.{device}.json"
            code, seconds, err = audit(args.mpaudit, model, inputs, device, report_path, args.samples, targets)
            if code not in (0, 1):
                print(f"{name}: audit on {device} failed (exit {code}): {err}")
                return 1
            results[device] = (json.loads(report_path.read_text()), seconds, code)
        (cpu, cpu_s, cpu_code), (gpu, gpu_s, gpu_code) = results["cpu"], results["cuda"]
        v_cpu, v_gpu = verdicts(cpu), verdicts(gpu)
        s_cpu, s_gpu = sqnr(cpu), sqnr(gpu)
        for target in targets:
            keys = [k for k in v_cpu if k[1] == target]
            differ = [k for k in keys if v_cpu[k] != v_gpu.get(k)]
            disagreements += len(differ)
            gaps = [(abs(s_cpu[k] - s_gpu[k]), k[0]) for k in s_cpu if k[1] == target and k in s_gpu
                    and abs(s_cpu[k]) != float("inf") and abs(s_gpu[k]) != float("inf")]
            worst = max(gaps, default=(0.0, "-"))
            print(f"{name:28} {target:8} {len(keys):9} {len(differ):6} {worst[0]:15.3f}  {worst[1][:22]:22} "
                  f"{cpu_s:7.2f} {gpu_s:7.2f} {cpu_s / gpu_s:7.1f}x")
            for key in differ:
                print(f"    {key[0]}: cpu {v_cpu[key]}, cuda {v_gpu.get(key)}")
        if cpu_code != gpu_code:
            print(f"    gate: cpu exit {cpu_code}, cuda exit {gpu_code}")
            disagreements += 1
        fallbacks = collections.Counter()
        for node in gpu["nodes"]:
            for run, reason in (node.get("fallbacks") or {}).items():
                if run == "reference":
                    fallbacks[f"{node['op_type']} ({reason})"] += 1
        if fallbacks:
            print("    on the CPU: " + ", ".join(f"{what} x{count}" for what, count in fallbacks.most_common()))
    print(f"cuda audits: {disagreements} verdict disagreement(s)")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
