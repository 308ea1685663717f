#!/usr/bin/env bash
# Builds the Python package (crates/py) and installs it into the project's
# virtual environment, .venv/ (made on first use with
# crates/py/requirements-dev.txt: maturin, numpy, ml_dtypes, pytest and ONNX Runtime
# for the tests). Prints the environment's python.
#
# `--release` builds the abi3 wheel with maturin (release profile, into
# target/wheels/) and installs it, as the set-up command does. Without it,
# the tests' package: the extension module from the dev build that
# `cargo test --workspace` made, laid out as the wheel lays it out in
# target/python-dev/ and put on the environment's path. Maturin builds the
# one crate on its own (`cargo rustc -p tessera-py`), with other features
# in the dependency tree than the workspace's tests, so the dev wheel
# rebuilt the whole tree a second time: seven minutes of the test command.
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(scripts/python-venv.sh .venv crates/py/requirements-dev.txt)
site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
dev=target/python-dev
if [ "${1:-}" = "--release" ]; then
  rm -f "$site/tessera-dev.pth"
  rm -rf target/wheels
  .venv/bin/maturin build --quiet -m crates/py/Cargo.toml --release \
    --compatibility linux --out target/wheels >&2
  .venv/bin/pip install --quiet --disable-pip-version-check --force-reinstall --no-deps \
    target/wheels/tessera-*.whl >&2
else
  # `--all-targets` resolves features as `cargo test --workspace` does, so
  # only the extension module itself is linked here.
  cargo build --quiet --workspace --all-targets >&2
  .venv/bin/pip uninstall --quiet --disable-pip-version-check --yes tessera >/dev/null 2>&1 || true
  rm -rf "$dev"
  mkdir -p "$dev/tessera"
  cp target/debug/libtessera_py.so "$dev/tessera/tessera.abi3.so"
  cp crates/py/tessera.pyi "$dev/tessera/__init__.pyi"
  touch "$dev/tessera/py.typed"
  cat >"$dev/tessera/__init__.py" <<'EOF'
from .tessera import *

__doc__ = tessera.__doc__
if hasattr(tessera, "__all__"):
    __all__ = tessera.__all__
EOF
  echo "$PWD/$dev" >"$site/tessera-dev.pth"
fi
echo "$python"
