#!/usr/bin/env bash
# Makes (once, and again when the requirements change) a private Python
# virtual environment with a requirements file installed, and prints its
# python's path: `python=$(scripts/python-venv.sh target/NAME-venv REQS)`.
set -euo pipefail
venv=$1
requirements=$2
stamp=$venv/.requirements-installed
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" >&2
fi
if [ ! -f "$stamp" ] || [ "$requirements" -nt "$stamp" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
  touch "$stamp"
fi
echo "$venv/bin/python"
