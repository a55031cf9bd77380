#!/usr/bin/env bash
# Measures datasets end to end on the release binary (build it first: cargo build --release):
# the server's peak RSS while a 256 MiB upload streams, that one byte more is refused with
# nothing stored, and the time from uploading G-set G22 to its job COMPLETED with a 5 s limit.
# Usage, from the repository's root: scripts/measure-datasets.sh [path/to/G22.txt]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/caseload
G22=${1:-../shared/gset/G22.txt}
W=$(mktemp -d); D=$W/data; mkdir -p $D
PORT=18093
CASELOAD_ADMIN_PASSWORD=measurepw $BIN --data-dir $D --listen 127.0.0.1:$PORT > $W/server.log 2>&1 &
SP=$!; trap 'kill $SP; rm -rf "$W"' EXIT
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:$PORT/healthz && break; sleep 0.1; done
TOKEN=$(curl -s -X POST http://127.0.0.1:$PORT/login -H 'Content-Type: application/json' -d '{"username":"admin","password":"measurepw"}' | python3 -c 'import sys,json;print(json.load(sys.stdin)["access_token"])')
head -c $((256*1024*1024)) /dev/urandom > $W/big.bin
rm -f $W/done
echo "before upload: $(grep -E 'VmHWM|VmRSS' /proc/$SP/status | tr -s ' \n' ' ')"
( max=0; n=0; while kill -0 $SP 2>/dev/null && [ ! -f $W/done ]; do r=$(awk '/VmRSS/{print $2}' /proc/$SP/status); n=$((n+1)); [ $r -gt $max ] && max=$r; sleep 0.05; done; echo "sampled VmRSS max ${max} kB over $n samples" ) > $W/sampler.txt &
start=$(date +%s.%N)
curl -s -X POST -w ' HTTP %{http_code}\n' -T $W/big.bin -H 'Content-Type: application/octet-stream' -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/data_file?filename=big.bin" | cut -c1-200
end=$(date +%s.%N); touch $W/done; sleep 0.2
echo "upload of 256 MiB took $(echo "$end - $start" | bc) s"
cat $W/sampler.txt
echo "after upload: $(grep -E 'VmHWM|VmRSS' /proc/$SP/status | tr -s ' \n' ' ')"
head -c 1 /dev/zero >> $W/big.bin
curl -s -X POST -w ' HTTP %{http_code}\n' -T $W/big.bin -H 'Content-Type: application/octet-stream' -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/data_file" | cut -c1-200
truncate -s $((256*1024*1024)) $W/big.bin
echo "rows after the 413: data_files $(sqlite3 $D/caseload.db 'select count(*) from data_files'), blobs $(sqlite3 $D/caseload.db 'select count(*) from blobs'), chunk bytes $(sqlite3 $D/caseload.db 'select coalesce(sum(length(data)),0) from blob_chunks')"
# G22: upload to COMPLETED with a 5 s limit
start=$(date +%s.%N)
ID=$(curl -s -X POST http://127.0.0.1:$PORT/data_file -H "Authorization: Bearer $TOKEN" -F file=@$G22 | python3 -c 'import sys,json;print(json.load(sys.stdin)["data_file_identifier"])')
JOB=$(curl -s -X POST http://127.0.0.1:$PORT/problem/maxcut -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d "{\"data_file_identifier\":\"$ID\",\"options\":{\"time_limit_s\":5,\"seed\":1}}" | python3 -c 'import sys,json;print(json.load(sys.stdin)["job"])')
while :; do S=$(curl -s http://127.0.0.1:$PORT/job/$JOB -H "Authorization: Bearer $TOKEN" | python3 -c "import sys,json;print(json.load(sys.stdin)['job']['$JOB']['status'])"); case $S in COMPLETED|FAILED|CANCELLED) break ;; esac; sleep 0.02; done
end=$(date +%s.%N)
echo "G22 upload -> $S in $(echo "$end - $start" | bc) s"
curl -s http://127.0.0.1:$PORT/job/$JOB/output -H "Authorization: Bearer $TOKEN" | python3 -c 'import sys,json;o=json.load(sys.stdin);print("cut",o["cut_value"],"best-known 13359",o["solver"])'
