"""Cross-check: `tessera run` against numpy on .npy files.

Each case writes numpy-generated inputs as .npy files, runs the tessera
binary given on the command line with `--input NAME=FILE.npy ... --out DIR`,
reads the outputs back and compares them with a numpy computation of the
same operator (relative tolerance 1e-4, absolute below magnitude 1).
"""

import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESSERA = sys.argv[1]
rng = np.random.default_rng(2026)


def f32(*shape):
    return rng.uniform(-1, 1, size=shape).astype(np.float32)


def run(tc_file, def_name, inputs, scalars=None):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [TESSERA, "run", os.path.join(ROOT, tc_file), "--def", def_name, "--out", tmp]
        for name, value in inputs.items():
            path = os.path.join(tmp, "in_" + name + ".npy")
            np.save(path, value)
            cmd += ["--input", f"{name}={path}"]
        for name, value in (scalars or {}).items():
            cmd += ["--input", f"{name}={value}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise AssertionError(f"tessera failed: {proc.stderr}")
        outs = {}
        for line in proc.stdout.splitlines():
            path = line.split()[1]
            outs[os.path.basename(path)[:-4]] = np.load(path)
        return outs


def conv2d(x, w, stride=1, pad=0):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, f, oh, ow), np.float64)
    for r in range(kh):
        for s in range(kw):
            patch = x[:, :, r:r + stride * (oh - 1) + 1:stride, s:s + stride * (ow - 1) + 1:stride]
            out += np.einsum("nchw,fc->nfhw", patch, w[:, :, r, s])
    return out


def case_layer():
    i, w, b = f32(2, 3, 9, 8), f32(4, 3, 3, 3), f32(4)
    y = np.maximum(conv2d(i, w, pad=1) + b[None, :, None, None], 0)
    p = y[:, :, :8, :8].reshape(2, 4, 4, 2, 4, 2).max(axis=(3, 5))
    return run("examples/quickstart/layer.tc", "layer", {"I": i, "Wt": w, "B": b}), {"P": p}


def case_sconv2d():
    i, w, b = f32(2, 3, 11, 10), f32(5, 3, 3, 2), f32(5)
    want = conv2d(i, w)[:, :, ::2, ::3] + b[None, :, None, None]
    got = run("examples/paper/sconv2d.tc", "sconv2d", {"I": i, "W": w, "B": b}, {"sh": 2, "sw": 3})
    return got, {"O": want}


def case_tmm():
    a, b = f32(16, 32), f32(24, 32)
    return run("examples/paper/tmm.tc", "tmm", {"A": a, "B": b}), {"C": a @ b.T}


def case_tbmm():
    x, y = f32(3, 5, 7), f32(3, 6, 7)
    return run("examples/paper/tbmm.tc", "tbmm", {"X": x, "Y": y}), {"Z": np.einsum("bnm,bkm->bnk", x, y)}


def case_gather():
    x = f32(10)
    idx = rng.integers(0, 10, size=(3, 4)).astype(np.int32)
    return run("examples/paper/gather.tc", "gather", {"X": x, "I": idx}), {"Z": x[idx]}


def case_softmax():
    x = (f32(4, 7) * 30).astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return run("ops/prelude.tc", "softmax_r2", {"X": x}), {"Y": e / e.sum(axis=1, keepdims=True)}


CASES = [case_layer, case_sconv2d, case_tmm, case_tbmm, case_gather, case_softmax]


def main():
    passed = failed = 0
    for case in CASES:
        try:
            got, want = case()
            for name, w in want.items():
                g = got[name]
                assert g.shape == w.shape, f"{name}: shape {g.shape} != {w.shape}"
                err = np.abs(g - w) / np.maximum(1.0, np.abs(w))
                assert err.max() <= 1e-4, f"{name}: max relative error {err.max()}"
            passed += 1
            print(f"ok   {case.__name__}")
        except (AssertionError, KeyError) as e:
            failed += 1
            print(f"FAIL {case.__name__}: {e}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


main()
