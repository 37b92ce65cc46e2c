#!/bin/sh
# One failure ends every wait on the failed rank at once (collectives/failed_ranks.h): a rank
# found stopped by one wait is not waited for again by the process's other waits (the
# engine's idle negotiation round, a process set's engine, the shutdown), so the whole job ends
# soon after the first deadline, not after a second one. Bounds on failure behaviour, with
# wide margins for a loaded machine:
#   bench STOP   hora-bench's allreduce loop (the job's communicator driven directly, the
#                engine parked), rank 1 SIGSTOPped: every survivor names rank 1 and the job
#                ends within 1.8 x HORA_TIMEOUT_S of the signal (a second deadline: over 2 x).
#   set STOP     chaos_probe --in-set 1 (the allreduce in process set {0..np-2}, by the set's
#                engine), rank 1 SIGSTOPped: the members and the non-member (which only learns
#                of it from its idle engine or the members' posts) name rank 1 within
#                HORA_TIMEOUT_S + MARGIN_S; the job ends within 1.8 x HORA_TIMEOUT_S.
#   probe KILL   chaos_probe's allreduce, rank 1 SIGKILLed: every survivor names it and the
#                job ends within 0.9 x HORA_TIMEOUT_S (no deadline is waited out at all).
# Usage: failure_board_check.sh HORARUN CHAOS_PROBE HORA_BENCH NP
set -u
HORARUN=$1 PROBE=$2 BENCH=$3 np=$4
. "$(dirname "$0")/chaos_lib.sh"
: "${HORA_TIMEOUT_S:?set HORA_TIMEOUT_S to a few seconds}"
GRACE_S=20  # never the cause of the job's end: the survivors end it by themselves
victim=1

# end_job BOUND_S: finish_job, then END = when the job was seen to end.
end_job() {
  finish_job "$1"
  END=$(now)
}

# check_job_end AT FACTOR: the job ended (END) within FACTOR x HORA_TIMEOUT_S of AT.
check_job_end() {
  local took
  took=$(awk -v a="$1" -v b="$END" 'BEGIN { printf "%.2f", b - a }')
  awk -v t="$took" -v d="$HORA_TIMEOUT_S" -v f="$2" 'BEGIN { exit !(t <= d * f) }' ||
    fail "the job ended $took s after the fault (bound: $2 x HORA_TIMEOUT_S=$HORA_TIMEOUT_S)"
  echo "  job ended $took s after the fault"
}

# The bench's ranks print nothing per iteration: its rank pid comes from the environment.
bench_pid_of() {
  local p
  for p in $(pgrep -P "$JOB"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "HORA_RANK=$1" && echo "$p"
  done
}

echo "== bench STOP: hora-bench allreduce loop, SIGSTOP to rank $victim of $np"
OUT=$WORK/bench.out
: >"$OUT"
"$HORARUN" --grace "$GRACE_S" -np "$np" "$BENCH" allreduce -b 16M -e 16M -n 1000000 -w 1 -c 0 \
  >"$OUT" 2>&1 &
JOB=$!
wait_for 'size\(B\)' 1
sleep 1
JOB_PIDS=$(pgrep -P "$JOB" | tr '\n' ' ')
pid=$(bench_pid_of "$victim")
[ -n "$pid" ] || fail "no process of the job has HORA_RANK=$victim"
at=$(now)
kill -STOP "$pid"
end_job $((${HORA_TIMEOUT_S%.*} * 3 + 10))
[ "$RC" -ne 0 ] || fail "horarun exited 0 although rank $victim was stopped"
check_job_end "$at" 1.8
# horarun tears the job down (SIGTERM) once the first survivor exits, so a survivor's report
# may be cut off; and a survivor whose wait ran through a live neighbour names that neighbour
# (its engine then names the victim). The victim must be named.
grep -E '^\[[0-9]+\]<stderr>: (hora-bench: rank [0-9]+:|\[hora [0-9]+ E\] engine stopped)' "$OUT" |
  grep -Eq "rank\(s\) $victim([^0-9]|\$)|rank $victim([^0-9]|\$)" ||
  fail "no survivor names rank $victim"
check_clean

echo "== set STOP: allreduce in process set 1, SIGSTOP to rank $victim of $np"
start_job "$np" allreduce --in-set 1
wait_ready "$np"
sleep 0.2
at=$(now)
kill -STOP "$(pid_of "$victim")"
end_job $((${HORA_TIMEOUT_S%.*} * 3 + 10))
[ "$RC" -ne 0 ] || fail "horarun exited 0 although rank $victim was stopped"
check_job_end "$at" 1.8
r=0
while [ "$r" -lt "$np" ]; do
  [ "$r" -eq "$victim" ] || check_survivor "$r" "$victim" "$at"
  r=$((r + 1))
done
check_clean

echo "== probe KILL: allreduce, SIGKILL to rank $victim of $np"
start_job "$np" allreduce
wait_ready "$np"
sleep 0.2
at=$(now)
kill -KILL "$(pid_of "$victim")"
end_job $((${HORA_TIMEOUT_S%.*} * 3 + 10))
[ "$RC" -ne 0 ] || fail "horarun exited 0 although rank $victim was killed"
r=0
while [ "$r" -lt "$np" ]; do
  [ "$r" -eq "$victim" ] || check_survivor "$r" "$victim" "$at"
  r=$((r + 1))
done
check_job_end "$at" 0.9
check_clean
echo "PASS: one failure ended every wait on rank $victim at $np ranks"
