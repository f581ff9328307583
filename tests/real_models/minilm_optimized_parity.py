#!/usr/bin/env python3
"""The real transformer as onnxruntime deploys it: all-MiniLM-L6-v2 through onnxruntime's transformer optimizer
(models/make_minilm.py writes .cache/pypi-models/minilm/minilm_{where,mul}_optimized.onnx), whose graphs are
made of com.microsoft contrib ops.

- The optimizer's output holds the contrib ops: EmbedLayerNormalization, SkipLayerNormalization and BiasGelu
  in both mask styles, Attention in the Mul style (onnxruntime 1.22 fuses no Attention with the Where mask).
- FP32 parity: `mpaudit run` matches onnxruntime's CPU EP (graph optimizations off) within 1e-4 relative to
  the output's largest magnitude, on both models.
- An FP16 audit of each model completes with a verdict for every node.
A model with an op mpaudit lacks must be refused with exit 2 naming the op's domain and type (the check
reports which op that is, e.g. com.microsoft Attention before it is supported).

Usage: minilm_optimized_parity.py --mpaudit build/mpaudit   (exit 77 when the models are not built)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from checklist import Checklist  # noqa: E402

MODELS = Path(__file__).resolve().parents[2] / ".cache" / "pypi-models" / "minilm"
OUTPUT = "last_hidden_state"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
CONTRIB = {"where": {"EmbedLayerNormalization", "SkipLayerNormalization", "BiasGelu"},
           "mul": {"EmbedLayerNormalization", "SkipLayerNormalization", "BiasGelu", "Attention"}}
TOLERANCE = 1e-4


def model_path(style: str) -> Path:
    return MODELS / f"minilm_{style}_optimized.onnx"


def input_args() -> list[str]:
    return [f"--input={name}={MODELS / (name + '.npy')}" for name in INPUTS]


def reference(style: str) -> np.ndarray:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(model_path(style)), options, providers=["CPUExecutionProvider"])
    return session.run([OUTPUT], {name: np.load(MODELS / f"{name}.npy") for name in INPUTS})[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpaudit", required=True)
    args = parser.parse_args()
    if not all(model_path(s).is_file() for s in CONTRIB):
        print(f"minilm_optimized_parity: {MODELS} has no optimized models: run scripts/install-deps.sh")
        return 77
    check = Checklist("minilm_optimized_parity")

    with tempfile.TemporaryDirectory(prefix="mpaudit-minilm-opt-") as tmp:
        out = Path(tmp)
        for style, wanted in CONTRIB.items():
            graph = onnx.load(str(model_path(style))).graph
            contrib = {n.op_type for n in graph.node if n.domain == "com.microsoft"}
            check(contrib == wanted, f"{style}: the optimizer emitted com.microsoft {sorted(contrib)}")

            run = subprocess.run([args.mpaudit, "run", str(model_path(style)), *input_args(), "--save-outputs",
                                  str(out / style)], capture_output=True, text=True)
            if run.returncode != 0:
                refused = run.returncode == 2 and "is not supported (domain " in run.stderr
                check(False, f"{style}: mpaudit run exit {run.returncode}"
                             f"{' (refuses an op)' if refused else ''}: {run.stderr.strip()}")
                continue
            want = reference(style)
            got = np.load(out / style / f"{OUTPUT}.npy")
            rel = float(np.max(np.abs(got.astype(np.float64) - want)) / np.max(np.abs(want)))
            check(got.shape == want.shape and rel <= TOLERANCE,
                  f"{style}: FP32 parity with onnxruntime, max abs error / max |y| = {rel:.2e} (<= {TOLERANCE:g})")

            report = out / f"{style}.json"
            audit = subprocess.run([args.mpaudit, "audit", str(model_path(style)), *input_args(), "--quiet",
                                    "--json", str(report)], capture_output=True, text=True)
            if audit.returncode not in (0, 1):
                check(False, f"{style}: FP16 audit exit {audit.returncode}: {audit.stderr.strip()}")
                continue
            result = json.loads(report.read_text())
            summary = result["summary"]["targets"]["fp16"]
            verdicts = {n["name"]: n["targets"]["fp16"]["verdict"] for n in result["nodes"]}
            check(len(verdicts) == len(graph.node) and summary["verdict"] in ("pass", "warn", "fail"),
                  f"{style}: FP16 audit ({summary['verdict']}, exit {audit.returncode}): {len(verdicts)} nodes judged, "
                  f"unsafe {summary['unsafe_nodes']}, output cosine {summary['outputs'][0]['cosine']}")

    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
