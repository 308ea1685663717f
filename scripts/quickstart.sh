#!/usr/bin/env bash
# Builds tessera and runs it on the shipped example: check (symbolic, then
# with sizes), then run on the example's .npy inputs, writing the output to
# out/quickstart/P.npy.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null; then
  echo "error: cargo is not installed; install Rust (https://rustup.rs), then run this again" >&2
  exit 1
fi
cargo build --release -p tessera
tessera=target/release/tessera
ex=examples/quickstart
set -x
"$tessera" check "$ex/layer.tc"
"$tessera" check "$ex/layer.tc" --size N=1 --size C=3 --size H=8 --size W=8 --size F=4 --size KH=3 --size KW=3
"$tessera" run "$ex/layer.tc" --def layer \
  --input I="$ex/I.npy" --input Wt="$ex/Wt.npy" --input B="$ex/B.npy"
"$tessera" run "$ex/layer.tc" --def layer \
  --input I="$ex/I.npy" --input Wt="$ex/Wt.npy" --input B="$ex/B.npy" --out out/quickstart
set +x
# The Python package, built and installed into .venv, on the same example.
python=$(scripts/python-package.sh --release)
set -x
"$python" examples/python/quickstart.py
