"""Compile time, cold and warm, beside ONNX Runtime's session creation.

For each model: ONNX Runtime's session creation (all graph optimizations,
2 intra-op threads) and its first run, then `tessera run` end to end with
an empty kernel cache (cold: import, lowering, passes, C compilation) and
again with the cache it filled (warm), each the median of --rounds rounds
taken in turn. Models: those of bench/peers/models.py (exported from
PyTorch at their real size), a 12-layer BERT-base encoder
(`torch.nn.TransformerEncoder`, d_model 768, 12 heads, sequence 128), and
an elementwise chain of --chain ONNX nodes (Add, Mul, Relu, Sigmoid in
turn on a 1x64x56x56 tensor). tessera's output is compared with Runtime's
before anything is timed.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
import models as peer_models  # noqa: E402
import torch_models as tm  # noqa: E402

OUT = os.path.join(ROOT, "target", "bench-compile")
TESSERA = os.path.join(ROOT, "target", "release", "tessera")


def chain_model(path, n):
    """An elementwise chain of n nodes with constant operands."""
    shape = [1, 64, 56, 56]
    nodes, inits = [], []
    prev = "x"
    for k in range(n):
        out = f"v{k}"
        op = ("Add", "Mul", "Relu", "Sigmoid")[k % 4]
        if op in ("Add", "Mul"):
            c = f"c{k}"
            inits.append(helper.make_tensor(c, TensorProto.FLOAT, [1], [0.5 + 0.001 * k]))
            nodes.append(helper.make_node(op, [prev, c], [out], name=f"n{k}"))
        else:
            nodes.append(helper.make_node(op, [prev], [out], name=f"n{k}"))
        prev = out
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, shape)],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, path)
    return {"x": np.random.default_rng(0).standard_normal(shape).astype(np.float32)}


def bert_encoder(path):
    layer = torch.nn.TransformerEncoderLayer(d_model=768, nhead=12, dim_feedforward=3072,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=12, enable_nested_tensor=False).eval()
    x = torch.randn(1, 128, 768)
    tm.export(model, {"x": x}, path)
    return {"x": x.numpy()}


def session_ms(path, feeds):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    t = time.perf_counter()
    s = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    made = time.perf_counter() - t
    t = time.perf_counter()
    out = s.run(None, feeds)
    first = time.perf_counter() - t
    return made * 1e3, first * 1e3, out[0], s.get_outputs()[0].name


def tessera_s(cmd, cache):
    env = dict(os.environ, TESSERA_CACHE_DIR=cache)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--chain", type=int, default=3000)
    ap.add_argument("--only", action="append", help="model name (repeatable)")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    makers = {f"chain_{args.chain}": lambda p: chain_model(p, args.chain),
              "bert_base_encoder_12l_s128": bert_encoder}
    for k, (name, build) in enumerate(peer_models.MODELS.items()):
        def make(p, build=build, k=k):
            torch.manual_seed(k)
            model, inputs = build()
            tm.export(model, inputs, p)
            return {n: v.numpy() for n, v in inputs.items()}
        makers[name] = make
    rows = []
    for name, make in makers.items():
        if args.only and name not in args.only:
            continue
        path = os.path.join(OUT, f"{name}.onnx")
        feeds = make(path)
        cmd = [TESSERA, "run", path, "--out", os.path.join(OUT, f"{name}_out")]
        for n, v in feeds.items():
            f = os.path.join(OUT, f"{name}_{n}.npy")
            np.save(f, v)
            cmd += ["--input", f"{n}={f}"]
        made, first, ref, out_name = session_ms(path, feeds)
        with tempfile.TemporaryDirectory() as cache:
            tessera_s(cmd, cache)
        got = np.load(os.path.join(OUT, f"{name}_out", f"{out_name}.npy"))
        err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
        if err > 1e-4:
            sys.exit(f"{name}: tessera's output differs from ONNX Runtime's by {err:.1e}")
        times = {"session": [], "first": [], "cold": [], "warm": []}
        for _ in range(args.rounds):
            made, first, _, _ = session_ms(path, feeds)
            times["session"].append(made)
            times["first"].append(first)
            with tempfile.TemporaryDirectory() as cache:
                times["cold"].append(tessera_s(cmd, cache))
                times["warm"].append(tessera_s(cmd, cache))
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((name, med))
        print(f"{name}: ORT session {med['session']:.0f} ms + first run {med['first']:.0f} ms; "
              f"tessera cold {med['cold']:.2f} s, warm {med['warm']:.2f} s", flush=True)
    print("\n| model | ORT session (ms) | ORT first run (ms) | tessera run, cold cache (s) "
          "| tessera run, warm cache (s) |")
    print("|---|---|---|---|---|")
    for name, med in rows:
        print(f"| {name} | {med['session']:.0f} | {med['first']:.0f} | {med['cold']:.2f} "
              f"| {med['warm']:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
