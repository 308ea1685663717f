#!/usr/bin/env bash
# Builds the Python package (crates/py) as an abi3 wheel with maturin and
# installs it into the project's virtual environment, .venv/ (made on
# first use with crates/py/requirements-dev.txt: maturin, numpy, pytest
# and ONNX Runtime for the tests). Prints the environment's python.
# `--release` builds with the release profile (as the set-up command
# does); without it, the dev profile that `cargo test` already built.
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(scripts/python-venv.sh .venv crates/py/requirements-dev.txt)
profile=()
if [ "${1:-}" = "--release" ]; then
  profile=(--release)
fi
rm -rf target/wheels
.venv/bin/maturin build --quiet -m crates/py/Cargo.toml "${profile[@]}" \
  --compatibility linux --out target/wheels >&2
.venv/bin/pip install --quiet --disable-pip-version-check --force-reinstall --no-deps \
  target/wheels/tessera-*.whl >&2
echo "$python"
