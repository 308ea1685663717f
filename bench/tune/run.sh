#!/usr/bin/env bash
# The autotuner against the untuned default on the TC workloads and the
# ONNX conv rows of the performance table (issue 21): builds tessera in
# release, writes the ONNX models, then runs bench/tune/bench.py with the
# arguments given (--budget S, --rounds R, --runs N, --only NAME, --json
# PATH). Sets RAYON_NUM_THREADS=2.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --quiet -p tessera
# The ONNX conv models of the performance table, written with the `onnx`
# package of bench/peers' PyTorch environment (made on first use).
python=$(scripts/python-venv.sh target/torch-venv tests/onnx/requirements-torch.txt)
"$python" bench/tune/models.py target/bench-tune-models
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-2}
exec python3 bench/tune/bench.py "$@"
