#!/usr/bin/env bash
# The container image, measured: its size, and the time from `docker run` to `/readyz`
# answering 200 (a first start on an empty /data, SQLite: migrations, the first
# administrator, the built-in use cases compiled), RUNS times, on the host's network.
#
#   scripts/bench-image.sh [IMAGE] [RUNS]     # IMAGE defaults to caseload:ci, RUNS to 5
#
# Needs the image (deploy/build-image, or .ci/deploy for caseload:ci), a Docker engine and
# curl; uses port $PORT (default 18096).
set -euo pipefail
image=${1:-caseload:ci}
runs=${2:-5}
port=${PORT:-18096}

size=$(docker image inspect "$image" --format '{{.Size}}')
echo "image $image: $size bytes ($((size / 1000000)) MB)"

times=()
for run in $(seq "$runs"); do
    name="caseload-bench-$$-$run"
    started=$(date +%s%N)
    docker run -d --rm --name "$name" --network host --tmpfs /data:uid=65532,gid=65532 \
        -e CASELOAD_LISTEN="127.0.0.1:$port" "$image" >/dev/null
    until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do
        if (( ($(date +%s%N) - started) / 1000000 > 60000 )); then
            docker logs "$name" >&2 || true
            docker rm -f "$name" >/dev/null
            echo "not ready within 60 s" >&2
            exit 1
        fi
        sleep 0.01
    done
    elapsed=$(( ($(date +%s%N) - started) / 1000000 ))
    times+=("$elapsed")
    stopped=$(date +%s%N)
    docker stop -t 40 "$name" >/dev/null
    echo "run $run: ready after $elapsed ms; stopped in $(( ($(date +%s%N) - stopped) / 1000000 )) ms"
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
median=$(sed -n "$(( (runs + 1) / 2 ))p" <<<"$sorted")
echo "start to ready: median $median ms over $runs runs (min $(head -1 <<<"$sorted"), max $(tail -1 <<<"$sorted"))"
