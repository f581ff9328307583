"""Writes the seed corpora of tests/fuzz/corpus: small valid inputs of every fuzz target (run from the repository
root with the project's venv; the report seeds need a built mpaudit: --mpaudit build/mpaudit)."""
import argparse
import ctypes
import io
import pathlib
import shutil
import struct
import subprocess
import tempfile
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
# One model per op family the runtime implements, from the ONNX node tests (each a few hundred bytes).
NODE_TESTS = [
    "test_add_bcast", "test_averagepool_2d_pads", "test_batchnorm_example", "test_cast_FLOAT_to_FLOAT16",
    "test_clip", "test_concat_2d_axis_1", "test_constant", "test_conv_with_strides_padding", "test_convtranspose_pads",
    "test_cumsum_2d_axis_1", "test_einsum_batch_matmul", "test_expand_dim_changed", "test_gather_2d_indices",
    "test_gemm_default_matrix_bias", "test_gru_defaults", "test_if", "test_instancenorm_example",
    "test_layer_normalization_2d_axis0", "test_loop11", "test_lstm_with_peepholes", "test_matmul_2d",
    "test_maxpool_2d_pads", "test_nonzero_example", "test_onehot_with_axis", "test_constant_pad", "test_range_float_type_positive_delta",
    "test_reduce_mean_default_axes_keepdims_example", "test_reshape_negative_dim", "test_resize_upsample_scales_linear",
    "test_rnn_seq_length", "test_scan9_sum", "test_scatter_elements_with_axis", "test_slice_neg_steps",
    "test_softmax_axis_1", "test_split_variable_parts_1d_opset18", "test_tile", "test_top_k", "test_transpose_default",
    "test_tril", "test_where_example",
]


def write(target, name, data):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def models():
    for demo in (ROOT / "models" / "demo").glob("*.onnx"):
        write("model", demo.name, demo.read_bytes())
    node_dir = pathlib.Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
    for test in NODE_TESTS:
        write("model", test[len("test_"):] + ".onnx", (node_dir / test / "model.onnx").read_bytes())


def npy_bytes(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def arrays():
    for demo in (ROOT / "models" / "demo").glob("*.npy"):
        write("npy", demo.name, demo.read_bytes())
    write("npy", "f16_2x3.npy", npy_bytes(np.arange(6, dtype=np.float16).reshape(2, 3)))
    write("npy", "i64_scalar.npy", npy_bytes(np.array(7, dtype=np.int64)))
    write("npy", "bool_empty.npy", npy_bytes(np.zeros((0, 4), dtype=bool)))
    write("npy", "u8_4.npy", npy_bytes(np.arange(4, dtype=np.uint8)))
    write("npy", "f64_fortran.npy", npy_bytes(np.asfortranarray(np.ones((2, 2)))))
    write("npy", "f32_big_endian.npy", npy_bytes(np.ones(3, dtype=">f4")))
    v2 = io.BytesIO()
    np.lib.format.write_array(v2, np.ones(2, dtype=np.float32), version=(2, 0))
    write("npy", "f32_v2.npy", v2.getvalue())
    for name, save in (("stored.npz", np.savez), ("deflated.npz", np.savez_compressed)):
        buffer = io.BytesIO()
        save(buffer, x=np.arange(6, dtype=np.float32).reshape(2, 3), mask=np.array([1, 0], dtype=np.int64))
        write("npz", name, buffer.getvalue())


def png(width, height, colour_type, bit_depth, rows):
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    header = struct.pack(">IIBBBBB", width, height, bit_depth, colour_type, 0, 0, 0)
    raw = b"".join(b"\0" + row for row in rows)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def images():
    stb = ctypes.CDLL("libstb.so.0")
    pixels = bytes((x * 40 + y * 20 + c * 60) % 256 for y in range(4) for x in range(6) for c in range(3))
    with tempfile.TemporaryDirectory() as tmp:
        for name, write_image in (("rgb.jpg", lambda p: stb.stbi_write_jpg(p, 6, 4, 3, pixels, 90)),
                                  ("rgb.bmp", lambda p: stb.stbi_write_bmp(p, 6, 4, 3, pixels)),
                                  ("rgb_stb.png", lambda p: stb.stbi_write_png(p, 6, 4, 3, pixels, 18))):
            path = pathlib.Path(tmp) / name
            assert write_image(str(path).encode())
            write("image", name, path.read_bytes())
        gray = bytes(range(0, 240, 10))
        stb.stbi_write_jpg(str(pathlib.Path(tmp) / "gray.jpg").encode(), 6, 4, 1, gray, 75)
        write("image", "gray.jpg", (pathlib.Path(tmp) / "gray.jpg").read_bytes())
    write("image", "gray.png", png(6, 4, 0, 8, [gray[r * 6:(r + 1) * 6] for r in range(4)]))
    write("image", "rgba16.png", png(2, 2, 6, 16, [bytes(range(r * 16, r * 16 + 16)) for r in range(2)]))
    write("image", "rgb.ppm", b"P6\n6 4\n255\n" + pixels)
    write("image", "gray.pgm", b"P5\n6 4\n255\n" + gray)


def wav(channels, bits, fmt, frames):
    samples = bytes((i * 37) % 256 for i in range(frames * channels * bits // 8))
    block = channels * bits // 8
    header = struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + len(samples), b"WAVE", b"fmt ", 16, fmt, channels, 16000,
                         16000 * block, block, bits, b"data", len(samples))
    return header + samples


def audio():
    write("wav", "pcm16_mono.wav", wav(1, 16, 1, 16))
    write("wav", "pcm24_stereo.wav", wav(2, 24, 1, 8))
    write("wav", "float32_mono.wav", wav(1, 32, 3, 8))
    write("wav", "pcm32_stereo.wav", wav(2, 32, 1, 4))


def options():
    for i, text in enumerate(["resize=224x224,layout=nchw,scale=1/255,mean=0.485/0.456/0.406,std=0.229/0.224/0.225,bgr",
                              "gray,scale=0.5,mean=127.5,std=127.5", "resize=3x5,layout=nhwc,rgb", "offset=2,length=4,mono",
                              "length=8", "scale=2"]):
        write("preprocess", f"{i}.txt", text)
    for i, text in enumerate(["unsafe_nodes>0", "fp16.output.max_rel_err>1e-2\nbf16.warn_nodes>=3",
                              "output[logits].sqnr_db<40", "fp16.output[probs].cosine<0.999", "output.max_abs_err!=inf",
                              "fp16.nonfinite>0\nbf16.vanished_frac>0.5", "skipped_steps>10\nfp16.empty_windows==0",
                              "fp8e4m3.significant_flush_frac>=1e-3"]):
        write("gate", f"{i}.txt", text)


def reports(mpaudit):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        nodes = [helper.make_node("Mul", ["x", "big"], ["scaled"], name="scale"),
                 helper.make_node("Relu", ["scaled"], ["y"], name="relu")]
        graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                                  [helper.make_tensor("big", TensorProto.FLOAT, [], [70000.0])])
        model = tmp / "tiny.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
        shards = []
        for k in (1, 2):
            out = tmp / f"shard{k}.json"
            subprocess.run([mpaudit, "audit", str(model), "--random-inputs", "--samples", "2", "--shard", f"{k}/2",
                            "--target", "fp16", "--target", "bf16", "--json", str(out), "--quiet"], check=False)
            shards.append(out.read_bytes())
    write("report", "shard1.json", shards[0])
    write("report", "shards.json", shards[0] + b"\0" + shards[1])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mpaudit", required=True)
    args = parser.parse_args()
    shutil.rmtree(CORPUS, ignore_errors=True)
    models()
    arrays()
    images()
    audio()
    options()
    reports(args.mpaudit)


if __name__ == "__main__":
    main()
