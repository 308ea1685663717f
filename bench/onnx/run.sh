#!/usr/bin/env bash
# Whole ONNX models, tessera beside ONNX Runtime (bench/onnx/models.py):
# builds the models (random weights) under target/bench-onnx/, checks that
# tessera's outputs equal Runtime's, and times both. Arguments go to
# models.py (--runs N, --only NAME).
set -euo pipefail
cd "$(dirname "$0")/../.."
python=$(scripts/python-venv.sh target/onnx-venv tests/onnx/requirements.txt)
cargo build --release --quiet -p tessera
exec "$python" bench/onnx/models.py "$@"
