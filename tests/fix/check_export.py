#!/usr/bin/env python3
"""`mpaudit fix --export-onnx` against onnx and onnxruntime: small models built here with a known keep-set
are fixed and exported; each exported model passes onnx.checker with full_check, runs in onnxruntime (CPU EP)
with outputs within the fix's default gates of the FP32 model's (allclose atol 1e-3, rtol 1e-2, all finite)
on the same inputs, holds the node/initializer/Cast types expected, and runs in `mpaudit run`.

Models: an initializer shared by a kept and a target-format node (the target node reads an fp16 copy), a
clamp by a weight that overflows fp16 (kept float32 with its reader, and reported), unnamed nodes with a
Constant (the exported model names them as mpaudit does), the same with --keep-io-types false, and an If
whose branches read a value computed in fp16 (the If is exported in FP32, its branches read it through a Cast)."""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

FAILURES = []


def check(condition, what):
    if not condition:
        FAILURES.append(what)
        print("FAIL:", what)


def save(graph, path, opset=13):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


def shared_initializer_model(path):
    # a = x * w is forced FP32 (--keep-fp32 A); b = a + w computes in fp16 and reads w as an fp16 copy.
    w = numpy_helper.from_array(np.linspace(1.0, 2.0, 16, dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["a"], name="A"), helper.make_node("Add", ["a", "w"], ["b"], name="B"),
         helper.make_node("Relu", ["b"], ["y"], name="C")],
        "shared", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])], [w])
    return save(graph, path)


def overflowing_weight_model(path):
    # Min(x, 1e6) is exact in fp16 (the cap rounds to inf), so the search keeps nothing; the export must not
    # write the cap as inf: it stays float32 and Cap stays FP32.
    cap = numpy_helper.from_array(np.array([1e6], dtype=np.float32), "cap")
    graph = helper.make_graph(
        [helper.make_node("Min", ["x", "cap"], ["m"], name="Cap"), helper.make_node("Tanh", ["m"], ["y"], name="Act")],
        "overflow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])], [cap])
    return save(graph, path)


def unnamed_model(path):
    # log(1e-8 x) + 20 with every node unnamed: mpaudit keeps Mul_0 (1e-8 x flushes in fp16) and Log_1 (it
    # reads that product), the Constant and the Add compute in fp16.
    tiny = numpy_helper.from_array(np.array([1e-8], dtype=np.float32), "tiny")
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "tiny"], ["t"]), helper.make_node("Log", ["t"], ["l"]),
         helper.make_node("Constant", [], ["twenty"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [20.0])),
         helper.make_node("Add", ["l", "twenty"], ["s"]), helper.make_node("Sigmoid", ["s"], ["y"])],
        "unnamed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])], [tiny])
    return save(graph, path)


def if_model(path):
    # a = x * w in fp16; If (cond from the mean of x) adds or subtracts a Constant from `a` in its branches.
    w = numpy_helper.from_array(np.full([16], 1.5, dtype=np.float32), "w")

    def branch(op, name):
        one = helper.make_node("Constant", [], [name + "_one"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]))
        return helper.make_graph([one, helper.make_node(op, ["a", name + "_one"], [name + "_y"])], name, [],
                                 [helper.make_tensor_value_info(name + "_y", TensorProto.FLOAT, [4, 16])])

    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["a"], name="A"),
         helper.make_node("ReduceMean", ["x"], ["m"], name="Mean", keepdims=0),
         helper.make_node("Constant", [], ["zero"], name="Zero", value=helper.make_tensor("z", TensorProto.FLOAT, [], [0.0])),
         helper.make_node("Greater", ["m", "zero"], ["cond"], name="Cond"),
         helper.make_node("If", ["cond"], ["y"], name="Branch", then_branch=branch("Add", "then"),
                          else_branch=branch("Sub", "else"))],
        "if", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])], [w])
    return save(graph, path)


def fix_and_export(mpaudit, model, out_dir, extra=()):
    exported = out_dir / (model.stem + ".fp16.onnx")
    report = out_dir / (model.stem + ".fix.json")
    cmd = [mpaudit, "fix", str(model), "--random-inputs", "--dist", "x=uniform:0.5,1", "--samples", "2", "--quiet",
           "--json", str(report), "--export-onnx", str(exported), *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(r.returncode == 0, f"{model.name}: fix exit {r.returncode}: {r.stderr}")
    return exported, json.loads(report.read_text())


def compare_with_onnxruntime(model, exported, io_fp16=False):
    x = np.random.default_rng(7).uniform(0.5, 1.0, (4, 16)).astype(np.float32)
    m = onnx.load(exported)
    onnx.checker.check_model(m, full_check=True)
    want = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ort.InferenceSession(str(exported), providers=["CPUExecutionProvider"]).run(
        None, {"x": x.astype(np.float16) if io_fp16 else x})[0]
    check(got.dtype == (np.float16 if io_fp16 else np.float32), f"{exported.name}: output dtype {got.dtype}")
    got = got.astype(np.float32)
    check(np.isfinite(got).all(), f"{exported.name}: non-finite outputs")
    check(np.allclose(got, want, atol=1e-3, rtol=1e-2),
          f"{exported.name}: max abs diff {np.abs(got - want).max()} outside atol 1e-3 rtol 1e-2")
    return m


def mpaudit_runs(mpaudit, exported, out_dir):
    r = subprocess.run([mpaudit, "run", str(exported), "--random-inputs", "--dist", "x=uniform:0.5,1",
                        "--save-outputs", str(out_dir / (exported.stem + "_out"))], capture_output=True, text=True)
    check(r.returncode == 0, f"mpaudit run {exported.name}: exit {r.returncode}: {r.stderr}")


def types(m):
    inits = {t.name: t.data_type for t in m.graph.initializer}
    nodes = {n.name: n for n in m.graph.node}
    return inits, nodes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpaudit", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)

        model = shared_initializer_model(d / "shared.onnx")
        exported, rep = fix_and_export(args.mpaudit, model, d, ["--keep-fp32", "A"])
        m = compare_with_onnxruntime(model, exported)
        inits, nodes = types(m)
        check(inits == {"w": TensorProto.FLOAT, "w_fp16": TensorProto.FLOAT16}, f"shared: initializers {inits}")
        check(list(nodes["B"].input) == ["a_to_fp16", "w_fp16"], f"shared: B reads {list(nodes['B'].input)}")
        check(nodes["a_to_fp16"].op_type == "Cast" and nodes["y_fp16_to_fp32"].op_type == "Cast",
              f"shared: casts {sorted(nodes)}")
        check(rep["export"]["casts_inserted"] == 2 and rep["export"]["initializers_converted"] == 1,
              f"shared: export {rep['export']}")
        mpaudit_runs(args.mpaudit, exported, d)

        model = overflowing_weight_model(d / "overflow.onnx")
        exported, rep = fix_and_export(args.mpaudit, model, d)
        check(rep["keep"] == [], f"overflow: keep {rep['keep']}")
        m = compare_with_onnxruntime(model, exported)
        inits, nodes = types(m)
        check(inits == {"cap": TensorProto.FLOAT}, f"overflow: initializers {inits}")
        kept = rep["export"]["initializers_kept_fp32"]
        check(kept == [{"name": "cap", "reason": "overflow", "elements": 1, "consumers": ["Cap"]}],
              f"overflow: kept {kept}")
        check([n["node"] for n in rep["export"]["nodes_kept_fp32"]] == ["Cap"], f"overflow: {rep['export']}")
        mpaudit_runs(args.mpaudit, exported, d)

        model = unnamed_model(d / "unnamed.onnx")
        for io_fp16 in (False, True):
            exported, rep = fix_and_export(args.mpaudit, model, d, ["--keep-io-types", str(not io_fp16).lower()])
            check({k["node"] for k in rep["keep"]} == {"Mul_0", "Log_1"}, f"unnamed: keep {rep['keep']}")
            m = compare_with_onnxruntime(model, exported, io_fp16)
            inits, nodes = types(m)
            for name, op in [("Mul_0", "Mul"), ("Log_1", "Log"), ("Constant_2", "Constant"), ("Add_3", "Add"),
                             ("Sigmoid_4", "Sigmoid"), ("l_to_fp16", "Cast")]:
                check(name in nodes and nodes[name].op_type == op, f"unnamed: no {op} node '{name}' in {sorted(nodes)}")
            check(nodes["Constant_2"].attribute[0].t.data_type == TensorProto.FLOAT16, "unnamed: Constant not fp16")
            check(inits["tiny"] == TensorProto.FLOAT, f"unnamed: initializers {inits}")
            mpaudit_runs(args.mpaudit, exported, d)

        model = if_model(d / "if.onnx")
        exported, rep = fix_and_export(args.mpaudit, model, d)
        m = compare_with_onnxruntime(model, exported)
        inits, nodes = types(m)
        check(inits == {"w": TensorProto.FLOAT16}, f"if: initializers {inits}")
        check([(n["node"], n["op_type"]) for n in rep["export"]["nodes_kept_fp32"]] == [("Branch", "If")],
              f"if: {rep['export']['nodes_kept_fp32']}")
        then_reads = [i for n in nodes["Branch"].attribute[0].g.node for i in n.input]
        check("a_to_fp32" in then_reads, f"if: the branch reads {then_reads}")
        mpaudit_runs(args.mpaudit, exported, d)

    print("FAILED" if FAILURES else "ok", len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
