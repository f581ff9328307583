#!/usr/bin/env python3
"""Sequence and optional values through the runtime, against onnxruntime: the sequence ops chained into
tensor outputs, sequences through If, Loop and SequenceMap, sequence outputs saved one file per element
(NAME_0.npy, ...), empty sequences, negative positions and axes, and the refusals (a tensor fed to a
sequence input, a position out of range)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

from op_oracle import Case, main


def graph_case(name, nodes, feeds, outputs, *, opset=21, reference="ort", inputs=None):
    """A model of several nodes; `inputs` overrides the graph inputs (ValueInfoProtos) made from the feeds."""
    graph_inputs = inputs if inputs is not None else [
        helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)) for k, v in feeds.items()]
    graph = helper.make_graph(nodes, name, graph_inputs, [onnx.ValueInfoProto(name=o) for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    return Case(name, model, feeds, 1e-6, 1e-7, reference)


def scalar(v):
    return np.array(v, np.int64)


rng = np.random.default_rng(11)
A = rng.standard_normal((2, 3)).astype(np.float32)
B = rng.standard_normal((2, 3)).astype(np.float32)
C = rng.standard_normal((2, 3)).astype(np.float32)
C[0, 1] = np.nan
X = rng.standard_normal((5, 4)).astype(np.float32)
construct = helper.make_node("SequenceConstruct", ["a", "b", "c"], ["s"])


def cases():
    for pos in (0, 2, -1, -3):
        yield graph_case(f"sequence_at_{pos}", [construct, helper.make_node("SequenceAt", ["s", "p"], ["y"])],
                         {"a": A, "b": B, "c": C, "p": scalar(pos)}, ["y"])
    for pos in (0, 3, -1):
        yield graph_case(f"sequence_insert_{pos}_concat", [
            construct, helper.make_node("SequenceInsert", ["s", "b", "p"], ["t"]),
            helper.make_node("ConcatFromSequence", ["t"], ["y"], axis=-1)], {"a": A, "b": B, "c": C, "p": scalar(pos)}, ["y"])
    yield graph_case("sequence_insert_at_end_stack", [
        construct, helper.make_node("SequenceInsert", ["s", "a"], ["t"]),
        helper.make_node("ConcatFromSequence", ["t"], ["y"], axis=-1, new_axis=1)], {"a": A, "b": B, "c": C}, ["y"])
    for pos in ("", "p"):
        yield graph_case(f"sequence_erase_{pos or 'last'}_length", [
            construct, helper.make_node("SequenceErase", ["s", pos], ["t"]),
            helper.make_node("SequenceLength", ["t"], ["n"]),
            helper.make_node("ConcatFromSequence", ["t"], ["y"], axis=0)],
            {"a": A, "b": B, "c": C, **({"p": scalar(-3)} if pos else {})}, ["n", "y"])
    yield graph_case("sequence_empty_length_insert", [
        helper.make_node("SequenceEmpty", [], ["e"], dtype=TensorProto.FLOAT),
        helper.make_node("SequenceLength", ["e"], ["n"]),
        helper.make_node("SequenceInsert", ["e", "a"], ["t"]),
        helper.make_node("ConcatFromSequence", ["t"], ["y"], axis=1)], {"a": A}, ["n", "y"])
    for label, split, attrs in (("scalar", np.array(2, np.int64), {"axis": 0}), ("sizes", np.array([1, 3], np.int32), {"axis": -1}),
                                ("ones_nokeep", None, {"axis": 1, "keepdims": 0}), ("ones_keep", None, {"axis": -2})):
        feeds = {"x": X, **({"split": split} if split is not None else {})}
        yield graph_case(f"split_to_sequence_{label}", [
            helper.make_node("SplitToSequence", list(feeds), ["s"], **attrs),
            helper.make_node("SequenceLength", ["s"], ["n"]),
            helper.make_node("SequenceAt", ["s", "last"], ["y"])], {**feeds, "last": scalar(-1)}, ["n", "y"])
    yield graph_case("split_empty_tensor", [
        helper.make_node("SplitToSequence", ["x"], ["s"], axis=0, keepdims=0),
        helper.make_node("SequenceLength", ["s"], ["n"])], {"x": np.zeros((0, 3), np.float32)}, ["n"])
    yield graph_case("optional_tensor", [
        helper.make_node("Optional", ["a"], ["o"]),
        helper.make_node("OptionalHasElement", ["o"], ["has"]),
        helper.make_node("OptionalGetElement", ["o"], ["y"])], {"a": A}, ["has", "y"], opset=18)
    yield graph_case("optional_empty", [
        helper.make_node("Optional", [], ["o"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, [])),
        helper.make_node("OptionalHasElement", ["o"], ["has"])], {}, ["has"], opset=18)
    yield graph_case("optional_sequence", [
        construct, helper.make_node("Optional", ["s"], ["o"]),
        helper.make_node("OptionalGetElement", ["o"], ["t"]),
        helper.make_node("SequenceAt", ["t", "p"], ["y"])], {"a": A, "b": B, "c": C, "p": scalar(1)}, ["y"], opset=18)
    # A sequence through both branches of If, and carried through a Loop that grows it.
    then_graph = helper.make_graph([helper.make_node("SequenceConstruct", ["a", "b"], ["r"])], "then", [],
                                   [helper.make_tensor_sequence_value_info("r", TensorProto.FLOAT, None)])
    else_graph = helper.make_graph([helper.make_node("SequenceConstruct", ["c"], ["r"])], "else", [],
                                   [helper.make_tensor_sequence_value_info("r", TensorProto.FLOAT, None)])
    for flag in (True, False):
        yield graph_case(f"if_sequence_{flag}", [
            helper.make_node("If", ["cond"], ["s"], then_branch=then_graph, else_branch=else_graph),
            helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)],
            {"cond": np.array(flag), "a": A, "b": B, "c": C}, ["y"])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["a", "i_f"], ["scaled"]),
         helper.make_node("SequenceInsert", ["seq_in", "scaled"], ["seq_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("seq_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("seq_out", TensorProto.FLOAT, None)])
    for trips in (3, 0):
        yield graph_case(f"loop_grows_sequence_{trips}", [
            helper.make_node("SequenceConstruct", ["b"], ["s0"]),
            helper.make_node("Loop", ["m", "", "s0"], ["s"], body=body),
            helper.make_node("SequenceLength", ["s"], ["n"]),
            helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)], {"m": scalar(trips), "a": A, "b": B}, ["n", "y"])
    map_body = helper.make_graph([helper.make_node("Add", ["e", "t"], ["r"])], "map",
                                 [helper.make_tensor_value_info("e", TensorProto.FLOAT, None),
                                  helper.make_tensor_value_info("t", TensorProto.FLOAT, None)],
                                 [helper.make_tensor_value_info("r", TensorProto.FLOAT, None)])
    yield graph_case("sequence_map_add", [
        construct, helper.make_node("SequenceMap", ["s", "a"], ["m"], body=map_body),
        helper.make_node("ConcatFromSequence", ["m"], ["y"], axis=0)], {"a": A, "b": B, "c": C}, ["y"], opset=18,
        reference="onnx-ref")


def run_mpaudit(oracle, c: Case):
    """mpaudit run of a case, returning (exit code, stderr, output folder)."""
    folder = oracle.work / c.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(c.model.SerializeToString())
    args = [oracle.mpaudit, "run", str(folder / "model.onnx"), "--save-outputs", str(folder / "out")]
    if c.feeds:
        np.savez(folder / "inputs.npz", **c.feeds)
        args += ["--inputs", str(folder / "inputs.npz")]
    run = subprocess.run(args, capture_output=True, text=True)
    return run.returncode, run.stderr.strip(), folder / "out"


def extra(oracle) -> None:
    # A sequence graph output: one file per element, NAME_0.npy ..., as onnxruntime's list.
    c = graph_case("sequence_output", [helper.make_node("SplitToSequence", ["x"], ["s"], axis=1)], {"x": X}, ["s"])
    import onnxruntime as ort
    want = ort.InferenceSession(c.model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": X})[0]
    code, err, out = run_mpaudit(oracle, c)
    files = sorted(out.glob("s_*.npy")) if code == 0 else []
    same = code == 0 and len(files) == len(want) and all(
        np.array_equal(np.load(out / f"s_{i}.npy"), w) for i, w in enumerate(want))
    oracle.checks(same, f"sequence_output: {len(files)} files s_0.npy ... as onnxruntime's {len(want)} tensors ({err or 'ran'})")
    # An empty sequence output: no file, and a summary saying so.
    c = graph_case("empty_sequence_output", [helper.make_node("SequenceEmpty", [], ["s"])], {}, ["s"])
    code, err, out = run_mpaudit(oracle, c)
    oracle.checks(code == 0 and not list(out.glob("s*.npy")), f"empty_sequence_output: no file ({err or 'ran'})")
    # A plain tensor fed to a sequence-typed graph input is refused, naming the input.
    seq_in = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)
    c = graph_case("tensor_for_sequence_input", [helper.make_node("SequenceLength", ["s"], ["n"])], {"s": A}, ["n"],
                   inputs=[seq_in])
    oracle.expect_error(c, "input 's' expects sequence(tensor(float32)), got a tensor")
    # Positions outside the sequence, an empty sequence to concatenate.
    c = graph_case("sequence_at_out_of_range", [construct, helper.make_node("SequenceAt", ["s", "p"], ["y"])],
                   {"a": A, "b": B, "c": C, "p": scalar(3)}, ["y"])
    oracle.expect_error(c, "position 3 is outside [-3, 2]")
    c = graph_case("concat_empty_sequence", [
        helper.make_node("SequenceEmpty", [], ["e"]), helper.make_node("ConcatFromSequence", ["e"], ["y"], axis=0)], {}, ["y"])
    oracle.expect_error(c, "cannot concatenate an empty sequence")


if __name__ == "__main__":
    sys.exit(main("sequence and optional values", cases, extra))
