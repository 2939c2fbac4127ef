#!/bin/bash
# Workload C (with primary keys) by hand, as docs/BENCHMARKS.md's stop-23 figures were
# taken: one crashed cluster, then restarts of fresh copies at chosen sizes.
#
#   scripts/c-by-hand.sh make                 # 100,000 tables, CHECKPOINT, drop 50, SIGKILL
#   scripts/c-by-hand.sh replay 128MB 8GB ...  # per size: a copy restarted, its redo lines
#   scripts/c-by-hand.sh primary 128MB 8GB ... # per size: six more 50-table drops, timed
#   scripts/c-by-hand.sh warm 128MB 8GB ...    # per size: a fresh cluster set up as the
#                                              # bench does, then ten 50-table drops, each
#                                              # one message as the bench sends it, timed
#   scripts/c-by-hand.sh series SIZE           # a copy of a base cluster (set up once at
#                                              # MS, default 128MB; CRASH=1: then a drop
#                                              # and SIGKILL) started at SIZE, then forty
#                                              # CHECKPOINT + 50-drop pairs on one
#                                              # connection (stop 25)
#
# series prints the server's own per-message times, written by the temporary
# instrumentation of docs/results/stmt-stats-s25.patch (not part of Strata): `git apply`
# it and build before, `git checkout crates` after.
#
# Needs a release build (cargo build --release) and psql. W (default /tmp/c-by-hand)
# holds the crashed cluster (1.6 GB, 200,000 files) and the copies.
set -e
B=${B:-$(dirname "$0")/../target/release/strata}
W=${W:-/tmp/c-by-hand}
PSQL="psql -h 127.0.0.1 -U postgres -Xq"

ready() { for _ in $(seq 600); do grep -q "ready to accept" "$1" && return; sleep 0.1; done; exit 1; }

set_up() { # port column: 100,000 tables with a primary key, 1,000 a transaction, CHECKPOINT
  python3 -c "
for t in range(100):
    print('BEGIN;'); [print(f'CREATE TABLE c{i} ($2 int PRIMARY KEY);') for i in range(t*1000, t*1000+1000)]; print('COMMIT;')" \
    | $PSQL -p "$1" -f -
  $PSQL -p "$1" -c CHECKPOINT
}

drops() { # first: one message, BEGIN; 50 DROP TABLEs from c{first}; COMMIT
  python3 -c "print(' \\\\; '.join(['BEGIN'] + [f'DROP TABLE c{i}' for i in range($1, $1 + 50)] + ['COMMIT']) + ';')"
}

start_copy() { # size log
  rm -rf "$W/run"; cp -a "$W/crashed" "$W/run"; sync
  "$B" start -D "$W/run" -c port=5498 -c shared_buffers="$1" > "$2" 2>&1 &
  ready "$2"
}

case "$1" in
make)
  rm -rf "$W"; mkdir -p "$W"
  "$B" start -D "$W/crashed" -c port=5499 -c shared_buffers=128MB > "$W/make.log" 2>&1 &
  pid=$!; ready "$W/make.log"
  set_up 5499 id
  python3 -c "print('BEGIN;'); [print(f'DROP TABLE c{i};') for i in range(50)]; print('COMMIT;')" | $PSQL -p 5499 -f -
  kill -9 $pid; wait $pid || true ;;
replay)
  shift
  for s in "$@"; do
    start_copy "$s" "$W/replay-$s.log"
    pkill -INT -f "strata start -D $W/run"; sleep 2
    echo "== $s"; grep -E "redo done|reading the WAL|rmgr" "$W/replay-$s.log"
  done ;;
primary)
  shift
  for s in "$@"; do
    start_copy "$s" "$W/primary-$s.log"
    $PSQL -p 5498 -c CHECKPOINT
    echo "== $s"
    for k in 1 2 3 4 5 6; do
      python3 -c "print('\\\\timing on'); print('BEGIN;'); [print(f'DROP TABLE c{i};') for i in range($k*50, $k*50+50)]; print('COMMIT;')" \
        | $PSQL -p 5498 -f - | grep Time \
        | awk '{a[NR]=$2; s+=$2} END {printf "drops %.2f ms, commit %.2f ms\n", s-a[NR], a[NR]}'
    done
    pkill -INT -f "strata start -D $W/run"; sleep 2
  done ;;
warm)
  shift
  for s in "$@"; do
    rm -rf "$W/warm"; mkdir -p "$W"
    "$B" start -D "$W/warm" -c port=5497 -c shared_buffers="$s" > "$W/warm-$s.log" 2>&1 &
    pid=$!; ready "$W/warm-$s.log"
    set_up 5497 a
    echo "== $s (server pid $pid)"
    if [ -n "$PERF" ]; then # PERF=1: perf record of the server during the drops
      perf record -F 20000 -g -p $pid -o "$W/perf-$s.data" 2> /dev/null & perf=$!; sleep 1
      perf stat -e page-faults,context-switches,cpu-migrations -p $pid -o "$W/stat-$s.txt" & pstat=$!
    fi
    for k in $(seq 0 9); do
      { echo '\timing on'; drops $((k * 50)); } | $PSQL -p 5497 -f - | grep Time
    done
    [ -n "$PERF" ] && { kill -INT $perf $pstat; wait $perf $pstat || true; }
    kill -INT $pid; wait $pid || true
  done ;;
series)
  s=$2; S="$W/series-${MS:=128MB}-${CRASH:=0}"
  SET=(-c port=5497 -c checkpoint_timeout=1h -c max_wal_size=100GB)
  if [ ! -d "$S/base" ]; then
    rm -rf "$S"; mkdir -p "$S"
    "$B" start -D "$S/base" "${SET[@]}" -c shared_buffers="$MS" > "$S/base.log" 2>&1 &
    pid=$!; ready "$S/base.log"
    set_up 5497 a
    if [ "$CRASH" = 1 ]; then drops 2000 | $PSQL -p 5497 -f -; kill -9 $pid; else kill -INT $pid; fi
    wait $pid || true
  fi
  rm -rf "$S/run" "$S/stats-$s.txt"; cp -a "$S/base" "$S/run"; sync
  STRATA_STMT_STATS="$S/stats-$s.txt" "$B" start -D "$S/run" "${SET[@]}" -c shared_buffers="$s" \
    > "$S/run-$s.log" 2>&1 &
  pid=$!; ready "$S/run-$s.log"
  for k in $(seq 0 39); do echo 'CHECKPOINT;'; drops $((k * 50)); done | $PSQL -p 5497 -f -
  kill -INT $pid; wait $pid || true
  grep DROP "$S/stats-$s.txt" | sed 's/.*elapsed_us=\([0-9]*\).*/\1/' | sort -n \
    | awk '{e[NR]=$1} END {print "'"$s"': " NR " drops, median " e[int(NR/2)+1] " µs, least " e[1] " µs"}' ;;
*) echo "usage: $0 make | replay SIZE... | primary SIZE... | warm SIZE... | series SIZE" >&2; exit 2 ;;
esac
