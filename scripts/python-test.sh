#!/usr/bin/env bash
# The Python package's tests: builds and installs the package into .venv
# (scripts/python-package.sh), then runs its pytest suite, crates/py/tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(scripts/python-package.sh "$@")
exec "$python" -m pytest -q crates/py/tests
