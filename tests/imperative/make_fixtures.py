"""Writes the imperative workloads' fixtures (tests/imperative/fixtures/NAME/):
each case of cases.py at the "test" size run by PyTorch eager, its inputs
(inputs/PARAM.npy for tensor parameters, scalars in case.json) and its
returned tensors in order (outputs/outK.npy) as the reference. Each case is
also run under torch.compile (default mode, graph breaks allowed), which
must agree with eager within 1e-4; its graph breaks are reported, not
failed. Deterministic: fixed seeds, one thread. Run by
scripts/imperative-fixtures.sh; arguments name the cases to write (default:
all)."""
import inspect
import json
import os
import re
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402

FIXTURES = os.path.join(cases.HERE, "fixtures")
MAX_ELEMENTS = 20000  # per tensor, at the test size
TOLERANCE = 1e-4
DTYPES = {"float32", "float64", "int32", "int64", "bool"}


def check_annotations(name, fn, inputs, max_elements=MAX_ELEMENTS):
    """The inputs match the entry def's parameters: the same names, in its
    order, tensors of the annotated dtype and rank, size symbols bound
    consistently, scalars of the annotated type."""
    params = inspect.signature(fn).parameters
    assert list(params) == list(inputs), f"{name}: inputs {list(inputs)} are not the parameters {list(params)}"
    sizes = {}
    for p, value in inputs.items():
        note = params[p].annotation
        if isinstance(note, str):
            m = re.fullmatch(r"(\w+)\[(.*)\]", note.replace(" ", ""))
            assert m and m.group(1) in DTYPES, f"{name}: {p}: bad annotation {note!r}"
            assert isinstance(value, np.ndarray), f"{name}: {p} is annotated a tensor"
            assert value.dtype == np.dtype(m.group(1)), f"{name}: {p} is {value.dtype}, annotated {note}"
            dims = m.group(2).split(",") if m.group(2) else []
            assert len(dims) == value.ndim, f"{name}: {p} has shape {value.shape}, annotated {note}"
            for d, n in zip(dims, value.shape):
                if d.isdigit():
                    assert int(d) == n, f"{name}: {p} has shape {value.shape}, annotated {note}"
                else:
                    assert sizes.setdefault(d, n) == n, f"{name}: {p}: {d} is {sizes[d]} and {n}"
            assert value.size <= max_elements, f"{name}: {p} has {value.size} elements"
        else:
            assert note in (int, float, bool), f"{name}: {p}: annotate tensors as strings, scalars int/float/bool"
            assert type(value) is note, f"{name}: {p} is {type(value).__name__}, annotated {note.__name__}"


def arguments(inputs):
    """Fresh torch arguments (copies, so a workload can't change the inputs)."""
    return {p: torch.from_numpy(v.copy()) if isinstance(v, np.ndarray) else v for p, v in inputs.items()}


def as_tuple(result):
    result = result if isinstance(result, tuple) else (result,)
    assert all(isinstance(t, torch.Tensor) for t in result), "workloads return tensors"
    return result


def max_error(got, expected):
    """The largest difference relative to max(1, |expected|), over all outputs;
    integer and bool outputs must match exactly."""
    worst = 0.0
    for g, e in zip(got, expected):
        if g.shape != e.shape or g.dtype != e.dtype:
            return float("inf")
        if e.dtype.is_floating_point:
            if not torch.equal(torch.isfinite(g), torch.isfinite(e)):
                return float("inf")
            d = ((g - e).abs() / e.abs().clamp(min=1.0))[torch.isfinite(e)]
            worst = max(worst, d.max().item() if d.numel() else 0.0)
        elif not torch.equal(g, e):
            return float("inf")
    return worst


def compile_check(fn, inputs, expected):
    """(graphs, graph breaks, break reasons, error vs eager) of torch.compile,
    or a failure's message in place of the error."""
    torch._dynamo.reset()
    try:
        explained = torch._dynamo.explain(fn)(**arguments(inputs))
        reasons = sorted({r.reason.strip().splitlines()[0] for r in explained.break_reasons})
        graphs, breaks = explained.graph_count, explained.graph_break_count
    except Exception as e:  # noqa: BLE001 - reported, not failed
        graphs, breaks, reasons = "?", "?", [f"explain failed: {type(e).__name__}: {e}"]
    torch._dynamo.reset()
    try:
        got = as_tuple(torch.compile(fn)(**arguments(inputs)))
        error = max_error(got, expected)
    except Exception as e:  # noqa: BLE001
        error = f"torch.compile failed: {type(e).__name__}: {str(e).splitlines()[0]}"
    return graphs, breaks, reasons, error


def seq2seq_exit(inputs, outputs):
    out = outputs[0].numpy()
    eos, max_len = inputs["eos"], inputs["max_len"]
    finished = [t for t in range(max_len) if (out[:, t] == eos).all()]
    if finished and finished[0] < max_len - 1:
        return f"while loop left by eos after {finished[0] + 1} of max_len = {max_len} steps"
    return f"while loop left at max_len = {max_len}" + (" (and eos)" if finished else "")


NOTES = {"seq2seq": seq2seq_exit, "seq2seq_maxlen": seq2seq_exit}


def write(name, workload, fn, inputs, outputs):
    folder = os.path.join(FIXTURES, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "inputs"))
    os.makedirs(os.path.join(folder, "outputs"))
    tensors, scalars, files = {}, {}, []
    for p, v in inputs.items():
        if isinstance(v, np.ndarray):
            tensors[p] = f"inputs/{p}.npy"
            np.save(os.path.join(folder, tensors[p]), v)
        else:
            scalars[p] = v
    for k, t in enumerate(outputs):
        files.append(f"outputs/out{k}.npy")
        np.save(os.path.join(folder, files[-1]), t.numpy())
    case = {"file": f"workloads/{workload}.py", "def": fn.__name__, "tensors": tensors,
            "scalars": scalars, "outputs": files}
    with open(os.path.join(folder, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
        f.write("\n")


def folder_size(folder):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs)


def main():
    torch.set_num_threads(1)
    only = sys.argv[1:]
    unknown = set(only) - set(cases.CASES)
    assert not unknown, f"no such cases: {sorted(unknown)}"
    mismatched = []
    for name, (workload, _) in cases.CASES.items():
        if only and name not in only:
            continue
        fn = cases.entry(name)
        inputs = cases.inputs(name, "test")
        check_annotations(name, fn, inputs)
        args = arguments(inputs)
        outputs = as_tuple(fn(**args))
        for p, v in args.items():
            assert not isinstance(v, torch.Tensor) or np.array_equal(v.numpy(), inputs[p]), \
                f"{name}: the workload changes its argument {p}"
        again = as_tuple(fn(**arguments(inputs)))
        assert max_error(again, outputs) == 0.0, f"{name}: eager is not deterministic"
        for k, t in enumerate(outputs):
            if t.dtype.is_floating_point:
                assert torch.isfinite(t).all(), f"{name}: output {k} is not finite"
        write(name, workload, fn, inputs, outputs)

        graphs, breaks, reasons, error = compile_check(fn, inputs, outputs)
        if isinstance(error, float):
            agrees = f"within {error:.1e} of eager" if error <= TOLERANCE else f"DIFFERS from eager by {error:.1e}"
            if error > TOLERANCE:
                mismatched.append(name)
        else:
            agrees = error
            mismatched.append(name)
        shapes = ", ".join("x".join(map(str, t.shape)) + ("" if t.dtype == torch.float32 else f" {t.dtype}")
                           for t in outputs)
        print(f"{name}: outputs {shapes}; {folder_size(os.path.join(FIXTURES, name))} bytes")
        if name in NOTES:
            print(f"  {NOTES[name](inputs, outputs)}")
        print(f"  torch.compile: {graphs} graph(s), {breaks} graph break(s), {agrees}")
        for r in reasons:
            print(f"    break: {r}")
    print(f"fixtures: {folder_size(FIXTURES)} bytes in all")
    if mismatched:
        sys.exit(f"torch.compile disagrees with eager (the fixtures are eager's): {', '.join(mismatched)}")


if __name__ == "__main__":
    main()
