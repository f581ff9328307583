#!/usr/bin/env python3
"""`mpaudit tensors` against an independent numpy computation of every figure it reports.

Writes a three-step run (folders step_1, step_2, step_10, so natural order matters) of .npy, .npz, .pb and
.safetensors files holding gradients, weights, updates and edge cases (zeros, float32 and float16
subnormals, exact powers of two on the flush limits, values on the overflow limit, +-Inf, NaN, an empty
tensor, an integer tensor, float16, bfloat16 and float64 tensors, one large enough for many chunks), runs
`mpaudit tensors --json` and checks, per tensor and format: range, exponent histogram, overflow / flush /
subnormal / significant-flush counts and fractions, headroom and the scale window (by trying every power
of two); the static loss scale and the dynamic-scaling trajectory (GradScaler rules re-implemented here,
with hysteresis as DeepSpeed's); the vanishing updates in fp16 (numpy) and bf16 (bit operations) with their
ratio histograms. The report must validate against the committed schema's required keys (the C++ contract
test runs the full JSON Schema validator) and be byte-identical on a second run.

Usage: check_tensors_oracle.py --mpaudit build/mpaudit
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from checklist import Checklist  # noqa: E402
from tensor_files import BFloat16Bits, round_bfloat16, write_npy, write_pb, write_safetensors  # noqa: E402

FORMATS = {
    "fp16": {"max": 65504.0, "min_normal": 2.0**-14, "min_sub": 2.0**-24, "mant": 10},
    "bf16": {"max": float.fromhex("0x1.fep127"), "min_normal": 2.0**-126, "min_sub": 2.0**-133, "mant": 7},
    "fp8e4m3": {"max": 448.0, "min_normal": 2.0**-6, "min_sub": 2.0**-9, "mant": 3},
    "fp8e5m2": {"max": 57344.0, "min_normal": 2.0**-14, "min_sub": 2.0**-16, "mant": 2},
}
MAX_FLUSH = 1e-3
SCALE_RANGE = range(-1200, 1200)  # beyond every double exponent, so the ends are unbounded ones


# [SECTION] Independent figures

def exp_hist(values: np.ndarray) -> list[int]:
    bins = [0] * 86
    bins[0] = int(np.count_nonzero(values == 0))
    bins[84] = int(np.count_nonzero(np.isinf(values)))
    bins[85] = int(np.count_nonzero(np.isnan(values)))
    magnitudes = np.abs(values[np.isfinite(values) & (values != 0)])
    exponents = np.frexp(magnitudes)[1] - 1
    bins[1] = int(np.count_nonzero(exponents < -40))
    bins[83] = int(np.count_nonzero(exponents > 40))
    for e, n in zip(*np.unique(exponents[(exponents >= -40) & (exponents <= 40)], return_counts=True)):
        bins[2 + int(e) + 40] = int(n)
    return bins


def flushed_at(sorted_magnitudes: np.ndarray, flush_limit: float, s: int) -> int:
    """Nonzero magnitudes m with m * 2^s <= flush_limit, i.e. m <= flush_limit * 2^-s (exact in float64)."""
    return int(np.searchsorted(sorted_magnitudes, np.ldexp(flush_limit, -s), side="right"))


def window(magnitudes: np.ndarray, nonfinite: int, fmt: dict) -> dict:
    if nonfinite:
        return {"lo_log2": None, "hi_log2": None, "empty": True}
    if magnitudes.size == 0:
        return {"lo_log2": None, "hi_log2": None, "empty": False}
    absmax = float(magnitudes.max())
    with np.errstate(over="ignore"):
        hi = max(s for s in SCALE_RANGE if np.ldexp(absmax, s) <= fmt["max"])
    ordered = np.sort(magnitudes)
    np.seterr(over="ignore", under="ignore")
    allowed = MAX_FLUSH * magnitudes.size
    lo = min(s for s in SCALE_RANGE if flushed_at(ordered, fmt["min_sub"] / 2, s) <= allowed)
    assert lo > SCALE_RANGE.start
    return {"lo_log2": lo, "hi_log2": hi, "empty": lo > hi,
            "flush_frac_at_hi": flushed_at(ordered, fmt["min_sub"] / 2, hi) / magnitudes.size}


def format_figures(values: np.ndarray, fmt: dict) -> dict:
    finite = values[np.isfinite(values)]
    a = np.abs(finite[finite != 0])
    flush_limit = fmt["min_sub"] / 2
    overflow = int(np.count_nonzero(a > fmt["max"]))
    flush = int(np.count_nonzero(a <= flush_limit))
    subnormal = int(np.count_nonzero((a > flush_limit) & (a < fmt["min_normal"] - flush_limit) & (a <= fmt["max"])))
    absmax = float(np.abs(finite).max()) if finite.size else 0.0
    relevant = math.ldexp(absmax, -(fmt["mant"] + 1))
    significant = int(np.count_nonzero((a <= flush_limit) & (a >= relevant))) if flush else 0
    n = a.size
    return {"fit": {"overflow": overflow, "flush_to_zero": flush, "significant_flush": significant,
                    "subnormal": subnormal, "nonzero": n},
            "overflow_frac": overflow / n if n else 0, "flush_to_zero_frac": flush / n if n else 0,
            "significant_flush_frac": significant / n if n else 0, "subnormal_frac": subnormal / n if n else 0,
            "headroom_bits": math.log2(fmt["max"] / absmax) if absmax > 0 else None,
            "scale_window": window(a, int(values.size - finite.size), fmt)}


def finite_or_none(v: float) -> float | None:
    return v if math.isfinite(v) else None  # JSON has no NaN/Inf: the report writes null


def range_figures(values: np.ndarray) -> dict:
    finite = values[np.isfinite(values)]
    with np.errstate(over="ignore"):
        std = float(finite.std()) if finite.size else None
    return {"count": int(values.size),
            "min": float(finite.min()) if finite.size else None, "max": float(finite.max()) if finite.size else None,
            "absmax": float(np.abs(finite).max()) if finite.size else 0.0,
            "mean": float(finite.mean()) if finite.size else None, "std": finite_or_none(std) if std is not None else None,
            "zeros": int(np.count_nonzero(values == 0)), "nan": int(np.count_nonzero(np.isnan(values))),
            "pos_inf": int(np.count_nonzero(values == np.inf)), "neg_inf": int(np.count_nonzero(values == -np.inf)),
            "exp_hist": exp_hist(values)}


def close(a, b, rel=1e-12) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    return a == b or abs(a - b) <= rel * max(abs(a), abs(b))


def compare(check: Checklist, where: str, got, want) -> None:
    """Every key of `want` against `got`, recursively; numbers to 1e-12 relative (means and stds), the rest exactly."""
    if isinstance(want, dict):
        for key, value in want.items():
            if not (isinstance(got, dict) and key in got):
                check(False, f"{where}.{key} present")
                continue
            compare(check, f"{where}.{key}", got[key], value)
    elif isinstance(want, list):
        check(isinstance(got, list) and got == want, f"{where} = {want if len(str(want)) < 80 else '[...]'}"
              + ("" if got == want else f" (got {got})"))
    else:
        check(close(got, want), f"{where} = {want}" + ("" if close(got, want) else f" (got {got})"))


# [SECTION] Loss scale and master weights, re-implemented

def simulate(steps: list[list[tuple[str, np.ndarray]]], init_log2: int, interval: int, hysteresis: int) -> list[dict]:
    fp16 = FORMATS["fp16"]
    scale, clean, allowed, out = init_log2, 0, hysteresis, []
    for grads in steps:
        over = [name for name, g in grads
                if not np.all(np.isfinite(g)) or (g.size and float(np.abs(g).max()) * 2.0**scale > fp16["max"])]
        magnitudes = np.sort(np.concatenate([np.abs(g[(g != 0) & np.isfinite(g)]) for _, g in grads]))
        record = {"scale_log2": scale, "skipped": bool(over), "overflowing": over,
                  "flush_frac": flushed_at(magnitudes, fp16["min_sub"] / 2, scale) / magnitudes.size}
        if over:
            clean = 0
            if allowed > 1:
                allowed -= 1
            else:
                scale -= 1
        else:
            clean += 1
            if clean == interval:
                scale, clean, allowed = scale + 1, 0, hysteresis
        record["next_scale_log2"] = scale
        out.append(record)
    return out


def vanishing(w: np.ndarray, d: np.ndarray) -> dict:
    ok = np.isfinite(w) & np.isfinite(d)
    updated = ok & (d != 0)
    wu, du = w[updated], d[updated]
    total = wu + du
    fp16 = int(np.count_nonzero(total.astype(np.float16) == wu.astype(np.float16)))
    bf16 = int(np.count_nonzero(round_bfloat16(total) == round_bfloat16(wu)))
    n = int(updated.sum())
    nonzero_w = wu != 0
    ratio = np.abs(du[nonzero_w].astype(np.float64)) / np.abs(wu[nonzero_w].astype(np.float64))
    return {"elements": int(w.size), "nonfinite": int((~ok).sum()), "updated": n,
            "zero_weight": int(np.count_nonzero(wu == 0)),
            "formats": {"fp16": {"vanished": fp16, "vanished_frac": fp16 / n}, "bf16": {"vanished": bf16, "vanished_frac": bf16 / n}},
            "ratio_hist": exp_hist(ratio)}


# [SECTION] The run

def make_run(root: Path) -> tuple[dict, dict, dict]:
    """Writes the steps; returns {step: {tensor: float64 values or None for integers}}, the gradients per step
    (float32 as written) and the weight/update pairs."""
    rng = np.random.default_rng(17)
    values: dict[str, dict[str, np.ndarray | None]] = {}
    grads: dict[str, list[tuple[str, np.ndarray]]] = {}
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for index, step in enumerate(["step_1", "step_2", "step_10"]):
        folder = root / "run" / step
        folder.mkdir(parents=True)
        fc1 = (rng.standard_normal(3000) * 1e-3).astype(np.float32)
        fc1[:40] = (rng.standard_normal(40) * 1e-9).astype(np.float32)  # flush in fp16 below 2^-25
        fc2 = (rng.standard_normal((40, 30)) * [0.2, 3.0, 0.05][index]).astype(np.float32)
        if step == "step_2":
            fc2[3, 4] = np.inf
        np.savez(folder / "grads.npz", **{"fc1.grad": fc1, "fc2.grad": fc2})
        weight = (rng.standard_normal((64, 32)) * 0.5).astype(np.float32)
        weight[0, :4] = 0
        update = (rng.standard_normal((64, 32)) * 1e-4).astype(np.float32)
        update[1, :3] = 0
        update[2, 0] = np.nan
        write_safetensors(folder / "weights.safetensors", {"weight.fc1": weight})
        write_pb(folder / "update.fc1.pb", "update.fc1", update)
        values[step] = {"fc1.grad": fc1.astype(np.float64), "fc2.grad": fc2.astype(np.float64),
                        "weight.fc1": weight.astype(np.float64), "update.fc1": update.astype(np.float64)}
        grads[step] = [("fc1.grad", fc1), ("fc2.grad", fc2)]
        pairs[step] = (weight, update)
    # Edge cases in the first step.
    edges = root / "run" / "step_1"
    special = np.array([0.0, -0.0, 2.0**-25, -(2.0**-24), 2.0**-25 * 1.5, 1e-40, -1e-45, 65504.0, 65505.0, -65520.0,
                        1.0, 0.5, 448.0, 449.0, np.inf, -np.inf, np.nan, 3.0e38], dtype=np.float32)
    write_npy(edges / "edge.special.npy", special)
    half = np.array([0, 2.0**-24, 2.0**-14, -6.0e-8, 1.0, 65504, -np.inf], dtype=np.float16)
    write_npy(edges / "edge.half.npy", half)
    double = np.array([1e-300, 5e-324, -1e300, 0.1, 2.0**-1074, 2.0**1000], dtype=np.float64)
    write_npy(edges / "edge.double.npy", double)
    write_npy(edges / "edge.empty.npy", np.zeros((0, 3), dtype=np.float32))
    write_npy(edges / "edge.zeros.npy", np.zeros(7, dtype=np.float32))
    write_npy(edges / "edge.int.npy", np.arange(-5, 5, dtype=np.int32))
    bf16 = BFloat16Bits.from_float32(np.array([1.0, -3.5, 1e-39, 2.0**-133, 3.0e38, 0.0], dtype=np.float32))
    write_safetensors(edges / "edge.safetensors", {"edge.bf16": bf16, "edge.f32sub": np.array([1e-42, 3.0], dtype=np.float32)})
    large = (rng.standard_normal(100_000) * 1e-4).astype(np.float32)
    large[50_000] = np.nan
    large[70_000:70_010] = 2.0**-30
    write_npy(edges / "edge.large.npy", large)
    values["step_1"].update({"edge.special": special.astype(np.float64), "edge.half": half.astype(np.float64),
                             "edge.double": double, "edge.empty": np.zeros(0), "edge.zeros": np.zeros(7), "edge.int": None,
                             "edge.bf16": bf16.to_float32().astype(np.float64),
                             "edge.f32sub": np.array([1e-42, 3.0], dtype=np.float32).astype(np.float64),
                             "edge.large": large.astype(np.float64)})
    return values, grads, pairs


def run(mpaudit: str, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([mpaudit, "tensors", *args], capture_output=True, text=True, timeout=300)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpaudit", required=True)
    args = parser.parse_args()
    check = Checklist("tensors oracle")
    schema = json.loads((Path(__file__).resolve().parents[2] / "reports" / "schema" / "mpaudit.tensors.1.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        values, grads, pairs = make_run(root)
        report_path = root / "report.json"
        common = [str(root / "run"), "--grads", "*.grad", "--master", "weight.*=update.*", "--growth-interval", "1",
                  "--init-scale", "1024", "--json", str(report_path), "--threads", "2"]
        result = run(args.mpaudit, common)
        check(result.returncode == 0, f"exit 0 (got {result.returncode}: {result.stderr.strip()})")
        first = report_path.read_bytes()
        report = json.loads(first)
        check(report["schema"] == "mpaudit.tensors/1" and set(schema["required"]) <= set(report),
              "schema id and every required top-level key")
        check([s["name"] for s in report["steps"]] == ["step_1", "step_2", "step_10"], "steps in natural order")

        for step in report["steps"]:
            for t in step["tensors"]:
                want = values[step["name"]][t["name"]]
                where = f"{step['name']}/{t['name']}"
                if want is None:
                    check(t["kind"] == "integer" and t["count"] == 10 and "formats" not in t, f"{where}: reported as integer")
                    continue
                compare(check, where + ".range", t["range"], range_figures(want))
                for name, fmt in FORMATS.items():
                    compare(check, f"{where}.{name}", t["formats"][name], format_figures(want, fmt))
        roles = {t["name"]: t["role"] for t in report["steps"][0]["tensors"]}
        check(roles["fc1.grad"] == "gradient" and roles["weight.fc1"] == "weight" and roles["update.fc1"] == "update"
              and roles["edge.special"] == "other", "roles from --grads and --master")

        # Loss scale: static over every gradient of every step, and the trajectory.
        fp16 = FORMATS["fp16"]
        finite_grads = [(s, n, g.astype(np.float64)) for s, gs in grads.items() for n, g in gs if np.all(np.isfinite(g))]
        his = {(s, n): window(np.abs(g[g != 0]), 0, fp16) for s, n, g in finite_grads}
        hi = min(w["hi_log2"] for w in his.values())
        lo = max(w["lo_log2"] for w in his.values())
        every = np.sort(np.concatenate([np.abs(g[(g != 0) & np.isfinite(g)]).astype(np.float64) for gs in grads.values() for _, g in gs]))
        absmax = max(float(np.abs(g).max()) for _, _, g in finite_grads)
        static = report["loss_scale"]["static"]
        compare(check, "static", static, {"scale_log2": hi, "scale": 2.0**hi, "headroom_bits": math.log2(fp16["max"] / (absmax * 2.0**hi)),
                                          "flush_frac": flushed_at(every, fp16["min_sub"] / 2, hi) / every.size,
                                          "nonfinite_gradients": ["step_2/fc2.grad"],
                                          "window": {"lo_log2": lo, "hi_log2": hi, "empty": lo > hi}})
        limited = min(his, key=lambda k: his[k]["hi_log2"])
        check(static["limited_by"] == f"{limited[0]}/{limited[1]}", f"static limited by {limited}")
        trajectory = report["loss_scale"]["dynamic"]["trajectory"]
        for got, want in zip(trajectory, simulate(list(grads.values()), 10, 1, 1)):
            compare(check, f"dynamic {got['step']}", got, want)
        check(report["loss_scale"]["dynamic"]["skipped_steps"] == sum(t["skipped"] for t in trajectory), "skipped count")

        # Master weights.
        for got in report["master_weights"]:
            w, d = pairs[got["step"]]
            compare(check, f"master {got['step']}", got, vanishing(w, d))
        check(len(report["master_weights"]) == 3, "one weight/update pair per step")

        # Hysteresis and a learning rate: the update side read as gradients.
        hysteresis_path = root / "hysteresis.json"
        result = run(args.mpaudit, [str(root / "run"), "--grads", "*.grad", "--init-scale", "65536", "--growth-interval", "1",
                                    "--hysteresis", "2", "--json", str(hysteresis_path), "--quiet", "--target", "fp16"])
        check(result.returncode == 0, "hysteresis run exits 0")
        trajectory = json.loads(hysteresis_path.read_text())["loss_scale"]["dynamic"]["trajectory"]
        for got, want in zip(trajectory, simulate(list(grads.values()), 16, 1, 2)):
            compare(check, f"hysteresis {got['step']}", got, want)
        lr_path = root / "lr.json"
        result = run(args.mpaudit, [str(root / "run" / "step_10"), "--master", "weight.*=update.*", "--lr", "0.5",
                                    "--json", str(lr_path), "--quiet"])
        check(result.returncode == 0, "--lr run exits 0")
        w, g = pairs["step_10"]
        compare(check, "master with --lr", json.loads(lr_path.read_text())["master_weights"][0],
                vanishing(w, np.float32(-0.5) * g))

        # Determinism: the same report byte for byte.
        result = run(args.mpaudit, common)
        check(report_path.read_bytes() == first, "a second run writes the same bytes")

        # Gates: exit 1 naming the worst tensor, 0 when it holds.
        gated = run(args.mpaudit, common + ["--fail-on", "fp16.flush_to_zero_frac>0.01", "--fail-on", "skipped_steps>5"])
        check(gated.returncode == 1 and "edge." in gated.stdout, "a failing flush gate exits 1 and names the tensor")
        passing = run(args.mpaudit, common + ["--fail-on", "skipped_steps>5"])
        check(passing.returncode == 0, "a passing gate exits 0")

        # Names are bytes from the file system and archives: one that is not UTF-8 is written as U+FFFD.
        odd = root / "odd"
        odd.mkdir()
        np.save(odd / "grad\udcff.npy", np.ones(3, np.float32))
        odd_report = root / "odd.json"
        result = run(args.mpaudit, [str(odd), "--json", str(odd_report), "--quiet"])
        names = [t["name"] for t in json.loads(odd_report.read_text(encoding="utf-8"))["steps"][0]["tensors"]] \
            if result.returncode == 0 else []
        check(names == ["grad\ufffd"], f"a name that is not UTF-8 is written with U+FFFD (got {result.returncode}, {names})")
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
