"""Whole models exported from PyTorch: tessera beside ONNX Runtime and
PyTorch (eager, and torch.compile with freezing), in one run.

Each model of tests/onnx/torch_models.py is built at its real size with
random weights, exported with torch.onnx's default exporter to
target/bench-models/, and run by ONNX Runtime and by `tessera run` on the
same inputs (tessera's outputs must agree with Runtime's within 1e-4 of
the largest magnitude). Then, taking turns for --rounds rounds, each
runner is timed: Runtime's median over --runs runs (2 intra-op threads),
PyTorch's (2 threads), and `tessera bench`'s median. The table reports the
medians of the round medians and tessera's time over the best peer's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
import torch_models as tm  # noqa: E402

OUT = os.path.join(ROOT, "target", "bench-models")
TESSERA = os.path.join(ROOT, "target", "release", "tessera")

MODELS = {
    "resnet18_b1": lambda: tm.build_resnet18(1),
    "resnet18_b16": lambda: tm.build_resnet18(16),
    "infogan_generator_b64": lambda: tm.build_infogan(64),
    "csrnet_backend": lambda: tm.build_csrnet_backend(1, 28),
    "bert_base_layer_s128": lambda: tm.build_bert_layer(1, 128),
    "longformer_attention_s1024": lambda: tm.build_longformer(1, 1024, window=128),
}


def median_ms(fn, runs):
    for _ in range(3):
        fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def summarize(times):
    """The medians of each runner's round medians, and the best peer's."""
    med = {k: statistics.median(v) if v else float("nan") for k, v in times.items()}
    best = min(v for k, v in med.items() if k != "tessera" and v == v)
    return med, best


def print_table(title, rows, digits):
    """The markdown table of `rows` ((name, medians, best peer, max rel. diff))."""
    print(f"\n| {title} | ONNX Runtime (ms) | PyTorch eager (ms) | torch.compile (ms) | tessera (ms) "
          "| tessera / best peer | max rel. diff |")
    print("|---|---|---|---|---|---|---|")
    for name, med, best, err in rows:
        cells = " | ".join(f"{med[k]:.{digits}f}" for k in ("ort", "eager", "compile", "tessera"))
        print(f"| {name} | {cells} | {med['tessera'] / best:.2f} | {err:.1e} |")


def tessera_ms(path, inputs, runs):
    cmd = [TESSERA, "bench", path, "--runs", str(runs), "--json"]
    for k, v in inputs.items():
        cmd += ["--input", f"{k}={v}"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", action="append", help="model name (repeatable)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = ap.parse_args()
    torch.set_num_threads(2)
    os.makedirs(OUT, exist_ok=True)
    rows = []
    for k, (name, build) in enumerate(MODELS.items()):
        if args.only and name not in args.only:
            continue
        torch.manual_seed(k)
        model, inputs = build()
        path = os.path.join(OUT, f"{name}.onnx")
        tm.export(model, inputs, path)
        feeds = {n: v.numpy() for n, v in inputs.items()}
        files = {}
        for n, v in feeds.items():
            files[n] = os.path.join(OUT, f"{name}_{n}.npy")
            np.save(files[n], v)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 2
        opts.inter_op_num_threads = 1
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        ref = session.run(None, feeds)[0]
        outdir = os.path.join(OUT, f"{name}_out")
        cmd = [TESSERA, "run", path, "--out", outdir]
        for n, f in files.items():
            cmd += ["--input", f"{n}={f}"]
        subprocess.run(cmd, check=True, capture_output=True)
        got = np.load(os.path.join(outdir, f"{session.get_outputs()[0].name}.npy"))
        err = float(np.abs(got - ref).max() / np.abs(ref).max())
        if err > 1e-4:
            sys.exit(f"{name}: tessera's output differs from ONNX Runtime's by {err:.1e}")
        args_t = tuple(inputs.values())
        with torch.inference_mode():
            compiled = None
            if not args.no_compile:
                import torch._inductor.config as inductor
                inductor.freezing = True
                compiled = torch.compile(model)
                t = time.perf_counter()
                compiled(*args_t)
                print(f"{name}: torch.compile took {time.perf_counter() - t:.0f} s", flush=True)
            times = {"ort": [], "eager": [], "compile": [], "tessera": []}
            for _ in range(args.rounds):
                times["ort"].append(median_ms(lambda: session.run(None, feeds), args.runs))
                times["eager"].append(median_ms(lambda: model(*args_t), args.runs))
                if compiled is not None:
                    times["compile"].append(median_ms(lambda: compiled(*args_t), args.runs))
                times["tessera"].append(tessera_ms(path, files, args.runs))
        med, best = summarize(times)
        rows.append((name, med, best, err))
        print(f"{name}: ORT {med['ort']:.2f} ms, eager {med['eager']:.2f} ms, compile {med['compile']:.2f} ms, "
              f"tessera {med['tessera']:.2f} ms (max relative difference {err:.1e})", flush=True)
    print_table("model", rows, 2)


if __name__ == "__main__":
    sys.exit(main())
