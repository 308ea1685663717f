#!/usr/bin/env bash
# Models exported from PyTorch (ResNet-18 at batch 1 and 16, an InfoGAN
# generator, CSRNet's back end, a BERT-base layer, Longformer attention),
# timed in one run against ONNX Runtime, PyTorch eager and torch.compile
# (bench/peers/models.py). Installs tests/onnx/requirements-torch.txt
# (PyTorch: about 3 GB) into a private virtual environment under target/ on
# first use. Arguments go to models.py (--runs N, --rounds N, --only NAME,
# --no-compile).
set -euo pipefail
cd "$(dirname "$0")/../.."
python=$(scripts/python-venv.sh target/torch-venv tests/onnx/requirements-torch.txt)
cargo build --release --quiet -p tessera
exec "$python" bench/peers/models.py "$@"
