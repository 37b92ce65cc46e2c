#!/bin/sh
# A slow rank is not a dead one: in step 2 the last rank sleeps SLEEP_MS between the step's two
# allreduces (much longer than the cycle and heartbeat times) while the others wait in the
# second. The job must complete with exit 0 on every rank.
# Usage: slow_rank_check.sh HORARUN CHAOS_PROBE NP SLEEP_MS
set -u
HORARUN=$1 PROBE=$2 np=$3 sleep_ms=$4
. "$(dirname "$0")/chaos_lib.sh"
victim=$((np - 1))
echo "== rank $victim of $np sleeps $sleep_ms ms in the middle of step 2"
start_job "$np" allreduce --bytes 1048576 --steps 4 --victim "$victim" --fault slow --after 2 \
  --sleep-ms "$sleep_ms"
wait_started "$np"
finish_job $((sleep_ms / 1000 + 60))
[ "$RC" -eq 0 ] || fail "horarun exited $RC: the slow rank was taken for dead"
n=$(grep -c "chaos_probe: rank [0-9]* done after 4 steps" "$OUT")
[ "$n" -eq "$np" ] || fail "$n of $np ranks finished"
check_clean
echo "PASS: a rank $sleep_ms ms slow in the middle of a step was waited for"
