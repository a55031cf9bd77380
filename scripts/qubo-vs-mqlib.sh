#!/usr/bin/env bash
# Compares the QUBO use case with MQLib's PALUBECKIS2004bMST2 on large Beasley-style QUBOs.
#
#   scripts/qubo-vs-mqlib.sh MQLIB_BINARY DIR [SECONDS] [SEEDS]
#
# DIR receives the instances (written by scripts/qubo-instance.py unless present): 2,500
# variables at density 0.1, 5,000 at 0.01 and 5,000 at 0.1, instance seeds 1-3, each as a
# qbsolv file (NAME.qubo) and in MQLib's format (NAME.mq). MQLib runs each instance with
# seeds 1..SEEDS (3) for SECONDS (10) each, two runs at a time; DIR/mqlib.csv gets each
# instance's median objective, and DIR/mqlib-runs.txt every run's. Then the QUBO bench runs
# the use case in the sandbox, as the server does, with the same seeds, time and parallelism,
# and MQLib's medians as its "best-known" values: an instance whose median "reaches the
# best-known value" is one where the use case's median is at or above MQLib's.
#
# MQLib: fetch MQLib/MQLib and run `make` (bin/MQLib). Run from the repository's root.
set -euo pipefail

mqlib=${1:?usage: qubo-vs-mqlib.sh MQLIB_BINARY DIR [SECONDS] [SEEDS]}
dir=${2:?usage: qubo-vs-mqlib.sh MQLIB_BINARY DIR [SECONDS] [SEEDS]}
seconds=${3:-10}
seeds=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
# The bench reads relative paths from the repository's root; this script, from where it runs.
dir=$(cd "$dir" && pwd)
export mqlib dir seconds

names=()
for kind in "2500 0.1" "5000 0.01" "5000 0.1"; do
    read -r variables density <<<"$kind"
    for seed in 1 2 3; do
        name="b${variables}_${density}_${seed}"
        names+=("$name")
        [ -s "$dir/$name.qubo" ] || python3 "$here/qubo-instance.py" "$variables" "$density" "$seed" >"$dir/$name.qubo"
        [ -s "$dir/$name.mq" ] || python3 "$here/qubo-instance.py" "$variables" "$density" "$seed" --mqlib >"$dir/$name.mq"
    done
done

# One line per run: NAME SEED OBJECTIVE. MQLib prints runtime_limit,heuristic,"file",objective,...
# on success; a run that prints no such line, or fails, fails the comparison.
for name in "${names[@]}"; do
    for seed in $(seq 1 "$seeds"); do
        echo "$name $seed"
    done
done | xargs -P 2 -n 2 bash -c '
    set -o pipefail
    objective=$("$mqlib" -h PALUBECKIS2004bMST2 -fQ "$dir/$0.mq" -r "$seconds" -s "$1" | cut -s -d, -f4)
    [ -n "$objective" ] || { echo "MQLib printed no objective for $0, seed $1" >&2; exit 255; }
    echo "$0 $1 $objective"
' | sort >"$dir/mqlib-runs.txt"

python3 - "$dir" "$seeds" <<'EOF'
import statistics, sys
from collections import defaultdict
dir, seeds = sys.argv[1], int(sys.argv[2])
runs = defaultdict(list)
for line in open(f"{dir}/mqlib-runs.txt"):
    name, seed, objective = line.split()
    runs[name].append(float(objective))
for name, objectives in runs.items():
    if len(objectives) != seeds:
        sys.exit(f"{name}: {len(objectives)} MQLib runs of {seeds}")
print(f"{'instance':<14} PALUBECKIS2004bMST2 objectives, median")
with open(f"{dir}/mqlib.csv", "w") as csv:
    csv.write("instance,best_known\n")
    for name in sorted(runs):
        median = statistics.median(runs[name])
        csv.write(f"{name},{median:.0f}\n")
        print(f"{name:<14} {' '.join(f'{o:.0f}' for o in runs[name])}, {median:.0f}")
print()
EOF

files=()
for name in "${names[@]}"; do files+=("$dir/$name.qubo"); done
cargo bench -p caseload-host --bench qubo -- --best-known "$dir/mqlib.csv" \
    --seconds "$seconds" --seeds "$seeds" --parallel 2 "${files[@]}"
