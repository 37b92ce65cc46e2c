#!/bin/sh
# A member of a process set killed (set_member_kill_probe.cc): under `horarun -np 3`, rank 2 of
# the set {0, 2} raises SIGKILL. Rank 0's allreduce on the set must fail before the 30 s
# deadline naming the set; rank 1 (outside it) must fail too; the job must exit non-zero.
# Usage: set_member_kill_check.sh HORARUN PROBE
set -u
horarun=$1 probe=$2
deadline_s=30
out=$(mktemp)
trap 'rm -f "$out"' EXIT
HORA_DYNAMIC_PROCESS_SETS=1 "$horarun" --verbose --grace 90 -np 3 "$probe" >"$out" 2>&1
rc=$?
cat "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ "$rc" -ne 0 ] || fail "horarun exited 0 although rank 2 was killed"
for r in 0 1; do
  line=$(grep "set_member_kill_probe: rank $r failed after" "$out" | head -n 1)
  [ -n "$line" ] || fail "survivor rank $r reported no failure"
  secs=$(echo "$line" | sed 's/.*failed after \([0-9.]*\) s:.*/\1/')
  awk -v s="$secs" -v d="$deadline_s" 'BEGIN { exit !(s < d) }' ||
    fail "survivor rank $r failed only after $secs s (deadline $deadline_s s)"
done
grep "set_member_kill_probe: rank 0 failed" "$out" | grep -q "process set 1 (ranks 0, 2)" ||
  fail "rank 0's error does not name process set 1 (ranks 0, 2)"
echo "PASS: exit $rc; the set's survivor named the set, the rank outside it failed too"
