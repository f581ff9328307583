#!/usr/bin/env python3
"""`mpaudit run` against onnxruntime on a machine whose cores other processes keep busy (CI runners share
cores): each model is timed quiet and with --busy processes spinning on the CPU, for mpaudit (and, with
--baseline, another mpaudit build, e.g. the one before a change) and for onnxruntime, in interleaved rounds
(run_bench.py's rounds: a fresh process per round, one warm-up run, then --runs timed runs; the median of the
round medians, and the worst round's max). What must hold: under load, mpaudit degrades no worse than
onnxruntime (its loaded/quiet ratio is at most 1.1x onnxruntime's).

Usage:
    .venv/bin/python bench/contention_bench.py --mpaudit build/mpaudit [--baseline OTHER_MPAUDIT]
        [--only lstm resnet50] [--busy 2] [--rounds 5] [--runs 20] [--threads 2] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_bench  # noqa: E402  (the models, inputs and timing rounds of the main bench)

BUSY_LOOP = "while True:\n    pass\n"


@contextmanager
def busy_processes(count: int):
    procs = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(count)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def rounds(model, inputs, args, work: Path, binaries: dict[str, Path]) -> dict[str, list[float]]:
    """Per side, the median of each round; sides alternate within a round, their order rotating."""
    sides = ["onnxruntime", *binaries]
    medians: dict[str, list[float]] = {s: [] for s in sides}
    out = work / "out"
    out.mkdir(exist_ok=True)
    for r in range(args.rounds):
        for side in sides[r % len(sides):] + sides[:r % len(sides)]:
            if side == "onnxruntime":
                result, _ = run_bench.ort_round(model, inputs, args, work, out)
            else:
                as_side = argparse.Namespace(**{**vars(args), "mpaudit": binaries[side]})
                result = run_bench.mpaudit_round(model, inputs, as_side, work, out)
            if result.error:
                raise SystemExit(f"{model.name} {side}: {result.error}")
            medians[side] += result.medians
    return medians


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpaudit", type=Path, required=True)
    parser.add_argument("--models", type=Path, default=run_bench.REPO_ROOT / "build" / "bench-models")
    parser.add_argument("--only", nargs="+", default=["lstm", "resnet50"])
    parser.add_argument("--busy", type=int, default=2, help="busy processes in the loaded phase")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--baseline", type=Path, help="another mpaudit binary, timed as the side 'baseline'")
    parser.add_argument("--markdown", type=Path)
    run_bench.add_blas_option(parser)
    args = parser.parse_args()
    run_bench.apply_blas_option(args)
    args.mpaudit = args.mpaudit.resolve()
    binaries = {"mpaudit": args.mpaudit}
    if args.baseline:
        binaries["baseline"] = args.baseline.resolve()
    if not (args.models / "resnet50.onnx").exists():
        subprocess.run([sys.executable, str(run_bench.REPO_ROOT / "bench" / "make_models.py"), "--out", str(args.models)],
                       check=True)
    models = {m.name: m for m in run_bench.bench_models(args.models) + run_bench.shared_models(run_bench.SHARED_MODELS)}
    lines = [f"| model | side | quiet median ms | {args.busy} busy: median ms (worst round) | loaded / quiet |",
             "|---|---|---:|---:|---:|"]
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="mpaudit-contention-") as tmp:
        for name in args.only:
            model = models[name]
            work = Path(tmp) / name
            inputs = run_bench.make_inputs(model, work / "inputs")
            quiet = rounds(model, inputs, args, work, binaries)
            with busy_processes(args.busy):
                loaded = rounds(model, inputs, args, work, binaries)
            slowdown = {}
            for side in quiet:
                q, l = statistics.median(quiet[side]), statistics.median(loaded[side])
                slowdown[side] = l / q
                lines.append(f"| {name} | {side} | {q:.2f} | {l:.2f} ({max(loaded[side]):.2f}) | {l / q:.2f} |")
                print(lines[-1], file=sys.stderr, flush=True)
            ok = slowdown["mpaudit"] <= slowdown["onnxruntime"] * 1.1
            verdicts.append(f"{name}: mpaudit degrades {slowdown['mpaudit']:.2f}x under load, "
                            f"onnxruntime {slowdown['onnxruntime']:.2f}x" + (" (no worse)" if ok else " (WORSE)"))
    table = "\n".join(lines + [""] + verdicts)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
