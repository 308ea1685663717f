"""The ONNX project's own conformance cases, run through tessera.

`generate OUT` writes the node test cases of the pinned `onnx` package
(its `backend-test-tools generate-data`: each case a model and one or more
data sets of inputs and expected outputs as TensorProto files) into OUT,
and copies beside them the `pytorch-converted` and `pytorch-operator`
backend tests the `onnx` wheel ships. Nothing downloaded is committed: the
cases are made from the package each time.

`run OUT --tessera BIN` runs every case whose inputs and outputs are
tensors through `tessera run` (compiled) and `tessera run --interp` (the
reference interpreter), on the case's inputs (written as .npy), and
classifies each as
- pass: every output has the expected shape, element type and values
  (within the ONNX backend tests' tolerance, rtol 1e-3 and atol 1e-7, or
  for the narrow floats within their own resolution where it is coarser:
  rtol is then the type's machine epsilon, 2^-7 for bfloat16);
- unsupported: tessera refused it with a clear error (exit status 1 and
  an `error:` line);
- failure: anything else (a wrong output, a panic, a signal, a hang past
  the time limit, an error without `error:`, an internal error).
It prints the counts per suite and mode and every failure, writes them
as JSON with `--json`, and exits 1 when there is any failure.

Python 3 with numpy and onnx (tests/onnx/requirements.txt).
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

SUITES = ["node", "pytorch-converted", "pytorch-operator"]

# The ONNX backend tests' tolerance (onnx.backend.test.runner).
RTOL, ATOL = 1e-3, 1e-7


def generate(out):
    # The node cases, as the onnx package's own `generate-data` writes its
    # model cases: a directory per case with model.onnx and
    # test_data_set_K/{input,output}_J.pb.
    import warnings

    from onnx.backend.test.case import node as node_cases

    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with warnings.catch_warnings():
        # Some cases compute their expected infinities by dividing by zero.
        warnings.simplefilter("ignore")
        cases = node_cases.collect_testcases(None)
    for case in cases:
        d = os.path.join(out, "node", case.name)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for k, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, f"test_data_set_{k}")
            os.makedirs(ds)
            graph = case.model.graph
            for kind, values, protos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
                for j, v in enumerate(values):
                    if j >= len(protos) or not protos[j].type.HasField("tensor_type"):
                        continue  # Only tensor-typed cases run; the others are counted apart.
                    t = v if isinstance(v, onnx.TensorProto) else numpy_helper.from_array(np.asarray(v), protos[j].name)
                    with open(os.path.join(ds, f"{kind}_{j}.pb"), "wb") as f:
                        f.write(t.SerializeToString())
    shipped = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    for suite in SUITES[1:]:
        shutil.copytree(os.path.join(shipped, suite), os.path.join(out, suite))


def tensor_typed(model):
    """Whether every graph input and output is a tensor (not a sequence,
    map or optional)."""
    values = list(model.graph.input) + list(model.graph.output)
    return all(v.type.HasField("tensor_type") for v in values)


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def data_sets(case):
    return sorted(
        os.path.join(case, d) for d in os.listdir(case) if d.startswith("test_data_set_")
    )


def raw(a):
    """An array as tessera's .npy reader takes it: the element types numpy
    lacks (ml_dtypes' bfloat16, float8 and float4) as their raw codes."""
    if a.dtype.kind == "V" or (a.dtype.kind == "f" and a.dtype.itemsize == 1):
        return a.view(f"V{a.dtype.itemsize}")
    return a


def compare(want, got_path):
    if not os.path.exists(got_path):
        return "no output file"
    got = np.load(got_path)
    if got.dtype.kind == "V" and got.dtype.itemsize == want.dtype.itemsize and raw(want).dtype.kind == "V":
        got = got.view(want.dtype)  # Raw codes of the expected type.
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if got.dtype != want.dtype:
        return f"element type {got.dtype}, expected {want.dtype}"
    rtol = RTOL
    if raw(want).dtype.kind == "V" or want.dtype == np.float16:
        # ml_dtypes' types and float16 compare as the float32s they hold,
        # within at least the type's own resolution: bfloat16's unit in the
        # last place is 0.4% of a value, coarser than the tests' 0.1%.
        import ml_dtypes

        if "int" in want.dtype.name:  # ml_dtypes' int2, int4, uint2, uint4
            got, want = got.astype(np.int64), want.astype(np.int64)
        else:
            rtol = max(RTOL, float(ml_dtypes.finfo(want.dtype).eps))
            got, want = got.astype(np.float32), want.astype(np.float32)
    if want.dtype.kind in "fc":
        if not np.allclose(got, want, rtol=rtol, atol=ATOL, equal_nan=True):
            bad = np.argwhere(~np.isclose(got, want, rtol=rtol, atol=ATOL, equal_nan=True))
            i = tuple(bad[0])
            return f"value at {list(i)}: {got[i]}, expected {want[i]}"
    elif not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        i = tuple(bad[0])
        return f"value at {list(i)}: {got[i]}, expected {want[i]}"
    return None


def run_case(tessera, case, work, interp, limit):
    """One case in one mode: (class, detail)."""
    model = onnx.load(os.path.join(case, "model.onnx"), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in inits]
    outputs = [o.name for o in model.graph.output]
    for k, ds in enumerate(data_sets(case)):
        tmp = os.path.join(work, f"{k}{'i' if interp else 'c'}")
        os.makedirs(tmp, exist_ok=True)
        args = [tessera, "run", os.path.join(case, "model.onnx"), "--out", os.path.join(tmp, "out")]
        if interp:
            args.append("--interp")
        for j, name in enumerate(inputs):
            pb = os.path.join(ds, f"input_{j}.pb")
            if not os.path.exists(pb):
                continue
            npy = os.path.join(tmp, f"input_{j}.npy")
            np.save(npy, raw(read_pb(pb)))
            args += ["--input", f"{name}={npy}"]
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            return "failure", f"no answer within {limit} s"
        if "internal error" in p.stderr:
            return "failure", next(l for l in p.stderr.splitlines() if "internal error" in l).strip()
        if p.returncode == 1 and "error:" in p.stderr:
            line = next(l for l in p.stderr.splitlines() if "error:" in l)
            return "unsupported", line.strip()
        if p.returncode != 0:
            tail = p.stderr.strip().splitlines()[-1:] or [""]
            return "failure", f"exit status {p.returncode}: {tail[0][:300]}"
        for j, name in enumerate(outputs):
            pb = os.path.join(ds, f"output_{j}.pb")
            if not os.path.exists(pb):
                continue
            why = compare(read_pb(pb), os.path.join(tmp, "out", f"{name}.npy"))
            if why:
                return "failure", f"output `{name}`: {why}"
    return "pass", ""


def run(out, tessera, work, limit, jobs, only, suites):
    cases = []
    for suite in suites or SUITES:
        root = os.path.join(out, suite)
        if not os.path.isdir(root):
            sys.exit(f"error: no `{suite}` cases in {out} (run `generate` first)")
        for name in sorted(os.listdir(root)):
            if only and only not in name:
                continue
            case = os.path.join(root, name)
            if os.path.exists(os.path.join(case, "model.onnx")):
                cases.append((suite, name, case))
    shutil.rmtree(work, ignore_errors=True)
    results = []

    def one(item):
        suite, name, case = item
        try:
            model = onnx.load(os.path.join(case, "model.onnx"), load_external_data=False)
        except Exception as e:  # A case the pinned onnx cannot read is not tessera's.
            return [(suite, name, mode, "skipped", f"onnx cannot load it: {e}") for mode in ("compiled", "interp")]
        if not tensor_typed(model):
            return [(suite, name, mode, "skipped", "not tensor-typed") for mode in ("compiled", "interp")]
        rows = []
        for mode in ("compiled", "interp"):
            w = os.path.join(work, suite, name, mode)
            cls, detail = run_case(tessera, case, w, mode == "interp", limit)
            rows.append((suite, name, mode, cls, detail))
        shutil.rmtree(os.path.join(work, suite, name), ignore_errors=True)
        return rows

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for rows in pool.map(one, cases):
            results.extend(rows)
    return results


def summarize(results):
    counts = {}
    for suite, _, mode, cls, _ in results:
        counts.setdefault((suite, mode), {}).setdefault(cls, 0)
        counts[(suite, mode)][cls] += 1
    for (suite, mode), c in sorted(counts.items()):
        typed = sum(n for k, n in c.items() if k != "skipped")
        share = 100.0 * c.get("pass", 0) / typed if typed else 0.0
        print(
            f"{suite} ({mode}): {c.get('pass', 0)} of {typed} tensor-typed cases pass ({share:.1f}%), "
            f"{c.get('unsupported', 0)} unsupported, {c.get('failure', 0)} failures; "
            f"{c.get('skipped', 0)} not tensor-typed"
        )
    failures = [r for r in results if r[3] == "failure"]
    for suite, name, mode, _, detail in failures:
        print(f"FAILURE {suite}/{name} ({mode}): {detail}")
    return counts, failures


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate")
    g.add_argument("out")
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--tessera", required=True)
    r.add_argument("--work", default=None, help="scratch directory (default: OUT/work)")
    r.add_argument("--limit", type=float, default=120.0, help="seconds one run may take")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--only", default=None, help="only cases whose name contains this")
    r.add_argument("--suite", action="append", choices=SUITES, help="only this suite (repeatable)")
    r.add_argument("--json", default=None)
    r.add_argument("--unsupported", action="store_true", help="also list every refusal")
    a = p.parse_args()
    if a.command == "generate":
        generate(a.out)
        return 0
    results = run(a.out, os.path.abspath(a.tessera), a.work or os.path.join(a.out, "work"), a.limit, a.jobs, a.only, a.suite)
    counts, failures = summarize(results)
    if a.unsupported:
        for suite, name, mode, cls, detail in results:
            if cls == "unsupported":
                print(f"unsupported {suite}/{name} ({mode}): {detail}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(
                {
                    "counts": {f"{s} ({m})": c for (s, m), c in counts.items()},
                    "results": [dict(zip(("suite", "case", "mode", "class", "detail"), r)) for r in results],
                },
                f,
                indent=1,
            )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
