"""A 12-layer BERT-base-like encoder exported from PyTorch, run by tessera
beside ONNX Runtime (issue 15, item 10).

Builds `nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model=768,
nhead=12, dim_feedforward=3072, batch_first=True), num_layers=12)` in eval
mode (random weights, torch's seed 0), exports it at batch 1 and sequence
128 with torch.onnx.export, and writes, beside each other:

    PREFIX.onnx          the model (weights inside; about 340 MB at full size)
    PREFIX.src.npy       the input
    PREFIX.ort.npy       ONNX Runtime's output (CPU, 2 threads)

The exporter is the TorchScript one (`dynamo=False`, opset 17) unless
`--dynamo` is given (torch's default since 2.9, opset 18). With `--run`,
`tessera run` (compiled, target/release/tessera) runs the model on the
input, and the script prints tessera's largest absolute difference from
Runtime's output and the wall time of the whole command (import, compile,
run), then exits with status 1 if the difference exceeds `--tolerance`.

    /work/torch-venv/bin/python bench/models/bert.py --out /work/models/bert12 --run
    python bench/models/bert.py --layers 1 --d-model 64 --heads 4 --ff 128 --out /tmp/bert1 --run

Model files are large: write them outside the repository (the default is
target/bench-models/, which git ignores).
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
import torch_models as tm  # noqa: E402

TESSERA = os.path.join(ROOT, "target", "release", "tessera")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--ff", type=int, default=3072, help="dim_feedforward")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dynamo", action="store_true", help="export with the dynamo exporter")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "bench-models", "bert12"),
                    help="path prefix of the files written")
    ap.add_argument("--run", action="store_true", help="run tessera and compare")
    ap.add_argument("--tolerance", type=float, default=1e-3,
                    help="largest absolute difference from Runtime accepted with --run")
    args = ap.parse_args()

    torch.manual_seed(0)
    model, inputs = tm.build_transformer_encoder(args.batch, args.seq, args.d_model, args.heads, args.ff,
                                                 args.layers)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    path = f"{args.out}.onnx"
    src = f"{args.out}.src.npy"
    ref = f"{args.out}.ort.npy"
    if args.dynamo:
        tm.export(model, inputs, path)
    else:
        # The TorchScript exporter with every dimension fixed.
        tm.export(model, inputs, path, legacy_dynamic_axes={})
    np.save(src, inputs["src"].numpy())
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    want = session.run(None, {"src": inputs["src"].numpy()})[0]
    np.save(ref, want)
    print(f"wrote {path} ({os.path.getsize(path) / 1e6:.0f} MB), {src}, {ref}", flush=True)
    if not args.run:
        return 0
    outdir = f"{args.out}.tessera"
    cmd = [TESSERA, "run", path, "--input", f"src={src}", "--out", outdir]
    print(" ".join(cmd), flush=True)
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    seconds = time.perf_counter() - t
    got = np.load(os.path.join(outdir, f"{session.get_outputs()[0].name}.npy"))
    err = float(np.abs(got - want).max())
    print(f"tessera: {seconds:.1f} s, largest absolute difference from ONNX Runtime {err:.2e} "
          f"(output magnitude up to {np.abs(want).max():.2f})")
    return 0 if err <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
