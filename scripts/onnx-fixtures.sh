#!/usr/bin/env bash
# Regenerates the ONNX test fixtures (tests/onnx/fixtures/): small models
# built with the `onnx` package, run by ONNX Runtime on seeded random
# inputs, written with their inputs and reference outputs as .npy. The
# fixtures are committed, so `cargo test` needs no Python; run this only to
# add or change fixtures. Installs tests/onnx/requirements.txt into a
# private virtual environment under target/.
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(scripts/python-venv.sh target/onnx-venv tests/onnx/requirements.txt)
"$python" tests/onnx/make_hostile.py
exec "$python" tests/onnx/make_fixtures.py "$@"
