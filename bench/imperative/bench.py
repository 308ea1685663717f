"""The imperative workloads at bench size: tessera (`tessera bench
FILE.py`, its stages compiled, regions run around them), PyTorch eager and
torch.compile (Inductor's default mode; CPU), 2 threads each. Each runner
times `--runs` calls per round; the table gives the median over rounds of
each round's median, and the kernels one call runs (tessera: compiled steps;
Inductor: the kernels it generated for the function, a lower bound of
what a call launches when a graph break splits it; eager: not counted).
Inputs are the seeded bench-size inputs of tests/imperative/cases.py,
written once as .npy files under target/bench-imperative/."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "imperative"))
import cases  # noqa: E402

torch.set_num_threads(2)


def torch_args(inputs, params):
    return [torch.from_numpy(inputs[p]) if isinstance(inputs[p], np.ndarray) else inputs[p] for p in params]


def time_calls(fn, args, runs):
    fn(*args)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def inductor_kernels(fn, args):
    from torch._inductor import metrics
    torch._dynamo.reset()
    metrics.reset()
    compiled = torch.compile(fn)
    compiled(*args)
    return compiled, metrics.generated_kernel_count


def tessera_bench(exe, name, inputs, params, runs):
    out = os.path.join(ROOT, "target", "bench-imperative", name)
    os.makedirs(out, exist_ok=True)
    items = []
    for p in params:
        v = inputs[p]
        if isinstance(v, np.ndarray):
            path = os.path.join(out, f"{p}.npy")
            np.save(path, v)
            items += ["--input", f"{p}={path}"]
        else:
            items += ["--input", f"{p}={str(v).lower() if isinstance(v, bool) else v}"]
    workload = cases.CASES[name][0]
    file = cases.workload_path(workload)
    cmd = [exe, "bench", file, "--def", workload, "--runs", str(runs), "--json"] + items
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[0] if r.stderr else "failed"
    return json.loads(r.stdout), None


def conversion_seconds(exe, name, inputs, params, repeats=5):
    """The fastest of `repeats` runs of `tessera functionalize --fuse --time`
    on the case: the conversion's own time as the process reports it, from
    reading the file to the printed program (tracing, converting, emitting,
    verifying, parallelizing, hoisting and fusing), without process
    start-up."""
    out = os.path.join(ROOT, "target", "bench-imperative", name)
    items = []
    for p in params:
        v = inputs[p]
        if isinstance(v, np.ndarray):
            items += ["--input", f"{p}={os.path.join(out, p + '.npy')}"]
        else:
            items += ["--input", f"{p}={str(v).lower() if isinstance(v, bool) else v}"]
    workload = cases.CASES[name][0]
    cmd = [exe, "functionalize", cases.workload_path(workload), "--def", workload, "--fuse",
           "--time"] + items
    best = None
    for _ in range(repeats):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            return None
        ms = [float(l.split()[1]) for l in r.stderr.splitlines() if l.startswith("conversion: ")]
        if not ms:
            return None
        best = ms[0] / 1e3 if best is None else min(best, ms[0] / 1e3)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--only", action="append")
    ap.add_argument("--json")
    ap.add_argument("--tessera", default=os.path.join(ROOT, "target", "release", "tessera"))
    a = ap.parse_args()
    rows = []
    for name in cases.CASES:
        if a.only and name not in a.only:
            continue
        fn = cases.entry(name)
        inputs = cases.inputs(name, "bench")
        params = list(inputs.keys())
        targs = torch_args(inputs, params)
        compiled, kernels = inductor_kernels(fn, targs)
        eager, inductor, ours, ours_kernels, err = [], [], [], None, None
        for _ in range(a.rounds):
            with torch.no_grad():
                eager.append(time_calls(fn, targs, a.runs))
                inductor.append(time_calls(compiled, targs, a.runs))
            t, err = tessera_bench(a.tessera, name, inputs, params, a.runs)
            if t:
                ours.append(t["median_ms"] / 1e3)
                ours_kernels = t.get("kernels")
        convert = conversion_seconds(a.tessera, name, inputs, params)
        med = lambda xs: statistics.median(xs) * 1e3 if xs else None
        row = {
            "workload": name,
            "eager_ms": med(eager),
            "compile_ms": med(inductor),
            "compile_kernels": kernels,
            "tessera_ms": med(ours),
            "tessera_kernels": ours_kernels,
            "conversion_ms": convert * 1e3 if convert else None,
            "error": err,
        }
        rows.append(row)
        fmt = lambda x: "n/a" if x is None else f"{x:.3f}"
        ratio = (row["compile_ms"] / row["tessera_ms"]) if row["tessera_ms"] else None
        print(
            f"{name:15s} eager {fmt(row['eager_ms'])} ms  torch.compile {fmt(row['compile_ms'])} ms ({kernels} kernels)  "
            f"tessera {fmt(row['tessera_ms'])} ms ({ours_kernels} steps)  compile/tessera {fmt(ratio)}  "
            f"conversion {fmt(row['conversion_ms'])} ms"
            + (f"  [{err}]" if err else ""),
            flush=True,
        )
    speedups = [r["compile_ms"] / r["tessera_ms"] for r in rows if r["tessera_ms"]]
    slower = [r["workload"] for r in rows if r["tessera_ms"] and r["tessera_ms"] > r["eager_ms"]]
    print(f"slower than eager: {', '.join(slower) if slower else 'none'}")
    if speedups:
        geo = float(np.exp(np.mean(np.log(speedups))))
        print(f"geomean torch.compile / tessera over {len(speedups)} workloads: {geo:.3f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
