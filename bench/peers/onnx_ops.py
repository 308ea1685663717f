"""Single-operator ONNX workloads: tessera's import of the model beside ONNX
Runtime, weights as initializers (Runtime's fastest configuration: it
prepacks them and, for convolutions, picks its NCHWc kernels), PyTorch
eager and torch.compile with freezing (the same operators on the same
weights, as module parameters), 2 threads each.

Each model is built with onnx.helper (opset 17) into target/bench-onnx-ops/,
run by Runtime, by PyTorch and by `tessera run` on the same input (the
script stops if any output differs from Runtime's by more than 1e-4 of the
largest magnitude), then timed in turns for --rounds rounds: each peer's
median of --runs runs, and `tessera bench --json`'s median. The table gives
the medians of the round medians and tessera's time over the best peer's.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from models import median_ms, print_table, summarize  # noqa: E402

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


class TorchGraph(torch.nn.Module):
    """The operators of one of these small ONNX graphs in PyTorch: its
    initializers become parameters (so torch.compile's freezing folds them),
    its nodes run in order on a dictionary of values."""

    def __init__(self, model):
        super().__init__()
        graph = model.graph
        self.inputs = [i.name for i in graph.input]
        self.output = graph.output[0].name
        self.weights = torch.nn.ParameterDict({
            t.name: torch.nn.Parameter(torch.from_numpy(numpy_helper.to_array(t).copy()), requires_grad=False)
            for t in graph.initializer
        })
        self.nodes = [(n.op_type, list(n.input), n.output[0], {a.name: helper.get_attribute_value(a) for a in n.attribute})
                      for n in graph.node]

    def forward(self, *args):
        env = dict(zip(self.inputs, args))
        env.update(self.weights.items())
        for op, ins, out, attrs in self.nodes:
            x = [env[i] for i in ins]
            env[out] = apply_node(op, x, attrs)
        return env[self.output]


def apply_node(op, x, attrs):
    """One ONNX node of the workloads above in PyTorch (symmetric pads only)."""
    def padding():
        pads = attrs.get("pads", [0, 0, 0, 0])
        assert pads[:2] == pads[2:], f"asymmetric pads {pads}"
        return tuple(pads[:2])
    if op == "Conv":
        return F.conv2d(x[0], x[1], x[2], stride=tuple(attrs.get("strides", [1, 1])), padding=padding(),
                        dilation=tuple(attrs.get("dilations", [1, 1])), groups=attrs.get("group", 1))
    if op == "ConvTranspose":
        return F.conv_transpose2d(x[0], x[1], x[2], stride=tuple(attrs.get("strides", [1, 1])), padding=padding(),
                                  groups=attrs.get("group", 1))
    if op == "Gemm":
        assert attrs.get("transB") == 1 and "transA" not in attrs
        return F.linear(x[0], x[1], x[2])
    if op == "Relu":
        return torch.relu(x[0])
    if op == "Transpose":
        return x[0].permute(*attrs["perm"])
    if op == "MatMul":
        return torch.matmul(x[0], x[1])
    raise ValueError(f"no PyTorch form for {op}")


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
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = ap.parse_args()
    torch.set_num_threads(2)
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
        module = TorchGraph(model).eval()
        args_t = tuple(torch.from_numpy(v) for v in feeds.values())
        with torch.inference_mode():
            runners = {"eager": module}
            if not args.no_compile:
                import torch._inductor.config as inductor
                inductor.freezing = True
                runners["compile"] = torch.compile(module)
            for peer, run in runners.items():
                out = run(*args_t).numpy()
                perr = float(np.abs(out - ref).max() / np.abs(ref).max())
                if perr > 1e-4:
                    sys.exit(f"{name}: PyTorch {peer}'s output differs from ONNX Runtime's by {perr:.1e}")
            times = {"ort": [], "eager": [], "compile": [], "tessera": []}
            for _ in range(args.rounds):
                times["tessera"].append(tessera_ms(path, files, args.runs))
                times["ort"].append(median_ms(lambda: session.run(None, feeds), args.runs))
                for peer, run in runners.items():
                    times[peer].append(median_ms(lambda: run(*args_t), args.runs))
        med, best = summarize(times)
        rows.append((name, med, best, err))
        print(f"{name}: ORT {med['ort']:.3f} ms, eager {med['eager']:.3f} ms, compile {med['compile']:.3f} ms, "
              f"tessera {med['tessera']:.3f} ms", flush=True)
    print_table("workload", rows, 3)


if __name__ == "__main__":
    sys.exit(main())
