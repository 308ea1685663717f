"""`tessera optimize` on nine models: its search time, the steps it applies,
the optimized model's correctness against ONNX Runtime, and its run time
beside the unoptimized model's and the peers' (ONNX Runtime and
torch.compile with freezing).

For each model of bench/optimize/models.py:

1. exports it (torch.onnx's default exporter, opset 18, weights inside the
   file: tests/onnx/torch_models.py's `export`, as bench/peers/models.py
   does) to target/bench-models/optimize/NAME.onnx, unless that file
   exists already (`--reexport` makes it again), and saves its inputs as
   .npy files beside it;
2. runs `tessera optimize NAME.onnx --budget S --explain -o NAME.opt.tc`,
   whose wall time is the search time, and reads the steps it applied
   from the explanation;
3. runs `tessera run NAME.onnx --optimize --budget S` on the inputs and
   compares its output with ONNX Runtime's: the largest difference must
   be within 1e-4 of the output's largest magnitude;
4. times, taking turns for --rounds rounds: `tessera bench --json`
   (unoptimized), `tessera bench --optimize --budget S --json` (the search
   result is cached on disk, so only the first round searches), ONNX
   Runtime (a fresh session each round: all graph optimizations, the
   weights as initializers, 2 intra-op threads) and the torch.compile'd
   module (inductor, freezing; 2 threads); each the median of --runs runs;
5. prints one markdown table of the medians of the round medians and
   writes it, with every number, to target/bench-optimize.json.

Every tessera command runs with TESSERA_CACHE_DIR set to a cache made
afresh (fresh_cache: compiled kernels shared with the user's cache, no
optimizer results or measured times), so the searches are timed as
searches, not cache reads; `--warm-search` uses the user's cache.

The exit status is 1 when any tessera command failed or an output was
off by more than the tolerance.
"""
import argparse
import gc
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import zlib

import numpy as np
import onnxruntime as ort
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import models  # noqa: E402  (bench/optimize/models.py)

tm = models.tm


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# bench/peers/models.py: its timing helper and paths.
peers = _load("peer_models", os.path.join(ROOT, "bench", "peers", "models.py"))
median_ms = peers.median_ms

OUT = os.path.join(peers.OUT, "optimize")
TOLERANCE = 1e-4


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return "(no message)"


def error_message(text):
    """The first `error:` line of a tessera diagnostic (or its first line)."""
    for line in text.splitlines():
        if line.strip().startswith("error"):
            return line.strip()
    return first_line(text)


def user_cache_dir():
    """tessera's cache directory, found as `kernel::cache_dir` finds it."""
    env = lambda k: os.environ.get(k) or None  # noqa: E731
    if env("TESSERA_CACHE_DIR"):
        return env("TESSERA_CACHE_DIR")
    if env("XDG_CACHE_HOME"):
        return os.path.join(env("XDG_CACHE_HOME"), "tessera")
    return os.path.join(os.path.expanduser("~"), ".cache", "tessera")


def fresh_cache(path):
    """A cache directory for this run at `path`: the user's compiled
    kernels (linked) and target description (copied), but empty optimizer
    results (`optimize/`) and measured times (`costs/`), so that every
    search of this run searches and measures instead of reading an
    earlier run's answer, while C already compiled is not compiled again."""
    user = user_cache_dir()
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    os.makedirs(os.path.join(user, "kernels"), exist_ok=True)
    os.symlink(os.path.abspath(os.path.join(user, "kernels")), os.path.join(path, "kernels"))
    if os.path.exists(os.path.join(user, "target.txt")):
        shutil.copy(os.path.join(user, "target.txt"), os.path.join(path, "target.txt"))
    return path


class Tessera:
    def __init__(self, path, budget, timeout, cache_dir=None):
        self.path, self.budget, self.timeout = path, budget, timeout
        self.env = dict(os.environ, RAYON_NUM_THREADS=os.environ.get("RAYON_NUM_THREADS", "2"))
        if cache_dir is not None:
            self.env["TESSERA_CACHE_DIR"] = cache_dir
        self.has_optimize = self._bench_has_optimize()

    def _bench_has_optimize(self):
        try:
            help_text = subprocess.run([self.path, "bench", "--help"], capture_output=True, text=True,
                                       env=self.env, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            return False
        return "--optimize" in help_text

    def call(self, args):
        """Runs tessera; returns (ok, stdout, stderr, seconds)."""
        t = time.perf_counter()
        try:
            p = subprocess.run([self.path] + args, capture_output=True, text=True, env=self.env,
                               timeout=self.timeout)
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            return False, out, f"error: timed out after {self.timeout} s", time.perf_counter() - t
        return p.returncode == 0, p.stdout, p.stderr, time.perf_counter() - t

    def optimize_flags(self):
        return ["--optimize", "--budget", str(self.budget)]


def input_flags(files):
    out = []
    for k, v in files.items():
        out += ["--input", f"{k}={v}"]
    return out


def parse_explanation(text):
    """The steps of `tessera optimize --explain` ((rule, where, verdict)
    each, cut at the header's column starts: a rule may hold spaces), and
    its `time:`, `e-graph:` and `mutants:` lines' numbers."""
    steps, cols = [], None
    for line in text.splitlines():
        if re.match(r"^step\s+rule\s+where\s+verdict", line):
            cols = [line.index(h) for h in ("rule", "where", "verdict")]
            continue
        if cols is not None:
            if not re.match(r"^\d+\s", line):
                cols = None
                continue
            steps.append({"rule": line[cols[0]:cols[1]].strip(), "where": line[cols[1]:cols[2]].strip(),
                          "verdict": line[cols[2]:].strip()})
    info = {}
    m = re.search(r"^time: ([\d.]+) ms before, ([\d.]+) ms after \(([\d.]+)x\), (\w+)(?:; search ([\d.]+) s)?",
                  text, re.M)
    if m:
        info = {"before_ms": float(m.group(1)), "after_ms": float(m.group(2)),
                "speedup": float(m.group(3)), "decided_by": m.group(4),
                "search_s": float(m.group(5)) if m.group(5) else None}
    m = re.search(r"^e-graph: (\d+) classes, (\d+) nodes \(saturation stopped: (.*)\)$", text, re.M)
    if m:
        info["egraph"] = {"classes": int(m.group(1)), "nodes": int(m.group(2)), "stopped": m.group(3)}
    m = re.search(r"^mutants: (.*)$", text, re.M)
    if m:
        info["mutants"] = m.group(1)
    m = re.search(r"^proof of the result: (.*)$", text, re.M)
    if m:
        info["proof"] = m.group(1)
    m = re.search(r"^not searched: (.*)$", text, re.M)
    if m:
        info["not_searched"] = m.group(1)
    return steps, info


def steps_cell(steps):
    """How many steps, and their rules (a mutant by its operator)."""
    if not steps:
        return "0"
    counts = {}
    for s in steps:
        rule = s["rule"]
        if rule.startswith("mutant:"):
            rule = f"mutant {rule[len('mutant:'):].split(',')[0].strip()}"
        counts[rule] = counts.get(rule, 0) + 1
    return f"{len(steps)}: " + ", ".join(r if n == 1 else f"{r} x{n}" for r, n in counts.items())


def ort_session(path):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def export(name, build, reexport):
    """Builds the model (seeded by its name), exports it unless the file
    exists, saves the inputs; returns (module, inputs, path, files, export
    seconds or None when skipped)."""
    torch.manual_seed(zlib.crc32(name.encode()))
    model, inputs = build()
    path = os.path.join(OUT, f"{name}.onnx")
    seconds = None
    if reexport or not os.path.exists(path):
        t = time.perf_counter()
        part = os.path.join(OUT, f"{name}.part.onnx")
        tm.export(model, inputs, part)
        os.replace(part, path)
        seconds = time.perf_counter() - t
    files = {}
    for n, v in inputs.items():
        files[n] = os.path.join(OUT, f"{name}_{n}.npy")
        np.save(files[n], v.numpy())
    return model, inputs, path, files, seconds


def bench_ms(tessera, path, files, runs, optimize, errors, label):
    args = ["bench", path, "--runs", str(runs), "--json"] + input_flags(files)
    if optimize:
        args += tessera.optimize_flags()
    ok, out, err, _ = tessera.call(args)
    if not ok:
        errors.append(f"{label}: {error_message(err)}")
        return None
    try:
        return json.loads(out.strip().splitlines()[-1])["median_ms"]
    except (ValueError, KeyError, IndexError):
        errors.append(f"{label}: unreadable JSON: {first_line(out)}")
        return None


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(x, spec=".2f"):
    return "n/a" if x is None else format(x, spec)


def run_model(name, args, tessera):
    row = {"model": name, "what": models.SIZES[name], "errors": [], "loadavg": [os.getloadavg()[0]]}
    errors = row["errors"]
    model, inputs, path, files, export_s = export(name, models.MODELS[name], args.reexport)
    row["onnx"] = os.path.relpath(path, ROOT)
    row["onnx_mb"] = os.path.getsize(path) / 2**20
    row["export_s"] = export_s
    print(f"{name}: {models.SIZES[name]}; ONNX {row['onnx_mb']:.1f} MiB"
          + (f", exported in {export_s:.1f} s" if export_s is not None else " (exported before)"), flush=True)

    # ONNX Runtime's reference outputs.
    feeds = {n: v.numpy() for n, v in inputs.items()}
    session = ort_session(path)
    ref = session.run(None, feeds)
    out_names = [o.name for o in session.get_outputs()]
    del session
    gc.collect()

    # The search.
    tc_out = os.path.join(OUT, f"{name}.opt.tc")
    ok, out, err, secs = tessera.call(["optimize", path, "--budget", str(args.budget), "--explain", "-o", tc_out])
    row["search_s"] = secs if ok else None
    row["explanation"] = out
    if ok:
        row["steps"], row["optimize"] = parse_explanation(out)
        print(f"{name}: tessera optimize took {secs:.1f} s, {len(row['steps'])} steps"
              + (f", {row['optimize']['before_ms']:.3f} -> {row['optimize']['after_ms']:.3f} ms"
                 if "before_ms" in row["optimize"] else ""), flush=True)
    else:
        row["steps"], row["optimize"] = None, {}
        errors.append(f"tessera optimize: {error_message(err)}")
        row["optimize_stderr"] = err[-4000:]
        print(f"{name}: tessera optimize FAILED after {secs:.1f} s: {error_message(err)}", flush=True)

    # Correctness: the optimized model (or, without `run --optimize`, the
    # unoptimized one) against Runtime.
    outdir = os.path.join(OUT, f"{name}_out")
    run_args = ["run", path, "--out", outdir] + input_flags(files)
    row["checked"] = "optimized" if tessera.has_optimize else "unoptimized (no `run --optimize` yet)"
    if tessera.has_optimize:
        run_args += tessera.optimize_flags()
    ok, out, err, secs = tessera.call(run_args)
    row["max_rel_diff"] = None
    # `run --optimize` says in one line on stderr what it did (searched,
    # or read the cached result; kept the original or replaced it).
    row["run_note"] = " / ".join(l.strip() for l in err.splitlines() if l.strip() and "error" not in l)[:500]
    if ok:
        diffs = []
        for n, r in zip(out_names, ref):
            got = np.load(os.path.join(outdir, f"{n}.npy"))
            if got.shape != r.shape:
                errors.append(f"output {n}: shape {got.shape}, ONNX Runtime's {r.shape}")
                continue
            diffs.append(float(np.abs(got.astype(np.float64) - r).max() / max(np.abs(r).max(), 1e-30)))
        if diffs:
            row["max_rel_diff"] = max(diffs)
            if not row["max_rel_diff"] <= TOLERANCE:
                errors.append(f"WRONG: tessera's {row['checked']} output differs from ONNX Runtime's by "
                              f"{row['max_rel_diff']:.1e} of the largest magnitude (tolerance {TOLERANCE:.0e})")
                print(f"\n*** {name}: {errors[-1]} ***\n", flush=True, file=sys.stderr)
        print(f"{name}: tessera run ({row['checked']}) took {secs:.1f} s, max rel diff "
              f"{fmt(row['max_rel_diff'], '.1e')}" + (f" ({row['run_note']})" if row["run_note"] else ""), flush=True)
    else:
        errors.append(f"tessera run: {error_message(err)}")
        row["run_stderr"] = err[-4000:]
        print(f"{name}: tessera run FAILED: {error_message(err)}", flush=True)

    # torch.compile, once.
    args_t = tuple(inputs.values())
    times = {"tessera": [], "tessera_opt": [], "ort": [], "compile": []}
    with torch.inference_mode():
        compiled = None
        if not args.no_compile:
            import torch._inductor.config as inductor
            inductor.freezing = True
            try:
                compiled = torch.compile(model)
                t = time.perf_counter()
                compiled(*args_t)
                row["torch_compile_s"] = time.perf_counter() - t
                print(f"{name}: torch.compile took {row['torch_compile_s']:.0f} s", flush=True)
            except Exception as e:  # a peer's failure is reported, not fatal
                compiled = None
                row["torch_compile_error"] = f"{type(e).__name__}: {first_line(str(e))}"
                print(f"{name}: torch.compile failed: {row['torch_compile_error']}", flush=True)
        for r in range(args.rounds):
            times["tessera"].append(bench_ms(tessera, path, files, args.runs, False, errors, "tessera bench"))
            if tessera.has_optimize:
                times["tessera_opt"].append(
                    bench_ms(tessera, path, files, args.runs, True, errors, "tessera bench --optimize"))
            session = ort_session(path)
            times["ort"].append(median_ms(lambda: session.run(None, feeds), args.runs))
            del session
            gc.collect()
            if compiled is not None:
                times["compile"].append(median_ms(lambda: compiled(*args_t), args.runs))
            row["loadavg"].append(os.getloadavg()[0])
            print(f"{name}: round {r + 1} (load {row['loadavg'][-1]:.1f}): " + ", ".join(f"{k} {fmt(v[-1] if v else None)} ms"
                                                        for k, v in times.items()), flush=True)
    del compiled, model
    gc.collect()
    torch._dynamo.reset()
    # The same error from every round once.
    row["errors"] = list(dict.fromkeys(errors))
    row["rounds_ms"] = times
    m = {k: med(v) for k, v in times.items()}
    row.update({"tessera_ms": m["tessera"], "tessera_opt_ms": m["tessera_opt"], "ort_ms": m["ort"],
                "compile_ms": m["compile"]})
    peers_ms = {k: m[k] for k in ("ort", "compile") if m[k] is not None}
    row["best_peer"] = min(peers_ms, key=peers_ms.get) if peers_ms else None
    row["best_peer_ms"] = peers_ms.get(row["best_peer"])
    u, o, b = m["tessera"], m["tessera_opt"], row["best_peer_ms"]
    # Each round times both within seconds, so a slow spell of the machine
    # (this one's vary by up to 40% over minutes) tends to touch both: the
    # median of the rounds' ratios, not the ratio of the medians.
    pairs = [a / b for a, b in zip(times["tessera"], times["tessera_opt"]) if a and b]
    row["speedup"] = med(pairs) if pairs else None
    opt_info = row.get("optimize") or {}
    row["side_by_side"] = (opt_info["before_ms"] / opt_info["after_ms"]
                           if opt_info.get("after_ms") else None)
    row["opt_over_best_peer"] = o / b if o and b else None
    return row


def print_table(rows):
    print("\n| model | search (s) | tessera (ms) | tessera optimized (ms) | speedup (unopt/opt) "
          "| search's side by side | best peer (ms) | optimized / best peer | max rel diff | steps applied |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        peer = "n/a" if r["best_peer_ms"] is None else \
            f"{r['best_peer_ms']:.2f} ({'ORT' if r['best_peer'] == 'ort' else 'compile'})"
        steps = "n/a" if r["steps"] is None else steps_cell(r["steps"])
        diff = fmt(r["max_rel_diff"], ".1e")
        if r["max_rel_diff"] is not None and not r["max_rel_diff"] <= TOLERANCE:
            diff += " **WRONG**"
        speed = fmt(r["speedup"]) + ("x" if r["speedup"] else "")
        side = fmt(r.get("side_by_side")) + ("x" if r.get("side_by_side") else "")
        print(f"| {r['model']} | {fmt(r['search_s'], '.1f')} | {fmt(r['tessera_ms'])} | {fmt(r['tessera_opt_ms'])} "
              f"| {speed} | {side} | {peer} | {fmt(r['opt_over_best_peer'])} | {diff} | {steps} |")


def print_targets(rows, budget):
    """The issue's targets, met or not, under the table."""
    n = len(rows)
    searched = [r for r in rows if r["search_s"] is not None]
    within = [r for r in searched if r["search_s"] <= budget]
    fast = [r for r in rows if r["speedup"] is not None and r["speedup"] >= 1.15]
    # tessera's own noise margin: a candidate must win by 3% to replace the original.
    slower = [r for r in rows if r["speedup"] is not None and r["speedup"] < 0.97]
    checked = [r for r in rows if r["max_rel_diff"] is not None]
    right = [r for r in checked if r["max_rel_diff"] <= TOLERANCE]
    print(f"\ntargets: search <= {budget:g} s: {len(within)} of {n}"
          f"{'' if len(searched) == n else f' ({n - len(searched)} failed)'}; "
          f"optimized >= 1.15x faster: {len(fast)} of {n} (target: 4); "
          f"slower than unoptimized by over 3%: "
          f"{', '.join(r['model'] + (' (0 steps)' if r['steps'] == [] else '') for r in slower) or 'none'}; "
          f"within {TOLERANCE:.0e} of ONNX Runtime: {len(right)} of {n}")
    if any(r["steps"] == [] for r in rows):
        print("(a model with 0 steps keeps its original program: its optimized time measures the same "
              "program again, and its speedup is the measurements' noise)")
    for r in rows:
        for e in r["errors"]:
            print(f"  {r['model']}: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", choices=list(models.MODELS), help="model name (repeatable)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--budget", type=float, default=10.0, help="the search's budget in seconds")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--reexport", action="store_true", help="export the models again even if the files exist")
    ap.add_argument("--tessera", default=peers.TESSERA)
    ap.add_argument("--timeout", type=float, default=1800, help="per tessera command, seconds")
    ap.add_argument("--warm-search", action="store_true",
                    help="use tessera's own cache as it is: a search done before (by any command) is not done "
                         "again, and candidates measured before are not measured again")
    ap.add_argument("--json", default=os.path.join(ROOT, "target", "bench-optimize.json"))
    args = ap.parse_args()
    torch.set_num_threads(2)
    os.makedirs(OUT, exist_ok=True)
    cache = None if args.warm_search else fresh_cache(os.path.join(ROOT, "target", "bench-optimize-cache"))
    tessera = Tessera(args.tessera, args.budget, args.timeout, cache)
    if not tessera.has_optimize:
        print("note: this tessera has no `bench --optimize`: the optimized columns are n/a and the "
              "correctness check runs the unoptimized model", flush=True)
    rows = []
    for name in models.MODELS:
        if args.only and name not in args.only:
            continue
        rows.append(run_model(name, args, tessera))
        with open(args.json, "w") as f:  # after every model, so a crash keeps what was measured
            json.dump({"budget_s": args.budget, "rounds": args.rounds, "runs": args.runs,
                       "has_optimize": tessera.has_optimize, "rows": rows}, f, indent=1)
    print_table(rows)
    print_targets(rows, args.budget)
    print(f"\nwrote {os.path.relpath(args.json, ROOT)}")
    return 1 if any(r["errors"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
