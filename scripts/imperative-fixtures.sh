#!/usr/bin/env bash
# Regenerates the imperative workloads' fixtures (tests/imperative/fixtures/:
# the workloads of tests/imperative/workloads/ at the "test" size of
# tests/imperative/cases.py, run by PyTorch eager, with their inputs and
# reference outputs as .npy; each also checked under torch.compile).
# Committed, so `cargo test` needs no Python; run this only to change them.
# Installs tests/onnx/requirements-torch.txt (PyTorch: about 3 GB) into a
# private virtual environment under target/ (the one scripts/torch-fixtures.sh
# uses). Arguments name the fixtures to write (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(scripts/python-venv.sh target/torch-venv tests/onnx/requirements-torch.txt)
exec "$python" tests/imperative/make_fixtures.py "$@"
