#!/bin/sh
# The time before a rank's first collective, told apart by liveness (the engine starts at
# init, so a rank answers the others' negotiation rounds before it calls any collective):
#   late  the last rank sleeps 2 x HORA_TIMEOUT_S after init before its first collective
#         (loading data): it is alive, so the others wait for it and the job completes (exit 0).
#   STOP  the last rank never calls its first collective and is stopped (SIGSTOP) there, while
#   KILL  the others wait in theirs; or killed (SIGKILL): every survivor fails within
#         HORA_TIMEOUT_S + 2 s of the signal naming it.
# Usage: first_collective_check.sh HORARUN CHAOS_PROBE late|STOP|KILL NP
set -u
HORARUN=$1 PROBE=$2 mode=$3 np=$4
. "$(dirname "$0")/chaos_lib.sh"
: "${HORA_TIMEOUT_S:?set HORA_TIMEOUT_S to a few seconds}"
GRACE_S=5
victim=$((np - 1))
timeout_ms=$(awk -v t="$HORA_TIMEOUT_S" 'BEGIN { printf "%d", t * 1000 }')
if [ "$mode" = late ]; then
  echo "== rank $victim of $np sleeps $((2 * timeout_ms)) ms before its first collective"
  start_job "$np" allreduce --bytes 65536 --steps 3 --victim "$victim" --fault late \
    --sleep-ms $((2 * timeout_ms))
  wait_started "$np"
  finish_job $((3 * ${HORA_TIMEOUT_S%.*} + 30))
  [ "$RC" -eq 0 ] || fail "horarun exited $RC: the late rank was taken for dead"
  n=$(grep -c "chaos_probe: rank [0-9]* done after 3 steps" "$OUT")
  [ "$n" -eq "$np" ] || fail "$n of $np ranks finished"
  check_clean
  echo "PASS: a rank $((2 * timeout_ms)) ms late to its first collective was waited for"
  exit 0
fi
echo "== rank $victim of $np gets SIG$mode before its first collective"
start_job "$np" allreduce --bytes 65536 --victim "$victim" --fault hang_first
wait_started "$np"
sleep 0.5  # the others enter their first collective
at=$(now)
kill -"$mode" "$(pid_of "$victim")"
finish_job $((${HORA_TIMEOUT_S%.*} + MARGIN_S + GRACE_S + 10))
[ "$RC" -ne 0 ] || fail "horarun exited 0 although rank $victim got SIG$mode"
r=0
while [ "$r" -lt "$victim" ]; do
  check_survivor "$r" "$victim" "$at"
  r=$((r + 1))
done
check_clean
echo "PASS: SIG$mode before the first collective at $np ranks: every survivor named the rank"
