#!/usr/bin/env bash
# Cross-checks `tessera run` against numpy (tests/numpy/check.py). Installs
# numpy into a private virtual environment under target/ on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/numpy-venv
# A venv whose install was cut short (a full disk) lacks numpy: install
# until it imports.
if ! "$venv/bin/python" -c "import numpy" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check numpy
fi
# The same build `cargo test --workspace` made (features unified with the
# tests' dependencies), so CI does not build the dependency tree twice.
cargo test --quiet --workspace --no-run
"$venv/bin/python" tests/numpy/check.py target/debug/tessera
