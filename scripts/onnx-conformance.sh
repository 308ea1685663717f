#!/usr/bin/env bash
# The ONNX project's conformance cases through tessera (issue 22): makes
# the node test cases from the pinned `onnx` package and copies the
# `pytorch-converted` and `pytorch-operator` backend tests of its wheel
# into target/onnx-conformance/ (nothing downloaded is committed), then
# runs every tensor-typed case compiled and in the interpreter and
# classifies it (tests/onnx/conformance.py: pass, unsupported, failure).
# Exits 1 on any failure. Arguments go to `conformance.py run` (`--only
# NAME`, `--json FILE`, `--unsupported`).
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(scripts/python-venv.sh target/onnx-venv tests/onnx/requirements.txt)
cargo build -q -p tessera
out=target/onnx-conformance
"$python" tests/onnx/conformance.py generate "$out"
exec "$python" tests/onnx/conformance.py run "$out" --tessera target/debug/tessera "$@"
