#!/usr/bin/env bash
# `tessera optimize` on nine models (ResNet-18, CSRNet's back end, the
# InfoGAN and DCGAN generators, FSRCNN, a GCN block, a BERT layer,
# Longformer attention, Inception-v3): search time, steps applied,
# correctness against ONNX Runtime, and optimized against unoptimized and
# the peers (bench/optimize/optimize.py). Installs
# tests/onnx/requirements-torch.txt (PyTorch: about 3 GB) into
# target/torch-venv on first use, as bench/peers/models.sh does. Arguments
# go to optimize.py (--only NAME, --rounds N, --runs N, --budget S,
# --no-compile, --reexport).
set -euo pipefail
cd "$(dirname "$0")/../.."
python=$(scripts/python-venv.sh target/torch-venv tests/onnx/requirements-torch.txt)
cargo build --release --quiet -p tessera
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-2}
exec "$python" bench/optimize/optimize.py "$@"
