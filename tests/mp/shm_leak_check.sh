#!/bin/sh
# Nothing is left in /dev/shm: a builtin job of 3 ranks over shared memory initialises, every
# rank sits in a collective (sit_in_collective.cc), and then every rank is killed with
# SIGKILL. No hora segment created by any of those ranks (named /dev/shm/hora-<creator pid>-...,
# see collectives/backends/builtin/shm_segment.cc) may exist, neither while they sit there
# (the names are unlinked once every local rank mapped them, inside init) nor after the kill.
# Only this job's names are looked at: other jobs may own hora segments at the same time.
# Usage: shm_leak_check.sh HORARUN SIT_IN_COLLECTIVE
set -u
horarun=$1 probe=$2
n=3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*"; cat "$out"; exit 1; }
[ -d /dev/shm ] || { echo "SKIPPED: no /dev/shm"; exit 77; }
HORA_BACKEND=builtin HORA_SHM=1 "$horarun" --grace 5 -np $n "$probe" >"$out" 2>&1 &
job=$!
tries=0
while [ "$(grep -c 'sit_in_collective: rank [0-9]* pid [0-9]* ready' "$out")" -lt $n ]; do
  tries=$((tries + 1))
  if [ "$tries" -gt 600 ] || ! kill -0 "$job" 2>/dev/null; then
    kill "$job" 2>/dev/null
    wait "$job"
    fail "the $n ranks never all reported ready"
  fi
  sleep 0.1
done
pids=$(sed -n 's/.*sit_in_collective: rank [0-9]* pid \([0-9]*\) ready.*/\1/p' "$out")
sleep 0.5  # let every rank reach its wait (not needed for the check, but the point of it)
leaked() {
  for p in $pids; do ls /dev/shm 2>/dev/null | grep "^hora-$p-"; done
}
before=$(leaked)
for p in $pids; do kill -9 "$p"; done
wait "$job"
rc=$?
after=$(leaked)
cat "$out"
[ -z "$before" ] || fail "segments still named in /dev/shm after init: $before"
[ -z "$after" ] || fail "segments left in /dev/shm after kill -9 of every rank: $after"
[ "$rc" -ne 0 ] || fail "horarun exited 0 although every rank was killed"
echo "PASS: ranks $(echo $pids) killed, horarun exit $rc, no hora segment of theirs in /dev/shm"
