#!/usr/bin/env bash
# Side-by-side benchmark of tessera against ONNX Runtime, numpy, PyTorch
# eager and torch.compile (bench/peers/peers.py). Uses the PyTorch
# environment of models.sh (target/torch-venv, made on first use), builds
# tessera in release, then runs the benchmark. Arguments are passed to
# peers.py: --runs N, --only NAME, --json OUT, --no-compile, ...
set -euo pipefail
cd "$(dirname "$0")/../.."
python=$(scripts/python-venv.sh target/torch-venv tests/onnx/requirements-torch.txt)
if ! cargo build --release --quiet; then
  if [ -x target/release/tessera ]; then
    echo "warning: cargo build --release failed; benchmarking the existing target/release/tessera" >&2
  else
    echo "warning: cargo build --release failed; the tessera column will be n/a" >&2
  fi
fi
exec "$python" bench/peers/peers.py "$@"
