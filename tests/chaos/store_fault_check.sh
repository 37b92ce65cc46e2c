#!/bin/sh
# The rendezvous store lost after start-up. The job's store runs in a process of its own
# (chaos_store) and the ranks are started by hand with horarun's variables, so the store can
# die or stop while every rank lives:
#   KILL  the store is killed once every rank is ready: collectives do not need it, so the job
#         completes its steps and shuts down with exit 0 on every rank;
#   STOP  the store is stopped (it accepts connections but never answers), then a rank is
#         killed: the survivors' failure reports go through the store, and still each one
#         names the dead rank within HORA_TIMEOUT_S + 2 s.
# Usage: store_fault_check.sh CHAOS_STORE CHAOS_PROBE KILL|STOP NP
set -u
STORE=$1 PROBE=$2 mode=$3 np=$4
HORARUN=unused
. "$(dirname "$0")/chaos_lib.sh"
: "${HORA_TIMEOUT_S:?set HORA_TIMEOUT_S to a few seconds}"
OUT=$WORK/out
: >"$OUT"
secret=chaos-$$
"$STORE" "$secret" >"$WORK/store" 2>&1 &
store_pid=$!
JOB_PIDS=$store_pid
tries=0
until grep -q "port" "$WORK/store"; do
  tries=$((tries + 1))
  [ "$tries" -lt 100 ] || fail "chaos_store did not start: $(cat "$WORK/store")"
  sleep 0.1
done
port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$WORK/store")
# KILL: 20 steps 100 ms apart, so the job outlives the store by about 2 s.
steps=0
[ "$mode" = KILL ] && steps=20
rank_pids=""
r=0
while [ "$r" -lt "$np" ]; do
  HORA_RANK=$r HORA_SIZE=$np HORA_LOCAL_RANK=$r HORA_LOCAL_SIZE=$np HORA_CROSS_RANK=0 \
    HORA_CROSS_SIZE=1 HORA_RENDEZVOUS_ADDR=127.0.0.1 HORA_RENDEZVOUS_PORT=$port \
    HORA_SECRET=$secret "$PROBE" allreduce --bytes 65536 --steps "$steps" --pace-ms 100 \
    >>"$OUT" 2>&1 &
  rank_pids="$rank_pids $!"
  r=$((r + 1))
done
JOB=$store_pid
wait_ready "$np"
JOB_PIDS="$rank_pids $store_pid"
echo "== store (pid $store_pid) gets SIG$mode with $np ranks running"
kill -"$mode" "$store_pid"
killed_at=$(now)
victim=$((np - 1))
if [ "$mode" = STOP ]; then
  sleep 0.2
  at=$(now)
  kill -9 "$(pid_of "$victim")"
fi
# Every rank process ends by itself within the bound.
bound=$((${HORA_TIMEOUT_S%.*} + MARGIN_S + 30))
waited=0
for p in $rank_pids; do
  while kill -0 "$p" 2>/dev/null; do
    [ "$waited" -lt $((bound * 10)) ] || fail "rank process $p still ran $bound s after the fault"
    sleep 0.1
    waited=$((waited + 1))
  done
done
kill -9 "$store_pid" 2>/dev/null
want_rc=0
[ "$mode" = STOP ] && want_rc=3
r=0
for p in $rank_pids; do
  wait "$p"
  rc=$?
  [ "$r" -eq "$victim" ] && [ "$mode" = STOP ] || [ "$rc" -eq "$want_rc" ] ||
    fail "rank $r exited $rc, expected $want_rc"
  r=$((r + 1))
done
if [ "$mode" = KILL ]; then
  n=$(grep -c "chaos_probe: rank [0-9]* done after $steps steps" "$OUT")
  [ "$n" -eq "$np" ] || fail "$n of $np ranks finished without the store"
  lived=$(awk -v a="$(now)" -v b="$killed_at" 'BEGIN { printf "%.1f", a - b }')
  echo "  the job ran on for $lived s after the store died"
else
  r=0
  while [ "$r" -lt "$victim" ]; do
    check_survivor "$r" "$victim" "$at"
    r=$((r + 1))
  done
fi
check_clean
echo "PASS: store SIG$mode after start-up at $np ranks"
