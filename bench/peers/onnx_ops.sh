#!/usr/bin/env bash
# Single-operator ONNX workloads (bench/peers/onnx_ops.py): tessera's import
# of each model beside ONNX Runtime with the weights as initializers, PyTorch
# eager and torch.compile with freezing, in one run. Uses the PyTorch
# environment of models.sh (target/torch-venv, made on first use). Arguments
# go to onnx_ops.py (--runs N, --rounds N, --only NAME, --no-compile).
set -euo pipefail
cd "$(dirname "$0")/../.."
python=$(scripts/python-venv.sh target/torch-venv tests/onnx/requirements-torch.txt)
cargo build --release --quiet -p tessera
exec "$python" bench/peers/onnx_ops.py "$@"
