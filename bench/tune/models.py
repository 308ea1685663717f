"""Writes the ONNX convolution models of the single-operator performance
table (`bench/peers/onnx_ops.py`'s conv3x3, conv5x5b, gconv and
convtranspose: one Conv or ConvTranspose with its weights and bias as
initializers) into the directory given, for bench.py to tune. Needs the
`onnx` package (run.sh uses the PyTorch environment of bench/peers)."""
import os
import sys

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "peers"))
from onnx_ops import WORKLOADS  # noqa: E402

CONVS = ["conv3x3", "conv5x5b", "gconv", "convtranspose"]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for make in WORKLOADS:
        name, model, _ = make()
        if name in CONVS:
            onnx.save(model, os.path.join(out, f"{name}.onnx"))


if __name__ == "__main__":
    main()
