"""tessera from Python: the quickstart layer compiled as a function, and an
ONNX model run as an inference session, on the example's arrays."""

import pathlib

import numpy as np

import tessera

root = pathlib.Path(__file__).resolve().parents[2]
ex = root / "examples" / "quickstart"

layer = tessera.compile(ex / "layer.tc", entry="layer")
inputs = [np.load(ex / f"{name}.npy") for name in ("I", "Wt", "B")]
p = layer(*inputs)
print(f"layer: P {p.dtype}{list(p.shape)}, first row {np.round(p[0, 0, 0], 4).tolist()}")

model = root / "tests" / "onnx" / "fixtures" / "resnet_basic_block" / "model.onnx"
session = tessera.InferenceSession(model)
x = session.get_inputs()[0]
print(f"model: input {x.name} {x.type} {x.shape}, outputs {[o.name for o in session.get_outputs()]}")
(y,) = session.run(None, {x.name: np.load(model.parent / "inputs" / "x.npy")})
print(f"model: output {y.dtype}{list(y.shape)}, sum {y.sum():.4f}")
