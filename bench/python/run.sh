#!/usr/bin/env bash
# tessera's Python package beside ONNX Runtime and torch.compile
# (bench/python/bench.py): per-call overhead on a tiny model, and
# ResNet-18 at batch 1 end to end. Builds the package (release) and
# installs it into the PyTorch environment bench/peers uses,
# target/torch-venv (PyTorch: about 3 GB, installed on first use).
# Arguments go to bench.py (--calls N, --runs N, --rounds N, --only NAME).
set -euo pipefail
cd "$(dirname "$0")/../.."
python=$(scripts/python-venv.sh target/torch-venv tests/onnx/requirements-torch.txt)
scripts/python-package.sh --release >/dev/null
"$python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps \
  target/wheels/tessera-*.whl
exec "$python" bench/python/bench.py "$@"
