#!/usr/bin/env bash
# The exact K=2 walks (Chaos may play two border cells while the centre is open) of Order
# networks on a machine with a GPU: the networks' batches on the device, the rules on the
# CPU cores, the near-ties asked alone on the CPU (so the walk is the CPU walk; see
# `orderchaos exploit --device`).
#
#   bench/gpu_k2_walks.sh OUT [SPEC ...]        (default SPECs: pretrained repaired)
#
# For each SPEC: first the rates on this machine and the expected hours of a walk of 0.85
# and 1.45 billion positions (python -m orderchaos.bench.exploit_rates, ~1 minute), then the
# walk in OUT/SPEC-k2 (resumable: the same command again goes on from its last chunk), its
# figures in OUT/SPEC-k2.json and its first 1,000 refutation lines in OUT/SPEC-k2.jsonl
# (for `orderchaos replay`). WORKERS (default: cores - 1) processes expand the levels, each
# asking the device; DEVICE (default cuda). A SPEC may be a policy folder (a repair's
# policy). Disk: 10-15 GB of work folder per walk at the largest level. START (a board)
# walks from there instead of the empty board and COUNT sets the positions the rates are
# measured on (default 20,000): the tests run the script small, on the CPU.
set -euo pipefail

out=${1:?usage: bench/gpu_k2_walks.sh OUT [SPEC ...]}
shift
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(pretrained repaired)
workers=${WORKERS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
device=${DEVICE:-cuda}
python=${PYTHON:-python}
count=${COUNT:-20000}
start=()
[ -z "${START:-}" ] || start=(--start "$START")
mkdir -p "$out"

for spec in "${specs[@]}"; do
    name=$(basename "$spec")
    echo "== $spec: rates on $device with $workers workers" >&2
    "$python" -m orderchaos.bench.exploit_rates --agent "$spec" --device "$device" --workers "$workers" \
        --border-moves 2 --count "$count" --json | tee "$out/$name-k2-rates.json" >&2
    echo "== $spec: the K=2 walk in $out/$name-k2 (started $(date -u +%FT%TZ))" >&2
    "$python" -m orderchaos exploit --agent "$spec" "${start[@]}" --border-moves 2 --device "$device" --workers "$workers" \
        --work-dir "$out/$name-k2" --lines 1000 --save "$out/$name-k2.jsonl" --json > "$out/$name-k2.json"
    echo "== $spec: done $(date -u +%FT%TZ): $(head -c 300 "$out/$name-k2.json")" >&2
done
