#!/usr/bin/env bash
# The autotuner against the untuned default on the TC workloads (issue 21):
# builds tessera in release, then runs bench/tune/bench.py with the
# arguments given (--budget S, --rounds R, --runs N, --only NAME, --json
# PATH). Needs only Python 3; sets RAYON_NUM_THREADS=2.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --quiet -p tessera
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-2}
exec python3 bench/tune/bench.py "$@"
