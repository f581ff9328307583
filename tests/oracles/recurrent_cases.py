#!/usr/bin/env python3
"""Writes LSTM/GRU/RNN cases that the ONNX backend node tests leave out (both directions, reverse,
per-row sequence lengths, clip, input_forget, custom activations with alpha/beta, GRU
linear_before_reset = 0 and 1), each as OUT/<case>/model.onnx, input_<i>.npy and
expected_<j>.npy: onnxruntime's CPU outputs (graph optimisations off), the oracle for
tests/numerics/test_recurrent_oracle.cpp. onnxruntime's CPU kernels refuse layout = 1 (batch first), so
the oracle of a layout = 1 case is onnxruntime on its layout = 0 twin, fed the same tensors with batch and
sequence (or direction) axes swapped, its outputs swapped back.

Usage: recurrent_cases.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper


def case(out_dir, name, op, hidden, gates, seq, batch, inputs_size, attrs, with_bias=True, seq_lens=None,
         initial=True, peepholes=False, layout=0, seed=0):
    rng = np.random.default_rng(seed)
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    # Tensors are drawn in layout 0 ([seq, batch, ...] and [dirs, batch, hidden]); `batch_first` gives the
    # layout 1 view of a feed or output.
    x_shape = [seq, batch, inputs_size]
    state_shape = [dirs, batch, hidden]
    feeds = {"X": rng.standard_normal(x_shape).astype(np.float32)}
    names = ["X", "W", "R"]
    inits = [
        helper.make_tensor("W", TensorProto.FLOAT, [dirs, gates * hidden, inputs_size],
                           (rng.standard_normal(dirs * gates * hidden * inputs_size) * 0.5).astype(np.float32)),
        helper.make_tensor("R", TensorProto.FLOAT, [dirs, gates * hidden, hidden],
                           (rng.standard_normal(dirs * gates * hidden * hidden) * 0.5).astype(np.float32)),
    ]
    input_shapes = {"X": x_shape}
    optional = []
    if with_bias:
        inits.append(helper.make_tensor("B", TensorProto.FLOAT, [dirs, 2 * gates * hidden],
                                        (rng.standard_normal(dirs * 2 * gates * hidden) * 0.3).astype(np.float32)))
        optional.append("B")
    else:
        optional.append("")
    if seq_lens is not None:
        feeds["lens"] = np.array(seq_lens, dtype=np.int32)
        input_shapes["lens"] = [batch]
        optional.append("lens")
    else:
        optional.append("")
    if initial:
        feeds["h0"] = rng.standard_normal(state_shape).astype(np.float32)
        input_shapes["h0"] = state_shape
        optional.append("h0")
        if op == "LSTM":
            feeds["c0"] = rng.standard_normal(state_shape).astype(np.float32)
            input_shapes["c0"] = state_shape
            optional.append("c0")
    elif op == "LSTM":
        optional += ["", ""]
    else:
        optional.append("")
    if peepholes:
        inits.append(helper.make_tensor("P", TensorProto.FLOAT, [dirs, 3 * hidden],
                                        (rng.standard_normal(dirs * 3 * hidden) * 0.3).astype(np.float32)))
        optional.append("P")
    while optional and optional[-1] == "":
        optional.pop()
    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])

    def batch_first(value_name, value):
        if value_name == "lens":
            return value
        # Y is [seq, dirs, batch, hidden] in layout 0 and [batch, seq, dirs, hidden] in layout 1.
        return np.transpose(value, (2, 0, 1, 3)) if value_name == "Y" else np.swapaxes(value, 0, 1)

    def model_in(model_layout):
        def shape(value_name):
            return list(batch_first(value_name, np.empty(input_shapes[value_name])).shape) if model_layout else input_shapes[value_name]
        graph_inputs = [helper.make_tensor_value_info(n, TensorProto.INT32 if n == "lens" else TensorProto.FLOAT, shape(n))
                        for n in input_shapes]
        node = helper.make_node(op, names + optional, outputs, hidden_size=hidden, layout=model_layout, **attrs)
        graph = helper.make_graph([node], name, graph_inputs,
                                  [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
        model.ir_version = 8
        return model

    model = model_in(layout)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model_in(0).SerializeToString(), options, providers=["CPUExecutionProvider"])
    results = session.run(None, feeds)
    if layout:
        feeds = {n: batch_first(n, v) for n, v in feeds.items()}
        results = [batch_first(o, v) for o, v in zip(outputs, results)]
    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    for i, input_name in enumerate(n for n in ["X", "lens", "h0", "c0"] if n in feeds):
        np.save(os.path.join(folder, f"input_{i}_{input_name}.npy"), feeds[input_name])
    for j, value in enumerate(results):
        np.save(os.path.join(folder, f"expected_{j}_{outputs[j]}.npy"), value)


def main():
    out = sys.argv[1]
    case(out, "lstm_bidirectional_seq_lens", "LSTM", 5, 4, 6, 3, 4, {"direction": "bidirectional"}, seq_lens=[6, 3, 1])
    case(out, "lstm_reverse_clip_peepholes", "LSTM", 4, 4, 5, 2, 3, {"direction": "reverse", "clip": 0.7},
         peepholes=True, seed=1)
    case(out, "lstm_input_forget", "LSTM", 3, 4, 4, 2, 3, {"input_forget": 1}, seed=2)
    case(out, "lstm_custom_activations", "LSTM", 3, 4, 4, 2, 3,
         {"activations": ["HardSigmoid", "Tanh", "ScaledTanh"], "activation_alpha": [0.3, 0.8],
          "activation_beta": [0.4, 1.2]}, seed=3)
    case(out, "gru_linear_before_reset", "GRU", 5, 3, 6, 3, 4, {"linear_before_reset": 1}, seq_lens=[2, 6, 4], seed=4)
    case(out, "gru_bidirectional_reset_after", "GRU", 4, 3, 5, 2, 3, {"direction": "bidirectional"}, seed=5)
    case(out, "gru_reverse_no_bias", "GRU", 4, 3, 5, 2, 3, {"direction": "reverse"}, with_bias=False,
         initial=False, seed=6)
    case(out, "rnn_bidirectional_relu_seq_lens", "RNN", 4, 1, 5, 3, 3,
         {"direction": "bidirectional", "activations": ["Relu", "Tanh"]}, seq_lens=[5, 2, 4], seed=7)
    case(out, "rnn_leaky_relu", "RNN", 3, 1, 4, 2, 3, {"activations": ["LeakyRelu"], "activation_alpha": [0.2]}, seed=8)
    # Batch first (layout 1), with what layout changes: per-row lengths, both directions, initial states.
    case(out, "lstm_batchwise_bidirectional_seq_lens", "LSTM", 4, 4, 5, 3, 3, {"direction": "bidirectional"},
         seq_lens=[5, 2, 4], layout=1, seed=9)
    case(out, "gru_batchwise_reverse", "GRU", 3, 3, 4, 2, 3, {"direction": "reverse", "linear_before_reset": 1},
         layout=1, seed=10)
    case(out, "rnn_batchwise_bidirectional_seq_lens", "RNN", 3, 1, 4, 3, 2, {"direction": "bidirectional"},
         seq_lens=[1, 4, 3], layout=1, seed=11)


if __name__ == "__main__":
    main()
