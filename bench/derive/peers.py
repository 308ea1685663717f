"""Kernel workloads of expression derivation (issue 19, after OLLIE): the
plain TC program (tessera unoptimized), the program `tessera derive` finds
(a marked hook, below: n/a while the command does not exist), and the
peers in their fastest configuration, timed in turns; plus the
derivation's search time.

Peers, 2 threads each: ONNX Runtime (weights as initializers, all graph
optimizations, 2 intra-op threads, 1 inter-op thread), PyTorch eager and
torch.compile with inductor's freezing (`inference_mode`). The convolutions
are bench/peers/onnx_ops.py's models (its `conv` builder: Conv or
ConvTranspose with a bias, weights as initializers) and its `TorchGraph`
(the graph's nodes as torch.nn.functional calls on the initializers as
frozen parameters). G2BMM has no ONNX operator: both peers compute it by
blocks (below, `g2bmm_onnx` and `G2bmmTorch`), and a NumPy reference checks
every runner on a small size first.

Before timing, every runner's output (tessera's by `tessera run` on the same
inputs) must agree with ONNX Runtime's (G2BMM: NumPy's) within 1e-4 of the
output's largest magnitude, else the script stops (a derived program that
differs or fails is reported and not timed). Then, for --rounds
rounds, in each round: `tessera bench --json` on the plain TC (its own
process, first, before the round's ORT session exists: ORT's threads
spin-wait after a run and would take a core), the derived program (hook),
ORT in a fresh session, PyTorch eager and compiled, each the median of
--runs runs after warm-up. The table gives the medians of the round
medians and ratios to the best peer.
"""
import argparse
import json
import os
import re
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnxruntime as ort
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import onnx_ops  # noqa: E402
from models import median_ms  # noqa: E402

OUT = os.path.join(ROOT, "target", "bench-derive")
TC_DIR = os.path.join(ROOT, "bench", "derive", "workloads")
DEFAULT_TESSERA = os.path.join(ROOT, "target", "release", "tessera")
TOLERANCE = 1e-4


@dataclass
class Workload:
    name: str
    shape: str  # for the table
    tc_file: str  # in bench/derive/workloads/
    sizes: dict  # --size SYM=N
    scalars: dict  # TC integer scalars, given to tessera as --input NAME=N
    model: object  # the ONNX model (None: no ONNX form)
    feeds: dict  # ORT's inputs
    tc_inputs: dict  # tessera's tensor inputs (name -> array), weights included
    tc_constants: tuple  # tessera inputs that are weights (`--constant`)
    torch_module: torch.nn.Module
    torch_args: tuple
    flops: float  # useful floating-point operations, for the rate
    target_ms: float  # issue 19's target for the derived program
    issue_peer_ms: float  # the issue's best-peer reference (an earlier measurement)
    # search-time row (None: not one of the issue's search workloads)
    search_target_s: float | None = None
    einnet_s: float | None = None
    # the explorative depth `tessera derive` needs for the workload's
    # derivation (None: its default)
    derive_depth: int | None = None
    reference: np.ndarray | None = field(default=None, repr=False)  # when ORT is not the reference
    compile_module: torch.nn.Module | None = None  # what torch.compile compiles, if not torch_module

    @property
    def tc_def(self) -> str:
        return os.path.splitext(self.tc_file)[0]


# ---------------------------------------------------------------------------
# Convolutions: bench/peers/onnx_ops.py's models and TorchGraph


def conv_workload(name, tc_file, x_shape, w_shape, sizes, flops, target_ms, issue_ms,
                  search=None, **attrs) -> Workload:
    """onnx_ops.conv's model (Conv or ConvTranspose with bias, weights as
    initializers) and its TorchGraph; tessera gets the same x, w and b."""
    _, model, feeds = onnx_ops.conv(name, x_shape, w_shape, **attrs)
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    module = onnx_ops.TorchGraph(model).eval()
    return Workload(
        name=name, shape=f"{x_shape} x {w_shape} " + " ".join(f"{k}={v}" for k, v in attrs.items()),
        tc_file=tc_file, sizes=sizes, scalars={}, model=model, feeds=feeds,
        tc_inputs={"I": feeds["x"], "W1": init["w"], "B1": init["b"]}, tc_constants=("W1", "B1"),
        torch_module=module, torch_args=(torch.from_numpy(feeds["x"]),), flops=flops,
        target_ms=target_ms, issue_peer_ms=issue_ms,
        search_target_s=search[0] if search else None, einnet_s=search[1] if search else None,
    )


def conv5x5():
    n, c, hw, f, k = 1, 32, 224, 32, 5
    return conv_workload("conv5x5", "conv5x5.tc", [n, c, hw, hw], [f, c, k, k],
                         dict(N=n, C=c, H=hw, W=hw, F=f, KH=k, KW=k), 2.0 * n * f * hw * hw * c * k * k,
                         10.0, 13.0, search=(10.0, 98.9), pads=[2, 2, 2, 2])


def conv3x3():
    n, c, hw, f, k = 1, 512, 7, 512, 3
    return conv_workload("conv3x3", "conv3x3.tc", [n, c, hw, hw], [f, c, k, k],
                         dict(N=n, C=c, H=hw, W=hw, F=f, KH=k, KW=k), 2.0 * n * f * hw * hw * c * k * k,
                         0.85, 1.08, search=(0.7, 7.0), pads=[1, 1, 1, 1])


def convtranspose():
    # as bench/peers/onnx_ops.py's "convtranspose": each output point gets 2 x 2 of the 4 x 4 taps
    n, c, hw, f, k = 16, 256, 2, 128, 4
    w = conv_workload("convtranspose", "convtranspose.tc", [n, c, hw, hw], [c, f, k, k],
                      dict(N=n, C=c, H=hw, W=hw, F=f, KH=k, KW=k),
                      2.0 * n * c * hw * hw * f * k * k, 0.45, 0.65, search=(5.0, 52.7),
                      strides=[2, 2], pads=[1, 1, 1, 1], transpose=True)
    # OLLIE's derivation takes five explorative steps here (the channel sum
    # split off, two substitutions, two splits by the stride).
    w.derive_depth = 5
    return w


def dilated():
    n, c, hw, f, k = 1, 512, 14, 256, 3
    return conv_workload("dilated", "dilated.tc", [n, c, hw, hw], [f, c, k, k],
                         dict(N=n, C=c, H=hw, W=hw, F=f, KH=k, KW=k), 2.0 * n * f * hw * hw * c * k * k,
                         1.8, 2.31, dilations=[2, 2], pads=[2, 2, 2, 2])


# ---------------------------------------------------------------------------
# G2BMM: O(b, i, w) = sum_k A(b, i, k) X(b, i + d (w - W), k), w in 0:2W+1,
# rows outside 0:L contributing 0 (bench/derive/workloads/g2bmm.tc).
#
# Both peers split the sequence into its d residues modulo the dilation (row
# i = m d + r pairs only with rows of residue r, at m + w - W), which makes
# d undilated bands of half-width W over M = L / d rows, then cut each band
# into blocks of T rows: block q's rows pair with the T + 2W rows from
# q T - W, one (T x D) by (D x (T + 2W)) matrix product per block (the
# band's 2W + 1 columns of each row plus T - 1 wasted, so (T + 2W) / (2W + 1)
# of the useful work), and row t of a block's product holds its band at
# columns t to t + 2W: the product's rows read with a stride one longer
# than theirs (a view in PyTorch; a pad and reshape in ONNX). T is chosen per
# peer (G2BMM_BLOCK), the fastest in a sweep on this machine (`--sweep-g2bmm`).


def g2bmm_numpy(a, x, w, d):
    """The reference: one band diagonal at a time, in float64."""
    nb, length, _ = a.shape
    a64, x64 = a.astype(np.float64), x.astype(np.float64)
    out = np.zeros((nb, length, 2 * w + 1))
    for j in range(2 * w + 1):
        off = d * (j - w)
        lo, hi = max(0, -off), min(length, length - off)
        if lo < hi:
            out[:, lo:hi, j] = np.einsum("bik,bik->bi", a64[:, lo:hi], x64[:, lo + off:hi + off])
    return out


def g2bmm_torch(a, x, w, d, t, chunked):
    """G2BMM by blocks of `t` rows (above) in PyTorch: with `chunked`, one
    (batch, residue) band at a time, so that its products (20 x 128 x 640
    floats at most) stay in the caches (eager: all at once, 210 MB of
    products, was 1.7x slower); without, all bands at once (torch.compile:
    its unrolled loop of 32 bands was 2 to 4 times slower than this)."""
    nbat, length, dim = a.shape
    m = length // d
    nblk = -(-m // t)
    mp = nblk * t
    q = F.pad(a.view(nbat, m, d, dim).permute(0, 2, 1, 3), (0, 0, 0, mp - m))  # B, d, Mp, D
    k = F.pad(x.view(nbat, m, d, dim).permute(0, 2, 1, 3), (0, 0, w, mp - m + w))  # B, d, Mp + 2W, D
    out = torch.empty(nbat, mp, d, 2 * w + 1, dtype=a.dtype)
    blocks = out.view(nbat, nblk, t, d, 2 * w + 1)
    if not chunked:
        span = k.unfold(2, t + 2 * w, t)  # B, d, nblk, D, T + 2W: a view
        s = torch.matmul(q.view(nbat, d, nblk, t, dim), span)  # B, d, nblk, T, T + 2W
        band = s.as_strided((nbat, d, nblk, t, 2 * w + 1),
                            (s.stride(0), s.stride(1), s.stride(2), t + 2 * w + 1, 1))
        blocks.permute(0, 3, 1, 2, 4).copy_(band)
    else:
        for b in range(nbat):
            for r in range(d):
                span = k[b, r].unfold(0, t + 2 * w, t)  # nblk, D, T + 2W: a view
                s = torch.matmul(q[b, r].view(nblk, t, dim), span)  # nblk, T, T + 2W
                band = s.as_strided((nblk, t, 2 * w + 1), (s.stride(0), t + 2 * w + 1, 1))
                blocks[b, :, :, r].copy_(band)
    return out[:, :m].reshape(nbat, length, 2 * w + 1)


class G2bmmTorch(torch.nn.Module):
    def __init__(self, w, d, t, chunked):
        super().__init__()
        self.w, self.d, self.t, self.chunked = w, d, t, chunked

    def forward(self, a, x):
        return g2bmm_torch(a, x, self.w, self.d, self.t, self.chunked)


def g2bmm_onnx(nbat, length, dim, w, d, t):
    """G2BMM by blocks of `t` rows (above) as an ONNX graph: the residues by
    Reshape and Transpose, the blocks' spans by one Gather of row indices,
    Transpose and MatMul (which ORT fuses into one product with the second
    operand transposed), the band by Pad, Reshape and Slice."""
    m = length // d
    nblk = -(-m // t)
    mp = nblk * t
    span = t + 2 * w
    consts = {
        "shape_res": np.array([nbat, m, d, dim], np.int64),
        "pads_q": np.array([0, 0, 0, 0, 0, 0, mp - m, 0], np.int64),
        "pads_k": np.array([0, 0, w, 0, 0, 0, mp - m + w, 0], np.int64),
        "shape_blk": np.array([nbat, d, nblk, t, dim], np.int64),
        "span_idx": (np.arange(nblk)[:, None] * t + np.arange(span)[None, :]).astype(np.int64),
        "shape_flat": np.array([nbat, d, nblk, t * span], np.int64),
        "pads_skew": np.array([0, 0, 0, 0, 0, 0, 0, t], np.int64),
        "shape_skew": np.array([nbat, d, nblk, t, span + 1], np.int64),
        "zero": np.array([0], np.int64),
        "band": np.array([2 * w + 1], np.int64),
        "ax_last": np.array([-1], np.int64),
        "shape_rows": np.array([nbat, d, mp, 2 * w + 1], np.int64),
        "m": np.array([m], np.int64),
        "ax2": np.array([2], np.int64),
        "shape_out": np.array([nbat, length, 2 * w + 1], np.int64),
    }
    nodes = [
        helper.make_node("Reshape", ["a", "shape_res"], ["a4"]),
        helper.make_node("Transpose", ["a4"], ["ar"], perm=[0, 2, 1, 3]),
        helper.make_node("Pad", ["ar", "pads_q"], ["ap"]),
        helper.make_node("Reshape", ["ap", "shape_blk"], ["qb"]),
        helper.make_node("Reshape", ["x", "shape_res"], ["x4"]),
        helper.make_node("Transpose", ["x4"], ["xr"], perm=[0, 2, 1, 3]),
        helper.make_node("Pad", ["xr", "pads_k"], ["xp"]),
        helper.make_node("Gather", ["xp", "span_idx"], ["kb"], axis=2),  # B, d, nblk, span, D
        helper.make_node("Transpose", ["kb"], ["kt"], perm=[0, 1, 2, 4, 3]),
        helper.make_node("MatMul", ["qb", "kt"], ["s"]),  # B, d, nblk, T, span
        helper.make_node("Reshape", ["s", "shape_flat"], ["sf"]),
        helper.make_node("Pad", ["sf", "pads_skew"], ["sp"]),
        helper.make_node("Reshape", ["sp", "shape_skew"], ["ss"]),
        helper.make_node("Slice", ["ss", "zero", "band", "ax_last"], ["bd"]),
        helper.make_node("Reshape", ["bd", "shape_rows"], ["br"]),
        helper.make_node("Slice", ["br", "zero", "m", "ax2"], ["bm"]),
        helper.make_node("Transpose", ["bm"], ["bt"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["bt", "shape_out"], ["y"]),
    ]
    return onnx_ops.graph_model("g2bmm", nodes, {"a": [nbat, length, dim], "x": [nbat, length, dim]}, consts)


# The block size of each peer: the fastest in `--sweep-g2bmm` on this machine
# (ORT: 219 ms at 64 and 128, 221 at 256, 252 at 512; PyTorch eager, one
# band at a time: 131 ms at 64, 137 at 128, 140 at 256, while the machine was
# quiet; torch.compile, all bands at once: 128 and 256 alike, under load).
G2BMM_BLOCK = {"ort": 128, "eager": 64, "compile": 128}


def g2bmm_inputs(nbat, length, dim, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((nbat, length, dim)).astype(np.float32),
            rng.standard_normal((nbat, length, dim)).astype(np.float32))


def g2bmm(nbat=8, length=10000, dim=64, w=256, d=4, reference=False):
    a, x = g2bmm_inputs(nbat, length, dim)
    return Workload(
        name="g2bmm", shape=f"B={nbat} L={length} D={dim} W={w} (2W+1={2 * w + 1}) dilation {d}",
        tc_file="g2bmm.tc", sizes=dict(B=nbat, L=length, D=dim), scalars=dict(W=w, DIL=d),
        model=g2bmm_onnx(nbat, length, dim, w, d, G2BMM_BLOCK["ort"]), feeds={"a": a, "x": x},
        tc_inputs={"A": a, "X": x}, tc_constants=(),
        torch_module=G2bmmTorch(w, d, G2BMM_BLOCK["eager"], chunked=True).eval(),
        compile_module=G2bmmTorch(w, d, G2BMM_BLOCK["compile"], chunked=False).eval(),
        torch_args=(torch.from_numpy(a), torch.from_numpy(x)),
        flops=2.0 * nbat * length * (2 * w + 1) * dim, target_ms=40.0, issue_peer_ms=171.0,
        search_target_s=0.07, einnet_s=0.68,
        reference=g2bmm_numpy(a, x, w, d).astype(np.float32) if reference else None,
    )


WORKLOADS = {"g2bmm": lambda: g2bmm(reference=True), "conv5x5": conv5x5, "conv3x3": conv3x3,
             "convtranspose": convtranspose, "dilated": dilated}


# ---------------------------------------------------------------------------
# Runners


def ort_session(model):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3  # errors only
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def rel_diff(got, ref):
    got = np.asarray(got)
    if got.shape != ref.shape:
        return float("inf")
    return float(np.abs(got.astype(np.float64) - ref).max() / (np.abs(ref).max() or 1.0))


def first_line(text):
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def tessera_args(w: Workload, files: dict, constants=True, sizes=True) -> list:
    """Sizes (`sizes`: a derived program has its sizes written in), scalars,
    inputs and (`constants`) the weights as `--constant`."""
    args = [a for k, v in w.sizes.items() for a in ("--size", f"{k}={v}")] if sizes else []
    args += [a for k, v in w.scalars.items() for a in ("--input", f"{k}={v}")]
    args += [a for k, f in files.items() for a in ("--input", f"{k}={f}")]
    if constants:
        args += [a for k in w.tc_constants for a in ("--constant", k)]
    return args


def save_inputs(w: Workload, tag: str) -> dict:
    os.makedirs(OUT, exist_ok=True)
    files = {}
    for k, v in w.tc_inputs.items():
        files[k] = os.path.join(OUT, f"{tag}_{k}.npy")
        np.save(files[k], v)
    return files


def tessera_output(binary, tc_path, w: Workload, files: dict, tag: str, timeout, sizes=True) -> np.ndarray:
    """`tessera run` of a TC def on the workload's inputs: its output O."""
    outdir = os.path.join(OUT, f"{tag}_out")
    cmd = [binary, "run", tc_path, "--def", w.tc_def, "--out", outdir] + tessera_args(w, files, False, sizes)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {first_line(proc.stderr) or proc.returncode}")
    return np.load(os.path.join(outdir, "O.npy"))


def tessera_bench(binary, tc_path, w: Workload, files: dict, runs, timeout, sizes=True):
    """`tessera bench --json` of a TC def: (median ms, None) or (None, error)."""
    cmd = [binary, "bench", tc_path, "--def", w.tc_def] + tessera_args(w, files, True, sizes)
    cmd += ["--runs", str(runs), "--json"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:g} s"
    except FileNotFoundError:
        return None, f"{binary} not found"
    if proc.returncode != 0:
        return None, first_line(proc.stderr) or f"exit status {proc.returncode}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("{")]
    return json.loads(lines[-1])["median_ms"], None


# ---------------------------------------------------------------------------
# HOOK for the lead (issue 19): `tessera derive`. Everything that depends on
# the command is in this section. Until `tessera derive --help` succeeds,
# the derived column and the search-time rows print
# "n/a (tessera derive not built yet)".

DERIVE_NA = "n/a (tessera derive not built yet)"


def derive_available(binary) -> bool:
    try:
        return subprocess.run([binary, "derive", "--help"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def derive_cmd(binary, w: Workload, depth=None, explain=False) -> list:
    """`tessera derive FILE.tc --def NAME --size SYM=N... --constant W...
    [--depth D] [--explain]`: sizes and integer scalars (G2BMM's W and DIL)
    alike by `--size`, the weights `--constant` (as for `tessera bench`)."""
    cmd = [binary, "derive", os.path.join(TC_DIR, w.tc_file), "--def", w.tc_def]
    cmd += [a for k, v in {**w.sizes, **w.scalars}.items() for a in ("--size", f"{k}={v}")]
    cmd += [a for k in w.tc_constants for a in ("--constant", k)]
    if depth is not None:
        cmd += ["--depth", str(depth)]
    if explain:
        cmd.append("--explain")
    return cmd


def derive_search(binary, w: Workload, timeout):
    """One search: (wall seconds, derived program's TC text, None) or (None,
    None, error). derive prints the derived program on stdout, a def of the
    same name and arguments with the sizes written in (its scalars are
    still arguments)."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(derive_cmd(binary, w, depth=w.derive_depth), capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, f"timed out after {timeout:g} s"
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        return None, None, first_line(proc.stderr) or f"exit status {proc.returncode}"
    # The derivation's own time, from derive's line on standard error
    # ("derived `f`: N states, search S s, request R s; ..."); the process's
    # wall time also measures the candidates and proves the result.
    found = re.search(r"search ([0-9.]+) s, request ([0-9.]+) s", proc.stderr)
    return (float(found.group(1)) if found else seconds), proc.stdout, None


def derived_path(w: Workload, program: str) -> str:
    """Write the derived program where `tessera run` and `bench` read it."""
    path = os.path.join(OUT, f"{w.name}.derived.tc")
    with open(path, "w") as f:
        f.write(program)
    return path


# ---------------------------------------------------------------------------


def check_g2bmm_small(binary, timeout, compile_too):
    """Every G2BMM runner against the NumPy reference on a small size whose
    rows per residue (50) are not a multiple of the blocks (8)."""
    nbat, length, dim, w, d, t = 2, 200, 16, 8, 4, 8
    a, x = g2bmm_inputs(nbat, length, dim, seed=1)
    ref = g2bmm_numpy(a, x, w, d)
    errs = {"ort": rel_diff(ort_session(g2bmm_onnx(nbat, length, dim, w, d, t)).run(None, {"a": a, "x": x})[0], ref)}
    module = G2bmmTorch(w, d, t, chunked=True).eval()
    at, xt = torch.from_numpy(a), torch.from_numpy(x)
    with torch.inference_mode():
        errs["eager"] = rel_diff(module(at, xt).numpy(), ref)
        errs["eager, all bands at once"] = rel_diff(G2bmmTorch(w, d, t, chunked=False)(at, xt).numpy(), ref)
        if compile_too:
            compiled = torch.compile(G2bmmTorch(w, d, t, chunked=False).eval(), dynamic=False)
            errs["compile"] = rel_diff(compiled(at, xt).numpy(), ref)
    small = Workload(name="g2bmm_small", shape="", tc_file="g2bmm.tc", sizes=dict(B=nbat, L=length, D=dim),
                     scalars=dict(W=w, DIL=d), model=None, feeds={}, tc_inputs={"A": a, "X": x},
                     tc_constants=(), torch_module=module, torch_args=(), flops=0, target_ms=0,
                     issue_peer_ms=0)
    errs["tessera"] = rel_diff(
        tessera_output(binary, os.path.join(TC_DIR, "g2bmm.tc"), small, save_inputs(small, "g2bmm_small"),
                       "g2bmm_small", timeout), ref)
    bad = {k: v for k, v in errs.items() if v > TOLERANCE}
    print(f"g2bmm small-size check against NumPy (B={nbat} L={length} D={dim} W={w} d={d}, blocks of {t}): "
          + ", ".join(f"{k} {v:.1e}" for k, v in errs.items()), flush=True)
    if bad:
        sys.exit(f"g2bmm: {', '.join(bad)} differ from NumPy beyond {TOLERANCE:g}")


def sweep_g2bmm(runs):
    """Time each peer's G2BMM at each block size (to choose G2BMM_BLOCK)."""
    nbat, length, dim, w, d = 8, 10000, 64, 256, 4
    a, x = g2bmm_inputs(nbat, length, dim)
    at, xt = torch.from_numpy(a), torch.from_numpy(x)
    import torch._inductor.config as inductor
    inductor.freezing = True
    for t in (64, 128, 256, 512):
        s = ort_session(g2bmm_onnx(nbat, length, dim, w, d, t))
        ort_ms = median_ms(lambda: s.run(None, {"a": a, "x": x}), runs)
        del s
        with torch.inference_mode():
            eager_ms = median_ms(lambda: g2bmm_torch(at, xt, w, d, t, True), runs)
            whole_ms = median_ms(lambda: g2bmm_torch(at, xt, w, d, t, False), runs)
            c = torch.compile(G2bmmTorch(w, d, t, chunked=False), dynamic=False)
            compile_ms = median_ms(lambda: c(at, xt), runs)
        print(f"T={t}: ORT {ort_ms:.1f} ms, eager (band by band) {eager_ms:.1f} ms, eager (all at once) "
              f"{whole_ms:.1f} ms, compile (all at once) {compile_ms:.1f} ms", flush=True)


def run_workload(w: Workload, args, derive_ok) -> dict:
    tc_path = os.path.join(TC_DIR, w.tc_file)
    files = save_inputs(w, w.name)
    session = ort_session(w.model)
    ref = session.run(None, w.feeds)[0]
    del session
    errs = {}
    if w.reference is not None:
        errs["ort"] = rel_diff(ref, w.reference)
        ref = w.reference
    errs["tessera"] = rel_diff(tessera_output(args.tessera, tc_path, w, files, w.name, args.tessera_timeout), ref)
    runners = {"eager": w.torch_module}
    if not args.no_compile:
        import torch._inductor.config as inductor
        inductor.freezing = True
        runners["compile"] = torch.compile(w.compile_module or w.torch_module, dynamic=False)
    with torch.inference_mode():
        for peer, run in runners.items():
            errs[peer] = rel_diff(run(*w.torch_args).numpy(), ref)
    row = {"workload": w.name, "shape": w.shape, "tc_file": f"bench/derive/workloads/{w.tc_file}",
           "sizes": w.sizes, "scalars": w.scalars, "flops": w.flops, "target_ms": w.target_ms,
           "issue_peer_ms": w.issue_peer_ms, "reference": "numpy" if w.reference is not None else "ort",
           "max_rel_diff": errs, "errors": {}}
    derived = None
    search = []
    if derive_ok:
        seconds, program, err = derive_search(args.tessera, w, args.tessera_timeout)
        if err is None:
            search.append(seconds)
            derived = derived_path(w, program)
            try:
                errs["derived"] = rel_diff(
                    tessera_output(args.tessera, derived, w, files, w.name + "_derived", args.tessera_timeout,
                                   sizes=False), ref)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                row["errors"]["derived"] = f"tessera run: {e}"
                derived = None
        else:
            row["errors"]["derive"] = err
    print(f"{w.name}: max relative difference to {row['reference']}: "
          + ", ".join(f"{k} {v:.1e}" for k, v in errs.items()), flush=True)
    if errs.get("derived", 0.0) > TOLERANCE:  # a wrong derived program is reported, not timed
        row["errors"]["derived"] = f"WRONG: differs from {row['reference']} by {errs['derived']:.1e}"
        derived = None
    bad = {k: v for k, v in errs.items() if v > TOLERANCE and k != "derived"}
    if bad:
        sys.exit(f"{w.name}: {', '.join(bad)} differ from {row['reference']} beyond {TOLERANCE:g}")
    times = {"tessera": [], "derived": [], "ort": [], "eager": [], "compile": []}
    for r in range(args.rounds):
        print(f"[{w.name}] round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
        ms, err = tessera_bench(args.tessera, tc_path, w, files, args.runs, args.tessera_timeout)
        if err is None:
            times["tessera"].append(ms)
        else:
            row["errors"]["tessera"] = err
        if derive_ok and r > 0 and w.search_target_s is not None:  # a search per round (the first's above)
            seconds, _, err = derive_search(args.tessera, w, args.tessera_timeout)
            if err is None:
                search.append(seconds)
        if derived is not None:
            ms, err = tessera_bench(args.tessera, derived, w, files, args.runs, args.tessera_timeout, sizes=False)
            if err is None:
                times["derived"].append(ms)
            else:
                row["errors"]["derived"] = err
        session = ort_session(w.model)
        times["ort"].append(median_ms(lambda: session.run(None, w.feeds), args.runs))
        del session
        with torch.inference_mode():
            for peer, run in runners.items():
                times[peer].append(median_ms(lambda: run(*w.torch_args), args.runs))
    med = {k: statistics.median(v) if v else None for k, v in times.items()}
    peers = {k: med[k] for k in ("ort", "eager", "compile") if med[k] is not None}
    best = min(peers, key=peers.get)
    row.update({"rounds_ms": times, "median_ms": med, "best_peer": best, "best_peer_ms": peers[best],
                "search_s": search, "search_median_s": statistics.median(search) if search else None})
    print(f"{w.name}: ORT {fmt(med['ort'])} ms, eager {fmt(med['eager'])} ms, compile {fmt(med['compile'])} ms, "
          f"tessera {fmt(med['tessera'])} ms, derived {fmt(med['derived'])} ms", flush=True)
    return row


def fmt(v, spec=".3f"):
    return "n/a" if v is None else format(v, spec)


PEER_NAMES = {"ort": "ORT", "eager": "eager", "compile": "torch.compile"}


def print_tables(rows, derive_ok):
    na = "n/a" if derive_ok else DERIVE_NA
    print("\n| workload | ORT (ms) | PyTorch eager (ms) | torch.compile (ms) | best peer (ms) "
          "| tessera plain TC (ms) | plain / best | tessera derived (ms) | derived / best | target (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        m, best = r["median_ms"], r["best_peer_ms"]
        plain = fmt(m["tessera"] / best, ".2f") if m["tessera"] else "n/a"
        der = fmt(m["derived"] / best, ".2f") if m["derived"] else "n/a"
        print(f"| {r['workload']} | {fmt(m['ort'])} | {fmt(m['eager'])} | {fmt(m['compile'])} "
              f"| {best:.3f} ({PEER_NAMES[r['best_peer']]}) | {fmt(m['tessera'])} | {plain} "
              f"| {fmt(m['derived']) if m['derived'] else na} | {der} | ≤ {r['target_ms']:g} |")
    print("\n(medians of the round medians; X / best = X's median over the best peer's, below 1 is faster)")
    searched = [r for r in rows if r.get("search_target_s") is not None]
    if searched:
        print("\n| search | tessera derive's search (s) | target (s) | EinNet (s) |")
        print("|---|---|---|---|")
        for r in searched:
            s = r["search_median_s"]
            print(f"| {r['workload']} | {fmt(s, '.3f') if s is not None else na} "
                  f"| ≤ {r['search_target_s']:g} | {r['einnet_s']:g} |")
    for r in rows:
        for who, err in r["errors"].items():
            print(f"{r['workload']}: {who}: {err}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="timed runs per runner and round (default 20)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds the runners take turns in (default 5)")
    ap.add_argument("--only", action="append", choices=list(WORKLOADS), help="workload (repeatable)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--json", metavar="PATH", help="also write every number to PATH")
    ap.add_argument("--tessera", default=DEFAULT_TESSERA, help="the tessera binary (default target/release/tessera)")
    ap.add_argument("--tessera-timeout", type=float, default=600.0, help="seconds per tessera command (default 600)")
    ap.add_argument("--sweep-g2bmm", action="store_true", help="time the G2BMM peers' block sizes and stop")
    args = ap.parse_args()
    torch.set_num_threads(2)
    os.makedirs(OUT, exist_ok=True)
    if args.sweep_g2bmm:
        sweep_g2bmm(args.runs)
        return 0
    derive_ok = derive_available(args.tessera)
    if not derive_ok:
        print(f"`{args.tessera} derive --help` failed: derived column and search times are {DERIVE_NA}", flush=True)
    names = args.only or list(WORKLOADS)
    if "g2bmm" in names:
        check_g2bmm_small(args.tessera, args.tessera_timeout, not args.no_compile)
    rows = []
    for name in names:
        w = WORKLOADS[name]()
        row = run_workload(w, args, derive_ok)
        row.update({"search_target_s": w.search_target_s, "einnet_s": w.einnet_s})
        rows.append(row)
        del w
        if args.json:  # after each workload, so an interrupted run keeps what it measured
            with open(args.json, "w") as f:
                json.dump({"machine": {"platform": platform.platform(), "processor": platform.processor(),
                                       "cpus": os.cpu_count()},
                           "args": {k: v for k, v in vars(args).items()}, "rows": rows}, f, indent=1)
    print_tables(rows, derive_ok)
    return 0


if __name__ == "__main__":
    sys.exit(main())
