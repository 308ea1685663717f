#!/usr/bin/env python3
"""The autotuner against the untuned default (issue 21's targets).

For each workload: `tessera tune` with the budget, in a tuning cache that
starts empty (so the search has no head start), then `tessera bench` of the
tuned kernel and of the untuned one (`--untuned`) in turns, for several
rounds; a side's time is the median of its rounds' medians. Also prints
when the search first held a kernel faster than TVM MetaSchedule's (the
times the issue gives, measured on this machine) and how long a second
`tessera tune` of a tuned kernel takes to find it in the cache.

Usage: bench/tune/run.sh [--budget S] [--rounds R] [--runs N] [--only NAME]
                         [--json PATH] [--tessera PATH]
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# name, TC file, def, sizes, inputs declared constant (as the peers
# benchmark declares the weights).
WORKLOADS = [
    ("tmm", "tmm.tc", "tmm", dict(M=128, K=1024, N=1024), ["B"]),
    ("tbmm", "tbmm.tc", "tbmm", dict(B=500, N=26, M=72, K=26), []),
    ("MLP3", "mlp3.tc", "MLP3",
     dict(B=128, N=1024, O=1024, P=512, Q=256), ["W2", "B2", "W3", "B3", "W4", "B4"]),
    ("gconv", "gconv.tc", "gconv",
     dict(N=32, G=32, C=16, F=16, H=14, W=14, KH=3, KW=3), ["W1"]),
    ("conv3x3", "conv3x3.tc", "conv3x3",
     dict(N=1, C=512, F=512, H=7, W=7, KH=3, KW=3), ["W1"]),
    # The tables are 10^5 rows, not the peers' 10^6: the random indices a
    # tuning job draws are 0..7, so the rows read are the same either way.
    ("2LUT", "2LUT.tc", "2LUT", dict(E1=100000, E2=100000, D=64, B=128, L1=50, L2=50), []),
    ("groupnorm", "groupnorm.tc", "groupnorm", dict(N=32, G=32, D=16, H=14, W=14), []),
    ("batchnorm", "batchnorm.tc", "batchnorm", dict(N=32, C=64, H=28, W=28), []),
    # The conv rows of the single-operator performance table, as ONNX
    # models (written by models.py into --models; their weights are
    # initializers, so constants, as `run` and `bench` take them).
    ("conv3x3 (ONNX)", "conv3x3.onnx", None, {}, []),
    ("conv5x5b (ONNX)", "conv5x5b.onnx", None, {}, []),
    ("gconv (ONNX)", "gconv.onnx", None, {}, []),
    ("convtranspose (ONNX)", "convtranspose.onnx", None, {}, []),
]

MODELS = os.path.join(ROOT, "target", "bench-tune-models")

# TVM MetaSchedule on this machine, 32 trials per task (issue 21): the
# time it reached and after how many seconds of tuning.
METASCHEDULE = {"conv3x3": (2.48, 528.0), "conv3x3 (ONNX)": (2.48, 528.0), "tmm": (7.23, 229.0)}


def args_for(w):
    name, file, def_, sizes, constants = w
    if def_ is None:
        return [os.path.join(MODELS, file)]
    a = [os.path.join(ROOT, "bench", "workloads", file), "--def", def_]
    for k, v in sizes.items():
        a += ["--size", f"{k}={v}"]
    for c in constants:
        a += ["--constant", c]
    return a


def tessera(exe, argv, env, timeout):
    p = subprocess.run([exe] + argv, capture_output=True, text=True, env=env, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def bench_ms(exe, w, env, runs, untuned):
    argv = ["bench"] + args_for(w) + ["--runs", str(runs), "--json"]
    if untuned:
        argv.append("--untuned")
    code, out, err = tessera(exe, argv, env, 900)
    if code != 0:
        raise RuntimeError(err.strip().splitlines()[-1] if err.strip() else f"exit {code}")
    return json.loads(out)["median_ms"]


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--budget", type=float, default=60.0)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--only", action="append")
    p.add_argument("--json")
    p.add_argument("--tessera", default=os.path.join(ROOT, "target", "release", "tessera"))
    p.add_argument("--cache", default=os.path.join(ROOT, "target", "bench-tune-cache"),
                   help="the cache directory (TESSERA_CACHE_DIR); its tuning cache is emptied first")
    a = p.parse_args()
    env = dict(os.environ, TESSERA_CACHE_DIR=a.cache)
    shutil.rmtree(os.path.join(a.cache, "tuning"), ignore_errors=True)
    rows = []
    for w in WORKLOADS:
        name = w[0]
        if a.only and name not in a.only:
            continue
        if w[2] is None and not os.path.exists(args_for(w)[0]):
            print(f"{name}: skipped: no {args_for(w)[0]} (run.sh writes it with models.py)",
                  file=sys.stderr)
            continue
        row = {"workload": name, "sizes": w[3], "constants": w[4]}
        started = time.time()
        code, out, err = tessera(a.tessera, ["tune"] + args_for(w) + ["--budget", str(a.budget), "--json"],
                                 env, a.budget * 3 + 300)
        row["tune_wall_s"] = time.time() - started
        if code != 0:
            row["tune_error"] = err.strip().splitlines()[-1] if err.strip() else f"exit {code}"
            print(f"{name}: not tuned: {row['tune_error']}", file=sys.stderr)
        else:
            row["tune"] = json.loads(out)
            t = row["tune"]
            print(f"{name}: tuned in {t['seconds']:.1f} s, {t['measured']} candidates, "
                  f"untuned {t['default_ns'] / 1e6:.4f} ms, best {(t['best_ns'] or 0) / 1e6:.4f} ms, "
                  f"kept: {t['stored']}", file=sys.stderr)
            if t["stored"]:
                # A second process's lookup, five times: one is at the
                # mercy of the machine's noise (6 to 12 ms for the same
                # lookup); the median is what a process can expect.
                lookups = []
                for _ in range(5):
                    code, again, _ = tessera(a.tessera, ["tune"] + args_for(w) + ["--json"], env, 60)
                    if code == 0:
                        lookups.append(json.loads(again)["seconds"] * 1e3)
                if lookups:
                    row["lookup_ms"] = statistics.median(lookups)
            if name in METASCHEDULE:
                target_ms, _ = METASCHEDULE[name]
                reached = [s for s, ns in t["trajectory"] if ns / 1e6 < target_ms]
                row["faster_than_metaschedule_after_s"] = reached[0] if reached else None
        tuned, untuned = [], []
        t = row.get("tune")
        if "nothing to tune" in row.get("tune_error", "") or (t and not t["stored"]):
            # Nothing was kept: the tuned kernel is the untuned one.
            row["speedup"] = 1.0
            rows.append(row)
            continue
        # Enough runs that a fast kernel's median is not the machine's
        # noise: at least --runs, and at least 0.3 s of them.
        runs = a.runs
        if t:
            runs = max(runs, int(0.3e9 / max(t["default_ns"], 1)))
        try:
            for _ in range(a.rounds):
                tuned.append(bench_ms(a.tessera, w, env, runs, False))
                untuned.append(bench_ms(a.tessera, w, env, runs, True))
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            row["bench_error"] = str(e)
        row["tuned_rounds_ms"], row["untuned_rounds_ms"] = tuned, untuned
        if tuned and untuned:
            row["tuned_ms"], row["untuned_ms"] = median(tuned), median(untuned)
            row["speedup"] = row["untuned_ms"] / row["tuned_ms"]
        rows.append(row)

    print()
    print("| workload | untuned ms | tuned ms | untuned / tuned | candidates | tuning s | kept |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        t = r.get("tune")
        cells = [
            r["workload"],
            f"{r['untuned_ms']:.4f}" if "untuned_ms" in r else "n/a",
            f"{r['tuned_ms']:.4f}" if "tuned_ms" in r else "n/a",
            (f"{r['speedup']:.2f}" if "tuned_ms" in r else "1.00 (same kernel)") if "speedup" in r else "n/a",
            str(t["measured"]) if t else "-",
            f"{t['seconds']:.1f}" if t else "-",
            ("yes" if t["stored"] else "no (nothing surely 3% faster)") if t else "nothing to tune",
        ]
        print("| " + " | ".join(cells) + " |")
    ratios = [r["speedup"] for r in rows if "speedup" in r]
    if ratios:
        g = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"\ngeomean untuned / tuned over {len(ratios)} workloads: {g:.3f}")
    for r in rows:
        if r.get("tune_error"):
            print(f"{r['workload']}: not tuned: {r['tune_error']}")
        if r.get("bench_error"):
            print(f"{r['workload']}: bench failed: {r['bench_error']}")
        if r["workload"] in METASCHEDULE and "tune" in r:
            target_ms, ms_s = METASCHEDULE[r["workload"]]
            after = r.get("faster_than_metaschedule_after_s")
            print(f"{r['workload']}: MetaSchedule reached {target_ms} ms after {ms_s:.0f} s; tessera held a "
                  f"faster kernel after " + (f"{after:.1f} s" if after is not None else "never (in the budget)"))
        if "lookup_ms" in r:
            print(f"{r['workload']}: a second tune found it in the cache in {r['lookup_ms']:.1f} ms (median of 5)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
