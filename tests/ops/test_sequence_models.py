#!/usr/bin/env python3
"""LinearAttention, CausalConvWithState (opset 27) and ai.onnx.preview FlexAttention against onnx's
ReferenceEvaluator (onnxruntime 1.22 has none of them): every update rule and activation, GQA/MQA, states of
another type than the activations, modifier subgraphs, empty sequences, NaN, odd sizes, refused nodes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from op_oracle import case, main

F32 = dict(rtol=1e-4, atol=1e-5, reference="onnx-ref")
F16 = dict(rtol=2e-3, atol=2e-3, reference="onnx-ref")
PREVIEW = "ai.onnx.preview"


def conv_cases(rng):
    def conv(name, x, w, bias=None, past=None, tol=F32, **attrs):
        feeds = {"x": x, "w": w}
        inputs = ["x", "w", "", ""]
        if bias is not None:
            feeds["bias"], inputs[2] = bias, "bias"
        if past is not None:
            feeds["past"], inputs[3] = past, "past"
        while inputs[-1] == "":
            inputs.pop()
        return case(f"causal_conv_{name}", "CausalConvWithState", feeds, ["y", "state"], opset=27, inputs=inputs,
                    **tol, **attrs)

    x = rng.standard_normal((2, 3, 7)).astype(np.float32)
    w = rng.standard_normal((3, 1, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    past = rng.standard_normal((2, 3, 2)).astype(np.float32)
    yield conv("plain", x, w)
    yield conv("bias_past", x, w, b, past)
    yield conv("past_only_silu", x, w, past=past, activation="silu")
    yield conv("swish", x, w, b, activation="swish")
    yield conv("kernel_one", x, rng.standard_normal((3, 1, 1)).astype(np.float32), b)
    yield conv("short_input", x[:, :, :1], rng.standard_normal((3, 1, 5)).astype(np.float32), b,
               rng.standard_normal((2, 3, 4)).astype(np.float32))
    yield conv("empty_sequence", x[:, :, :0], w, b, past)
    x_nan = x.copy()
    x_nan[1, 0, 2] = np.nan
    yield conv("nan", x_nan, w, b, activation="silu")
    yield conv("fp16_silu", x.astype(np.float16), w.astype(np.float16), b.astype(np.float16),
               past.astype(np.float16), tol=F16, activation="silu")


def linear_cases(rng):
    def packed(b, t, width):
        return rng.standard_normal((b, t, width)).astype(np.float32)

    def linear(name, b, t, hq, hkv, dk, dv, rule, *, decay_width=None, beta_width=None, past=None,
               dtype=np.float32, tol=F32, **attrs):
        feeds = {"q": packed(b, t, hq * dk), "k": packed(b, t, hkv * dk) / np.sqrt(dk), "v": packed(b, t, hkv * dv)}
        inputs = ["q", "k", "v", "", "", ""]
        if past is not None:
            feeds["past"], inputs[3] = past, "past"
        if rule in ("gated", "gated_delta"):
            feeds["decay"], inputs[4] = -np.abs(packed(b, t, decay_width or hkv * dk)) * 0.3, "decay"
        if rule in ("delta", "gated_delta"):
            feeds["beta"], inputs[5] = 1 / (1 + np.exp(-packed(b, t, beta_width or hkv))), "beta"
        for key in ("q", "k", "v", "decay", "beta"):
            if key in feeds:
                feeds[key] = feeds[key].astype(dtype)
        while inputs[-1] == "":
            inputs.pop()
        return case(f"linear_attention_{name}", "LinearAttention", feeds, ["y", "state"], opset=27, inputs=inputs,
                    update_rule=rule, q_num_heads=hq, kv_num_heads=hkv, **tol, **attrs)

    yield linear("linear", 2, 5, 2, 2, 4, 4, "linear")
    yield linear("gated_per_dim", 2, 5, 2, 2, 4, 3, "gated")
    yield linear("gated_per_head", 1, 6, 2, 2, 4, 4, "gated", decay_width=2)
    yield linear("delta", 2, 4, 2, 2, 4, 4, "delta")
    yield linear("gated_delta_gqa", 2, 5, 4, 2, 3, 5, "gated_delta", past=rng.standard_normal((2, 2, 3, 5)).astype(
        np.float32))
    yield linear("gated_delta_mqa_beta1", 1, 3, 3, 1, 4, 2, "gated_delta", beta_width=1, scale=0.5)
    yield linear("empty_sequence", 2, 0, 2, 1, 4, 4, "gated_delta",
                 past=rng.standard_normal((2, 1, 4, 4)).astype(np.float32))
    yield linear("fp16_state_fp32", 1, 4, 2, 2, 4, 4, "gated_delta", dtype=np.float16, tol=F16,
                 past=rng.standard_normal((1, 2, 4, 4)).astype(np.float32))
    c = linear("nan", 1, 4, 2, 2, 4, 4, "linear")
    c.feeds["v"][0, 1, 3] = np.nan
    yield c


def flex_model_graph(name, body_nodes, initializers=()):
    """A one-input one-output modifier subgraph: input `s`, output `out`."""
    return helper.make_graph(body_nodes, name, [helper.make_tensor_value_info("s", TensorProto.FLOAT, None)],
                             [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], list(initializers))


def flex_cases(rng):
    def qkv(b, hq, hkv, length, kv_length, e, ev, dtype=np.float32):
        return {"q": rng.standard_normal((b, hq, length, e)).astype(dtype),
                "k": rng.standard_normal((b, hkv, kv_length, e)).astype(dtype),
                "v": rng.standard_normal((b, hkv, kv_length, ev)).astype(dtype)}

    def flex(name, feeds, tol=F32, **attrs):
        return case(f"flex_attention_{name}", "FlexAttention", feeds, ["y"], domain=PREVIEW, opset=26, **tol, **attrs)

    yield flex("plain", qkv(2, 2, 2, 5, 7, 8, 8))
    yield flex("gqa_odd_sizes", qkv(1, 6, 2, 3, 5, 7, 3))
    yield flex("scale", qkv(1, 2, 1, 4, 4, 4, 6), scale=0.3)
    yield flex("double", qkv(1, 2, 2, 3, 4, 5, 5, np.float64), tol=dict(rtol=1e-10, atol=1e-12, reference="onnx-ref"))
    yield flex("fp16", qkv(2, 2, 2, 4, 6, 8, 8, np.float16), tol=F16)
    yield flex("fp16_softmax_fp16", qkv(1, 2, 2, 4, 6, 8, 8, np.float16), tol=F16,
               softmax_precision=TensorProto.FLOAT16)
    yield flex("empty_query", qkv(1, 2, 2, 0, 4, 4, 4))
    feeds = qkv(1, 2, 2, 3, 4, 4, 4)
    feeds["q"][0, 1, 2, 0] = np.nan
    yield flex("nan", feeds)
    causal = np.tril(np.ones((4, 4), bool))
    mask = flex_model_graph("causal", [helper.make_node("Where", ["mask", "s", "neg_inf"], ["out"])],
                            [numpy_helper.from_array(causal, "mask"),
                             numpy_helper.from_array(np.array(-np.inf, np.float32), "neg_inf")])
    yield flex("score_mod_causal", qkv(2, 2, 2, 4, 4, 4, 4), score_mod=mask)
    cap = flex_model_graph("soft_cap", [helper.make_node("Div", ["s", "cap"], ["d"]),
                                        helper.make_node("Tanh", ["d"], ["t"]),
                                        helper.make_node("Mul", ["t", "cap"], ["out"])],
                           [numpy_helper.from_array(np.array(2.0, np.float32), "cap")])
    yield flex("score_mod_soft_cap", qkv(1, 4, 2, 3, 5, 4, 4), score_mod=cap)
    half = flex_model_graph("halve", [helper.make_node("Mul", ["s", "half"], ["out"])],
                            [numpy_helper.from_array(np.array(0.5, np.float32), "half")])
    yield flex("prob_mod_fp16", qkv(1, 2, 2, 3, 5, 4, 4, np.float16), tol=F16, prob_mod=half)
    identity = helper.make_graph([], "identity", [helper.make_tensor_value_info("s", TensorProto.FLOAT, None)],
                                 [helper.make_tensor_value_info("s", TensorProto.FLOAT, None)])
    yield flex("identity_mods", qkv(1, 2, 2, 3, 5, 4, 4), score_mod=identity, prob_mod=identity)


def cases():
    rng = np.random.default_rng(23)
    yield from conv_cases(rng)
    yield from linear_cases(rng)
    yield from flex_cases(rng)


def audit_sees_modifier_nodes(oracle):
    """An fp16 audit names the score_mod node that overflows (1e5 x scores), so FlexAttention's subgraphs are
    run through the executor and shown to the audit like If/Loop/Scan bodies."""
    big = flex_model_graph("overflowing", [helper.make_node("Mul", ["s", "big"], ["m"]),
                                           helper.make_node("Mul", ["m", "small"], ["out"])],
                           [numpy_helper.from_array(np.array(1e5, np.float32), "big"),
                            numpy_helper.from_array(np.array(1e-5, np.float32), "small")])
    rng = np.random.default_rng(3)
    feeds = {name: rng.standard_normal(shape).astype(np.float32)
             for name, shape in (("q", (1, 2, 3, 4)), ("k", (1, 2, 5, 4)), ("v", (1, 2, 5, 4)))}
    c = case("flex_attention_audit", "FlexAttention", feeds, ["y"], domain=PREVIEW, opset=26, score_mod=big)
    folder = oracle.work / c.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(c.model.SerializeToString())
    np.savez(folder / "inputs.npz", **feeds)
    run = subprocess.run([oracle.mpaudit, "audit", str(folder / "model.onnx"), "--inputs", str(folder / "inputs.npz"),
                          "--target", "fp16"], capture_output=True, text=True)
    oracle.checks(run.returncode == 1 and "FlexAttention_0/score_mod/Mul_0" in run.stdout,
                  f"{c.name}: fp16 audit fails naming the score_mod node (exit {run.returncode})")


def refused(oracle):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 4)).astype(np.float32)
    w = rng.standard_normal((2, 1, 3)).astype(np.float32)
    oracle.expect_error(case("causal_conv_bad_activation", "CausalConvWithState", {"x": x, "w": w}, ["y", "state"],
                             opset=27, activation="relu"), "activation 'relu'")
    q = rng.standard_normal((1, 2, 8)).astype(np.float32)
    oracle.expect_error(case("linear_attention_gated_without_decay", "LinearAttention", {"q": q, "k": q, "v": q},
                             ["y", "state"], opset=27, update_rule="gated", q_num_heads=2, kv_num_heads=2),
                        "requires the decay input")
    q4 = rng.standard_normal((1, 3, 2, 4)).astype(np.float32)
    k4 = rng.standard_normal((1, 2, 2, 4)).astype(np.float32)
    oracle.expect_error(case("flex_attention_heads_not_grouped", "FlexAttention", {"q": q4, "k": k4, "v": k4}, ["y"],
                             domain=PREVIEW, opset=26), "not a multiple")


def extra_checks(oracle):
    refused(oracle)
    audit_sees_modifier_nodes(oracle)


if __name__ == "__main__":
    sys.exit(main("sequence model ops", cases, extra_checks))
