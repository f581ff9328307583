#!/usr/bin/env python3
"""Generate the small ONNX models bundled with mpaudit (demo and tests).

Every model is built from code with fixed seeds, so re-running this script
produces byte-identical files.  To add a model, write a builder function that
returns a dict ``{relative path: artifact}`` (an ``onnx.ModelProto``, a numpy
array saved as ``.npy`` or a ``str`` saved as text) and register it in
``MODELS`` below, in the style of Polygraphy's ``tests/models/make_models.py``.

Usage:
    .venv/bin/python models/make_models.py [--out models/] [NAME ...]
    .venv/bin/python models/make_models.py --list
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

Artifacts = dict[str, object]

# Registry: model name -> builder.  Builders are defined below; the names are
# resolved lazily so the list can sit at the top of the file.
MODELS: dict[str, str] = {
    "tiny_cnn": "build_tiny_cnn",
    "tiny_attention": "build_tiny_attention",
}

OPSET = 17
IR_VERSION = 8  # the IR version onnx 1.22 pairs with opset 17
PRODUCER = "mpaudit models/make_models.py"


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------

def make_model(graph: onnx.GraphProto, opset: int = OPSET) -> onnx.ModelProto:
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset)],
        producer_name=PRODUCER,
        producer_version="1",
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def init(name: str, array: np.ndarray) -> TensorProto:
    return numpy_helper.from_array(np.array(array, order="C"), name)


# --------------------------------------------------------------------------
# Synthetic digits: strokes rasterised with anti-aliasing (no PIL needed)
# --------------------------------------------------------------------------

def _arc(cx: float, cy: float, rx: float, ry: float, t0: float, t1: float, n: int = 9) -> list[tuple[float, float]]:
    """Points on an elliptic arc; angles in degrees, counter-clockwise, y axis pointing up."""
    t = np.radians(np.linspace(t0, t1, n))
    return [(cx + rx * np.cos(a), cy - ry * np.sin(a)) for a in t]


# Each digit is a list of polylines in a unit box (x right, y down).
DIGIT_STROKES: dict[int, list[list[tuple[float, float]]]] = {
    0: [_arc(0.5, 0.5, 0.27, 0.4, 0, 360, 16)],
    1: [[(0.35, 0.25), (0.52, 0.1), (0.52, 0.9)]],
    2: [_arc(0.5, 0.32, 0.24, 0.21, 165, -35) + [(0.24, 0.9), (0.8, 0.9)]],
    3: [_arc(0.48, 0.3, 0.22, 0.19, 160, -90), _arc(0.48, 0.69, 0.25, 0.21, 90, -165)],
    4: [[(0.66, 0.9), (0.66, 0.1), (0.2, 0.65), (0.82, 0.65)]],
    5: [[(0.76, 0.1), (0.32, 0.1), (0.28, 0.47)] + _arc(0.5, 0.66, 0.26, 0.23, 125, -150)],
    6: [[(0.7, 0.1), (0.48, 0.22), (0.33, 0.42), (0.28, 0.66)], _arc(0.5, 0.68, 0.22, 0.21, 0, 360, 14)],
    7: [[(0.2, 0.1), (0.8, 0.1), (0.42, 0.9)]],
    8: [_arc(0.5, 0.29, 0.19, 0.18, 0, 360, 14), _arc(0.5, 0.69, 0.23, 0.21, 0, 360, 14)],
    9: [_arc(0.5, 0.32, 0.22, 0.21, 0, 360, 14), [(0.72, 0.32), (0.68, 0.62), (0.56, 0.9)]],
}


def _segments(digit: int) -> np.ndarray:
    segs = []
    for line in DIGIT_STROKES[digit]:
        pts = np.asarray(line, dtype=np.float64)
        segs.append(np.stack([pts[:-1], pts[1:]], axis=1))
    return np.concatenate(segs)  # (M, 2, 2)


_GRID = np.stack(np.meshgrid(np.arange(28.0), np.arange(28.0), indexing="xy"), axis=-1).reshape(-1, 2) + 0.5


def render_digit(digit: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """Render one digit as a 28x28 float32 image in [0, 1] (MNIST-like: white on black, ~20 px tall).

    With ``rng`` the digit is randomly rotated, scaled, sheared, shifted and
    drawn with a random stroke width; without it, the canonical glyph is drawn.
    """
    if rng is None:
        angle, scale, shear, shift, half_width = 0.0, 1.0, 0.0, np.zeros(2), 1.4
    else:
        angle = np.radians(rng.uniform(-12, 12))
        scale = rng.uniform(0.85, 1.1)
        shear = rng.uniform(-0.25, 0.25)
        shift = rng.uniform(-2.0, 2.0, size=2)
        half_width = rng.uniform(1.0, 2.0)
    c, s = np.cos(angle), np.sin(angle)
    transform = 20.0 * scale * np.array([[c, -s], [s, c]]) @ np.array([[1.0, shear], [0.0, 1.0]])
    segs = (_segments(digit) - 0.5) @ transform.T + 14.0 + shift  # (M, 2, 2) in pixels
    a, b = segs[:, 0], segs[:, 1]
    ab = b - a
    # distance from each pixel centre to each segment
    ap = _GRID[:, None, :] - a[None]
    t = np.clip((ap * ab).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-12), 0.0, 1.0)
    dist = np.linalg.norm(ap - t[..., None] * ab, axis=-1).min(axis=1)
    img = np.clip(half_width + 0.5 - dist, 0.0, 1.0)
    return img.reshape(28, 28).astype(np.float32)


def digit_dataset(per_class: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    images, labels = [], []
    for _ in range(per_class):
        for d in range(10):
            images.append(render_digit(d, rng))
            labels.append(d)
    return np.stack(images)[:, None], np.asarray(labels)


# --------------------------------------------------------------------------
# numpy reference layers (float64), used to fit the tiny CNN's weights
# --------------------------------------------------------------------------

def np_conv3x3(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NCHW 3x3 convolution, stride 1, pad 1."""
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    n, c, h, wd = x.shape
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # N,C,H,W,3,3
    cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * wd, c * 9)
    out = cols @ w.reshape(len(w), -1).T + b  # (N*H*W, O)
    return out.reshape(n, h, wd, -1).transpose(0, 3, 1, 2)


def np_maxpool2(x: np.ndarray) -> np.ndarray:
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


# --------------------------------------------------------------------------
# tiny_cnn: the demo model
# --------------------------------------------------------------------------

def _conv1_filters() -> np.ndarray:
    """Eight hand-made 3x3 feature detectors: edges in four directions, two diagonals, a centre-surround and a blur."""
    sobel_x = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=np.float64) / 4
    sobel_y = sobel_x.T
    diag = np.array([[0, 1, 2], [-1, 0, 1], [-2, -1, 0]], dtype=np.float64) / 4
    centre = np.array([[-1, -1, -1], [-1, 8, -1], [-1, -1, -1]], dtype=np.float64) / 8
    blur = np.full((3, 3), 1 / 9)
    filters = [sobel_x, -sobel_x, sobel_y, -sobel_y, diag, diag[:, ::-1], centre, blur]
    return np.stack(filters)[:, None]  # (8, 1, 3, 3)


def build_tiny_cnn() -> Artifacts:
    """Digit classifier: Conv(8)+BN+Relu+MaxPool -> Conv(16)+Relu+MaxPool -> Flatten -> Gemm(10) -> Softmax.

    conv1 holds hand-made edge detectors; the BatchNormalization statistics are
    the real per-channel mean/variance of conv1's output on synthetic digits;
    conv2 is seeded He-normal noise; the Gemm is fitted by ridge regression on
    the features of 1500 synthetic digits, then sharpened so that Softmax gives
    confident probabilities.
    """
    rng = np.random.default_rng(20240917)
    x_train, y_train = digit_dataset(per_class=150, seed=1)
    n_train = len(y_train)

    w1 = _conv1_filters()
    b1 = np.zeros(8)
    c1 = np_conv3x3(x_train.astype(np.float64), w1, b1)
    bn_mean = c1.mean(axis=(0, 2, 3))
    bn_var = c1.var(axis=(0, 2, 3))
    bn_gamma = np.ones(8)
    bn_beta = np.full(8, 0.1)
    bn_eps = 1e-5

    w2 = rng.standard_normal((16, 8, 3, 3)) * np.sqrt(2.0 / (8 * 9))
    b2 = rng.uniform(-0.1, 0.1, 16)

    # Quantise the conv weights to float32 first so the features match what the ONNX model computes.
    w1, bn_mean, bn_var, w2, b2 = (a.astype(np.float32).astype(np.float64) for a in (w1, bn_mean, bn_var, w2, b2))

    def features(x: np.ndarray) -> np.ndarray:
        h = np_conv3x3(x.astype(np.float64), w1, b1)
        h = (h - bn_mean[None, :, None, None]) / np.sqrt(bn_var[None, :, None, None] + bn_eps) * bn_gamma[None, :, None, None] + bn_beta[None, :, None, None]
        h = np_maxpool2(np.maximum(h, 0.0))
        h = np_maxpool2(np.maximum(np_conv3x3(h, w2, b2), 0.0))
        return h.reshape(len(x), -1)  # (N, 784)

    feats = features(x_train)
    a = np.concatenate([feats, np.ones((len(feats), 1))], axis=1)
    targets = np.eye(10)[y_train]
    ridge = 1.0
    coef = np.linalg.solve(a.T @ a + ridge * np.eye(a.shape[1]), a.T @ targets)  # (785, 10)
    sharpen = 5.0
    w3 = (coef[:-1].T * sharpen).astype(np.float32)  # (10, 784), used with transB=1
    b3 = (coef[-1] * sharpen).astype(np.float32)

    f32 = np.float32
    nodes = [
        helper.make_node("Conv", ["image", "conv1.weight", "conv1.bias"], ["conv1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["conv1", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"], ["bn1"],
                         name="bn1", epsilon=bn_eps, momentum=0.9),
        helper.make_node("Relu", ["bn1"], ["relu1"], name="relu1"),
        helper.make_node("MaxPool", ["relu1"], ["pool1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool1", "conv2.weight", "conv2.bias"], ["conv2"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["conv2"], ["relu2"], name="relu2"),
        helper.make_node("MaxPool", ["relu2"], ["pool2"], name="pool2", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool2"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1),
    ]
    initializers = [
        init("conv1.weight", w1.astype(f32)), init("conv1.bias", b1.astype(f32)),
        init("bn1.scale", bn_gamma.astype(f32)), init("bn1.bias", bn_beta.astype(f32)),
        init("bn1.mean", bn_mean.astype(f32)), init("bn1.var", bn_var.astype(f32)),
        init("conv2.weight", w2.astype(f32)), init("conv2.bias", b2.astype(f32)),
        init("fc.weight", w3), init("fc.bias", b3),
    ]
    graph = helper.make_graph(
        nodes, "tiny_cnn",
        inputs=[helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 1, 28, 28])],
        outputs=[helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 10])],
        initializer=initializers,
        doc_string="Tiny digit classifier generated by models/make_models.py (synthetic weights, see demo/README.md).",
    )
    model = make_model(graph)

    digit = render_digit(3)[None, None]  # canonical '3', (1, 1, 28, 28)

    # Expected output and held-out accuracy, computed by onnxruntime.
    import onnxruntime as ort
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    probs = sess.run(None, {"image": digit})[0][0]
    x_test, y_test = digit_dataset(per_class=50, seed=2)
    correct = sum(int(np.argmax(sess.run(None, {"image": x[None]})[0]) == y) for x, y in zip(x_test, y_test))
    pred = int(np.argmax(probs))
    n_params = sum(int(np.prod(t.dims)) for t in initializers)

    readme = f"""# Demo model: tiny_cnn

`tiny_cnn.onnx` is a small MNIST-style digit classifier generated by
[`models/make_models.py`](../make_models.py) (run `.venv/bin/python models/make_models.py`;
the output is byte-identical on every run). It is not trained on MNIST: it is built
from code in a few seconds, so that the repository carries no opaque weights.
This README is written by the same script: edit the script, not this file.

- Opset {OPSET}, {n_params} parameters, float32.
- Input `image`: float32 `[1, 1, 28, 28]`, white digit on black, values in [0, 1].
- Output `probabilities`: float32 `[1, 10]`, Softmax over the digits 0-9.
- Graph: Conv(8, 3x3, pad 1) + BatchNormalization + Relu + MaxPool(2)
  -> Conv(16, 3x3, pad 1) + Relu + MaxPool(2) -> Flatten -> Gemm(10) -> Softmax.

## How the weights were made

- `conv1`: eight hand-made 3x3 filters (Sobel edges in four directions, two
  diagonals, a centre-surround and a blur).
- `bn1`: the real per-channel mean and variance of conv1's output over {n_train}
  synthetic digits (gamma 1, beta 0.1, epsilon 1e-5), so BatchNormalization
  is not an identity.
- `conv2`: He-normal noise from a fixed seed.
- `fc` (Gemm): fitted by ridge regression (numpy) on the conv features of
  {n_train} synthetic digits rendered from strokes with random rotation, scale,
  shear, shift and stroke width, then multiplied by {sharpen:g} to sharpen the
  Softmax. On {len(y_test)} held-out synthetic digits it classifies {correct / len(y_test):.1%} correctly.

## Demo input and expected output

`digit.npy` is a float32 `[1, 1, 28, 28]` rendering of the digit 3.
With onnxruntime {ort.__version__} (CPU) the model predicts class **{pred}** with
probability **{probs[pred]:.4f}**. All ten probabilities:

```
{np.array2string(probs, precision=6, floatmode="fixed", separator=", ", max_line_width=90)}
```

A correct run of `mpaudit run tiny_cnn.onnx --input image=digit.npy` gives the
same class and probabilities within float32 rounding (about 1e-6).
"""
    return {
        "demo/tiny_cnn.onnx": model,
        "demo/digit.npy": digit,
        "demo/README.md": readme,
    }


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def build_tiny_attention() -> Artifacts:
    """A one-layer transformer encoder block written the way exporters write BERT-style models, with two
    FP16 traps that real models ship with: the additive attention mask (1 - mask) * -1e9 (the constant
    overflows FP16 to -inf and kept positions compute 0 * -inf = NaN) and a decomposed LayerNorm whose
    epsilon 1e-12 flushes to zero in FP16. mpaudit's demo audits it and names both."""
    rng = np.random.default_rng(20261122)
    seq, hidden = 16, 32
    scale = 1.0 / np.sqrt(hidden)

    def weight(name: str, shape: tuple[int, ...], std: float) -> TensorProto:
        return init(name, (rng.standard_normal(shape) * std).astype(np.float32))

    inits = [
        weight("wq", (hidden, hidden), scale), weight("wk", (hidden, hidden), scale),
        weight("wv", (hidden, hidden), scale), weight("wo", (hidden, hidden), scale),
        init("one", np.array(1.0, np.float32)),
        init("mask_value", np.array(-1e9, np.float32)),
        init("mask_shape", np.array([1, 1, 1, seq], np.int64)),
        init("inv_sqrt_d", np.array(scale, np.float32)),
        init("two", np.array(2.0, np.float32)),
        init("epsilon", np.array(1e-12, np.float32)),
        init("axes", np.array([-1], np.int64)),
        init("gamma", np.ones(hidden, np.float32)),
        init("beta", np.zeros(hidden, np.float32)),
    ]
    n = helper.make_node
    nodes = [
        n("Sub", ["one", "attention_mask"], ["mask_inverted"], name="mask/invert"),
        n("Mul", ["mask_inverted", "mask_value"], ["mask_bias_flat"], name="mask/scale"),
        n("Reshape", ["mask_bias_flat", "mask_shape"], ["mask_bias"], name="mask/reshape"),
        n("MatMul", ["hidden", "wq"], ["q"], name="attention/query"),
        n("MatMul", ["hidden", "wk"], ["k"], name="attention/key"),
        n("MatMul", ["hidden", "wv"], ["v"], name="attention/value"),
        n("Transpose", ["k"], ["k_t"], perm=[0, 2, 1], name="attention/key_transpose"),
        n("MatMul", ["q", "k_t"], ["scores_raw"], name="attention/scores"),
        n("Mul", ["scores_raw", "inv_sqrt_d"], ["scores"], name="attention/scale"),
        n("Unsqueeze", ["scores", "zero_axis"], ["scores_4d"], name="attention/unsqueeze"),
        n("Add", ["scores_4d", "mask_bias"], ["masked_scores"], name="attention/add_mask"),
        n("Softmax", ["masked_scores"], ["probs_4d"], axis=-1, name="attention/softmax"),
        n("Squeeze", ["probs_4d", "zero_axis"], ["probs"], name="attention/squeeze"),
        n("MatMul", ["probs", "v"], ["context"], name="attention/context"),
        n("MatMul", ["context", "wo"], ["projected"], name="attention/output"),
        n("Add", ["hidden", "projected"], ["residual"], name="residual"),
        n("ReduceMean", ["residual", "axes"], ["mean"], name="layernorm/mean"),
        n("Sub", ["residual", "mean"], ["centered"], name="layernorm/center"),
        n("Pow", ["centered", "two"], ["squared"], name="layernorm/square"),
        n("ReduceMean", ["squared", "axes"], ["variance"], name="layernorm/variance"),
        n("Add", ["variance", "epsilon"], ["variance_eps"], name="layernorm/add_epsilon"),
        n("Sqrt", ["variance_eps"], ["std"], name="layernorm/std"),
        n("Div", ["centered", "std"], ["normalized"], name="layernorm/normalize"),
        n("Mul", ["normalized", "gamma"], ["scaled"], name="layernorm/gamma"),
        n("Add", ["scaled", "beta"], ["output"], name="layernorm/beta"),
    ]
    inits.append(init("zero_axis", np.array([1], np.int64)))
    graph = helper.make_graph(
        nodes, "tiny_attention",
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, seq, hidden]),
         helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, [1, seq])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, seq, hidden])],
        inits,
    )
    hidden_in = rng.standard_normal((1, seq, hidden)).astype(np.float32)
    mask = np.ones((1, seq), np.float32)
    mask[0, 12:] = 0.0  # the last four positions are padding
    return {
        "demo/tiny_attention.onnx": make_model(graph, opset=18),  # ReduceMean takes axes as an input
        "demo/attention_hidden.npy": hidden_in,
        "demo/attention_mask.npy": mask,
    }

def write_artifact(path: Path, artifact: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(artifact, onnx.ModelProto):
        path.write_bytes(artifact.SerializeToString())
    elif isinstance(artifact, np.ndarray):
        with path.open("wb") as f:
            np.save(f, artifact, allow_pickle=False)
    elif isinstance(artifact, str):
        path.write_text(artifact, encoding="utf-8")
    else:
        raise TypeError(f"{path}: unsupported artifact type {type(artifact).__name__}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent,
                        help="output folder (default: the models/ folder this script is in)")
    parser.add_argument("--list", action="store_true", help="list the registered models and exit")
    parser.add_argument("names", nargs="*", help="models to build (default: all)")
    args = parser.parse_args(argv)

    if args.list:
        for name in MODELS:
            print(name)
        return 0
    unknown = [n for n in args.names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)}; known: {', '.join(MODELS)}")

    for name in args.names or list(MODELS):
        builder: Callable[[], Artifacts] = globals()[MODELS[name]]
        for rel, artifact in builder().items():
            path = args.out / rel
            write_artifact(path, artifact)
            print(f"{name}: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
