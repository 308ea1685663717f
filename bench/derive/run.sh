#!/usr/bin/env bash
# Kernel workloads of expression derivation (issue 19): the plain TC def
# (tessera unoptimized), the program `tessera derive` finds (n/a until the
# command exists) and its search time, beside ONNX Runtime, PyTorch eager
# and torch.compile (bench/derive/peers.py). Uses the PyTorch environment of
# bench/peers/models.sh (target/torch-venv, made on first use from
# tests/onnx/requirements-torch.txt: about 3 GB), builds tessera in release,
# sets RAYON_NUM_THREADS=2 unless it is set, then runs peers.py with the
# arguments given: --rounds N, --runs N, --only NAME (repeatable),
# --no-compile, --json PATH, --tessera PATH, --sweep-g2bmm.
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
exec "$python" bench/derive/peers.py "$@"
