"""Single-operator ONNX workloads: tessera's import of the model beside ONNX
Runtime, weights as initializers (Runtime's fastest configuration: it
prepacks them and, for convolutions, picks its NCHWc kernels), 2 threads.

Each model is built with onnx.helper (opset 17) into target/bench-onnx-ops/,
run by Runtime and by `tessera run` on the same input (the script stops if
tessera's output differs by more than 1e-4 of the largest magnitude), then
timed in turns for --rounds rounds: Runtime's median of --runs runs, and
`tessera bench --json`'s median. The table gives the medians of the round
medians and tessera's time over Runtime's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from models import median_ms  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "target", "bench-onnx-ops")
TESSERA = os.path.join(ROOT, "target", "release", "tessera")


def conv(name, x_shape, w_shape, **attrs):
    """A Conv (or ConvTranspose with transpose=True) with bias, weights as initializers."""
    rng = np.random.default_rng(0)
    op = "ConvTranspose" if attrs.pop("transpose", False) else "Conv"
    fan_in = int(np.prod(w_shape[1:]))
    w = (rng.standard_normal(w_shape) / np.sqrt(fan_in)).astype(np.float32)
    out_channels = w_shape[1] * attrs.get("group", 1) if op == "ConvTranspose" else w_shape[0]
    b = rng.standard_normal(out_channels).astype(np.float32)
    node = helper.make_node(op, ["x", "w", "b"], ["y"], **attrs)
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return name, model, {"x": rng.standard_normal(x_shape).astype(np.float32)}


def graph_model(name, nodes, inputs, weights):
    """A graph of `nodes` with float32 `inputs` ({name: shape}) and `weights` as initializers."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, k) for k, w in weights.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def tbmm():
    """Z = X Y^T per batch, Y transposed by a Transpose node (500, 26, 72) x (500, 26, 72)."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Transpose", ["b"], ["bt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["a", "bt"], ["y"]),
    ]
    shapes = {"a": [500, 26, 72], "b": [500, 26, 72]}
    feeds = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    return "tbmm", graph_model("tbmm", nodes, shapes, {}), feeds


def mlp3():
    """Three Gemm (transB) + Relu layers, batch 128, 1024 > 1024 > 512 > 256, weights as initializers."""
    rng = np.random.default_rng(0)
    sizes = [1024, 1024, 512, 256]
    nodes, weights, x = [], {}, "x"
    for k, (i, o) in enumerate(zip(sizes, sizes[1:])):
        weights[f"w{k}"] = (rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32)
        weights[f"b{k}"] = rng.standard_normal(o).astype(np.float32)
        out = "y" if k == 2 else f"h{k}"
        nodes += [helper.make_node("Gemm", [x, f"w{k}", f"b{k}"], [f"g{k}"], transB=1),
                  helper.make_node("Relu", [f"g{k}"], [out])]
        x = out
    feeds = {"x": rng.standard_normal((128, 1024)).astype(np.float32)}
    return "MLP3", graph_model("MLP3", nodes, {"x": [128, 1024]}, weights), feeds


WORKLOADS = [
    tbmm,
    mlp3,
    lambda: conv("conv3x3", [1, 512, 7, 7], [512, 512, 3, 3], pads=[1, 1, 1, 1]),
    lambda: conv("conv5x5b", [1, 48, 38, 38], [64, 48, 5, 5], pads=[2, 2, 2, 2]),
    lambda: conv("gconv", [32, 512, 14, 14], [512, 16, 3, 3], pads=[1, 1, 1, 1], group=32),
    lambda: conv("convtranspose", [16, 256, 2, 2], [256, 128, 4, 4], strides=[2, 2],
                 pads=[1, 1, 1, 1], transpose=True),
]


def tessera_ms(path, feeds, runs):
    cmd = [TESSERA, "bench", path, "--runs", str(runs), "--json"]
    for k, v in feeds.items():
        cmd += ["--input", f"{k}={v}"]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["median_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", action="append", help="workload name (repeatable)")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    rows = []
    for make in WORKLOADS:
        name, model, feeds = make()
        if args.only and name not in args.only:
            continue
        path = os.path.join(OUT, f"{name}.onnx")
        onnx.save(model, path)
        files = {}
        for k, v in feeds.items():
            files[k] = os.path.join(OUT, f"{name}_{k}.npy")
            np.save(files[k], v)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 2
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        ref = session.run(None, feeds)[0]
        outdir = os.path.join(OUT, f"{name}_out")
        cmd = [TESSERA, "run", path, "--out", outdir] + [a for k, f in files.items() for a in ("--input", f"{k}={f}")]
        subprocess.run(cmd, check=True, capture_output=True)
        got = np.load(os.path.join(outdir, "y.npy"))
        err = float(np.abs(got - ref).max() / np.abs(ref).max())
        if err > 1e-4:
            sys.exit(f"{name}: tessera's output differs from ONNX Runtime's by {err:.1e}")
        ort_t, tess_t = [], []
        for _ in range(args.rounds):
            tess_t.append(tessera_ms(path, files, args.runs))
            ort_t.append(median_ms(lambda: session.run(None, feeds), args.runs))
        o, t = statistics.median(ort_t), statistics.median(tess_t)
        rows.append((name, o, t, err))
        print(f"{name}: ORT {o:.3f} ms, tessera {t:.3f} ms", flush=True)
    print("\n| workload | ONNX Runtime (ms) | tessera (ms) | tessera / ORT | max rel. diff |")
    print("|---|---|---|---|---|")
    for name, o, t, err in rows:
        print(f"| {name} | {o:.3f} | {t:.3f} | {t / o:.2f} | {err:.1e} |")


if __name__ == "__main__":
    sys.exit(main())
