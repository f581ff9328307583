#!/usr/bin/env python3
"""Benchmark `mpaudit run` against onnxruntime (CPU EP): output agreement, latency and peak memory.

For every model (the generated bench models, plus the real models under
../shared/models when that folder exists) the script

1. writes deterministic random inputs (numpy seed 0) as .npy files;
2. runs interleaved timing rounds, alternating which side goes first:
   one onnxruntime round (a fresh Python process: load, 1 warm-up run, then
   --runs timed session.run calls, median) and one mpaudit round
   (`mpaudit run MODEL --input NAME=FILE ... --threads T --repeat N --save-outputs DIR`,
   whose stdout must contain `timing: load_ms=.. runs=.. median_ms=.. min_ms=.. max_ms=..`);
   each side's latency is the median of its round medians, and its peak RSS the
   largest over its rounds (from /usr/bin/time -v, else wait4);
3. compares mpaudit's saved outputs with onnxruntime's: max abs diff and max
   relative diff (|a - b| / max(|b|, 1e-6)) over all outputs.

It prints a markdown table and, with --markdown FILE, writes it there too.
A model on which mpaudit fails gets its error in its row; the bench goes on.

Usage:
    .venv/bin/python bench/run_bench.py --mpaudit build/mpaudit [--models DIR] [--runs 7]
        [--rounds 3] [--threads 2] [--only NAME ...] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_MODELS = REPO_ROOT.parent / "shared" / "models"
BENCH_MODELS = ["resnet50", "bert_base", "lstm"]
SHARED_FOLDERS = ["mnist-8", "super-resolution-10", "ultraface-rfb320", "ppocr-cls-mobile-v2", "yolox-nano",
                  "silero-vad"]
# Models that are benchmarked only if mpaudit runs them; otherwise they are listed as skipped.
OPTIONAL = {"silero-vad"}
REL_FLOOR = 1e-6
GNU_TIME = Path("/usr/bin/time")

TIMING_RE = re.compile(
    r"^timing: load_ms=(?P<load>\S+) runs=(?P<runs>\d+) median_ms=(?P<median>\S+) "
    r"min_ms=(?P<min>\S+) max_ms=(?P<max>\S+)\s*$", re.MULTILINE)

# Runs in a fresh interpreter so that its peak RSS can be measured on its own.
ORT_WORKER = r"""
import json, sys, time
import numpy as np
import onnxruntime as ort
cfg = json.loads(sys.argv[1])
so = ort.SessionOptions()
so.intra_op_num_threads = cfg["threads"]
so.inter_op_num_threads = 1
t0 = time.perf_counter()
sess = ort.InferenceSession(cfg["model"], so, providers=["CPUExecutionProvider"])
load_ms = (time.perf_counter() - t0) * 1e3
feeds = {name: np.load(path) for name, path in cfg["inputs"].items()}
for _ in range(cfg["warmup"]):
    outs = sess.run(None, feeds)
times = []
for _ in range(cfg["runs"]):
    t0 = time.perf_counter()
    outs = sess.run(None, feeds)
    times.append((time.perf_counter() - t0) * 1e3)
names = [o.name for o in sess.get_outputs()]
if cfg.get("save_dir"):
    for i, out in enumerate(outs):
        np.save(f"{cfg['save_dir']}/{i}.npy", np.asarray(out))
print(json.dumps({"load_ms": load_ms, "times_ms": times, "outputs": names}))
"""


# --------------------------------------------------------------------------
# Models and inputs
# --------------------------------------------------------------------------

@dataclass
class InputSpec:
    name: str
    dtype: str  # numpy dtype name
    shape: list[int]
    make: Callable[[np.random.Generator, list[int]], np.ndarray] | None = None  # default: uniform [0, 1)


@dataclass
class BenchModel:
    name: str
    path: Path
    inputs: list[InputSpec]
    params: int | None = None
    optional: bool = False


def uniform(low: float, high: float) -> Callable[[np.random.Generator, list[int]], np.ndarray]:
    return lambda rng, shape: rng.uniform(low, high, shape).astype(np.float32)


def bert_mask(rng: np.random.Generator, shape: list[int]) -> np.ndarray:
    mask = np.zeros(shape, dtype=np.float32)  # additive: 0 keeps a token
    mask[..., 100:] = -10000.0  # the last 28 positions act as padding
    return mask


def bench_models(models_dir: Path) -> list[BenchModel]:
    return [
        BenchModel("resnet50", models_dir / "resnet50.onnx",
                   [InputSpec("input", "float32", [1, 3, 224, 224])]),
        BenchModel("bert_base", models_dir / "bert_base.onnx", [
            InputSpec("input_ids", "int64", [1, 128], lambda rng, shape: rng.integers(0, 30522, shape, dtype=np.int64)),
            InputSpec("attention_mask", "float32", [1, 1, 1, 128], bert_mask),
        ]),
        BenchModel("lstm", models_dir / "lstm.onnx", [InputSpec("features", "float32", [1, 200, 80])]),
    ]


# Concrete shapes for dynamic dimensions, and input value ranges, per shared model folder.
SHARED_OVERRIDES: dict[str, dict[str, dict]] = {
    "super-resolution-10": {"input": {"shape": [1, 1, 224, 224]}},
    "ultraface-rfb320": {"input": {"make": uniform(-1.0, 1.0)}},  # the model expects (x - 127) / 128
    "ppocr-cls-mobile-v2": {"x": {"shape": [1, 3, 48, 192], "make": uniform(-1.0, 1.0)}},
    "silero-vad": {
        "input": {"shape": [1, 512], "make": uniform(-0.5, 0.5)},
        "state": {"shape": [2, 1, 128], "make": lambda rng, shape: np.zeros(shape, dtype=np.float32)},
        "sr": {"shape": [], "make": lambda rng, shape: np.array(16000, dtype=np.int64)},
    },
}

ONNX_TO_NUMPY = {"FLOAT": "float32", "DOUBLE": "float64", "FLOAT16": "float16", "INT64": "int64",
                 "INT32": "int32", "INT8": "int8", "UINT8": "uint8", "BOOL": "bool"}
INPUT_RE = re.compile(r"^(?P<name>.+):(?P<type>[A-Z0-9]+)\[(?P<dims>.*)\]$")


def parse_info_input(text: str) -> tuple[str, str, list[int | None]]:
    m = INPUT_RE.match(text)
    if not m:
        raise ValueError(f"cannot parse input spec {text!r}")
    dims = []
    for d in filter(None, (s.strip() for s in m["dims"].split(","))):
        dims.append(int(d) if d.lstrip("-").isdigit() else None)
    return m["name"], ONNX_TO_NUMPY.get(m["type"], m["type"].lower()), dims


def shared_models(root: Path) -> list[BenchModel]:
    found = []
    for folder in SHARED_FOLDERS:
        info_path = root / folder / "info.json"
        if not info_path.exists():
            continue
        info = json.loads(info_path.read_text())
        entry = info[0] if isinstance(info, list) else info  # the folder's main model comes first
        overrides = SHARED_OVERRIDES.get(folder, {})
        specs = []
        for text in entry["inputs"]:
            name, dtype, dims = parse_info_input(text)
            o = overrides.get(name, {})
            shape = o.get("shape", dims)
            if any(d is None for d in shape):
                raise ValueError(f"{folder}: input {name} has dynamic dims {dims}; add a shape to SHARED_OVERRIDES")
            specs.append(InputSpec(name, dtype, shape, o.get("make")))
        found.append(BenchModel(folder, root / entry["file"], specs, params=entry.get("float_params"),
                                optional=folder in OPTIONAL))
    return found


def make_inputs(model: BenchModel, out_dir: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for i, spec in enumerate(model.inputs):
        if spec.make is not None:
            value = spec.make(rng, spec.shape)
        elif np.issubdtype(np.dtype(spec.dtype), np.floating):
            value = rng.random(spec.shape).astype(spec.dtype)
        else:
            value = rng.integers(0, 2, spec.shape).astype(spec.dtype)
        path = out_dir / f"input{i}.npy"
        np.save(path, np.asarray(value, dtype=spec.dtype))
        paths[spec.name] = path
    return paths


def count_params(path: Path) -> int:
    import onnx
    model = onnx.load(str(path))
    floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}
    return sum(math.prod(t.dims) for t in model.graph.initializer if t.data_type in floats)


# --------------------------------------------------------------------------
# Running things
# --------------------------------------------------------------------------

@dataclass
class Proc:
    returncode: int
    stdout: str
    stderr: str
    max_rss_mb: float | None


def run_measured(cmd: list[str], workdir: Path, timeout: float) -> Proc:
    """Run cmd, returning its output and peak RSS (GNU time -v if present, else wait4)."""
    out_path, err_path, time_path = workdir / "stdout.txt", workdir / "stderr.txt", workdir / "time.txt"
    use_time = GNU_TIME.exists()
    full = [str(GNU_TIME), "-v", "-o", str(time_path)] + cmd if use_time else cmd
    rss_kb = None
    with out_path.open("w") as out, err_path.open("w") as err:
        p = subprocess.Popen(full, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        if use_time:
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                return Proc(124, "", f"timed out after {timeout:.0f} s", None)
        else:
            # wait4 gives this child's own rusage; getrusage(RUSAGE_CHILDREN) would mix in earlier children.
            deadline = time.monotonic() + timeout
            while True:
                pid, status, usage = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    p.kill()
                    os.wait4(p.pid, 0)
                    p.returncode = -9
                    return Proc(124, "", f"timed out after {timeout:.0f} s", None)
                time.sleep(0.01)
            p.returncode = os.waitstatus_to_exitcode(status)
            rss_kb = usage.ru_maxrss
    if use_time and time_path.exists():
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", time_path.read_text())
        rss_kb = int(m[1]) if m else None
    stderr = err_path.read_text(errors="replace")
    if use_time:  # GNU time reports a non-zero exit or a signal on its own lines; keep the program's stderr
        stderr = "\n".join(l for l in stderr.splitlines() if not l.startswith("Command "))
    return Proc(p.returncode, out_path.read_text(errors="replace"), stderr,
                rss_kb / 1024 if rss_kb is not None else None)


@dataclass
class Side:
    medians: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)
    error: str | None = None

    def median(self) -> float | None:
        return statistics.median(self.medians) if self.medians else None

    def peak_rss(self) -> float | None:
        return max(self.rss) if self.rss else None


def last_line(text: str) -> str:
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else ""


def ort_round(model: BenchModel, inputs: dict[str, Path], args, work: Path, save_dir: Path) -> tuple[Side, list[str]]:
    cfg = {"model": str(model.path), "inputs": {k: str(v) for k, v in inputs.items()}, "threads": args.threads,
           "runs": args.runs, "warmup": 1, "save_dir": str(save_dir)}
    p = run_measured([sys.executable, "-c", ORT_WORKER, json.dumps(cfg)], work, args.timeout)
    side = Side()
    if p.returncode != 0:
        side.error = f"onnxruntime failed (exit {p.returncode}): {last_line(p.stderr)}"
        return side, []
    result = json.loads(last_line(p.stdout))
    side.medians.append(statistics.median(result["times_ms"]))
    if p.max_rss_mb is not None:
        side.rss.append(p.max_rss_mb)
    return side, result["outputs"]


def mpaudit_round(model: BenchModel, inputs: dict[str, Path], args, work: Path, save_dir: Path) -> Side:
    cmd = [str(args.mpaudit), "run", str(model.path)]
    for name, path in inputs.items():
        cmd += ["--input", f"{name}={path}"]
    cmd += ["--threads", str(args.threads), "--repeat", str(args.runs), "--save-outputs", str(save_dir)]
    p = run_measured(cmd, work, args.timeout)
    side = Side()
    if p.returncode != 0:
        msg = last_line(p.stderr) or last_line(p.stdout)
        side.error = f"exit {p.returncode}: {msg}"
        return side
    m = TIMING_RE.search(p.stdout)
    if not m:
        side.error = "no 'timing:' line on stdout"
        return side
    side.medians.append(float(m["median"]))
    if p.max_rss_mb is not None:
        side.rss.append(p.max_rss_mb)
    return side


def sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def find_output(save_dir: Path, name: str, index: int, n_outputs: int) -> Path | None:
    for candidate in (name, sanitize(name), sanitize(name).lstrip("_"), str(index)):
        path = save_dir / f"{candidate}.npy"
        if path.exists():
            return path
    files = sorted(save_dir.glob("*.npy"))
    if n_outputs == 1 and len(files) == 1:
        return files[0]
    return None


def compare_outputs(ort_dir: Path, mpa_dir: Path, names: list[str]) -> tuple[float, float] | str:
    max_abs, max_rel = 0.0, 0.0
    for i, name in enumerate(names):
        ref = np.load(ort_dir / f"{i}.npy")
        path = find_output(mpa_dir, name, i, len(names))
        if path is None:
            return f"output {name!r} not saved in {mpa_dir.name}/"
        got = np.load(path)
        if got.shape != ref.shape:
            return f"output {name!r}: shape {list(got.shape)} != onnxruntime {list(ref.shape)}"
        ref64, got64 = ref.astype(np.float64), got.astype(np.float64)
        if ref64.size == 0:
            continue
        if not np.array_equal(np.isfinite(ref64), np.isfinite(got64)):
            return f"output {name!r}: non-finite values differ"
        finite = np.isfinite(ref64)
        diff = np.abs(got64[finite] - ref64[finite])
        if diff.size:
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float((diff / np.maximum(np.abs(ref64[finite]), REL_FLOOR)).max()))
    return max_abs, max_rel


# --------------------------------------------------------------------------
# Table
# --------------------------------------------------------------------------

@dataclass
class Row:
    model: str
    params: int | None
    diff: tuple[float, float] | str | None = None
    ort: Side = field(default_factory=Side)
    mpa: Side = field(default_factory=Side)
    skipped: str | None = None


def fmt_params(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}K" if n >= 1e3 else str(n)


def fmt(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def fmt_ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 10 else f"{value:.1f}"


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b not in (None, 0) else None


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def md_escape(text: str, limit: int = 140) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


HEADER = ("| model | params | max abs diff | max rel diff | ORT median ms | mpaudit median ms | ratio "
          "| ORT RSS MB | mpaudit RSS MB | RSS ratio |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def format_row(r: Row) -> str:
    ort_ms, mpa_ms = r.ort.median(), r.mpa.median()
    ort_rss, mpa_rss = r.ort.peak_rss(), r.mpa.peak_rss()
    error = r.skipped or r.ort.error or r.mpa.error or (r.diff if isinstance(r.diff, str) else None)
    if error:
        abs_s, rel_s = f"**{md_escape(error)}**", ""
    elif isinstance(r.diff, tuple):
        abs_s, rel_s = f"{r.diff[0]:.3g}", f"{r.diff[1]:.3g}"
    else:
        abs_s, rel_s = "–", "–"
    cells = [r.model, fmt_params(r.params), abs_s, rel_s, fmt_ms(ort_ms), fmt_ms(mpa_ms),
             fmt(ratio(mpa_ms, ort_ms), ".2f"), fmt(ort_rss, ".0f"), fmt(mpa_rss, ".0f"),
             fmt(ratio(mpa_rss, ort_rss), ".2f")]
    return "| " + " | ".join(cells) + " |"


def render_table(rows: list[Row], args) -> str:
    import onnxruntime as ort
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                   if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    lines = [
        f"onnxruntime {ort.__version__} CPU EP vs mpaudit; {args.threads} thread(s); "
        f"{args.rounds} interleaved rounds x {args.runs} runs; {cpu}, {os.cpu_count()} logical CPUs.",
        "",
        HEADER,
        *map(format_row, rows),
        "",
    ]
    time_ratios = [ratio(r.mpa.median(), r.ort.median()) for r in rows]
    rss_ratios = [ratio(r.mpa.peak_rss(), r.ort.peak_rss()) for r in rows]
    t_gm, r_gm = geomean(time_ratios), geomean(rss_ratios)
    n = sum(1 for v in time_ratios if v)
    lines.append(f"Geometric mean over {n} model(s): time ratio (mpaudit/ORT) {fmt(t_gm, '.2f')}, "
                 f"RSS ratio {fmt(r_gm, '.2f')}.")
    lines.append("")
    lines.append("ratio = mpaudit / onnxruntime (below 1: mpaudit is faster or smaller). "
                 f"max rel diff = max |a - b| / max(|b|, {REL_FLOOR:g}). ORT RSS is a Python process "
                 "with numpy and onnxruntime loaded.")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def bench_one(model: BenchModel, args, tmp: Path) -> Row:
    row = Row(model.name, model.params)
    work = tmp / model.name
    inputs = make_inputs(model, work / "inputs")
    ort_dir, mpa_dir = work / "ort_out", work / "mpaudit_out"
    ort_dir.mkdir()
    mpa_dir.mkdir()
    names: list[str] = []
    for rnd in range(args.rounds):
        order = ["ort", "mpa"] if rnd % 2 == 0 else ["mpa", "ort"]
        for side_name in order:
            if side_name == "ort" and row.ort.error is None:
                side, names_now = ort_round(model, inputs, args, work, ort_dir)
                names = names or names_now
                row.ort.error = side.error
                row.ort.medians += side.medians
                row.ort.rss += side.rss
            elif side_name == "mpa" and row.mpa.error is None:
                side = mpaudit_round(model, inputs, args, work, mpa_dir)
                row.mpa.error = side.error
                row.mpa.medians += side.medians
                row.mpa.rss += side.rss
        if row.mpa.error and not row.mpa.medians:
            break  # no point timing ORT further for a model mpaudit cannot run
    if row.mpa.error and model.optional:
        row.skipped = f"skipped: mpaudit cannot run it ({row.mpa.error})"
    if row.ort.error is None and row.mpa.error is None and names:
        row.diff = compare_outputs(ort_dir, mpa_dir, names)
    status = row.skipped or row.ort.error or row.mpa.error or (row.diff if isinstance(row.diff, str) else "ok")
    print(f"  {model.name}: ORT {fmt_ms(row.ort.median())} ms, mpaudit {fmt_ms(row.mpa.median())} ms; "
          f"{status}", file=sys.stderr, flush=True)
    return row


def add_blas_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inherit-blas-coretype", action="store_true",
                        help="keep an OPENBLAS_CORETYPE set in the environment (default: drop it, so that mpaudit picks "
                             "the BLAS kernels for this CPU as onnxruntime picks its own)")


def apply_blas_option(args: argparse.Namespace) -> None:
    """Some machines export OPENBLAS_CORETYPE globally (this build VM sets Haswell, the AVX2 kernels, on an
    AVX-512 CPU); mpaudit respects it as a user's choice, so the bench drops it unless told to keep it."""
    inherited = os.environ.get("OPENBLAS_CORETYPE")
    if inherited is not None and not args.inherit_blas_coretype:
        del os.environ["OPENBLAS_CORETYPE"]
        print(f"note: OPENBLAS_CORETYPE={inherited} from the environment dropped for mpaudit "
              "(--inherit-blas-coretype keeps it)", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpaudit", type=Path, required=True, help="path to the mpaudit binary")
    parser.add_argument("--models", type=Path, default=REPO_ROOT / "build" / "bench-models",
                        help="folder of the generated bench models (made with bench/make_models.py if missing)")
    parser.add_argument("--shared-models", type=Path, default=SHARED_MODELS,
                        help="folder of real models (default: ../shared/models beside the repo; skipped if absent)")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per round (default 7)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per side (default 3)")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads for both runtimes (default 2)")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="bench only this model (repeatable; e.g. resnet50, bert_base, mnist-8)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds allowed per process (default 600)")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    parser.add_argument("--keep-temp", action="store_true", help="keep the inputs and outputs folder")
    add_blas_option(parser)
    args = parser.parse_args(argv)
    apply_blas_option(args)

    if args.runs < 1 or args.rounds < 1:
        parser.error("--runs and --rounds must be at least 1")
    args.mpaudit = args.mpaudit.resolve()
    if not args.mpaudit.exists():
        parser.error(f"mpaudit binary not found: {args.mpaudit}")

    candidates = bench_models(args.models)
    if args.shared_models.is_dir():
        candidates += shared_models(args.shared_models)
    else:
        print(f"note: {args.shared_models} not found; benchmarking the generated models only", file=sys.stderr)
    if args.only:
        known = {m.name for m in candidates}
        unknown = sorted(set(args.only) - known)
        if unknown:
            parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        candidates = [m for m in candidates if m.name in args.only]

    missing = [m.name for m in candidates if m.name in BENCH_MODELS and not m.path.exists()]
    if missing:
        cmd = [sys.executable, str(REPO_ROOT / "bench" / "make_models.py"), "--out", str(args.models)]
        for name in missing:
            cmd += ["--only", name]
        print(f"generating {', '.join(missing)} into {args.models}", file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, stdout=sys.stderr)

    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="mpaudit-bench-"))
    try:
        for model in candidates:
            if model.params is None:
                model.params = count_params(model.path)
            print(f"benchmarking {model.name} ({model.path})", file=sys.stderr, flush=True)
            rows.append(bench_one(model, args, tmp))
    finally:
        if args.keep_temp:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    table = render_table(rows, args)
    print(table)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
