"""tessera from Python beside ONNX Runtime and torch.compile, in one run.

1. Per-call overhead: `session.run` on a tiny model (an element-wise Abs of
   a 4-element tensor, tests/onnx/fixtures/abs), tessera's against ONNX
   Runtime's (all graph optimizations, 2 intra-op threads): the median time
   of a call over --calls calls, taking turns for --rounds rounds.
2. ResNet-18 at batch 1 end to end from Python: tessera.InferenceSession
   (2 threads) against ONNX Runtime (the same model, weights as
   initializers, all graph optimizations, 2 threads) and torch.compile
   with freezing (2 threads), each the median of --runs runs per round,
   medians of the round medians reported, with tessera's time over the
   best peer's. tessera's outputs must agree with Runtime's within 1e-4 of
   the largest magnitude.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort
import torch

import tessera

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import torch_models as tm  # noqa: E402
from models import median_ms  # noqa: E402

OUT = os.path.join(ROOT, "target", "bench-python")


def ort_session(path):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def per_call_us(fn, calls):
    """The median of `calls` timed calls, in microseconds."""
    times = []
    for _ in range(calls):
        t = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times) / 1e3


def overhead(args):
    path = os.path.join(ROOT, "tests", "onnx", "fixtures", "abs", "model.onnx")
    ours = tessera.InferenceSession(path, threads=2)
    theirs = ort_session(path)
    name = ours.get_inputs()[0].name
    feed = {name: np.load(os.path.join(os.path.dirname(path), "inputs", f"{name}.npy"))}
    np.testing.assert_allclose(ours.run(None, feed)[0], theirs.run(None, feed)[0], rtol=1e-6)
    rounds = {"tessera": [], "ort": []}
    for _ in range(args.rounds):
        rounds["ort"].append(per_call_us(lambda: theirs.run(None, feed), args.calls))
        rounds["tessera"].append(per_call_us(lambda: ours.run(None, feed), args.calls))
    med = {k: statistics.median(v) for k, v in rounds.items()}
    print(f"per-call overhead, tiny model {feed[name].shape}: ONNX Runtime {med['ort']:.1f} us, "
          f"tessera {med['tessera']:.1f} us (tessera / Runtime {med['tessera'] / med['ort']:.2f})",
          flush=True)


def resnet(args):
    torch.set_num_threads(2)
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    model, inputs = tm.build_resnet18(1)
    path = os.path.join(OUT, "resnet18_b1.onnx")
    if not os.path.exists(path):
        tm.export(model, inputs, path)
    feeds = {n: v.numpy() for n, v in inputs.items()}
    theirs = ort_session(path)
    t = time.perf_counter()
    ours = tessera.InferenceSession(path, threads=2)
    print(f"resnet18_b1: tessera session made in {time.perf_counter() - t:.2f} s", flush=True)
    ref = theirs.run(None, feeds)[0]
    got = ours.run(None, feeds)[0]
    err = float(np.abs(got - ref).max() / np.abs(ref).max())
    if err > 1e-4:
        sys.exit(f"resnet18_b1: tessera's output differs from ONNX Runtime's by {err:.1e}")
    args_t = tuple(inputs.values())
    times = {"ort": [], "compile": [], "tessera": []}
    with torch.inference_mode():
        import torch._inductor.config as inductor

        inductor.freezing = True
        compiled = torch.compile(model.eval())
        compiled(*args_t)
        for _ in range(args.rounds):
            times["ort"].append(median_ms(lambda: theirs.run(None, feeds), args.runs))
            times["compile"].append(median_ms(lambda: compiled(*args_t), args.runs))
            times["tessera"].append(median_ms(lambda: ours.run(None, feeds), args.runs))
    med = {k: statistics.median(v) for k, v in times.items()}
    best = min(med["ort"], med["compile"])
    print(f"resnet18_b1 from Python: ONNX Runtime {med['ort']:.2f} ms, torch.compile "
          f"{med['compile']:.2f} ms, tessera {med['tessera']:.2f} ms (tessera / best peer "
          f"{med['tessera'] / best:.2f}; max relative difference {err:.1e})", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=["overhead", "resnet"])
    args = ap.parse_args()
    if args.only in (None, "overhead"):
        overhead(args)
    if args.only in (None, "resnet"):
        resnet(args)


if __name__ == "__main__":
    main()
