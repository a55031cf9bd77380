#!/usr/bin/env bash
# What the bench's PostgreSQL sessions wait on: samples pg_stat_activity and pg_locks every
# 10 ms for SECONDS seconds and prints, per wait, how many samples caught a session in it.
# Run it beside `cargo bench --bench throughput -- --postgres URL` (the bench's databases are
# named caseload_test_*):
#
#   scripts/pg-waits.sh postgres://postgres@127.0.0.1:5432/postgres 10
#
# `lock notify` is the lock every transaction that sends NOTIFY holds from its commit's
# start to its end (object 0 of pg_database, AccessExclusiveLock); `lock transactionid` and
# `lock tuple` are waits for a row another open transaction wrote; `IO WalSync` is the
# commit's flush; `running` is a session at work.
set -euo pipefail
url=${1:?usage: pg-waits.sh ADMIN_URL SECONDS}
seconds=${2:-10}
samples=$((seconds * 100))
query="SELECT CASE
    WHEN l.locktype = 'object' AND l.classid = 'pg_database'::regclass AND l.objid = 0
        THEN 'lock notify'
    WHEN l.locktype IS NOT NULL THEN 'lock ' || l.locktype || ' ' || l.mode
    WHEN a.wait_event_type IS NOT NULL THEN a.wait_event_type || ' ' || a.wait_event
    ELSE 'running' END
  FROM pg_stat_activity a
  LEFT JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted
  WHERE a.datname LIKE 'caseload_test_%' AND a.state = 'active'
    AND a.pid <> pg_backend_pid();"
for _ in $(seq "$samples"); do
    echo "$query"
    sleep 0.01
done | psql -q -At "$url" | sort | uniq -c | sort -rn
echo "($samples samples)"
