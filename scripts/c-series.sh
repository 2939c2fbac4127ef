#!/bin/bash
# Workload C's primary by hand, as docs/BENCHMARKS.md's stop-25 section measured it:
# one base cluster (100,000 tables with a primary key, CHECKPOINT; CRASH=1: then a
# 50-table drop and SIGKILL), made once at shared_buffers MS (default 128MB); then per
# run a copy started at SIZE and forty CHECKPOINT + 50-table-drop pairs on one
# connection, each drop one message as the bench sends it.
#
#   scripts/c-series.sh 128MB                  # clean base made at 128MB
#   MS=8GB CRASH=1 scripts/c-series.sh 8GB      # crashed base made at 8GB
#
# The medians it prints are the server's own per-message times, written by the
# temporary instrumentation of docs/results/stmt-stats-s25.patch (not part of
# Strata): `git apply docs/results/stmt-stats-s25.patch && cargo build --release`,
# and `git checkout crates` afterwards. Needs psql. W (default /tmp/c-series) holds the
# base (1.6 GB) and the copy.
set -e
B=${B:-$(dirname "$0")/../target/release/strata}
s=$1; MS=${MS:-128MB}; CRASH=${CRASH:-0}; W=${W:-/tmp/c-series}/$MS-$CRASH
PSQL="psql -h 127.0.0.1 -U postgres -Xq -p 5497"
SET=(-c port=5497 -c checkpoint_timeout=1h -c max_wal_size=100GB)
ready() { for _ in $(seq 600); do grep -q "ready to accept" "$1" && return; sleep 0.1; done; exit 1; }
drops() { # first: one message, BEGIN; 50 DROP TABLEs from c{first}; COMMIT
  python3 -c "print(' \\\\; '.join(['BEGIN'] + [f'DROP TABLE c{i}' for i in range($1, $1 + 50)] + ['COMMIT']) + ';')"
}
[ -n "$s" ] || { echo "usage: [MS=size] [CRASH=1] $0 SIZE" >&2; exit 2; }
if [ ! -d "$W/base" ]; then
  rm -rf "$W"; mkdir -p "$W"
  "$B" start -D "$W/base" "${SET[@]}" -c shared_buffers="$MS" > "$W/base.log" 2>&1 & pid=$!
  ready "$W/base.log"
  python3 -c "
for t in range(100):
    print('BEGIN;'); [print(f'CREATE TABLE c{i} (a int PRIMARY KEY);') for i in range(t*1000, t*1000+1000)]; print('COMMIT;')" \
    | $PSQL -f -
  $PSQL -c CHECKPOINT
  if [ "$CRASH" = 1 ]; then drops 2000 | $PSQL -f -; kill -9 $pid; else kill -INT $pid; fi
  wait $pid || true
fi
rm -rf "$W/run" "$W/stats-$s.txt"; cp -a "$W/base" "$W/run"; sync
STRATA_STMT_STATS="$W/stats-$s.txt" "$B" start -D "$W/run" "${SET[@]}" -c shared_buffers="$s" \
  > "$W/run-$s.log" 2>&1 & pid=$!
ready "$W/run-$s.log"
for k in $(seq 0 39); do echo 'CHECKPOINT;'; drops $((k * 50)); done | $PSQL -f -
kill -INT $pid; wait $pid || true
grep DROP "$W/stats-$s.txt" | sed 's/.*elapsed_us=\([0-9]*\).*/\1/' | sort -n \
  | awk '{e[NR]=$1} END {print "'"$s"': " NR " drops, median " e[int(NR/2)+1] " µs, least " e[1] " µs"}'
