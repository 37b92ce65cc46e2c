#!/bin/sh
# A rank killed (SIGKILL) or stopped (SIGSTOP) in the middle of a collective, each rank in turn:
# every survivor must fail by itself within HORA_TIMEOUT_S + 2 s of the signal with an error
# that names that rank, the job must exit non-zero, nothing may be left in /dev/shm and no
# process may outlive the job. COLLECTIVE is allreduce, broadcast or allgather (4 MiB a rank:
# the signal lands while bytes move) or negotiation (a new name every step: it lands in a
# negotiation round). The backend comes from the environment (HORA_BACKEND, HORA_SHM).
# Usage: peer_fault_check.sh HORARUN CHAOS_PROBE KILL|STOP COLLECTIVE NP
set -u
HORARUN=$1 PROBE=$2 sig=$3 collective=$4 np=$5
. "$(dirname "$0")/chaos_lib.sh"
: "${HORA_TIMEOUT_S:?set HORA_TIMEOUT_S to a few seconds}"
GRACE_S=5
victim=0
while [ "$victim" -lt "$np" ]; do
  echo "== $collective, SIG$sig to rank $victim of $np (HORA_TIMEOUT_S=$HORA_TIMEOUT_S)"
  start_job "$np" "$collective"
  wait_ready "$np"
  sleep 0.2
  at=$(now)
  kill -"$sig" "$(pid_of "$victim")"
  finish_job $((${HORA_TIMEOUT_S%.*} + MARGIN_S + GRACE_S + 10))
  [ "$RC" -ne 0 ] || fail "horarun exited 0 although rank $victim got SIG$sig"
  check_survivors "$np" "$victim" "$at"
  check_clean
  victim=$((victim + 1))
done
echo "PASS: SIG$sig during $collective at $np ranks: every survivor named the rank in time"
