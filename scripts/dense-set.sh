#!/usr/bin/env bash
# Writes ten dense graphs with signed weights, E1 ... E10, into DIR: 922 to 1,085 nodes,
# densities 0.30 to 0.46, weights -10 ... 10, by scripts/dense-graph.py with seeds 201-210.
# They are the max-cut benchmark's check that runs with different seeds agree and that 10 s
# beats 2 s on graphs of D3's kind; none of them is D1-D3.
#
#   scripts/dense-set.sh dense
#   cargo bench -p caseload-host --bench maxcut -- --seconds 10 --seeds 3 --parallel 2 --budget 0 dense/E{1..10}.txt
set -euo pipefail
dir=${1:?usage: dense-set.sh DIR}
mkdir -p "$dir"
here=$(dirname "$0")
for i in $(seq 10); do
    nodes=$((900 + (i * 37) % 200))
    density=$(python3 -c "print(round(0.3 + (($i * 0.07) % 0.2), 2))")
    python3 "$here/dense-graph.py" "$nodes" "$density" $((200 + i)) >"$dir/E$i.txt"
done
