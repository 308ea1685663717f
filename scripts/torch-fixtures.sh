#!/usr/bin/env bash
# Regenerates the PyTorch-exported ONNX fixtures (tests/onnx/fixtures/torch_*,
# from tests/onnx/torch_models.py at small sizes) with ONNX Runtime's
# outputs. Committed, so `cargo test` needs no Python; run this only to
# change them. Installs tests/onnx/requirements-torch.txt (PyTorch: about
# 3 GB) into a private virtual environment under target/. Arguments name
# the fixtures to write (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(scripts/python-venv.sh target/torch-venv tests/onnx/requirements-torch.txt)
exec "$python" tests/onnx/make_torch_fixtures.py "$@"
