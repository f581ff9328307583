#!/usr/bin/env python3
"""The com.microsoft contrib ops onnxruntime's transformer optimizer and quantisation tools emit, against
onnxruntime 1.22's CPU EP: FusedMatMul, Gelu, FastGelu, BiasGelu, QuickGelu, SkipLayerNormalization,
SkipSimplifiedLayerNormalization, SimplifiedLayerNormalization (ONNX domain, as onnxruntime registers it),
EmbedLayerNormalization, MatMulNBits. Against numpy ("given") where onnxruntime's CPU EP cannot judge:
BiasAdd (CUDA only), SkipLayerNormalization's mean/inv_std_var (left empty by onnxruntime), MatMulNBits'
g_idx (onnxruntime 1.22's CPU dequantisation with g_idx ignores uint8 zero points and indexes g_idx per
8-value chunk) and 8-bit weights given as inputs (its unpacked path takes 4 bits only).
An unsupported com.microsoft op is refused naming op, domain and opset."""

from __future__ import annotations

import math
import sys

import numpy as np

from op_oracle import case, main

MS = "com.microsoft"
RNG = np.random.default_rng(23)


def randn(*shape, dtype=np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def with_nan(x: np.ndarray) -> np.ndarray:
    x = x.copy()
    x.flat[3] = np.nan
    x.flat[-1] = np.inf
    return x


def gelu_cases():
    x = with_nan(randn(2, 3, 9))
    bias = randn(9)
    yield case("gelu", "Gelu", {"x": x}, ["y"], domain=MS)
    yield case("gelu_empty", "Gelu", {"x": np.zeros((0, 4), np.float32)}, ["y"], domain=MS)
    yield case("fast_gelu", "FastGelu", {"x": x}, ["y"], domain=MS, rtol=1e-5, atol=1e-6)
    yield case("fast_gelu_bias", "FastGelu", {"x": x, "bias": bias}, ["y"], domain=MS)
    yield case("bias_gelu", "BiasGelu", {"x": x, "bias": bias}, ["y"], domain=MS)
    yield case("bias_gelu_1d", "BiasGelu", {"x": randn(5), "bias": randn(5)}, ["y"], domain=MS)
    yield case("quick_gelu", "QuickGelu", {"x": x}, ["y"], domain=MS)
    yield case("quick_gelu_alpha", "QuickGelu", {"x": x}, ["y"], domain=MS, alpha=1.0)
    skip = randn(2, 3, 9)
    yield case("bias_add", "BiasAdd", {"x": x, "bias": bias, "skip": skip}, ["y"], domain=MS,
               expected=[x + bias + skip])


def layer_norm_ref(s: np.ndarray, gamma, beta, eps: float, simplified: bool):
    s64 = s.astype(np.float64)
    mean = np.zeros(s.shape[:-1] + (1,)) if simplified else s64.mean(-1, keepdims=True)
    centred = s64 - mean
    inv_std = 1.0 / np.sqrt((centred ** 2).mean(-1, keepdims=True) + eps)
    y = centred * inv_std * gamma + (0 if beta is None else beta)
    return y.astype(np.float32), mean.astype(np.float32), inv_std.astype(np.float32)


def skip_norm_cases():
    B, S, H = 2, 5, 16
    x, skip = randn(B, S, H), randn(B, S, H)
    gamma, beta, bias = randn(H), randn(H), randn(H)
    for name, sk in (("", skip), ("_skip_sh", skip[0]), ("_skip_1sh", skip[:1])):
        yield case(f"skip_ln{name}", "SkipLayerNormalization",
                   {"x": x, "skip": sk, "gamma": gamma, "beta": beta, "bias": bias}, ["y", "", "", "sum"],
                   domain=MS, atol=1e-5, epsilon=1e-5)
    yield case("skip_ln_no_beta_bias", "SkipLayerNormalization", {"x": x, "skip": skip, "gamma": gamma}, ["y"],
               domain=MS, atol=1e-5)
    odd = randn(3, 7)
    yield case("skip_ln_odd_nan", "SkipLayerNormalization",
               {"x": with_nan(odd), "skip": randn(3, 7), "gamma": randn(7), "beta": randn(7)}, ["y"], domain=MS,
               atol=1e-5)
    s = x + skip + bias
    y, mean, inv_std = layer_norm_ref(s, gamma, beta, 1e-5, simplified=False)
    yield case("skip_ln_all_outputs", "SkipLayerNormalization",
               {"x": x, "skip": skip, "gamma": gamma, "beta": beta, "bias": bias}, ["y", "mean", "inv_std", "sum"],
               domain=MS, atol=1e-5, epsilon=1e-5, expected=[y, mean, inv_std, s])
    yield case("skip_simplified_ln", "SkipSimplifiedLayerNormalization",
               {"x": x, "skip": skip, "gamma": gamma, "bias": bias}, ["y", "", "", "sum"], domain=MS, atol=1e-5)
    yield case("skip_simplified_ln_no_bias", "SkipSimplifiedLayerNormalization",
               {"x": x, "skip": skip[0], "gamma": gamma}, ["y"], domain=MS, atol=1e-5, epsilon=1e-6)
    yield case("simplified_ln", "SimplifiedLayerNormalization", {"x": x, "scale": gamma}, ["y", "inv_std"],
               atol=1e-5, epsilon=1e-5)
    yield case("simplified_ln_axis1", "SimplifiedLayerNormalization", {"x": with_nan(x), "scale": randn(S, H)},
               ["y"], atol=1e-5, axis=1)
    yield case("simplified_ln_empty", "SimplifiedLayerNormalization",
               {"x": np.zeros((0, H), np.float32), "scale": gamma}, ["y"])


def embed_cases():
    B, S, H, V, P = 2, 6, 16, 30, 10
    ids = RNG.integers(0, V, (B, S)).astype(np.int32)
    segment_ids = RNG.integers(0, 2, (B, S)).astype(np.int32)
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], np.int32)
    word, pos, seg = randn(V, H), randn(P, H), randn(2, H)
    gamma, beta = randn(H), randn(H)
    feeds = {"ids": ids, "segment_ids": segment_ids, "word": word, "pos": pos, "seg": seg, "gamma": gamma,
             "beta": beta, "mask": mask}
    yield case("embed_ln", "EmbedLayerNormalization", feeds, ["y", "mask_index", "sum"], domain=MS, atol=1e-5)
    yield case("embed_ln_no_mask", "EmbedLayerNormalization", {k: v for k, v in feeds.items() if k != "mask"},
               ["y", "mask_index"], domain=MS, atol=1e-5, epsilon=1e-5)
    # No segment embedding, explicit position ids (one row for the batch), as optimised BERT-like models
    # without token types feed them.
    position_ids = RNG.integers(0, P, (1, S)).astype(np.int32)
    no_segment = {"ids": ids, "word": word, "pos": pos, "gamma": gamma, "beta": beta, "mask": mask,
                  "position_ids": position_ids}
    inputs = ["ids", "", "word", "pos", "", "gamma", "beta", "mask", "position_ids"]
    y, _, _ = layer_norm_ref(word[ids] + pos[position_ids], gamma, beta, 1e-12, simplified=False)
    yield case("embed_ln_no_segment_position_ids", "EmbedLayerNormalization", no_segment, ["y", "mask_index"],
               domain=MS, inputs=inputs, atol=1e-5, expected=[y, mask.sum(1).astype(np.int32)])


def fused_matmul_cases():
    yield case("fused_matmul_alpha", "FusedMatMul", {"a": with_nan(randn(2, 3, 4)), "b": randn(4, 5)}, ["y"],
               domain=MS, alpha=0.125)
    yield case("fused_matmul_trans", "FusedMatMul", {"a": randn(3, 4, 2), "b": randn(1, 5, 4)}, ["y"],
               domain=MS, transA=1, transB=1, alpha=-2.0)
    yield case("fused_matmul_transB_2d", "FusedMatMul", {"a": randn(7, 9), "b": randn(5, 9)}, ["y"], domain=MS,
               transB=1)
    yield case("fused_matmul_trans_batch_a", "FusedMatMul", {"a": randn(2, 3, 4), "b": randn(3, 4, 5)}, ["y"],
               domain=MS, transBatchA=1)
    yield case("fused_matmul_trans_batch_a_trans_a", "FusedMatMul", {"a": randn(2, 3, 4), "b": randn(3, 2, 5)},
               ["y"], domain=MS, transBatchA=1, transA=1)
    yield case("fused_matmul_trans_batch_b", "FusedMatMul", {"a": randn(2, 3, 4, 6), "b": randn(5, 2, 3, 6)},
               ["y"], domain=MS, transBatchB=1, transB=1, alpha=0.5)
    yield case("fused_matmul_empty", "FusedMatMul", {"a": np.zeros((0, 4), np.float32), "b": randn(4, 3)}, ["y"],
               domain=MS)


def quantize(N: int, K: int, block: int, bits: int):
    """Random `bits`-bit weights [N, K] in blocks of `block`, packed as MatMulNBits stores them; returns
    (q [N, blocks * block], packed B [N, blocks, blob], scales [N, blocks])."""
    blocks = math.ceil(K / block)
    per_byte = 8 // bits
    q = RNG.integers(0, 2 ** bits, (N, blocks * block)).astype(np.uint8)
    grouped = q.reshape(N, blocks, block // per_byte, per_byte)
    packed = np.zeros((N, blocks, block // per_byte), np.uint8)
    for i in range(per_byte):
        packed |= (grouped[..., i] << (bits * i)).astype(np.uint8)
    scales = (RNG.random((N, blocks)) * 0.1 + 0.01).astype(np.float32)
    return q, packed, scales


def pack_zero_points(zq: np.ndarray, bits: int) -> np.ndarray:
    N, blocks = zq.shape
    out = np.zeros((N, math.ceil(blocks * bits / 8)), np.uint8)
    for blk in range(blocks):
        out[:, blk * bits // 8] |= (zq[:, blk] << (blk * bits % 8)).astype(np.uint8)
    return out.reshape(-1)


def dequantized(q, scales, zero_points, K: int, block_of) -> np.ndarray:
    cols = np.asarray(block_of)
    return ((q[:, :K].astype(np.float64) - zero_points[:, cols]) * scales[:, cols]).astype(np.float32)


def matmul_nbits_cases():
    N, K, block, bits = 6, 40, 16, 4
    q, packed, scales = quantize(N, K, block, bits)
    blocks = scales.shape[1]
    zq = RNG.integers(0, 16, (N, blocks)).astype(np.uint8)
    a = randn(2, 3, K)
    bias = randn(N)
    attrs = dict(domain=MS, K=K, N=N, bits=bits, block_size=block, rtol=1e-4, atol=1e-5)
    yield case("matmul_nbits_zp", "MatMulNBits", {"a": a}, ["y"],
               initializers={"b": packed, "scales": scales.reshape(-1), "zp": pack_zero_points(zq, bits)}, **attrs)
    yield case("matmul_nbits_default_zp_bias", "MatMulNBits", {"a": a}, ["y"], inputs=["a", "b", "scales", "", "", "bias"],
               initializers={"b": packed, "scales": scales, "bias": bias}, **attrs)
    zf = (RNG.random((N, blocks)) * 15).astype(np.float32)
    yield case("matmul_nbits_float_zp", "MatMulNBits", {"a": with_nan(a[0])}, ["y"],
               initializers={"b": packed, "scales": scales.reshape(-1), "zp": zf.reshape(-1)}, **attrs)
    yield case("matmul_nbits_empty", "MatMulNBits", {"a": np.zeros((0, K), np.float32)}, ["y"],
               initializers={"b": packed, "scales": scales.reshape(-1)}, **attrs)
    g_idx = RNG.integers(0, blocks, K).astype(np.int32)
    w = dequantized(q, scales, zq.astype(np.float64), K, g_idx)
    yield case("matmul_nbits_g_idx", "MatMulNBits", {"a": a}, ["y"],
               initializers={"b": packed, "scales": scales.reshape(-1), "zp": pack_zero_points(zq, bits),
                             "g_idx": g_idx}, expected=[(a @ w.T).astype(np.float32)], **attrs)
    q8, packed8, scales8 = quantize(N, K, 32, 8)
    w8 = dequantized(q8, scales8, np.full(scales8.shape, 128.0), K, np.arange(K) // 32)
    yield case("matmul_nbits_8bit", "MatMulNBits", {"a": a}, ["y"], inputs=["a", "b", "scales", "", "", "bias"],
               initializers={"b": packed8, "scales": scales8.reshape(-1), "bias": bias},
               expected=[(a @ w8.T + bias).astype(np.float32)], **{**attrs, "bits": 8, "block_size": 32})


def float16_cases():
    """float16 tensors, which onnxruntime's CPU EP computes in float and rounds once, as mpaudit does (its
    EmbedLayerNormalization aborts on float16 in onnxruntime 1.22's shape inference: not checked)."""
    h = {"dtype": np.float16}
    tol = {"rtol": 1e-3, "atol": 1e-3}
    yield case("skip_ln_fp16", "SkipLayerNormalization",
               {"x": randn(2, 5, 16, **h), "skip": randn(2, 5, 16, **h), "gamma": randn(16, **h),
                "beta": randn(16, **h), "bias": randn(16, **h)}, ["y", "", "", "sum"], domain=MS, **tol)
    yield case("skip_simplified_ln_fp16", "SkipSimplifiedLayerNormalization",
               {"x": randn(2, 3, 8, **h), "skip": randn(2, 3, 8, **h), "gamma": randn(8, **h)}, ["y"], domain=MS, **tol)
    yield case("simplified_ln_fp16", "SimplifiedLayerNormalization", {"x": randn(3, 8, **h), "scale": randn(8, **h)},
               ["y"], **tol)
    yield case("gelu_fp16", "Gelu", {"x": randn(3, 8, **h)}, ["y"], domain=MS, **tol)
    yield case("fast_gelu_bias_fp16", "FastGelu", {"x": randn(3, 8, **h), "bias": randn(8, **h)}, ["y"], domain=MS,
               **tol)
    yield case("bias_gelu_fp16", "BiasGelu", {"x": randn(3, 8, **h), "bias": randn(8, **h)}, ["y"], domain=MS, **tol)
    yield case("quick_gelu_fp16", "QuickGelu", {"x": randn(3, 8, **h)}, ["y"], domain=MS, **tol)
    yield case("fused_matmul_fp16", "FusedMatMul", {"a": randn(3, 8, **h), "b": randn(5, 8, **h)}, ["y"], domain=MS,
               transB=1, **tol)


def cases():
    yield from gelu_cases()
    yield from skip_norm_cases()
    yield from embed_cases()
    yield from fused_matmul_cases()
    yield from matmul_nbits_cases()
    yield from float16_cases()


def refusals(oracle) -> None:
    x = randn(2, 4)
    oracle.expect_error(case("unsupported_contrib_op", "WordConvEmbedding", {"x": x}, ["y"], domain=MS),
                        "com.microsoft.WordConvEmbedding is not supported (domain com.microsoft, opset 1)")
    oracle.expect_error(case("bias_gelu_bad_bias", "BiasGelu", {"x": x, "bias": randn(3)}, ["y"], domain=MS),
                        "bias must be")
    ids = np.array([[0, 99]], np.int32)
    feeds = {"ids": ids, "segment_ids": np.zeros_like(ids), "word": randn(5, 4), "pos": randn(4, 4),
             "seg": randn(2, 4), "gamma": randn(4), "beta": randn(4)}
    oracle.expect_error(case("embed_ln_id_out_of_range", "EmbedLayerNormalization", feeds, ["y"], domain=MS),
                        "input_ids 99 out of range")


if __name__ == "__main__":
    sys.exit(main("com.microsoft contrib ops", cases, refusals))
