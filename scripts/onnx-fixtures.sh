#!/usr/bin/env bash
# Regenerates the ONNX test fixtures (tests/onnx/fixtures/): small models
# built with the `onnx` package, run by ONNX Runtime on seeded random
# inputs, written with their inputs and reference outputs as .npy. The
# fixtures are committed, so `cargo test` needs no Python; run this only to
# add or change fixtures. Installs tests/onnx/requirements.txt into a
# private virtual environment under target/.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/onnx-venv
requirements=tests/onnx/requirements.txt
stamp=$venv/.requirements-installed
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ "$requirements" -nt "$stamp" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  touch "$stamp"
fi
exec "$venv/bin/python" tests/onnx/make_fixtures.py "$@"
