#!/usr/bin/env bash
# The imperative workloads (issue 20, tests/imperative/) at bench size on
# tessera, PyTorch eager and torch.compile (Inductor, CPU), in one script:
# latency (medians of rounds) and kernels per run (tessera's compiled steps;
# Inductor's generated kernels). Uses the PyTorch environment of
# bench/peers/models.sh (target/torch-venv, made on first use from
# tests/onnx/requirements-torch.txt: about 3 GB), builds tessera in release,
# sets RAYON_NUM_THREADS=2 and torch's threads to 2, then runs bench.py with
# the arguments given: --rounds N, --runs N, --only NAME (repeatable),
# --json PATH, --tessera PATH.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=$(scripts/python-venv.sh target/torch-venv tests/onnx/requirements-torch.txt)
if ! cargo build --release --quiet -p tessera; then
  if [ -x target/release/tessera ]; then
    echo "warning: cargo build --release failed; benchmarking the existing target/release/tessera" >&2
  else
    echo "warning: cargo build --release failed; the tessera commands will fail" >&2
  fi
fi
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-2}
exec "$python" bench/imperative/bench.py "$@"
