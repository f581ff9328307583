#!/usr/bin/env python3
"""Generate the benchmark models: a ResNet-50-style CNN, a BERT-base-style encoder and an LSTM
speech encoder.

Both are laid out the way a PyTorch export lays them out (Conv, BatchNormalization
and Relu as separate nodes; attention as MatMul/Add/Reshape/Transpose/MatMul/Div/
Softmax/MatMul; GELU written with Erf), opset 17, with deterministic random
weights (numpy PCG64 seeds) scaled so that activations stay finite and of unit
order.  The weights are untrained: the models are for timing and for comparing
outputs between runtimes, not for predictions.  Re-running the script writes
byte-identical files.

Usage:
    .venv/bin/python bench/make_models.py --out build/bench-models [--only resnet50]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
PRODUCER = "mpaudit bench/make_models.py"


class GraphBuilder:
    """Accumulates nodes and initializers with unique, PyTorch-export-like names."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._counts: dict[str, int] = {}

    def param(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.array(array, order="C"), name))
        return name

    def const_i64(self, name: str, values: list[int]) -> str:
        return self.param(name, np.asarray(values, dtype=np.int64))

    def const_f32(self, name: str, value: float) -> str:
        return self.param(name, np.asarray(value, dtype=np.float32))

    def normal(self, shape: tuple[int, ...], std: float) -> np.ndarray:
        return (self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(np.float32)

    def uniform(self, shape: tuple[int, ...], low: float, high: float) -> np.ndarray:
        return self.rng.uniform(low, high, shape).astype(np.float32)

    def op(self, op_type: str, inputs: list[str], prefix: str | None = None, **attrs) -> str:
        base = prefix or op_type
        n = self._counts.get(base, 0)
        self._counts[base] = n + 1
        name = f"/{base}_{n}" if prefix is None else f"{base}" if n == 0 else f"{base}_{n}"
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=name, **attrs))
        return out

    def model(self, name: str, inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
              rename: dict[str, str]) -> onnx.ModelProto:
        # Give the graph outputs their public names.
        for node in self.nodes:
            node.output[:] = [rename.get(o, o) for o in node.output]
            node.input[:] = [rename.get(i, i) for i in node.input]
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name=PRODUCER, producer_version="1")
        model.ir_version = IR_VERSION
        return model


def count_params(model: onnx.ModelProto) -> int:
    return sum(int(np.prod(t.dims)) for t in model.graph.initializer
               if t.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE))


# --------------------------------------------------------------------------
# ResNet-50
# --------------------------------------------------------------------------

def build_resnet50() -> onnx.ModelProto:
    """torchvision-style ResNet-50 v1.5 (stride on the 3x3 conv), bottleneck blocks [3, 4, 6, 3]."""
    g = GraphBuilder(seed=50)

    def conv_bn(x: str, name: str, cin: int, cout: int, k: int, stride: int, relu: bool, gamma_scale: float = 1.0) -> str:
        w = g.param(f"{name}.weight", g.normal((cout, cin, k, k), np.sqrt(2.0 / (cin * k * k))))
        pad = k // 2
        y = g.op("Conv", [x, w], prefix=f"/{name}/Conv", kernel_shape=[k, k], strides=[stride, stride],
                 pads=[pad] * 4, dilations=[1, 1], group=1)
        bn = name.replace("conv", "bn").replace("downsample.0", "downsample.1")
        scale = g.param(f"{bn}.weight", g.uniform((cout,), 0.8, 1.2) * np.float32(gamma_scale))
        bias = g.param(f"{bn}.bias", g.normal((cout,), 0.05))
        mean = g.param(f"{bn}.running_mean", g.normal((cout,), 0.05))
        var = g.param(f"{bn}.running_var", g.uniform((cout,), 0.8, 1.2))
        y = g.op("BatchNormalization", [y, scale, bias, mean, var], prefix=f"/{bn}/BatchNormalization",
                 epsilon=1e-5, momentum=0.9)
        if relu:
            y = g.op("Relu", [y], prefix=f"/{name}/Relu")
        return y

    x = conv_bn("input", "conv1", 3, 64, 7, 2, relu=True)
    x = g.op("MaxPool", [x], prefix="/maxpool/MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])

    cin = 64
    n_blocks = sum([3, 4, 6, 3])
    for stage, (blocks, width) in enumerate(zip([3, 4, 6, 3], [64, 128, 256, 512]), start=1):
        for b in range(blocks):
            stride = 2 if (b == 0 and stage > 1) else 1
            pre = f"layer{stage}.{b}"
            cout = width * 4
            h = conv_bn(x, f"{pre}.conv1", cin, width, 1, 1, relu=True)
            h = conv_bn(h, f"{pre}.conv2", width, width, 3, stride, relu=True)
            # Damp the residual branch so the activation scale grows slowly with depth.
            h = conv_bn(h, f"{pre}.conv3", width, cout, 1, 1, relu=False, gamma_scale=1.0 / np.sqrt(n_blocks))
            if b == 0:
                shortcut = conv_bn(x, f"{pre}.downsample.0", cin, cout, 1, stride, relu=False)
            else:
                shortcut = x
            x = g.op("Add", [h, shortcut], prefix=f"/{pre}/Add")
            x = g.op("Relu", [x], prefix=f"/{pre}/relu/Relu")
            cin = cout

    x = g.op("GlobalAveragePool", [x], prefix="/avgpool/GlobalAveragePool")
    x = g.op("Flatten", [x], prefix="/Flatten", axis=1)
    w = g.param("fc.weight", g.normal((1000, 2048), np.sqrt(1.0 / 2048)))
    b = g.param("fc.bias", g.normal((1000,), 0.01))
    logits = g.op("Gemm", [x, w, b], prefix="/fc/Gemm", alpha=1.0, beta=1.0, transB=1)

    return g.model(
        "resnet50",
        inputs=[helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])],
        outputs=[helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1000])],
        rename={logits: "output"},
    )


# --------------------------------------------------------------------------
# BERT-base
# --------------------------------------------------------------------------

BERT_VOCAB = 30522
BERT_SEQ = 128


def build_bert_base() -> onnx.ModelProto:
    """HF BertModel-style encoder: 12 layers, hidden 768, 12 heads, FFN 3072, sequence 128, plus the pooler."""
    g = GraphBuilder(seed=110)
    hidden, heads, ffn, layers, max_pos = 768, 12, 3072, 12, 512
    head_dim = hidden // heads
    xavier = np.sqrt(1.0 / hidden)  # keeps q.k / sqrt(d) of unit order after LayerNorm

    def linear(x: str, name: str, fan_in: int, fan_out: int, std: float) -> str:
        w = g.param(f"{name}.weight", g.normal((fan_in, fan_out), std))  # stored transposed, as exported
        b = g.param(f"{name}.bias", g.normal((fan_out,), 0.02))
        y = g.op("MatMul", [x, w], prefix=f"/{name}/MatMul")
        return g.op("Add", [b, y], prefix=f"/{name}/Add")

    def layer_norm(x: str, name: str) -> str:
        scale = g.param(f"{name}.weight", np.ones(hidden, dtype=np.float32))
        bias = g.param(f"{name}.bias", np.zeros(hidden, dtype=np.float32))
        return g.op("LayerNormalization", [x, scale, bias], prefix=f"/{name}/LayerNormalization",
                    axis=-1, epsilon=1e-12)

    # Embeddings: word + position (+ token type 0, folded into a constant row as an exported model with
    # a constant token_type_ids would compute it), then LayerNorm.
    word = g.param("embeddings.word_embeddings.weight", g.normal((BERT_VOCAB, hidden), 0.02))
    pos_table = g.param("embeddings.position_embeddings.weight", g.normal((max_pos, hidden), 0.02))
    type_table = g.param("embeddings.token_type_embeddings.weight", g.normal((2, hidden), 0.02))
    pos_ids = g.param("embeddings.position_ids", np.arange(BERT_SEQ, dtype=np.int64)[None])
    type_ids = g.param("embeddings.token_type_ids", np.zeros((1, BERT_SEQ), dtype=np.int64))
    e = g.op("Gather", [word, "input_ids"], prefix="/embeddings/word_embeddings/Gather", axis=0)
    t = g.op("Gather", [type_table, type_ids], prefix="/embeddings/token_type_embeddings/Gather", axis=0)
    e = g.op("Add", [e, t], prefix="/embeddings/Add")
    p = g.op("Gather", [pos_table, pos_ids], prefix="/embeddings/position_embeddings/Gather", axis=0)
    e = g.op("Add", [e, p], prefix="/embeddings/Add_1")
    x = layer_norm(e, "embeddings.LayerNorm")

    split_shape = g.const_i64("const.split_heads_shape", [1, BERT_SEQ, heads, head_dim])
    merge_shape = g.const_i64("const.merge_heads_shape", [1, BERT_SEQ, hidden])
    sqrt_d = g.const_f32("const.sqrt_head_dim", np.sqrt(head_dim))
    sqrt2 = g.const_f32("const.sqrt2", np.sqrt(2.0))
    one = g.const_f32("const.one", 1.0)
    half = g.const_f32("const.half", 0.5)

    for i in range(layers):
        pre = f"encoder.layer.{i}"
        a = f"{pre}.attention.self"

        def heads_view(t: str, name: str, perm: list[int]) -> str:
            r = g.op("Reshape", [t, split_shape], prefix=f"/{a}/{name}/Reshape")
            return g.op("Transpose", [r], prefix=f"/{a}/{name}/Transpose", perm=perm)

        q = heads_view(linear(x, f"{a}.query", hidden, hidden, xavier), "query", [0, 2, 1, 3])
        k = heads_view(linear(x, f"{a}.key", hidden, hidden, xavier), "key", [0, 2, 3, 1])
        v = heads_view(linear(x, f"{a}.value", hidden, hidden, xavier), "value", [0, 2, 1, 3])
        s = g.op("MatMul", [q, k], prefix=f"/{a}/MatMul")
        s = g.op("Div", [s, sqrt_d], prefix=f"/{a}/Div")
        s = g.op("Add", [s, "attention_mask"], prefix=f"/{a}/Add")
        s = g.op("Softmax", [s], prefix=f"/{a}/Softmax", axis=-1)
        c = g.op("MatMul", [s, v], prefix=f"/{a}/MatMul_1")
        c = g.op("Transpose", [c], prefix=f"/{a}/Transpose", perm=[0, 2, 1, 3])
        c = g.op("Reshape", [c, merge_shape], prefix=f"/{a}/Reshape")
        o = linear(c, f"{pre}.attention.output.dense", hidden, hidden, xavier)
        o = g.op("Add", [o, x], prefix=f"/{pre}/attention/output/Add")
        x = layer_norm(o, f"{pre}.attention.output.LayerNorm")

        h = linear(x, f"{pre}.intermediate.dense", hidden, ffn, np.sqrt(2.0 / (hidden + ffn)))
        # GELU(h) = h * 0.5 * (1 + erf(h / sqrt(2))), as torch.onnx exports nn.GELU()
        gp = f"/{pre}/intermediate/intermediate_act_fn"
        gd = g.op("Div", [h, sqrt2], prefix=f"{gp}/Div")
        ge = g.op("Erf", [gd], prefix=f"{gp}/Erf")
        ga = g.op("Add", [ge, one], prefix=f"{gp}/Add")
        gm = g.op("Mul", [h, ga], prefix=f"{gp}/Mul")
        h = g.op("Mul", [gm, half], prefix=f"{gp}/Mul_1")
        o = linear(h, f"{pre}.output.dense", ffn, hidden, np.sqrt(2.0 / (hidden + ffn)))
        o = g.op("Add", [o, x], prefix=f"/{pre}/output/Add")
        x = layer_norm(o, f"{pre}.output.LayerNorm")

    # Pooler: tanh(dense(hidden state of the first token))
    cls_index = g.param("const.cls_index", np.asarray(0, dtype=np.int64))
    cls = g.op("Gather", [x, cls_index], prefix="/pooler/Gather", axis=1)
    pw = g.param("pooler.dense.weight", g.normal((hidden, hidden), xavier))
    pb = g.param("pooler.dense.bias", g.normal((hidden,), 0.02))
    pooled = g.op("Gemm", [cls, pw, pb], prefix="/pooler/dense/Gemm", transB=1)
    pooled = g.op("Tanh", [pooled], prefix="/pooler/activation/Tanh")

    return g.model(
        "bert_base",
        inputs=[
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, BERT_SEQ]),
            helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, [1, 1, 1, BERT_SEQ]),
        ],
        outputs=[
            helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, BERT_SEQ, hidden]),
            helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, [1, hidden]),
        ],
        rename={x: "last_hidden_state", pooled: "pooler_output"},
    )


# --------------------------------------------------------------------------
# LSTM speech encoder
# --------------------------------------------------------------------------

LSTM_FRAMES, LSTM_FEATURES, LSTM_HIDDEN = 200, 80, 256


def build_lstm() -> onnx.ModelProto:
    """A DeepSpeech/ASR-style encoder over 200 frames of 80 log-mel features: a projection, two stacked
    bidirectional LSTM layers of 256 units (PyTorch's export: Transpose in, LSTM, Transpose + Reshape to
    concatenate the directions), and a per-frame linear classifier over 29 characters."""
    g = GraphBuilder(seed=7)
    h = LSTM_HIDDEN
    x = g.op("MatMul", ["features", g.param("proj.weight", g.normal((LSTM_FEATURES, h), np.sqrt(1.0 / LSTM_FEATURES)))],
             prefix="/proj/MatMul")
    x = g.op("Add", [x, g.param("proj.bias", g.normal((h,), 0.02))], prefix="/proj/Add")
    x = g.op("Transpose", [x], prefix="/Transpose", perm=[1, 0, 2])  # [frames, batch, features]
    width = h
    for layer in range(2):
        scale = np.sqrt(1.0 / h)
        w = g.param(f"lstm.{layer}.W", g.uniform((2, 4 * h, width), -scale, scale))
        r = g.param(f"lstm.{layer}.R", g.uniform((2, 4 * h, h), -scale, scale))
        b = g.param(f"lstm.{layer}.B", g.uniform((2, 8 * h), -scale, scale))
        y = g.op("LSTM", [x, w, r, b], prefix=f"/lstm.{layer}/LSTM", hidden_size=h, direction="bidirectional")
        y = g.op("Transpose", [y], prefix=f"/lstm.{layer}/Transpose", perm=[0, 2, 1, 3])  # [frames, batch, 2, h]
        x = g.op("Reshape", [y, g.const_i64(f"lstm.{layer}.shape", [LSTM_FRAMES, 1, 2 * h])], prefix=f"/lstm.{layer}/Reshape")
        width = 2 * h
    x = g.op("Transpose", [x], prefix="/Transpose_out", perm=[1, 0, 2])
    logits = g.op("MatMul", [x, g.param("classifier.weight", g.normal((2 * h, 29), np.sqrt(1.0 / (2 * h))))],
                  prefix="/classifier/MatMul")
    logits = g.op("Add", [logits, g.param("classifier.bias", g.normal((29,), 0.02))], prefix="/classifier/Add")
    return g.model(
        "lstm",
        inputs=[helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, LSTM_FRAMES, LSTM_FEATURES])],
        outputs=[helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, LSTM_FRAMES, 29])],
        rename={logits: "logits"},
    )


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "resnet50": build_resnet50,
    "bert_base": build_bert_base,
    "lstm": build_lstm,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--only", action="append", choices=list(MODELS), help="build only this model (repeatable)")
    args = parser.parse_args(argv)

    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only or list(MODELS):
        start = time.perf_counter()
        model = MODELS[name]()
        path = args.out / f"{name}.onnx"
        data = model.SerializeToString()  # < 2 GB, so no external data
        onnx.checker.check_model(data)
        path.write_bytes(data)
        print(f"{name}: {count_params(model):,} params, {len(model.graph.node)} nodes, "
              f"{len(data) / 2**20:.1f} MiB -> {path} ({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
