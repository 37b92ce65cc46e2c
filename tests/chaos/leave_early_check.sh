#!/bin/sh
# A rank that leaves with exit status 0 between two collectives, each rank in turn:
#   exit0      without hora::shutdown (as a script that just returns would): the survivors'
#              next collective fails within HORA_TIMEOUT_S + 2 s naming it, and since they
#              failed, the job exits 3 (their code);
#   shutdown0  after hora::shutdown: the survivors' collectives fail with "rank V shut hora
#              down" (at once: the shutdown round tells every rank).
# Nothing hangs, nothing is left in /dev/shm, no process outlives the job.
# Usage: leave_early_check.sh HORARUN CHAOS_PROBE exit0|shutdown0 NP
set -u
HORARUN=$1 PROBE=$2 fault=$3 np=$4
. "$(dirname "$0")/chaos_lib.sh"
: "${HORA_TIMEOUT_S:?set HORA_TIMEOUT_S to a few seconds}"
GRACE_S=5
pattern="rank VICTIM([^0-9]|\$)"
[ "$fault" = shutdown0 ] && pattern="rank VICTIM shut hora down"
victim=0
while [ "$victim" -lt "$np" ]; do
  echo "== rank $victim of $np leaves with exit 0 ($fault) after step 2"
  start_job "$np" allreduce --bytes 65536 --victim "$victim" --fault "$fault" --after 2
  wait_ready "$np"
  finish_job $((${HORA_TIMEOUT_S%.*} + MARGIN_S + GRACE_S + 20))
  [ "$RC" -eq 3 ] || fail "horarun exited $RC, expected 3 (the survivors' failure)"
  at=$(sed -n "s/.*chaos_probe: rank $victim leaves with exit 0 at \([0-9.]*\) .*/\1/p" "$OUT")
  [ -n "$at" ] || fail "rank $victim never left"
  r=0
  while [ "$r" -lt "$np" ]; do
    [ "$r" -eq "$victim" ] ||
      check_survivor "$r" "$victim" "$at" "$(echo "$pattern" | sed "s/VICTIM/$victim/")"
    r=$((r + 1))
  done
  check_clean
  victim=$((victim + 1))
done
echo "PASS: a rank leaving with exit 0 ($fault) at $np ranks: every survivor named it"
