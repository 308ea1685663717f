#!/usr/bin/env bash
# Compile time of `tessera run`, cold and warm, beside ONNX Runtime's
# session creation (bench/compile/compile_times.py). Uses the torch
# environment of the model benchmarks; arguments go to the script:
# --rounds N, --chain N, --only NAME.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=$(scripts/python-venv.sh target/torch-venv tests/onnx/requirements-torch.txt)
cargo build --release --quiet -p tessera
exec "$python" bench/compile/compile_times.py "$@"
