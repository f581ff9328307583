#!/usr/bin/env python3
"""The same audits on the CPU and on CUDA must reach the same verdicts (issue 16, "What must hold").

For every model given, runs `mpaudit audit` twice with the same inputs, seed and samples, once with
--device cpu and once with --device cuda, and compares the reports:
- every node's verdict per target, and every target's gate, must be equal (exit 1 otherwise);
- node metrics may differ only within summation order and library algorithms: the table prints, per model
  and target, the largest difference in propagated SQNR over the nodes, and where it is;
- the wall time of each audit, and the CUDA audit's fallbacks (nodes it ran on the CPU, by op and reason).

Usage: check_cuda_audits.py --mpaudit build/mpaudit [--golden-set] [--out DIR] [NAME=MODEL[,ARG...]] ...
  --golden-set: the golden reports' cases (tests/golden_reports) and the isolated-pass extras: the demo
  models and the bundled real models with their inputs and options.
  NAME=MODEL,ARG,...: another case; ARGs go to `mpaudit audit` as they are (e.g. --input=x=FILE).
Exit 77 (skipped) where no CUDA device is usable, as `mpaudit devices` says.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cuda_available(mpaudit: str) -> bool:
    devices = subprocess.run([mpaudit, "devices"], capture_output=True, text=True).stdout
    return any(line.startswith("cuda:0") and " available:" in line for line in devices.splitlines())


ROOT = Path(__file__).resolve().parents[2]
TIMING_RE = re.compile(r"audit-timing: total_ms=(?P<total>[0-9.]+)")


def audit(mpaudit: str, argv: list[str], device: str, report: Path) -> tuple[int, float, float, str]:
    """Exit code, wall seconds of the whole command, the audit's own total (audit-timing), stderr."""
    command = [mpaudit, "audit", *argv, "--device", device, "--quiet", "--timing", "--no-verify-advice",
               "--json", str(report)]
    start = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - start
    timing = TIMING_RE.search(run.stdout)
    return run.returncode, wall, float(timing["total"]) / 1e3 if timing else float("nan"), run.stderr.strip()


def golden_set(work: Path) -> dict[str, list[str]]:
    sys.path.insert(0, str(ROOT / "tests" / "golden_reports"))
    sys.path.insert(0, str(ROOT / "tests" / "audit"))
    from check_reports import cases  # noqa: E402
    from check_isolated_suspects import EXTRA  # noqa: E402
    return {**cases(work), **EXTRA}


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
    parser.add_argument("--golden-set", action="store_true")
    parser.add_argument("--out", type=Path, default=None, help="keep the reports here")
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args()
    mpaudit = str(Path(args.mpaudit).resolve())
    if not cuda_available(mpaudit):
        print("no usable CUDA device (mpaudit devices): skipped")
        return 77
    out = (args.out or Path(tempfile.mkdtemp(prefix="mpaudit-cuda-audits-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    cases = golden_set(out) if args.golden_set else {}
    for spec in args.cases:
        name, _, rest = spec.partition("=")
        cases[name] = rest.split(",")
    disagreements, errors = 0, 0
    print(f"{'case':22} {'target':8} {'verdicts':>8} {'differ':>6} {'max|dSQNR|dB':>12}  {'where':24}"
          f" {'cpu s':>6} {'cuda s':>6} {'cpu audit':>9} {'cuda audit':>10}")
    for name, argv in cases.items():
        results = {}
        for device in ("cpu", "cuda"):
            report_path = out / f"{name}.{device}.json"
            code, wall, own, err = audit(mpaudit, argv, device, report_path)
            if code not in (0, 1):
                print(f"{name}: audit on {device} failed (exit {code}): {err}")
                results = None
                break
            results[device] = (json.loads(report_path.read_text()), wall, own, code)
        if results is None:
            errors += 1
            continue
        (cpu, cpu_s, cpu_own, cpu_code), (gpu, gpu_s, gpu_own, gpu_code) = results["cpu"], results["cuda"]
        v_cpu, v_gpu = verdicts(cpu), verdicts(gpu)
        s_cpu, s_gpu = sqnr(cpu), sqnr(gpu)
        for target in sorted({k[1] for k in v_cpu}):
            keys = [k for k in v_cpu if k[1] == target]
            differ = [k for k in keys if v_cpu[k] != v_gpu.get(k)]
            disagreements += len(differ)
            gaps = [(abs(s_cpu[k] - s_gpu[k]), k[0]) for k in s_cpu if k[1] == target and k in s_gpu
                    and abs(s_cpu[k]) != float("inf") and abs(s_gpu[k]) != float("inf")]
            worst = max(gaps, default=(0.0, "-"))
            print(f"{name:22} {target:8} {len(keys):8} {len(differ):6} {worst[0]:12.3f}  {worst[1][:24]:24}"
                  f" {cpu_s:6.2f} {gpu_s:6.2f} {cpu_own:9.3f} {gpu_own:10.3f}")
            for key in differ:
                print(f"    {key[0]}: cpu {v_cpu[key]}, cuda {v_gpu.get(key)}")
        if cpu_code != gpu_code:
            print(f"    gate: cpu exit {cpu_code}, cuda exit {gpu_code}")
            disagreements += 1
        fallbacks = collections.Counter()
        for node in gpu["nodes"]:
            for run, reason in (node.get("fallbacks") or {}).items():
                fallbacks[f"{node['op_type']} in {run} ({reason})"] += 1
        if fallbacks:
            print("    on the CPU: " + ", ".join(f"{what} x{count}" for what, count in fallbacks.most_common(6)))
    print(f"cuda audits: {len(cases) - errors} cases, {disagreements} verdict disagreement(s), {errors} error(s)")
    return 1 if disagreements or errors else 0


if __name__ == "__main__":
    sys.exit(main())
