#!/usr/bin/env bash
# Times `tessera verify` on ResNet-sized operator pairs: the median of
# RUNS runs (default 5) of the whole command (parsing, box propagation, the
# exact test with its default trials), in milliseconds.
#
#   bench/verify/run.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
cargo build --release -q -p tessera
bin=target/release/tessera
pairs=(
  "conv3x3 [1,512,7,7]x[512,512,3,3] -> batched matmul + OffsetAdd (OLLIE Fig. 3b/6)|tests/files/verify/ollie_conv3x3_bmm_offsetadd.tc --def conv --def-b bmm_offsetadd --size N=1 --size C=512 --size K=512 --size H=7 --size W=7"
  "conv3x3 of two [1,256,14,14] images -> one concatenated image (PET Fig. 1)|tests/files/verify/pet_fig1_concat.tc --def orig --def-b concat --size N=1 --size C=256 --size K=256 --size H=14 --size W=14"
  "dilated conv3x3 [1,256,14,14] -> reorganized regular conv (PET Fig. 3)|tests/files/verify/pet_fig3_dilated.tc --def dilated --def-b reorganized --size N=1 --size C=256 --size K=256 --size H=14 --size W=14"
)
for p in "${pairs[@]}"; do
  name=${p%%|*}
  args=${p#*|}
  times=()
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    # shellcheck disable=SC2086
    $bin verify $args > /tmp/tessera-verify-bench.out || [ $? -eq 3 ]
    end=$(date +%s%N)
    times+=($(( (end - start) / 1000000 )))
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
  echo "$name: median ${median} ms over $runs runs ($(head -1 /tmp/tessera-verify-bench.out))"
done
