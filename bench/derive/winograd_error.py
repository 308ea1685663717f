#!/usr/bin/env python3
"""Float32 error of the Winograd derivations (issue 19, deliverable 5).

For a workload (default conv3x3 at its benchmark size), writes seeded
inputs (standard normal image and bias, weights scaled by 1/sqrt(fan-in),
as peers.py's `conv`), then:

- the reference: the workload's def with every `float` made `double`, run
  by the interpreter in float64 (`tessera run --interp`) on the same values;
- the plain def compiled in float32 (`tessera run`);
- each application of `--apply winograd-minimal-filtering` (each proved
  equal to the def over Z_p by the verifier as `tessera derive` applies
  it), compiled in float32.

Prints, per program, the largest absolute difference from the reference
and that difference over the reference's largest magnitude. Uses only the
standard library (the .npy files are read and written by hand).

    bench/derive/winograd_error.py [--workload conv3x3] [--tessera PATH]
"""

import argparse
import array
import ast
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))

# name: (file, sizes, input shape, weight shape)
WORKLOADS = {
    "conv3x3": ("conv3x3.tc", {"N": 1, "C": 512, "H": 7, "W": 7, "F": 512, "KH": 3, "KW": 3}),
    "conv5x5": ("conv5x5.tc", {"N": 1, "C": 32, "H": 224, "W": 224, "F": 32, "KH": 5, "KW": 5}),
}


def write_npy(path, code, shape, values):
    """A little-endian C-order .npy file of `values` (`code` 'f' or 'd')."""
    descr = "<f4" if code == "f" else "<f8"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr,
        "".join("%d, " % d for d in shape) if len(shape) != 1 else "%d," % shape[0],
    )
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(array.array(code, values).tobytes())


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    major = data[6]
    if major == 1:
        (hlen,) = struct.unpack("<H", data[8:10])
        start = 10
    else:
        (hlen,) = struct.unpack("<I", data[8:12])
        start = 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    code = {"<f4": "f", "<f8": "d"}[header["descr"]]
    a = array.array(code)
    a.frombytes(data[start + hlen:])
    return list(a)


def tessera(cmd, exe):
    out = subprocess.run([exe] + cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("tessera %s failed:\n%s%s" % (" ".join(cmd), out.stdout, out.stderr))
    return out.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="conv3x3", choices=sorted(WORKLOADS))
    ap.add_argument("--tessera", default=os.path.join(ROOT, "target", "release", "tessera"))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    file, sizes = WORKLOADS[args.workload]
    src = os.path.join(ROOT, "bench", "derive", "workloads", file)
    name = args.workload
    n, c, h, w, f, kh, kw = (sizes[k] for k in ["N", "C", "H", "W", "F", "KH", "KW"])
    size_args = sum((["--size", "%s=%d" % kv] for kv in sizes.items()), [])
    rng = random.Random(args.seed)
    # Values exactly representable in float32, so both precisions get the
    # same inputs.
    f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
    scale = 1.0 / math.sqrt(c * kh * kw)
    inputs = {
        "I": ([n, c, h, w], [f32(rng.gauss(0, 1)) for _ in range(n * c * h * w)]),
        "W1": ([f, c, kh, kw], [f32(rng.gauss(0, 1) * scale) for _ in range(f * c * kh * kw)]),
        "B1": ([f], [f32(rng.gauss(0, 1)) for _ in range(f)]),
    }
    tmp = tempfile.mkdtemp(prefix="winograd-error-")
    in32, in64 = [], []
    for k, (shape, values) in inputs.items():
        for code, lst in (("f", in32), ("d", in64)):
            p = os.path.join(tmp, "%s.%s.npy" % (k, code))
            write_npy(p, code, shape, values)
            lst += ["--input", "%s=%s" % (k, p)]

    # The reference: the def in float64 on the interpreter.
    text = open(src).read()
    double = re.sub(r"\bfloat\b", "double", text)
    ref_tc = os.path.join(tmp, "ref64.tc")
    open(ref_tc, "w").write(double)
    out = os.path.join(tmp, "ref")
    tessera(["run", ref_tc, "--def", name, "--interp", "--out", out] + in64, args.tessera)
    ref = read_npy(os.path.join(out, "O.npy"))
    peak = max(abs(x) for x in ref)

    programs = [("plain float32 convolution", src, size_args)]
    applied = tessera(["derive", src, "--def", name, "--apply", "winograd-minimal-filtering"]
                      + size_args, args.tessera)
    for k, part in enumerate(re.split(r"^# application \d+: ", applied, flags=re.M)[1:]):
        what, rest = part.split("\n", 1)
        if "# equivalent" not in rest:
            sys.exit("application %d was not proved equal:\n%s" % (k + 1, rest))
        body = "\n".join(l for l in rest.splitlines() if not l.startswith("#"))
        p = os.path.join(tmp, "winograd%d.tc" % (k + 1))
        open(p, "w").write(body + "\n")
        label = re.search(r"Winograd (F\([^)]*\)( along the width)?)", what)
        # The applications are at the sizes: no size to bind.
        programs.append((label.group(1) if label else what, p, []))

    print("%s, %s; reference: float64 interpreter, largest |O| = %.3f" % (
        name, " ".join("%s=%d" % kv for kv in sizes.items()), peak))
    print("| program (float32, compiled) | max abs error | max abs error / max abs O |")
    print("|---|---|---|")
    for k, (label, p, binds) in enumerate(programs):
        out = os.path.join(tmp, "out%d" % k)
        tessera(["run", p, "--def", name, "--out", out] + binds + in32, args.tessera)
        got = read_npy(os.path.join(out, "O.npy"))
        err = max(abs(a - b) for a, b in zip(got, ref))
        print("| %s | %.3e | %.3e |" % (label, err, err / peak))


if __name__ == "__main__":
    main()
