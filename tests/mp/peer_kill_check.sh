#!/bin/sh
# A peer killed mid-ring: under `horarun -np N`, rank K = N / 2 raises SIGKILL on itself in the
# middle of a large ring allreduce (peer_kill_probe.cc). Every survivor must fail by itself
# before the probe's 30 s deadline with an error that names "rank K", and the job must exit
# non-zero. The backend comes from the environment (HORA_BACKEND, HORA_SHM). With `stay`,
# survivors keep running until every survivor failed (see peer_kill_probe.cc).
# Usage: peer_kill_check.sh HORARUN PEER_KILL_PROBE N [stay]
set -u
horarun=$1 probe=$2 n=$3 mode=${4:-}
victim=$((n / 2))
deadline_s=30
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$horarun" --verbose --grace 90 -np "$n" "$probe" $mode >"$out" 2>&1
rc=$?
cat "$out"
fail() { echo "FAIL: $*"; exit 1; }
grep -q "SKIPPED: backend" "$out" && exit 77
[ "$rc" -ne 0 ] || fail "horarun exited 0 although rank $victim was killed"
grep -q "horarun: rank $victim .*killed by signal SIGKILL" "$out" ||
  fail "horarun did not report rank $victim killed by SIGKILL"
r=0
while [ "$r" -lt "$n" ]; do
  if [ "$r" -ne "$victim" ]; then
    line=$(grep "peer_kill_probe: rank $r failed after" "$out" | head -n 1)
    [ -n "$line" ] || fail "survivor rank $r reported no failure"
    secs=$(echo "$line" | sed 's/.*failed after \([0-9.]*\) s:.*/\1/')
    awk -v s="$secs" -v d="$deadline_s" 'BEGIN { exit !(s < d) }' ||
      fail "survivor rank $r failed only after $secs s (deadline $deadline_s s)"
    msg=$(echo "$line" | sed 's/.*failed after [0-9.]* s: //')
    echo "$msg" | grep -Eq "rank $victim([^0-9]|\$)" ||
      fail "survivor rank $r does not name rank $victim: $msg"
  fi
  r=$((r + 1))
done
echo "PASS: exit $rc; every survivor named rank $victim"
