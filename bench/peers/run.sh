#!/usr/bin/env bash
# Side-by-side benchmark of tessera against ONNX Runtime and numpy
# (bench/peers/peers.py). Installs bench/peers/requirements.txt into a private
# virtual environment under target/ on first use (and again when the
# requirements change), builds tessera in release, then runs the benchmark.
# Arguments are passed to peers.py: --runs N, --only NAME, --json OUT, ...
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/peers-venv
requirements=bench/peers/requirements.txt
stamp=$venv/.requirements-installed
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ "$requirements" -nt "$stamp" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  touch "$stamp"
fi
if ! cargo build --release --quiet; then
  if [ -x target/release/tessera ]; then
    echo "warning: cargo build --release failed; benchmarking the existing target/release/tessera" >&2
  else
    echo "warning: cargo build --release failed; the tessera column will be n/a" >&2
  fi
fi
exec "$venv/bin/python" bench/peers/peers.py "$@"
