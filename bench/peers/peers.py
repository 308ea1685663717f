"""Side-by-side benchmark of tessera against ONNX Runtime, numpy, PyTorch
eager and torch.compile.

For every workload this script builds the ONNX model in memory with
`onnx.helper`, runs it on ONNX Runtime (2 intra-op threads, 1 inter-op
thread, all graph optimizations), runs the numpy equivalent and the PyTorch
one (2 threads; the weights as frozen parameters of a module, eager and
under torch.compile with freezing) on the same random float32 inputs,
checks that they agree, and then runs `tessera bench` on the workload's TC
file (bench/workloads/) with the same sizes. It prints one table (median
times, rates and the tessera/peer ratios) and can write every number as
JSON.

Run it through bench/peers/run.sh, which sets up the virtual environment and
builds tessera first.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn.functional as F
from numpy.lib.stride_tricks import sliding_window_view
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[2]
WORKLOADS_DIR = REPO / "bench" / "workloads"
DEFAULT_TESSERA = REPO / "target" / "release" / "tessera"

OPSET = 17
IR_VERSION = 8  # the IR version that goes with opset 17
RTOL = 1e-3
BANDWIDTH_GBPS = 32.0  # memory bandwidth assumed for the 2LUT bound
FLOAT32_BYTES = 4
INDEX_BYTES = 4  # tessera's indices are int32 (ONNX Gather reads int64)


@dataclass
class Workload:
    """One benchmarked computation, described once for all three runners.

    `inputs` makes the inputs (keyed by ONNX graph input name, in ONNX
    layouts); `onnx_graph` builds the graph (given the names of the inputs
    to embed as initializers), and `numpy_fn` and `torch_fn` (on tensors
    keyed the same way) compute the outputs, in the graph's output order. `weights` names the inputs that are embedded in
    the ONNX model as initializers (unless `--ort-weights-as-inputs`) and
    that the PyTorch module holds as frozen parameters. Exactly one of `flops`
    (rate in GFLOP/s) and `bytes_read` (the bytes that must be read; rate in
    GB/s, with a bandwidth bound) is set.
    """

    name: str
    tc_file: str
    tc_def: str
    sizes: dict[str, int]
    shape: str
    inputs: Callable[[np.random.Generator], dict[str, np.ndarray]]
    onnx_graph: Callable[[dict[str, np.ndarray], set[str]], onnx.GraphProto]
    numpy_fn: Callable[[dict[str, np.ndarray]], list[np.ndarray]]
    torch_fn: Callable[[dict[str, torch.Tensor]], list[torch.Tensor]]
    weights: tuple[str, ...] = ()
    # Inputs tessera must get as they are (written as .npy, integers as
    # int32) rather than its own seeded random values: lookup indices, whose
    # spread decides how much memory a run touches.
    tessera_inputs: tuple[str, ...] = ()
    # The TC def's parameters that are the weights, declared constant to
    # tessera (`--constant`), as the peers get theirs frozen: what depends
    # on them alone, such as packing, runs once before the timed runs.
    tc_constants: tuple[str, ...] = ()
    flops: float | None = None
    bytes_read: float | None = None

    @property
    def unit(self) -> str:
        """The unit of this workload's rate column."""
        return "GFLOP/s" if self.flops is not None else "GB/s"

    def rate(self, ms: float | None) -> float | None:
        """GFLOP/s (or GB/s for memory-bound workloads) at `ms` per run."""
        if ms is None or ms <= 0:
            return None
        work = self.flops if self.flops is not None else self.bytes_read
        return work / (ms * 1e-3) / 1e9


@dataclass
class Timing:
    """Median and minimum of the timed runs, in milliseconds."""

    median_ms: float
    min_ms: float


@dataclass
class TesseraResult:
    """What `tessera bench --json` reported, or why it gave nothing."""

    timing: Timing | None = None
    reported: dict = field(default_factory=dict)
    error: str | None = None


# ---------------------------------------------------------------------------
# ONNX graph helpers


def _graph(
    name: str,
    nodes: list[onnx.NodeProto],
    feeds: dict[str, np.ndarray],
    outputs: dict[str, list[int]],
    embedded: set[str],
    extra_initializers: tuple[onnx.TensorProto, ...] = (),
) -> onnx.GraphProto:
    """A float32 graph whose inputs are `feeds` (those in `embedded` become
    initializers holding the given values) and whose outputs have the given
    shapes."""
    graph_inputs = []
    initializers = list(extra_initializers)
    for input_name, value in feeds.items():
        if input_name in embedded:
            initializers.append(numpy_helper.from_array(value, input_name))
        else:
            elem = helper.np_dtype_to_tensor_dtype(value.dtype)
            graph_inputs.append(
                helper.make_tensor_value_info(input_name, elem, list(value.shape))
            )
    graph_outputs = [
        helper.make_tensor_value_info(out, TensorProto.FLOAT, shape)
        for out, shape in outputs.items()
    ]
    return helper.make_graph(
        nodes, name, graph_inputs, graph_outputs, initializer=initializers
    )


def _random(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Standard normal float32 values of the given shape."""
    return rng.standard_normal(shape, dtype=np.float32)


# ---------------------------------------------------------------------------
# numpy equivalents


def relu(x: np.ndarray) -> np.ndarray:
    """max(x, 0), elementwise."""
    return np.maximum(x, 0, out=x)


def conv2d_same(x: np.ndarray, w: np.ndarray, groups: int) -> np.ndarray:
    """Stride-1 NCHW convolution with zero padding (KH-1)/2, (KW-1)/2, as
    im2col (a sliding-window copy, per group (C/G*KH*KW, H*W)) and one
    batched matrix product over images and groups.

    x is (N, C, H, W), w is (F, C/groups, KH, KW); the result is (N, F, H, W).
    """
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    g = groups
    padded = np.pad(x, ((0, 0), (0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2)))
    windows = sliding_window_view(padded, (kh, kw), axis=(2, 3))  # N C H W KH KW
    cols = np.ascontiguousarray(
        windows.reshape(n, g, cg, h, wd, kh, kw).transpose(0, 1, 2, 5, 6, 3, 4)
    ).reshape(n, g, cg * kh * kw, h * wd)
    out = np.matmul(w.reshape(g, f // g, cg * kh * kw), cols)  # N, G, F/G, H*W
    return out.reshape(n, f, h, wd)


# ---------------------------------------------------------------------------
# Workloads


def tmm() -> Workload:
    """C = A B^T with (M, K, N) = (128, 1024, 1024); ONNX Gemm transB=1."""
    m, k, n = 128, 1024, 1024
    return Workload(
        name="tmm",
        tc_file="tmm.tc",
        tc_def="tmm",
        sizes={"M": m, "K": k, "N": n},
        shape=f"M={m} K={k} N={n}",
        inputs=lambda rng: {"A": _random(rng, m, k), "B": _random(rng, n, k)},
        onnx_graph=lambda feeds, emb: _graph(
            "tmm",
            [helper.make_node("Gemm", ["A", "B"], ["C"], transB=1)],
            feeds,
            {"C": [m, n]},
            emb,
        ),
        numpy_fn=lambda t: [t["A"] @ t["B"].T],
        torch_fn=lambda t: [t["A"] @ t["B"].T],
        weights=("B",),
        tc_constants=("B",),
        flops=2.0 * m * n * k,
    )


def tbmm() -> Workload:
    """Z[b] = X[b] Y[b]^T with (B, N, M, K) = (500, 26, 72, 26); ONNX MatMul
    of X by Transpose(Y, perm [0, 2, 1])."""
    b, n, m, k = 500, 26, 72, 26
    return Workload(
        name="tbmm",
        tc_file="tbmm.tc",
        tc_def="tbmm",
        sizes={"B": b, "N": n, "M": m, "K": k},
        shape=f"B={b} N={n} M={m} K={k}",
        inputs=lambda rng: {"X": _random(rng, b, n, m), "Y": _random(rng, b, k, m)},
        onnx_graph=lambda feeds, emb: _graph(
            "tbmm",
            [
                helper.make_node("Transpose", ["Y"], ["Yt"], perm=[0, 2, 1]),
                helper.make_node("MatMul", ["X", "Yt"], ["Z"]),
            ],
            feeds,
            {"Z": [b, n, k]},
            emb,
        ),
        numpy_fn=lambda t: [t["X"] @ t["Y"].transpose(0, 2, 1)],
        torch_fn=lambda t: [t["X"] @ t["Y"].transpose(1, 2)],
        flops=2.0 * b * n * k * m,
    )


def mlp3() -> Workload:
    """Three fully connected layers 1024 -> 1024 -> 512 -> 256 on a batch of
    128, each with bias and ReLU, weights (out, in); ONNX Gemm transB=1 and
    Relu, three times. FLOPs count the matrix products only."""
    batch, n, o, p, q = 128, 1024, 1024, 512, 256
    layers = [("W2", "B2", n, o), ("W3", "B3", o, p), ("W4", "B4", p, q)]

    def inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Input batch, then each layer's weight and bias, scaled by
        1/sqrt(fan-in) so activations stay of order one."""
        feeds = {"I": _random(rng, batch, n)}
        for weight, bias, fan_in, fan_out in layers:
            feeds[weight] = _random(rng, fan_out, fan_in) / np.float32(np.sqrt(fan_in))
            feeds[bias] = _random(rng, fan_out)
        return feeds

    def graph(feeds: dict[str, np.ndarray], emb: set[str]) -> onnx.GraphProto:
        """Gemm + Relu per layer; the last Relu writes O4."""
        nodes, x = [], "I"
        for i, (weight, bias, _, _) in enumerate(layers):
            pre, act = f"G{i}", ("O4" if i == len(layers) - 1 else f"R{i}")
            nodes.append(helper.make_node("Gemm", [x, weight, bias], [pre], transB=1))
            nodes.append(helper.make_node("Relu", [pre], [act]))
            x = act
        return _graph("mlp3", nodes, feeds, {"O4": [batch, q]}, emb)

    def forward(t: dict[str, np.ndarray]) -> list[np.ndarray]:
        """relu(x W^T + b) per layer."""
        x = t["I"]
        for weight, bias, _, _ in layers:
            x = relu(x @ t[weight].T + t[bias])
        return [x]

    def torch_forward(t: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        """relu(linear(x)) per layer."""
        x = t["I"]
        for weight, bias, _, _ in layers:
            x = torch.relu(F.linear(x, t[weight], t[bias]))
        return [x]

    return Workload(
        name="MLP3",
        tc_file="mlp3.tc",
        tc_def="MLP3",
        sizes={"B": batch, "N": n, "O": o, "P": p, "Q": q},
        shape=f"B={batch} {n}>{o}>{p}>{q}",
        inputs=inputs,
        onnx_graph=graph,
        numpy_fn=forward,
        torch_fn=torch_forward,
        weights=("W2", "B2", "W3", "B3", "W4", "B4"),
        tc_constants=("W2", "B2", "W3", "B3", "W4", "B4"),
        flops=2.0 * batch * (n * o + o * p + p * q),
    )


def _conv(
    name: str, n: int, groups: int, cg: int, fg: int, hw: int, k: int
) -> Workload:
    """A stride-1, pad-(k-1)/2 NCHW convolution of `groups` groups with `cg`
    input and `fg` output channels each, on hw x hw images, k x k kernels;
    ONNX Conv with group=`groups`. The TC defs take the same memory (gconv
    splits the channel dimension into (G, C))."""
    c, f = groups * cg, groups * fg
    pad = (k - 1) // 2
    if groups == 1:
        tc_file, sizes = "conv3x3.tc", {"N": n, "C": c, "H": hw, "W": hw, "F": f}
        shape = f"[{n},{c},{hw},{hw}]x[{f},{c},{k},{k}]"
    else:
        tc_file = "gconv.tc"
        sizes = {"N": n, "G": groups, "C": cg, "F": fg, "H": hw, "W": hw}
        shape = f"N={n} G={groups} C=F={cg} {hw}x{hw}"
    sizes.update({"KH": k, "KW": k})
    return Workload(
        name=name,
        tc_file=tc_file,
        tc_def=name,
        sizes=sizes,
        shape=f"{shape} k{k} p{pad}",
        inputs=lambda rng: {
            "X": _random(rng, n, c, hw, hw),
            "Wt": _random(rng, f, cg, k, k) / np.float32(np.sqrt(cg * k * k)),
        },
        onnx_graph=lambda feeds, emb: _graph(
            name,
            [
                helper.make_node(
                    "Conv",
                    ["X", "Wt"],
                    ["Y"],
                    group=groups,
                    kernel_shape=[k, k],
                    pads=[pad, pad, pad, pad],
                    strides=[1, 1],
                )
            ],
            feeds,
            {"Y": [n, f, hw, hw]},
            emb,
        ),
        numpy_fn=lambda t: [conv2d_same(t["X"], t["Wt"], groups)],
        torch_fn=lambda t: [F.conv2d(t["X"], t["Wt"], padding=pad, groups=groups)],
        weights=("Wt",),
        tc_constants=("W1",),
        flops=2.0 * n * f * hw * hw * cg * k * k,
    )


def gconv() -> Workload:
    """Grouped convolution: N=32, 32 groups of 16 channels in and out,
    14x14, 3x3, pad 1, stride 1."""
    return _conv("gconv", n=32, groups=32, cg=16, fg=16, hw=14, k=3)


def conv3x3() -> Workload:
    """Convolution [1,512,7,7] x [512,512,3,3], pad 1, stride 1."""
    return _conv("conv3x3", n=1, groups=1, cg=512, fg=512, hw=7, k=3)


def two_lut() -> Workload:
    """Two embedding tables of E=10^6 rows of D=64; each of B=128 output
    rows sums L=50 table rows; ONNX Gather + ReduceSum over the lookups.
    Rated in GB/s over the bytes that must be read: the int32 indices and
    the gathered rows."""
    e, d, b, lookups = 1_000_000, 64, 128, 50
    tables = [("LUT1", "I1", "O1"), ("LUT2", "I2", "O2")]

    def inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Each table and its uniformly drawn int64 indices."""
        feeds = {}
        for lut, idx, _ in tables:
            feeds[lut] = _random(rng, e, d)
            feeds[idx] = rng.integers(0, e, size=(b, lookups), dtype=np.int64)
        return feeds

    def graph(feeds: dict[str, np.ndarray], emb: set[str]) -> onnx.GraphProto:
        """Gather rows, then ReduceSum over the lookup axis, per table."""
        nodes = []
        for lut, idx, out in tables:
            nodes.append(helper.make_node("Gather", [lut, idx], [f"{out}_rows"], axis=0))
            nodes.append(
                helper.make_node("ReduceSum", [f"{out}_rows", "axes"], [out], keepdims=0)
            )
        axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")
        outputs = {out: [b, d] for _, _, out in tables}
        return _graph("2LUT", nodes, feeds, outputs, emb, (axes,))

    return Workload(
        name="2LUT",
        tc_file="2LUT.tc",
        tc_def="2LUT",
        sizes={"E1": e, "E2": e, "D": d, "B": b, "L1": lookups, "L2": lookups},
        shape=f"E={e} D={d} B={b} L={lookups}",
        inputs=inputs,
        onnx_graph=graph,
        numpy_fn=lambda t: [t[lut][t[idx]].sum(axis=1) for lut, idx, _ in tables],
        torch_fn=lambda t: [F.embedding_bag(t[idx], t[lut], mode="sum") for lut, idx, _ in tables],
        weights=("LUT1", "LUT2"),
        tc_constants=("LUT1", "LUT2"),
        tessera_inputs=("I1", "I2"),
        bytes_read=float(len(tables) * b * lookups * (INDEX_BYTES + d * FLOAT32_BYTES)),
    )


WORKLOADS: list[Callable[[], Workload]] = [tmm, tbmm, mlp3, gconv, conv3x3, two_lut]


# ---------------------------------------------------------------------------
# Runners


def measure(fn: Callable[[], object], runs: int, warmup: int) -> Timing:
    """Call `fn` `warmup` times untimed, then `runs` times timed."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return Timing(statistics.median(times), min(times))


def combine(rounds: list[Timing]) -> Timing:
    """One timing from several rounds: the median of their medians and the
    least of their minimums."""
    return Timing(
        statistics.median(t.median_ms for t in rounds), min(t.min_ms for t in rounds)
    )


def combine_tessera(rounds: list[TesseraResult]) -> TesseraResult:
    """One tessera result from several rounds (the first error, if any
    round failed; else the combined timing and the last round's report)."""
    for r in rounds:
        if r.error is not None or r.timing is None:
            return r
    timing = combine([r.timing for r in rounds if r.timing is not None])
    return TesseraResult(timing=timing, reported=rounds[-1].reported)


def ort_session(
    w: Workload, feeds: dict[str, np.ndarray], embed_weights: bool
) -> tuple[ort.InferenceSession, dict[str, np.ndarray]]:
    """An ONNX Runtime session for the workload's model (2 intra-op threads,
    1 inter-op thread, all graph optimizations) and the feeds it takes."""
    embedded = set(w.weights) if embed_weights else set()
    graph = w.onnx_graph(feeds, embedded)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION
    )
    onnx.checker.check_model(model, full_check=True)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    session_feeds = {k: v for k, v in feeds.items() if k not in embedded}
    return session, session_feeds


class TorchWorkload(torch.nn.Module):
    """A workload's PyTorch form: its weights as parameters (so that
    torch.compile's freezing folds them, as with frozen model weights), the
    other inputs as arguments."""

    def __init__(self, w: Workload, feeds: dict[str, np.ndarray]):
        super().__init__()
        self.fn = w.torch_fn
        self.args = [k for k in feeds if k not in w.weights]
        self.params = torch.nn.ParameterDict({
            k: torch.nn.Parameter(torch.from_numpy(feeds[k]), requires_grad=False) for k in w.weights
        })

    def forward(self, *args: torch.Tensor) -> list[torch.Tensor]:
        t = dict(zip(self.args, args))
        t.update(self.params.items())
        return self.fn(t)


def compare(ort_out: list[np.ndarray], np_out: list[np.ndarray]) -> tuple[bool, float]:
    """Whether every output agrees within RTOL (with an absolute floor of
    RTOL times the output's largest magnitude, for values near zero), and the
    largest relative difference so measured."""
    agree, worst = True, 0.0
    for a, b in zip(ort_out, np_out, strict=True):
        if a.shape != b.shape:
            return False, float("inf")
        scale = float(np.max(np.abs(b))) or 1.0
        diff = np.abs(a.astype(np.float64) - b) / (np.abs(b) + scale)
        worst = max(worst, float(diff.max()))
        agree &= bool(np.allclose(a, b, rtol=RTOL, atol=RTOL * scale))
    return agree, worst


def first_line(text: str) -> str:
    """The first non-empty line of `text`, stripped."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def run_tessera(
    binary: Path, w: Workload, runs: int, timeout: float, inputs: dict[str, Path]
) -> TesseraResult:
    """Run `tessera bench ... --json` and read its one JSON object; on any
    failure the result holds the first line of the error instead. `inputs`
    maps input names to .npy files tessera reads."""
    cmd = [str(binary), "bench", str(WORKLOADS_DIR / w.tc_file), "--def", w.tc_def]
    for sym, value in w.sizes.items():
        cmd += ["--size", f"{sym}={value}"]
    for name, path in inputs.items():
        cmd += ["--input", f"{name}={path}"]
    for name in w.tc_constants:
        cmd += ["--constant", name]
    cmd += ["--runs", str(runs), "--json"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return TesseraResult(error=f"{binary} not found (build it with cargo build --release)")
    except subprocess.TimeoutExpired:
        return TesseraResult(error=f"timed out after {timeout:g} s")
    if proc.returncode != 0:
        message = first_line(proc.stderr) or first_line(proc.stdout)
        return TesseraResult(error=message or f"exit status {proc.returncode}")
    json_lines = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("{")]
    if not json_lines:
        return TesseraResult(error=f"no JSON on stdout: {first_line(proc.stdout)!r}")
    try:
        reported = json.loads(json_lines[-1])
        timing = Timing(float(reported["median_ms"]), float(reported["min_ms"]))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        return TesseraResult(error=f"unexpected JSON ({err}): {json_lines[-1][:120]}")
    return TesseraResult(timing=timing, reported=reported)


# ---------------------------------------------------------------------------
# Reporting


def fmt(value: float | None, spec: str = ".3f") -> str:
    """`value` formatted with `spec`, or n/a."""
    return "n/a" if value is None else format(value, spec)


def ratio(num: Timing | None, den: Timing | None) -> float | None:
    """num / den of the medians, when both exist."""
    if num is None or den is None or den.median_ms <= 0:
        return None
    return num.median_ms / den.median_ms


def print_table(rows: list[dict]) -> None:
    """Print the results as one aligned table."""
    header = [
        "workload", "shape", "ORT ms", "numpy ms", "eager ms", "compile ms", "tessera ms", "unit",
        "ORT rate", "tessera rate", "tess/ORT", "tess/best",
    ]
    lines = []
    for r in rows:
        lines.append([
            r["workload"] + ("" if r["agree"] else " (peers disagree)"),
            r["shape"],
            fmt(r["ort"]["median_ms"]),
            fmt(r["numpy"]["median_ms"]),
            fmt(r["eager"].get("median_ms")),
            fmt(r["compile"].get("median_ms")),
            fmt(r["tessera"].get("median_ms")),
            r["unit"],
            fmt(r["ort"]["rate"], ".1f"),
            fmt(r["tessera"].get("rate"), ".1f"),
            fmt(r["tessera_over_ort"], ".2f"),
            fmt(r["tessera_over_best"], ".2f"),
        ])
    widths = [max(len(h), *(len(l[i]) for l in lines)) for i, h in enumerate(header)]
    left = {0, 1, 7}

    def render(cells: list[str]) -> str:
        """One row, text columns left-aligned and numbers right-aligned."""
        return "  ".join(
            c.ljust(wd) if i in left else c.rjust(wd)
            for i, (c, wd) in enumerate(zip(cells, widths))
        ).rstrip()

    print("Median times in ms (the median of the rounds' medians); rates from the medians; "
          "tess/X = tessera median / X "
          "median (lower is better for tessera, < 1 means tessera is faster).")
    print(render(header))
    print(render(["-" * wd for wd in widths]))
    for line in lines:
        print(render(line))
    for r in rows:
        if "error" in r["tessera"]:
            print(f"tessera {r['workload']}: n/a: {r['tessera']['error']}")
        if not r["agree"]:
            print(f"{r['workload']}: the peers disagree "
                  f"(largest relative difference {r['max_rel_diff']:.3g})")
        if "bandwidth_bound" in r:
            bound = r["bandwidth_bound"]
            fractions = ", ".join(
                f"{who} {fmt(frac, '.0%')}" for who, frac in bound["fraction"].items()
            )
            print(f"{r['workload']}: {bound['bytes'] / 1e6:.2f} MB must be read "
                  f"(indices + gathered rows); at {BANDWIDTH_GBPS:g} GB/s that takes "
                  f"{bound['ms']:.3f} ms; fraction of that bound achieved: {fractions}")


def run_workload(w: Workload, args: argparse.Namespace) -> dict:
    """Benchmark one workload on all three runners; a dict of every number."""
    rng = np.random.default_rng(args.seed)
    print(f"[{w.name}] inputs", file=sys.stderr, flush=True)
    feeds = w.inputs(rng)
    # The runners take turns, round after round: this machine's speed drifts
    # (other tenants), and turns spread the drift over all three instead of
    # charging it to whichever ran during a slow spell. In each round
    # tessera runs first, in its own process, before this process makes its
    # ONNX Runtime session: the session's threads spin-wait after a run and
    # would take a core from it.
    tess_rounds: list[TesseraResult] = []
    ort_rounds: list[Timing] = []
    np_rounds: list[Timing] = []
    torch_rounds: dict[str, list[Timing]] = {"eager": [], "compile": []}
    agree, max_rel = True, 0.0
    module = TorchWorkload(w, feeds).eval()
    torch_args = tuple(torch.from_numpy(feeds[k]) for k in module.args)
    runners: dict[str, Callable] = {"eager": module}
    if not args.no_compile:
        import torch._inductor.config as inductor
        inductor.freezing = True
        runners["compile"] = torch.compile(module)
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        files = {}
        for name in w.tessera_inputs:
            array = feeds[name]
            if np.issubdtype(array.dtype, np.integer):
                array = array.astype(np.int32)
            files[name] = Path(tmp) / f"{name}.npy"
            np.save(files[name], array)
        for r in range(args.rounds):
            print(f"[{w.name}] round {r + 1}/{args.rounds}: tessera", file=sys.stderr, flush=True)
            tess_rounds.append(
                run_tessera(args.tessera, w, args.runs, args.tessera_timeout, files)
            )
            session, session_feeds = ort_session(w, feeds, args.ort_initializers)
            if r == 0:
                ort_out = session.run(None, session_feeds)
                np_out = w.numpy_fn(feeds)
                agree, max_rel = compare(ort_out, np_out)
                with torch.inference_mode():
                    for run in runners.values():
                        out = [t.numpy() for t in run(*torch_args)]
                        ok, rel = compare(out, np_out)
                        agree, max_rel = agree and ok, max(max_rel, rel)
                del ort_out, np_out
            print(f"[{w.name}] round {r + 1}/{args.rounds}: ORT", file=sys.stderr, flush=True)
            ort_rounds.append(
                measure(lambda: session.run(None, session_feeds), args.runs, args.warmup)
            )
            print(f"[{w.name}] round {r + 1}/{args.rounds}: numpy", file=sys.stderr, flush=True)
            np_rounds.append(measure(lambda: w.numpy_fn(feeds), args.runs, args.warmup))
            for peer, run in runners.items():
                print(f"[{w.name}] round {r + 1}/{args.rounds}: PyTorch {peer}", file=sys.stderr,
                      flush=True)
                with torch.inference_mode():
                    torch_rounds[peer].append(
                        measure(lambda: run(*torch_args), args.runs, args.warmup))
            del session, session_feeds
    del feeds
    tess = combine_tessera(tess_rounds)
    ort_t = combine(ort_rounds)
    np_t = combine(np_rounds)
    torch_t = {peer: combine(rounds) if rounds else None for peer, rounds in torch_rounds.items()}
    peers = [t for t in (ort_t, np_t, *torch_t.values()) if t is not None]
    best = min(peers, key=lambda t: t.median_ms)

    def entry(t: Timing | None, rounds: list[Timing]) -> dict:
        """Times and rate of one runner, and its median in each round."""
        if t is None:
            return {}
        return {"median_ms": t.median_ms, "min_ms": t.min_ms, "rate": w.rate(t.median_ms),
                "round_medians_ms": [r.median_ms for r in rounds]}

    tess_entry = entry(tess.timing, [r.timing for r in tess_rounds if r.timing])
    if tess.error is not None:
        tess_entry["error"] = tess.error
    else:
        tess_entry["reported"] = tess.reported
    row = {
        "workload": w.name,
        "shape": w.shape,
        "tc_file": f"bench/workloads/{w.tc_file}",
        "def": w.tc_def,
        "sizes": w.sizes,
        "unit": w.unit,
        "flops": w.flops,
        "bytes": w.bytes_read,
        "agree": agree,
        "max_rel_diff": max_rel,
        "ort": entry(ort_t, ort_rounds),
        "numpy": entry(np_t, np_rounds),
        "eager": entry(torch_t["eager"], torch_rounds["eager"]),
        "compile": entry(torch_t["compile"], torch_rounds["compile"]),
        "tessera": tess_entry,
        "tessera_over_ort": ratio(tess.timing, ort_t),
        "tessera_over_numpy": ratio(tess.timing, np_t),
        "tessera_over_best": ratio(tess.timing, best),
    }
    if w.bytes_read is not None:
        bound_ms = w.bytes_read / (BANDWIDTH_GBPS * 1e9) * 1e3
        timings = {"ORT": ort_t, "numpy": np_t, **torch_t, "tessera": tess.timing}
        row["bandwidth_bound"] = {
            "bytes": w.bytes_read,
            "gbps": BANDWIDTH_GBPS,
            "ms": bound_ms,
            "fraction": {
                who: (bound_ms / t.median_ms if t else None) for who, t in timings.items()
            },
        }
    return row


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Command-line options."""
    names = [make().name for make in WORKLOADS]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=20, help="timed runs per runner (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    p.add_argument("--rounds", type=int, default=5,
                   help="rounds in which the runners take turns; each reports the median "
                        "of its round medians (default 5)")
    p.add_argument("--only", choices=names, help="run this workload only")
    p.add_argument("--json", type=Path, metavar="OUT", help="also write every number to OUT")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--tessera", type=Path, default=DEFAULT_TESSERA,
                   help="the tessera binary (default target/release/tessera)")
    p.add_argument("--tessera-timeout", type=float, default=600.0,
                   help="seconds allowed for each tessera bench command (default 600)")
    p.add_argument("--ort-weights-as-inputs", action="store_true",
                   help="feed weights and tables to ORT as inputs instead of embedding them "
                        "in the model as initializers (its fastest configuration: it prepacks "
                        "them)")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = p.parse_args(argv)
    args.ort_initializers = not args.ort_weights_as_inputs
    if args.runs < 1 or args.warmup < 0 or args.rounds < 1:
        p.error("--runs and --rounds must be at least 1 and --warmup at least 0")
    return args


def main(argv: list[str]) -> int:
    """Run the selected workloads, print the table, write the JSON."""
    args = parse_args(argv)
    torch.set_num_threads(2)
    workloads = [make() for make in WORKLOADS]
    if args.only:
        workloads = [w for w in workloads if w.name == args.only]
    rows = [run_workload(w, args) for w in workloads]
    print_table(rows)
    if args.json:
        report = {
            "machine": {"platform": platform.platform(), "processor": platform.processor()},
            "versions": {"numpy": np.__version__, "onnx": onnx.__version__,
                         "onnxruntime": ort.__version__, "torch": torch.__version__,
                         "python": platform.python_version()},
            "settings": {"runs": args.runs, "warmup": args.warmup, "rounds": args.rounds,
                         "seed": args.seed,
                         "ort_intra_op_threads": 2, "ort_inter_op_threads": 1,
                         "ort_initializers": args.ort_initializers, "rtol": RTOL},
            "workloads": rows,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
