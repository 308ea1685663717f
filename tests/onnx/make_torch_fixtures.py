"""Writes the PyTorch-exported fixtures (tests/onnx/fixtures/torch_*): the
models of torch_models.py at small sizes, exported with torch.onnx's
default exporter, their inputs, and ONNX Runtime's outputs as the
reference (checked against PyTorch's own within 1e-4 first). Run by
scripts/torch-fixtures.sh."""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch

sys.path.insert(0, os.path.dirname(__file__))
import torch_models as tm  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")

# Models exported by the TorchScript exporter, with these dimensions
# symbolic (the fixture's inputs give them their sizes); the others are
# exported by the default (dynamo) exporter.
DYNAMIC = {
    "torch_legacy_bert_dynamic": {"hidden_states": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}},
    "torch_legacy_infogan_dynamic": {"z": {0: "batch"}},
    "torch_legacy_transformer_encoder": {},
    "torch_legacy_transformer_encoder_masked_dynamic": {"src": {0: "batch", 1: "seq"},
                                                        "padding_mask": {0: "batch", 1: "seq"}},
}

CASES = {
    "torch_legacy_bert_dynamic": lambda: tm.build_bert_layer(2, 12, 32, 2, 64),
    "torch_legacy_infogan_dynamic": lambda: tm.build_infogan(3, hidden=64, channels=16),
    "torch_resnet18_narrow": lambda: tm.build_resnet18(1, 32, width=8),
    "torch_infogan_generator": lambda: tm.build_infogan(2, hidden=64, channels=16),
    "torch_csrnet_backend": lambda: tm.build_csrnet_backend(1, 12, scale=16),
    "torch_bert_layer": lambda: tm.build_bert_layer(1, 16, 32, 2, 64),
    "torch_bert_embeddings_layer": lambda: tm.build_bert_embedded(),
    "torch_longformer_attention": lambda: tm.build_longformer(1, 32, 32, 2, 8),
    "torch_resnet3d18_narrow": lambda: tm.build_resnet3d(1, 4, 16, 4),
    # bench/models/bert.py's 12-layer encoder, one small layer of it.
    "torch_legacy_transformer_encoder": lambda: tm.build_transformer_encoder(1, 16, 32, 4, 64, 1),
    "torch_legacy_transformer_encoder_masked_dynamic": lambda: tm.build_transformer_encoder(
        2, 12, 32, 4, 64, 2, activation="gelu", norm_first=True, padding_mask=True),
    "torch_transformer_encoder_masked": lambda: tm.build_transformer_encoder(
        1, 16, 32, 4, 64, 2, activation="gelu", norm_first=True, padding_mask=True),
}


def main():
    only = set(sys.argv[1:])
    for k, (name, build) in enumerate(CASES.items()):
        if only and name not in only:
            continue
        torch.manual_seed(k)
        model, inputs = build()
        folder = os.path.join(FIXTURES, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(os.path.join(folder, "inputs"))
        os.makedirs(os.path.join(folder, "outputs"))
        path = os.path.join(folder, "model.onnx")
        expected = tm.export(model, inputs, path, legacy_dynamic_axes=DYNAMIC.get(name))
        onnx.checker.check_model(onnx.load(path))
        feeds = {k: v.numpy() for k, v in inputs.items()}
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = session.run(None, feeds)
        err = np.abs(got[0] - expected).max() / np.abs(expected).max()
        assert err < 1e-4, f"{name}: Runtime differs from PyTorch by {err}"
        for k, v in feeds.items():
            np.save(os.path.join(folder, "inputs", f"{k}.npy"), v)
        for out, v in zip(session.get_outputs(), got):
            np.save(os.path.join(folder, "outputs", f"{out.name}.npy"), v)
        print(f"{name}: {os.path.getsize(path)} bytes, Runtime within {err:.1e} of PyTorch")


if __name__ == "__main__":
    main()
