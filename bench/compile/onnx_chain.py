"""A long elementwise ONNX chain, for timing how long tessera takes to
compile a model with many nodes (issue 15, item 10).

The model has one input `x` of shape [1, 64, 56, 56] and NODES nodes that
take turns: Add and Mul of a constant initializer, Relu, Sigmoid. Each Add
or Mul has its own per-channel constant of shape [1, 64, 1, 1] (random,
seeded), so the nodes differ in their weights but not in their code: a
compiler that emits one function per distinct piece of code compiles four
or so, one that emits one per node compiles NODES.

    python bench/compile/onnx_chain.py NODES OUT.onnx [--seed S] [--check]

With --check, ONNX Runtime runs the model once on random input as a sanity
check of the file. Needs the `onnx` and `numpy` packages (and
`onnxruntime` for --check).
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = [1, 64, 56, 56]
OPS = ["Add", "Mul", "Relu", "Sigmoid"]


def build(nodes, seed):
    rng = np.random.default_rng(seed)
    inits = []
    graph_nodes = []
    prev = "x"
    for k in range(nodes):
        op = OPS[k % len(OPS)]
        out = f"t{k}" if k + 1 < nodes else "y"
        if op in ("Add", "Mul"):
            c = f"c{k}"
            lo, hi = (-0.1, 0.1) if op == "Add" else (0.9, 1.1)
            value = rng.uniform(lo, hi, size=[1, SHAPE[1], 1, 1]).astype(np.float32)
            inits.append(numpy_helper.from_array(value, name=c))
            graph_nodes.append(helper.make_node(op, [prev, c], [out], name=f"n{k}"))
        else:
            graph_nodes.append(helper.make_node(op, [prev], [out], name=f"n{k}"))
        prev = out
    graph = helper.make_graph(
        graph_nodes,
        f"chain{nodes}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("nodes", type=int, help="the number of nodes (at least 1)")
    ap.add_argument("out", help="the .onnx file to write")
    ap.add_argument("--seed", type=int, default=0, help="seed of the constants")
    ap.add_argument("--check", action="store_true", help="run it once with ONNX Runtime")
    a = ap.parse_args()
    if a.nodes < 1:
        ap.error("NODES must be at least 1")
    model = build(a.nodes, a.seed)
    onnx.save(model, a.out)
    if a.check:
        import onnxruntime as ort

        x = np.random.default_rng(a.seed + 1).standard_normal(SHAPE).astype(np.float32)
        y = ort.InferenceSession(a.out).run(None, {"x": x})[0]
        print(f"{a.out}: {a.nodes} nodes, y[0,0,0,:4] = {y[0, 0, 0, :4]}")


if __name__ == "__main__":
    main()
