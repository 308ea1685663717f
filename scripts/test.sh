#!/usr/bin/env bash
# The README's test command: the Rust tests of every crate (what `cargo
# test --workspace` runs, two test binaries at a time: scripts/run-tests.py),
# then the Python package's pytest suite, then the ONNX project's
# conformance cases (scripts/onnx-conformance.sh: fails on any wrong
# output, panic or hang; a refusal with a clear error is counted apart).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/run-tests.py
./scripts/python-test.sh
./scripts/onnx-conformance.sh
