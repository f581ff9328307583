#!/usr/bin/env python3
"""Reports that must not change: audits of the bundled demo models and of real models from ../shared/models,
compared byte for byte with the reports committed under tests/golden_reports/<machine>/. A redesign of the
executor, the backends or the probes keeps them identical (each step proves it here); a change that means to
move a figure regenerates them with --update and says why in its commit.

Reports are byte-identical on machines that pick the same vector kernels (AVX-512 or AVX2, in the probes and in
OpenBLAS): <machine> names the instruction set and the CPU model, and a machine with no golden set of its own
skips (exit 77) rather than compare figures that legitimately differ in their last bits.

Usage: check_reports.py --mpaudit build/mpaudit [--update] [--only NAME]
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path("..") / "shared" / "models"  # relative to ROOT, so reports name the same paths everywhere
DEMO = Path("models") / "demo"
ATTENTION_INPUTS = [f"--input=hidden={DEMO / 'attention_hidden.npy'}",
                    f"--input=attention_mask={DEMO / 'attention_mask.npy'}"]


def cases(work: Path) -> dict[str, list[str]]:
    state = work / "silero_state.npy"
    np.save(state, np.zeros((2, 1, 128), dtype=np.float32))
    return {
        "tiny_cnn": [str(DEMO / "tiny_cnn.onnx"), f"--input=image={DEMO / 'digit.npy'}", "--target=fp16",
                     "--target=bf16"],
        "tiny_attention": [str(DEMO / "tiny_attention.onnx"), *ATTENTION_INPUTS],
        "tiny_attention_kept": [str(DEMO / "tiny_attention.onnx"), *ATTENTION_INPUTS,
                                "--keep-fp32=mask/scale,layernorm/add_epsilon", "--target=fp16", "--target=tf32"],
        "mnist8_fp8": [str(SHARED / "mnist-8" / "mnist.onnx"), "--samples=2", "--seed=5", "--target=fp16",
                       "--target=fp8e4m3", "--fp8-scaling=absmax"],
        "silero_vad_fp64": [str(SHARED / "silero-vad" / "silero_vad.onnx"),
                            f"--input=input={SHARED / 'silero-vad' / 'test_data' / 'test.wav'}",
                            "--preprocess=input:offset=8000,length=512", f"--input=state={state}", "--input=sr=16000",
                            "--reference=fp64", "--target=fp16", "--target=bf16"],
        "ultraface": [str(SHARED / "ultraface-rfb320" / "version-RFB-320.onnx"),
                      f"--input=input={SHARED / 'ultraface-rfb320' / 'test_data' / '1.jpg'}",
                      "--preprocess=input:mean=127,std=128"],
    }


# Golden reports made before a change that moves their figures on that machine, and not yet remade there
# (`--update` must run on such a CPU): (machine, case) -> the change. They are reported as stale, not compared.
STALE = {
    (other, "ultraface"): "large FP32 GEMMs moved to oneDNN's sgemm (summation order; on avx512-amd-epyc: at most "
                          "6e-3 relative in one mean_ulp, no count or verdict)"
    for other in ("avx2-amd-epyc",)
}


def machine() -> str:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    flags = re.search(r"^flags\s*:(.*)$", info, re.M)
    isa = "avx512" if flags and " avx512f" in flags.group(1) else "avx2" if flags and " avx2" in flags.group(1) else "scalar"
    model = re.search(r"^model name\s*:(.*)$", info, re.M)
    name = re.sub(r"[^a-z0-9]+", "-", (model.group(1) if model else "unknown").strip().lower()).strip("-")
    return f"{isa}-{name}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpaudit", type=Path, required=True)
    parser.add_argument("--update", action="store_true", help="write the reports of this machine instead of comparing")
    parser.add_argument("--only", action="append")
    args = parser.parse_args()
    golden = Path(__file__).resolve().parent / machine()
    if not args.update and not golden.is_dir():
        print(f"golden_reports: no golden reports for this machine ({machine()}): skipped; "
              f"write them with --update on the commit before a change")
        return 77
    if not (ROOT / SHARED).is_dir():
        print(f"golden_reports: {ROOT / SHARED} is missing: skipped")
        return 77
    failed = 0
    with tempfile.TemporaryDirectory(prefix="mpaudit-golden-") as tmp:
        work = Path(tmp)
        for name, command in cases(work).items():
            if args.only and name not in args.only:
                continue
            if not args.update and (machine(), name) in STALE:
                print(f"stale {name}: not compared on this machine since {STALE[(machine(), name)]}; "
                      f"remake it here with --update")
                continue
            report = work / f"{name}.json"
            run = subprocess.run([str(args.mpaudit.resolve()), "audit", *command, "--quiet", "--json", str(report)],
                                 cwd=ROOT, capture_output=True, text=True)
            if run.returncode not in (0, 1) or not report.is_file():
                print(f"FAIL {name}: exit {run.returncode}: {run.stderr.strip()}")
                failed += 1
                continue
            expected = golden / f"{name}.json.gz"  # gzip without a timestamp: the same bytes for the same report
            if args.update:
                golden.mkdir(parents=True, exist_ok=True)
                expected.write_bytes(gzip.compress(report.read_bytes(), compresslevel=9, mtime=0))
                print(f"wrote {expected.relative_to(ROOT)} ({report.stat().st_size} bytes of report)")
                continue
            want = gzip.decompress(expected.read_bytes())
            if report.read_bytes() == want:
                print(f"ok   {name}: byte-identical ({report.stat().st_size} bytes)")
                continue
            failed += 1
            print(f"FAIL {name}: the report differs from {expected.relative_to(ROOT)}:")
            diff = difflib.unified_diff(want.decode().splitlines(), report.read_text().splitlines(),
                                        "golden", "now", n=2, lineterm="")
            for i, line in enumerate(diff):
                if i == 40:
                    print("  ...")
                    break
                print("  " + line)
    print(f"golden_reports: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
