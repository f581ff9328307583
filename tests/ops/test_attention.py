#!/usr/bin/env python3
"""The attention family: ONNX Attention (23, 24) and RotaryEmbedding (23) against onnx's reference (onnxruntime
1.22 stops at opset 22), com.microsoft Attention, MultiHeadAttention, GroupQueryAttention and RotaryEmbedding
against onnxruntime's CPU kernels. Masks (bool, float, broadcast, fully masked rows), GQA, past/present caches,
causal, softcap, scores outputs, rotary variants, NaN inputs, odd head sizes, one-token sequences."""

from __future__ import annotations

import sys

import numpy as np

from op_oracle import case, compare, main

MS = "com.microsoft"
rng = np.random.default_rng(23)


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def onnx_attention(name, feeds, outputs=("y",), inputs=None, opset=23, **attrs):
    return case(name, "Attention", feeds, list(outputs), inputs=inputs, opset=opset, reference="onnx-ref",
                rtol=1e-4, atol=1e-5, **attrs)


def onnx_cases():
    q4, k4, v4 = randn(2, 3, 4, 8), randn(2, 3, 6, 8), randn(2, 3, 6, 5)
    yield onnx_attention("attn_4d", {"q": q4, "k": k4, "v": v4})
    yield onnx_attention("attn_4d_scale_softcap", {"q": q4 * 4, "k": k4, "v": v4}, scale=0.3, softcap=2.0)
    yield onnx_attention("attn_4d_causal", {"q": q4, "k": k4, "v": v4}, is_causal=1)
    bool_mask = rng.random((4, 6)) > 0.3
    bool_mask[1, :] = False  # a fully masked row: NaN, as the reference gives
    yield onnx_attention("attn_bool_mask_2d", {"q": q4, "k": k4, "v": v4, "m": bool_mask})
    yield onnx_attention("attn_float_mask_3d_short", {"q": q4, "k": k4, "v": v4, "m": randn(3, 1, 4)})
    yield onnx_attention("attn_float_mask_4d", {"q": q4, "k": k4, "v": v4, "m": randn(2, 1, 4, 6)}, is_causal=1)
    q3, k3, v3 = randn(2, 4, 12), randn(2, 5, 4), randn(2, 5, 6)
    yield onnx_attention("attn_3d_gqa", {"q": q3, "k": k3, "v": v3}, q_num_heads=6, kv_num_heads=2)
    pk, pv = randn(2, 2, 3, 2), randn(2, 2, 3, 3)
    # Mode 0 is the product before softcap (the spec; the reference returns it softcapped), so no softcap there.
    for mode in range(4):
        yield onnx_attention(f"attn_3d_past_qk_mode{mode}",
                             {"q": q3, "k": k3, "v": v3, "m": randn(4, 8), "pk": pk, "pv": pv},
                             ("y", "present_key", "present_value", "qk"), q_num_heads=6, kv_num_heads=2,
                             qk_matmul_output_mode=mode, is_causal=1, **({"softcap": 1.5} if mode else {}))
    q_nan = q4.copy()
    q_nan[0, 1, 2, 3] = np.nan
    yield onnx_attention("attn_nan", {"q": q_nan, "k": k4, "v": v4})
    yield onnx_attention("attn_seq1_odd_head", {"q": randn(1, 2, 1, 7), "k": randn(1, 2, 1, 7), "v": randn(1, 2, 1, 3)})
    # The reference computes in numpy float16, rounding where it likes: agreement to a few fp16 ulps.
    yield case("attn_fp16", "Attention", {"q": q4.astype(np.float16), "k": k4.astype(np.float16),
                                          "v": v4.astype(np.float16)}, ["y"], opset=23, reference="onnx-ref",
               rtol=4e-3, atol=2e-3)
    yield onnx_attention("attn_empty_batch", {"q": randn(0, 2, 3, 4), "k": randn(0, 2, 3, 4), "v": randn(0, 2, 3, 4)})
    # (The reference cannot broadcast nonpad_kv_seqlen without a batched attn_mask.)
    yield onnx_attention("attn24_nonpad", {"q": q4, "k": k4, "v": v4, "m": randn(2, 1, 4, 6),
                                           "n": np.array([6, 2], np.int64)},
                         inputs=["q", "k", "v", "m", "", "", "n"], opset=24)


def rotary_cases():
    x4 = randn(2, 3, 5, 8)
    cos, sin = randn(10, 4), randn(10, 4)
    pos = rng.integers(0, 10, (2, 5)).astype(np.int64)
    for interleaved in (0, 1):
        yield case(f"rope_4d_il{interleaved}", "RotaryEmbedding", {"x": x4, "c": cos, "s": sin, "p": pos}, ["y"],
                   opset=23, reference="onnx-ref", interleaved=interleaved)
    yield case("rope_3d_partial", "RotaryEmbedding", {"x": randn(2, 5, 24), "c": cos[:, :2], "s": sin[:, :2], "p": pos},
               ["y"], opset=23, reference="onnx-ref", num_heads=3, rotary_embedding_dim=4)
    yield case("rope_no_positions", "RotaryEmbedding", {"x": x4, "c": randn(2, 5, 4), "s": randn(2, 5, 4)}, ["y"],
               opset=23, reference="onnx-ref", interleaved=1)
    # com.microsoft: (input, position_ids, cos, sin)
    for interleaved in (0, 1):
        yield case(f"ms_rope_3d_il{interleaved}", "RotaryEmbedding",
                   {"x": randn(2, 5, 24), "p": pos, "c": cos, "s": sin}, ["y"], domain=MS, interleaved=interleaved)
    yield case("ms_rope_scalar_position", "RotaryEmbedding", {"x": randn(2, 4, 16), "p": np.array([3], np.int64),
                                                              "c": cos, "s": sin}, ["y"], domain=MS)
    yield case("ms_rope_4d", "RotaryEmbedding", {"x": x4, "p": pos, "c": cos, "s": sin}, ["y"], domain=MS)
    yield case("ms_rope_partial", "RotaryEmbedding", {"x": randn(2, 5, 24), "p": pos, "c": cos[:, :2],
                                                      "s": sin[:, :2]}, ["y"], domain=MS, num_heads=3,
               rotary_embedding_dim=4)


def ms_attention_cases():
    B, S, D, N = 2, 5, 12, 3
    x, w, b = randn(B, S, D), randn(D, 3 * D) * 0.3, randn(3 * D)
    mask2d = np.ones((B, S), np.int32)
    mask2d[0, 3:] = 0
    mask2d[1, :] = 0  # fully masked: mask_filter_value keeps the row finite
    weights = {"w": w, "b": b}

    def att(name, feeds, inputs, outputs=("y",), inits=weights, **attrs):
        return case(name, "Attention", feeds, list(outputs), domain=MS, inputs=inputs, initializers=inits,
                    rtol=1e-4, atol=1e-5, num_heads=N, **attrs)

    yield att("ms_attention", {"x": x}, ["x", "w", "b"])
    yield att("ms_attention_mask2d", {"x": x, "m": mask2d}, ["x", "w", "b", "m"])
    yield att("ms_attention_lengths", {"x": x, "m": np.array([3, 5], np.int32)}, ["x", "w", "b", "m"])
    yield att("ms_attention_ends_starts", {"x": x, "m": np.array([4, 5, 1, 2], np.int32)}, ["x", "w", "b", "m"])
    yield att("ms_attention_mask3d", {"x": x, "m": (rng.random((B, S, S)) > 0.4).astype(np.int32)},
              ["x", "w", "b", "m"])
    yield att("ms_attention_unidirectional", {"x": x, "m": mask2d}, ["x", "w", "b", "m"], unidirectional=1)
    yield att("ms_attention_bias_scale", {"x": x, "ab": randn(1, N, S, S)}, ["x", "w", "b", "", "", "ab"], scale=0.2)
    past = randn(2, B, N, 4, D // N)
    yield att("ms_attention_past", {"x": x[:, :1], "m": np.ones((B, 5), np.int32), "past": past},
              ["x", "w", "b", "m", "past"], ("y", "present"), unidirectional=1)
    x_nan = x.copy()
    x_nan[1, 2, 0] = np.nan
    yield att("ms_attention_nan", {"x": x_nan}, ["x", "w", "b"])
    w_odd, b_odd = randn(D, 2 * 10 + 6), randn(2 * 10 + 6)
    # Odd head size 5 and a V head size of 3 (qkv_hidden_sizes); onnxruntime's CPU kernel needs the bias.
    yield case("ms_attention_qkv_sizes_odd", "Attention", {"x": x}, ["y"], domain=MS, inputs=["x", "w", "b"],
               initializers={"w": w_odd, "b": b_odd}, rtol=1e-4, atol=1e-5, num_heads=2, qkv_hidden_sizes=[10, 10, 6])


def mha_cases():
    B, S, L, N, H = 2, 4, 6, 2, 5
    q, k, v, b = randn(B, S, N * H), randn(B, L, N * H), randn(B, L, N * 3), randn(2 * N * H + N * 3)

    def mha(name, feeds, inputs, outputs=("y",), **attrs):
        return case(name, "MultiHeadAttention", feeds, list(outputs), domain=MS, inputs=inputs, rtol=1e-4,
                    atol=1e-5, num_heads=N, **attrs)

    yield mha("mha_cross_bias", {"q": q, "k": k, "v": v, "b": b}, ["q", "k", "v", "b"])
    mask = np.ones((B, L), np.int32)
    mask[0, 4:] = 0
    mask[1, :] = 0
    yield mha("mha_key_padding_2d", {"q": q, "k": k, "v": v, "m": mask}, ["q", "k", "v", "", "m"])
    yield mha("mha_key_lengths", {"q": q, "k": k, "v": v, "m": np.array([2, 6], np.int32)}, ["q", "k", "v", "", "m"])
    yield mha("mha_attention_bias", {"q": q, "k": k, "v": v, "ab": randn(B, 1, S, L)}, ["q", "k", "v", "", "", "ab"],
              scale=0.5)
    yield mha("mha_bnsh_kv", {"q": q, "k": randn(B, N, L, H), "v": randn(B, N, L, H)}, ["q", "k", "v"])
    # With a past, onnxruntime wants V's head size equal to Q's.
    v5, b5, pk, pv = randn(B, L, N * H), randn(3 * N * H), randn(B, N, 3, H), randn(B, N, 3, H)
    yield mha("mha_past_unidirectional", {"q": q, "k": k[:, :S], "v": v5[:, :S], "b": b5, "pk": pk, "pv": pv},
              ["q", "k", "v", "b", "", "", "pk", "pv"], ("y", "present_key", "present_value"), unidirectional=1)
    yield mha("mha_decode_step", {"q": q[:, :1], "k": k[:, :1], "v": v5[:, :1], "pk": pk, "pv": pv},
              ["q", "k", "v", "", "", "", "pk", "pv"], ("y", "present_key", "present_value"))
    q_nan = q.copy()
    q_nan[0, 0, 0] = np.nan
    yield mha("mha_nan", {"q": q_nan, "k": k, "v": v}, ["q", "k", "v"])


def gqa_cases():
    B, N, NK, H = 2, 4, 2, 16  # onnxruntime's rotary wants head sizes that are multiples of 16
    cos, sin = randn(16, H // 2), randn(16, H // 2)

    def gqa(name, feeds, inputs, **attrs):
        return case(name, "GroupQueryAttention", feeds, ["y", "present_key", "present_value"], domain=MS,
                    inputs=inputs, rtol=1e-4, atol=1e-5, num_heads=N, kv_num_heads=NK, **attrs)

    S = 5
    q, k, v = randn(B, S, N * H), randn(B, S, NK * H), randn(B, S, NK * H)
    lens = np.array([S - 1, S - 1], np.int32)
    total = np.array(S, np.int32)
    yield gqa("gqa_prompt", {"q": q, "k": k, "v": v, "sl": lens, "t": total}, ["q", "k", "v", "", "", "sl", "t"])
    for interleaved in (0, 1):
        yield gqa(f"gqa_prompt_rotary_il{interleaved}", {"q": q, "k": k, "v": v, "sl": lens, "t": total, "c": cos,
                                                        "s": sin},
                  ["q", "k", "v", "", "", "sl", "t", "c", "s"], do_rotary=1, rotary_interleaved=interleaved)
    yield gqa("gqa_prompt_window_softcap", {"q": q * 3, "k": k, "v": v, "sl": lens, "t": total},
              ["q", "k", "v", "", "", "sl", "t"], local_window_size=2, softcap=1.5, scale=0.4)
    yield gqa("gqa_packed", {"qkv": np.concatenate([q, k, v], axis=-1), "sl": lens, "t": total},
              ["qkv", "", "", "", "", "sl", "t"])
    P = 7
    pk, pv = randn(B, NK, P, H), randn(B, NK, P, H)
    # Decoding one token: batch 0 has 5 past tokens, batch 1 all 7 (the buffer); present = max(total, P).
    yield gqa("gqa_decode", {"q": q[:, :1], "k": k[:, :1], "v": v[:, :1], "pk": pk, "pv": pv,
                             "sl": np.array([5, 7], np.int32), "t": np.array(8, np.int32), "c": cos, "s": sin},
              ["q", "k", "v", "pk", "pv", "sl", "t", "c", "s"], do_rotary=1)
    # A prompt continued on a cache (onnxruntime allows it for batch 1 only).
    yield gqa("gqa_continue_prompt", {"q": q[:1, :3], "k": k[:1, :3], "v": v[:1, :3], "pk": pk[:1], "pv": pv[:1],
                                      "sl": np.array([9], np.int32), "t": np.array(10, np.int32)},
              ["q", "k", "v", "pk", "pv", "sl", "t"])
    q_nan = q.copy()
    q_nan[1, 2, 3] = np.nan
    yield gqa("gqa_nan", {"q": q_nan, "k": k, "v": v, "sl": lens, "t": total}, ["q", "k", "v", "", "", "sl", "t"])


def cases():
    yield from onnx_cases()
    yield from rotary_cases()
    yield from ms_attention_cases()
    yield from mha_cases()
    yield from gqa_cases()


def packed_mha(oracle):
    """MultiHeadAttention's packed forms, which onnxruntime's CPU kernel lacks, against the same heads unpacked."""
    B, S, L, N, H = 2, 4, 6, 2, 5
    qkv, q, kv = randn(B, S, N, 3, H), randn(B, S, N * H), randn(B, L, N, 2, H)
    forms = [("mha_packed_qkv", {"q": qkv}, ["q"],
              {"q": qkv[:, :, :, 0].reshape(B, S, -1), "k": qkv[:, :, :, 1].reshape(B, S, -1),
               "v": qkv[:, :, :, 2].reshape(B, S, -1)}),
             ("mha_packed_kv", {"q": q, "k": kv}, ["q", "k"],
              {"q": q, "k": kv[:, :, :, 0].reshape(B, L, -1), "v": kv[:, :, :, 1].reshape(B, L, -1)})]
    for name, feeds, inputs, unpacked in forms:
        packed = case(name, "MultiHeadAttention", feeds, ["y"], domain=MS, inputs=inputs, num_heads=N)
        want = oracle.reference_outputs(case(name + "_unpacked", "MultiHeadAttention", unpacked, ["y"], domain=MS,
                                             num_heads=N))[0]
        got, error = oracle.mpaudit_outputs(packed)
        oracle.checks(*(compare(f"{name}: y", np.asarray(want), got[0], 1e-4, 1e-5) if got else (False, error)))


def refused(oracle):
    packed_mha(oracle)
    q = randn(1, 2, 6)
    oracle.expect_error(case("attn_3d_without_heads", "Attention", {"q": q, "k": q, "v": q}, ["y"], opset=23),
                        "q_num_heads")
    x = randn(1, 2, 6)
    oracle.expect_error(case("ms_attention_megatron_mask", "Attention", {"x": x, "m": np.ones((1, 1, 4, 4), np.int32)},
                             ["y"], domain=MS, inputs=["x", "w", "", "m"], initializers={"w": randn(6, 18)},
                             num_heads=2), "mask")


if __name__ == "__main__":
    sys.exit(main("attention ops", cases, refused))
