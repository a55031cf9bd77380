#!/usr/bin/env bash
# The plugin author's loop, timed: save → `caseload plugin watch` rebuilds (cargo,
# componentize-py, componentize-js or clang), checks and publishes → the server serves the new
# version.
#
#   scripts/bench-plugin-loop.sh [--lang rust|python|js|c|cpp] [--separate-cache] [SAVES]
#
# Starts a server on a scratch data directory, writes a project with `caseload plugin new
# --lang LANG` (default python), runs `plugin watch` on it into the server's plugins directory,
# and after the first publication changes the version in the source (Cargo.toml, app.py,
# app.js, src/plugin.c or src/plugin.cpp) SAVES times (default 3), each time waiting until the
# server has loaded the new version. Prints, per save, the watch's build and check
# times, the time from the save to the server's "plugin loaded" line, and where the server got
# the code (compile-cache: the check's compile was reused; compiled: compiled again).
# --separate-cache gives the watch a compile cache of its own, as before the check shared the
# server's, for comparison.
#
# Needs the language's tools (cargo with wasm32-wasip2; componentize-py or componentize-js,
# on the path or as CASELOAD_COMPONENTIZE_PY / _JS; clang for wasm32-wasi); uses $CASELOAD_BIN
# (default target/release/caseload) and port $PORT (default 18095).
set -euo pipefail
cd "$(dirname "$0")/.."

separate_cache=no
lang=python
while [ $# -gt 0 ]; do
    case $1 in
    --separate-cache) separate_cache=yes; shift ;;
    --lang) lang=$2; shift 2 ;;
    *) break ;;
    esac
done
case $lang in
rust) source_file=Cargo.toml ;;
python) source_file=app.py ;;
js) source_file=app.js ;;
c) source_file=src/plugin.c ;;
cpp) source_file=src/plugin.cpp ;;
*) echo "unknown language $lang: rust, python, js, c or cpp" >&2; exit 2 ;;
esac
name=loop-$lang
saves=${1:-3}
bin=$(realpath "${CASELOAD_BIN:-target/release/caseload}")
port=${PORT:-18095}
scratch=$(mktemp -d)
server_pid=
watch_pid=
cleanup() {
    [ -n "$watch_pid" ] && kill "$watch_pid" 2>/dev/null
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$scratch"
}
trap cleanup EXIT

now() { date +%s.%N; }
# Waits up to 10 minutes for a line matching the pattern in the file; prints the line.
wait_for() {
    local file=$1 pattern=$2 deadline=$(($(date +%s) + 600))
    until grep -m1 -E "$pattern" "$file" 2>/dev/null; do
        if [ "$(date +%s)" -gt "$deadline" ]; then
            echo "timed out waiting for /$pattern/ in $file; its end:" >&2
            tail -5 "$file" >&2
            exit 1
        fi
        sleep 0.05
    done
}

data="$scratch/data"
mkdir -p "$data"
CASELOAD_ADMIN_PASSWORD=bench-loop-password RUST_LOG=info \
    "$bin" --data-dir "$data" --listen "127.0.0.1:$port" >"$scratch/server.log" 2>&1 &
server_pid=$!
wait_for "$scratch/server.log" "accepting connections" >/dev/null

(cd "$scratch" && "$bin" plugin new "$name" --lang "$lang" >/dev/null)
watch_args=(--data-dir "$data")
if [ "$separate_cache" = yes ]; then
    watch_args+=(--compile-cache-dir "$scratch/watch-cache")
fi
"$bin" plugin watch "$scratch/$name" "${watch_args[@]}" >"$scratch/watch.log" 2>&1 &
watch_pid=$!
wait_for "$scratch/server.log" "plugin loaded.*name=$name version=0\.1\.0" >/dev/null
echo "first publication served: $(grep -c . "$scratch/watch.log") lines of watch output"

source="$scratch/$name/$source_file"
previous=0.1.0
totals=()
for save in $(seq 1 "$saves"); do
    version="0.1.$save"
    sed -i -E "s/([\"'])$previous([\"'])/\\1$version\\2/" "$source"
    saved=$(now)
    loaded=$(wait_for "$scratch/server.log" "plugin loaded.*name=$name version=${version//./\\.}")
    served=$(now)
    built=$(grep -E "built .* in " "$scratch/watch.log" | tail -1 | sed -E 's/.* in ([0-9.]+ s)$/\1/')
    checked=$(grep -E "checked in " "$scratch/watch.log" | tail -1 | sed -E 's/.*checked in ([0-9.]+ s)$/\1/')
    code=$(sed -E 's/.*code=([a-z-]+).*/\1/' <<<"$loaded")
    total=$(echo "$served - $saved" | bc)
    totals+=("$total")
    printf 'save %d (%s): build %s, check %s, save → served %.2f s, server code: %s\n' \
        "$save" "$version" "$built" "$checked" "$total" "$code"
    previous=$version
done
median=$(printf '%s\n' "${totals[@]}" | sort -n | awk '{ value[NR] = $1 } END { print value[int((NR + 1) / 2)] }')
printf '%s: median save → served: %.2f s over %d saves (compile cache %s)\n' "$lang" "$median" "$saves" \
    "$([ "$separate_cache" = yes ] && echo "separate: the server compiles again" || echo "shared with the server")"
