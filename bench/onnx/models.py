"""Whole ONNX models: tessera beside ONNX Runtime, in one run.

Each model is built with the `onnx` package and random weights (ResNet-18
with torchvision's layer structure, batch 1 and 16), run by ONNX Runtime
(2 intra-op threads) and by `tessera run` on the same input (outputs must
agree within 1e-4 of the largest magnitude), then timed: Runtime's median
over --runs runs, and `tessera bench`'s median, taking turns for --rounds
rounds; the table reports the medians of the round medians and the ratio.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "target", "bench-onnx")
TESSERA = os.path.join(ROOT, "target", "release", "tessera")


def resnet18(batch, seed=0):
    """ResNet-18 as torchvision builds it (BatchNormalization kept)."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    count = [0]

    def name(prefix):
        count[0] += 1
        return f"{prefix}{count[0]}"

    def weight(shape, fan_in):
        w = (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        n = name("w")
        inits.append(numpy_helper.from_array(w, n))
        return n

    def conv_bn(x, cin, cout, k, stride, relu):
        y = name("conv")
        nodes.append(helper.make_node("Conv", [x, weight([cout, cin, k, k], cin * k * k)], [y],
                                      strides=[stride, stride], pads=[k // 2] * 4))
        stats = []
        for p, v in [("scale", 1.0), ("bias", 0.0), ("mean", 0.0), ("var", 1.0)]:
            n = name(p)
            value = v + 0.1 * rng.standard_normal(cout) if p != "var" else 1.0 + 0.1 * rng.random(cout)
            inits.append(numpy_helper.from_array(value.astype(np.float32), n))
            stats.append(n)
        z = name("bn")
        nodes.append(helper.make_node("BatchNormalization", [y] + stats, [z]))
        if relu:
            r = name("relu")
            nodes.append(helper.make_node("Relu", [z], [r]))
            return r
        return z

    def block(x, cin, cout, stride):
        y = conv_bn(x, cin, cout, 3, stride, True)
        y = conv_bn(y, cout, cout, 3, 1, False)
        short = conv_bn(x, cin, cout, 1, stride, False) if stride != 1 or cin != cout else x
        s, r = name("add"), name("relu")
        nodes.append(helper.make_node("Add", [y, short], [s]))
        nodes.append(helper.make_node("Relu", [s], [r]))
        return r

    x = "input"
    y = conv_bn(x, 3, 64, 7, 2, True)
    p = name("pool")
    nodes.append(helper.make_node("MaxPool", [y], [p], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    y, cin = p, 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        y = block(y, cin, cout, stride)
        y = block(y, cout, cout, 1)
        cin = cout
    g, f = name("gap"), name("flat")
    nodes.append(helper.make_node("GlobalAveragePool", [y], [g]))
    nodes.append(helper.make_node("Flatten", [g], [f], axis=1))
    fc_w = (rng.standard_normal([1000, 512]) * 0.03).astype(np.float32)
    inits.append(numpy_helper.from_array(fc_w, "fc_w"))
    inits.append(numpy_helper.from_array(np.zeros(1000, np.float32), "fc_b"))
    nodes.append(helper.make_node("Gemm", [f, "fc_w", "fc_b"], ["logits"], transB=1))
    graph = helper.make_graph(
        nodes, "resnet18",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def ort_time(path, feeds, runs):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.inter_op_num_threads = 1
    s = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    for _ in range(3):
        s.run(None, feeds)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        s.run(None, feeds)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3, s.run(None, feeds)


def tessera_time(path, runs):
    out = subprocess.run([TESSERA, "bench", path, "--runs", str(runs), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    rows = []
    for label, batch in [("resnet18_b1", 1), ("resnet18_b16", 16)]:
        if args.only and args.only != label:
            continue
        path = os.path.join(OUT, f"{label}.onnx")
        onnx.save(resnet18(batch), path)
        x = np.random.default_rng(1).standard_normal([batch, 3, 224, 224]).astype(np.float32)
        xin = os.path.join(OUT, f"{label}_input.npy")
        np.save(xin, x)
        _, ref = ort_time(path, {"input": x}, 1)
        outdir = os.path.join(OUT, f"{label}_out")
        subprocess.run([TESSERA, "run", path, "--input", f"input={xin}", "--out", outdir],
                       check=True, capture_output=True)
        got = np.load(os.path.join(outdir, "logits.npy"))
        err = float(np.abs(got - ref[0]).max() / np.abs(ref[0]).max())
        ort_ms, tes_ms = [], []
        for _ in range(args.rounds):
            ort_ms.append(ort_time(path, {"input": x}, args.runs)[0])
            tes_ms.append(tessera_time(path, args.runs))
        o, t = statistics.median(ort_ms), statistics.median(tes_ms)
        rows.append((label, o, t, err))
        print(f"{label}: ORT {o:.2f} ms, tessera {t:.2f} ms, ORT/tessera {o / t:.2f}, "
              f"max relative difference {err:.1e}", flush=True)
    print("\n| model | ONNX Runtime (ms) | tessera (ms) | ORT / tessera | max rel. diff |")
    print("|---|---|---|---|---|")
    for label, o, t, err in rows:
        print(f"| {label} | {o:.2f} | {t:.2f} | {o / t:.2f} | {err:.1e} |")


if __name__ == "__main__":
    sys.exit(main())
