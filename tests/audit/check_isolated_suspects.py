#!/usr/bin/env python3
"""`--isolated suspects` must not change what an audit concludes: on the bundled demo models and the real
models of ../shared/models, every node's verdict and reasons (code, level and message), and each target's
summary (pass, unsafe and warn nodes, first unsafe node, first error jump, culprits, keep-fp32 advice), are
the same as with `--isolated all`; and suspects does skip isolated runs somewhere (the mode is not vacuous).

Usage: check_isolated_suspects.py --mpaudit build/mpaudit
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "golden_reports"))
from check_reports import SHARED, cases  # noqa: E402  (the golden set: demo models and real models)

EXTRA = {
    "yolox_nano": [str(SHARED / "yolox-nano" / "yolox_nano.onnx"), "--samples=2"],
    "ppocr_cls": [str(SHARED / "ppocr-cls-mobile-v2" / "ch_ppocr_mobile_v2.0_cls_infer.onnx"), "--samples=2",
                  "--shape=x=1x3x48x192"],
    "super_resolution": [str(SHARED / "super-resolution-10" / "super_resolution.onnx"), "--samples=2"],
}


def conclusions(report: dict) -> dict:
    nodes = {}
    for node in report["nodes"]:
        key = (node["scope"] or "") + "/" + node["name"]
        nodes[key] = {fmt: (t["verdict"], [(r["code"], r["level"], r["message"]) for r in t["reasons"]],
                            t["consequence"], t["harm_at"], t["roots"])
                      for fmt, t in node["targets"].items()}
    summary = {fmt: {k: s[k] for k in ("verdict", "unsafe_nodes", "warn_nodes", "first_unsafe", "first_error_jump",
                                        "culprits", "keep_fp32")}
               for fmt, s in report["summary"]["targets"].items()}
    return {"nodes": nodes, "summary": summary}


def skipped(report: dict) -> int:
    return sum(t.get("isolated_skipped", 0) for node in report["nodes"] for t in node["targets"].values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpaudit", type=Path, required=True)
    args = parser.parse_args()
    if not (ROOT / SHARED).is_dir():
        print(f"check_isolated_suspects: {ROOT / SHARED} is missing: skipped")
        return 77
    failed, total_skipped = 0, 0
    with tempfile.TemporaryDirectory(prefix="mpaudit-isolated-") as tmp:
        work = Path(tmp)
        models = {**cases(work), **EXTRA}
        for name, argv in models.items():
            reports = {}
            for mode in ("all", "suspects"):
                out = work / f"{name}.{mode}.json"
                run = subprocess.run([str(args.mpaudit.resolve()), "audit", *argv, f"--isolated={mode}", f"--json={out}",
                                      "--quiet"], cwd=ROOT, capture_output=True, text=True)
                if run.returncode not in (0, 1):
                    print(f"{name} --isolated {mode}: exit {run.returncode}: {run.stderr.strip()}")
                    return 1
                reports[mode] = json.loads(out.read_text())
            same = conclusions(reports["all"]) == conclusions(reports["suspects"])
            n = skipped(reports["suspects"])
            total_skipped += n
            runs = sum(node["executions"] * len(node["targets"]) for node in reports["suspects"]["nodes"])
            print(f"{name}: {'same conclusions' if same else 'CONCLUSIONS DIFFER'}; suspects skipped {n} of {runs} "
                  f"node runs' isolated runs")
            if not same:
                failed += 1
                a, s = conclusions(reports["all"]), conclusions(reports["suspects"])
                for key in a["nodes"]:
                    if a["nodes"][key] != s["nodes"].get(key):
                        print(f"  {key}: all {a['nodes'][key]}\n  {' ' * len(key)}  suspects {s['nodes'].get(key)}")
                if a["summary"] != s["summary"]:
                    print(f"  summary: all {a['summary']}\n           suspects {s['summary']}")
    if total_skipped == 0:
        print("suspects skipped no isolated run anywhere")
        failed += 1
    print(f"check_isolated_suspects: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
