#!/usr/bin/env python3
"""Statistics throughput of `mpaudit tensors` on float32 data, in GB/s per core.

Two figures, both over gradient-like float32 values (normal, a few tiny enough to flush in fp16), for the
four default targets (fp16, bf16, fp8e4m3, fp8e5m2):
  - statistics: bench/bench_tensor_stats.cpp (Google Benchmark) runs the analysis on a tensor already in
    memory on one thread: range, exponent histogram, format fit, significant flushes and scale windows;
    1 Mi values (4 MiB, cache-resident) and 64 Mi values (256 MiB, from memory);
  - end to end: `mpaudit tensors FILE.npy --threads T --quiet` on a --size-mib file written to a temporary
    folder (read from the page cache after the first run), median wall time of --runs runs, process start,
    reading and the report included; divided by T for the per-core figure.

Usage: .venv/bin/python bench/tensors_bench.py --mpaudit build/mpaudit [--stats build/bench/mpaudit_bench_tensor_stats]
                                              [--size-mib 512] [--runs 5] [--threads 1 2]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np


def statistics_figures(binary: Path) -> list[tuple[str, float]]:
    out = subprocess.run([str(binary), "--benchmark_format=json", "--benchmark_repetitions=3",
                          "--benchmark_report_aggregates_only=true"], capture_output=True, text=True, check=True).stdout
    rows = []
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            rows.append((b["run_name"], b["bytes_per_second"] / 1e9))
    return rows


def end_to_end(mpaudit: Path, size_mib: int, runs: int, threads: int, folder: Path) -> float:
    path = folder / "gradient.npy"
    if not path.exists():
        rng = np.random.default_rng(5)
        values = (rng.standard_normal(size_mib * (1 << 20) // 4) * 1e-3).astype(np.float32)
        values[::1000] *= np.float32(1e-3)
        np.save(path, values)
    cmd = [str(mpaudit), "tensors", str(path), "--threads", str(threads), "--quiet"]
    subprocess.run(cmd, check=True)  # warms the page cache
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True)
        times.append(time.perf_counter() - start)
    return path.stat().st_size / 1e9 / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mpaudit", type=Path, default=Path("build/mpaudit"))
    parser.add_argument("--stats", type=Path, default=Path("build/bench/mpaudit_bench_tensor_stats"))
    parser.add_argument("--size-mib", type=int, default=512)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    print("| measurement | threads | GB/s | GB/s per core |")
    print("|---|---|---|---|")
    if args.stats.exists():
        for name, rate in statistics_figures(args.stats):
            print(f"| statistics {name} | 1 | {rate:.2f} | {rate:.2f} |")
    else:
        print(f"| statistics: {args.stats} not built (needs Google Benchmark) | | | |")
    with tempfile.TemporaryDirectory() as tmp:
        for threads in args.threads:
            rate = end_to_end(args.mpaudit, args.size_mib, args.runs, threads, Path(tmp))
            print(f"| end to end, {args.size_mib} MiB .npy | {threads} | {rate:.2f} | {rate / threads:.2f} |")


if __name__ == "__main__":
    main()
