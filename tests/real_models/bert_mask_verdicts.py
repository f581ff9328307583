#!/usr/bin/env python3
"""Verdicts by consequence on a real trained encoder: all-MiniLM-L6-v2 (6 layers) as ONNX in the two
attention-mask styles PyTorch exports produce (models/make_minilm.py, fetched and built by
scripts/install-deps.sh into .cache/pypi-models/minilm/).

- Where style (transformers 5): -3.4e38 is -inf in fp16, and every Softmax absorbs it. The audit passes;
  the mask constant, the Where and the six attention Adds are warns naming their Softmax.
- Mul style (transformers 4.x): (1 - mask) * -3.4e38 makes 0 x -inf = NaN in fp16 at every output value.
  The audit fails with exactly the root (the constant) and the product, and its advice, verified, passes.
- Keeping the eight nodes the audit once blamed in the Where style passes too (the advice converges).

Usage: bert_mask_verdicts.py --mpaudit build/mpaudit   (exit 77 when the models are not built)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from checklist import Checklist  # noqa: E402

MODELS = Path(__file__).resolve().parents[2] / ".cache" / "pypi-models" / "minilm"
OUTPUT = "last_hidden_state"
ADDS = [f"/encoder/layer.{i}/attention/self/Add" for i in range(6)]
SOFTMAXES = [f"/encoder/layer.{i}/attention/self/Softmax" for i in range(6)]


def audit(mpaudit: str, style: str, out: Path, *extra: str) -> tuple[int, dict]:
    report = out / f"{style}{len(extra)}.json"
    inputs = [f"--input={name}={MODELS / (name + '.npy')}" for name in ("input_ids", "attention_mask", "token_type_ids")]
    run = subprocess.run([mpaudit, "audit", str(MODELS / f"minilm_{style}.onnx"), *inputs, "--quiet",
                          "--json", str(report), *extra], capture_output=True, text=True)
    if run.returncode not in (0, 1):
        sys.exit(f"mpaudit audit {style} {extra}: exit {run.returncode}: {run.stderr}")
    return run.returncode, json.loads(report.read_text())


def node_targets(report: dict) -> dict[str, dict]:
    return {n["name"]: n["targets"]["fp16"] for n in report["nodes"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpaudit", required=True)
    args = parser.parse_args()
    if not all((MODELS / f"minilm_{s}.onnx").is_file() for s in ("where", "mul")):
        print(f"bert_mask_verdicts: {MODELS} has no models: run scripts/install-deps.sh")
        return 77
    check = Checklist("bert_mask_verdicts")

    with tempfile.TemporaryDirectory(prefix="mpaudit-bert-") as tmp:
        out = Path(tmp)
        code, where = audit(args.mpaudit, "where", out)
        summary = where["summary"]["targets"]["fp16"]
        targets = node_targets(where)
        output = summary["outputs"][0]
        check(code == 0 and summary["verdict"] == "pass", f"where style passes (exit {code})")
        check(summary["unsafe_nodes"] == [], f"where style: no unsafe node ({summary['unsafe_nodes']})")
        blamed_before = ["/Constant_3", "/Where", *ADDS]
        check(sorted(summary["warn_nodes"]) == sorted(blamed_before),
              f"where style: the mask constant, the Where and the six Adds are warns ({summary['warn_nodes']})")
        for add, softmax in zip(ADDS, SOFTMAXES):
            check(targets[add]["consequence"] == f"absorbed by '{softmax}'",
                  f"{add}: {targets[add]['consequence']}")
        check(output["cosine"] is not None and output["cosine"] > 0.9999,
              f"where style: output cosine {output['cosine']}, SQNR {output['sqnr_db']} dB")

        code, mul = audit(args.mpaudit, "mul", out)
        summary = mul["summary"]["targets"]["fp16"]
        targets = node_targets(mul)
        check(code == 1 and summary["verdict"] == "fail", f"mul style fails (exit {code})")
        check(summary["unsafe_nodes"] == ["/Constant_3", "/Mul"],
              f"mul style: unsafe = the constant and the product ({summary['unsafe_nodes']})")
        root = targets["/Constant_3"]
        check(root["harm_at"] == "/Mul", f"the constant is the root, harm appears at /Mul ({root['harm_at']})")
        check(f"NaN reaches output '{OUTPUT}': 9216 of 9216 values" in (root["consequence"] or ""),
              f"the root's consequence: {root['consequence']}")
        check(targets["/Mul"]["roots"] == ["/Constant_3"], f"/Mul names its root ({targets['/Mul']['roots']})")
        for add in ADDS:
            check(targets[add]["verdict"] == "warn", f"mul style: {add} is a warn ({targets[add]['verdict']})")
        advice = summary["advice"]
        check(advice["verified"] and summary["keep_fp32"] == ["/Constant_3", "/Mul"],
              f"mul style: verified advice {summary['keep_fp32']} ({advice})")

        code, kept = audit(args.mpaudit, "mul", out, "--keep-fp32", ",".join(summary["keep_fp32"]))
        check(code == 0, f"mul style with the advice applied passes (exit {code}, "
                         f"cosine {kept['summary']['targets']['fp16']['outputs'][0]['cosine']})")
        code, _ = audit(args.mpaudit, "where", out, "--keep-fp32", ",".join(blamed_before))
        check(code == 0, f"where style with the eight nodes once blamed kept in fp32 passes (exit {code})")

    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
