#!/usr/bin/env python3
"""`mpaudit fix` on yolox-nano under the detector gate of README "Detectors", and its exported model checked
in onnxruntime on the same samples.

1. Samples, as YOLOX takes them (BGR pixels 0..255, `mpaudit run --preprocess images:bgr --save-inputs`):
   ultraface's photo `1.jpg`, its mirror image, ppocr's `sample.jpg`, and uniform noise in 0..255 (seed 0).
2. `mpaudit fix MODEL --inputs SAMPLES --gate 'max_abs_err<=0.2' --gate 'nonfinite<=0' --export-onnx OUT
   --json REPORT`, timed (model loading included).
3. The exported model passes `onnx.checker.check_model(full_check=True)`; onnxruntime (CPU EP) runs it and the
   FP32 model on every sample, and each output's max abs error and non-finite count against the FP32 model's
   are held to the same gate.

Prints the fix's figures and a markdown table per sample; exits 1 when the exported model misses the gate on a
sample or the fix finds no set.

Usage:
    .venv/bin/python bench/fix_detector.py --mpaudit build/mpaudit [--work DIR] [--extra-args ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared" / "models"
MODEL = SHARED / "yolox-nano" / "yolox_nano.onnx"
PHOTOS = [SHARED / "ultraface-rfb320" / "test_data" / "1.jpg", SHARED / "ppocr-cls-mobile-v2" / "test_data" / "sample.jpg"]
GATE = 0.2  # max_abs_err, with nonfinite <= 0


def make_samples(mpaudit: Path, root: Path) -> list[str]:
    for photo in PHOTOS:
        subprocess.run([str(mpaudit), "run", str(MODEL), "--input", f"images={photo}", "--preprocess", "images:bgr",
                        "--save-inputs", str(root / photo.stem)], check=True, capture_output=True)
    first = np.load(root / PHOTOS[0].stem / "images.npy")
    (root / "mirror").mkdir()
    np.save(root / "mirror" / "images.npy", np.ascontiguousarray(first[..., ::-1]))
    (root / "noise").mkdir()
    np.save(root / "noise" / "images.npy",
            np.random.default_rng(0).uniform(0, 255, first.shape).astype(np.float32))
    return sorted(p.name for p in root.iterdir())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpaudit", type=Path, required=True)
    ap.add_argument("--work", type=Path, help="keep the samples, report and exported model here")
    ap.add_argument("--extra-args", nargs=argparse.REMAINDER, default=[], help="more options for mpaudit fix")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fix-detector-") as tmp:
        work = args.work or Path(tmp)
        samples = work / "samples"
        if not samples.exists():
            samples.mkdir(parents=True)
            make_samples(args.mpaudit, samples)
        report, exported = work / "yolox_nano.fix.json", work / "yolox_nano.fp16.onnx"
        cmd = [str(args.mpaudit), "fix", str(MODEL), "--inputs", str(samples), "--gate", f"max_abs_err<={GATE}",
               "--gate", "nonfinite<=0", "--export-onnx", str(exported), "--json", str(report)] + args.extra_args
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        print(p.stdout)
        if p.returncode != 0:
            print(p.stderr[-2000:], file=sys.stderr)
            return 1
        r = json.loads(report.read_text())
        cost = r["cost"]
        print(f"fix: {len(r['keep'])} nodes kept ({', '.join(k['node'] for k in r['keep'])}), minimal "
              f"{r['minimal']}, {cost['mixed_runs']} runs, {cost['total_run_equivalents']:.2f} full-run "
              f"equivalents, {seconds:.1f} s")

        onnx.checker.check_model(onnx.load(str(exported)), full_check=True)
        reference = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
        mixed = ort.InferenceSession(str(exported), providers=["CPUExecutionProvider"])
        names = [o.name for o in reference.get_outputs()]
        rows = ["| sample | output | max abs err (fp32 model vs exported) | non-finite | gate |", "|---|---|---|---|---|"]
        ok = True
        for sample in sorted(p.name for p in samples.iterdir()):
            feed = {"images": np.load(samples / sample / "images.npy")}
            want, got = reference.run(names, feed), mixed.run(names, feed)
            for name, w, g in zip(names, want, got):
                g = g.astype(np.float64)
                finite = np.isfinite(w)
                bad = int(np.count_nonzero(finite & ~np.isfinite(g)))
                err = float(np.max(np.abs(g[finite] - w[finite]))) if finite.any() else float("nan")
                held = bad == 0 and err <= GATE
                ok &= held
                rows.append(f"| {sample} | {name} | {err:.4f} | {bad} | {'holds' if held else 'FAILS'} |")
        print("\n".join(rows))
        print(f"exported model in onnxruntime {ort.__version__}: {'every sample within the gate' if ok else 'FAILS'}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
