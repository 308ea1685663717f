#!/usr/bin/env bash
# The README's test command: the Rust tests of every crate, then the
# Python package's pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
./scripts/python-test.sh
