#!/bin/sh
# A full /dev/shm: in a private mount namespace (unshare -m; needs root, else skipped with 77)
# /dev/shm is replaced by a 64 KiB tmpfs, too small for the builtin backend's segments. A job
# of NP ranks over shared memory must fail at init on every rank with an error that names
# /dev/shm and the way out (HORA_SHM=0), promptly (no rank waits out a timeout for a peer that
# already failed), and leave nothing in /dev/shm; the same job with HORA_SHM=0 must then pass.
# Usage: full_shm_check.sh HORARUN CHAOS_PROBE NP
set -u
HORARUN=$1 PROBE=$2 np=$3
. "$(dirname "$0")/chaos_lib.sh"
if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
  echo "SKIPPED: needs root and unshare -m for a private /dev/shm"
  exit 77
fi
OUT=$WORK/out
# One shell inside the namespace runs both jobs and lists /dev/shm after each.
unshare -m --propagation private sh -c '
  mount -t tmpfs -o size=64k tmpfs /dev/shm || exit 99
  start=$(date +%s)
  HORA_BACKEND=builtin HORA_SHM=1 "$1" --grace 5 -np "$3" "$2" allreduce --bytes 65536 --steps 2
  echo "chaos_shm: shm job exit $? after $(( $(date +%s) - start )) s"
  echo "chaos_shm: left [$(ls /dev/shm | tr "\n" " ")]"
  HORA_BACKEND=builtin HORA_SHM=0 "$1" --grace 5 -np "$3" "$2" allreduce --bytes 65536 --steps 2
  echo "chaos_shm: tcp job exit $?"
  echo "chaos_shm: left after tcp [$(ls /dev/shm | tr "\n" " ")]"
' sh "$HORARUN" "$PROBE" "$np" >"$OUT" 2>&1
rc=$?
[ "$rc" -ne 99 ] || { echo "SKIPPED: cannot mount a tmpfs here"; cat "$OUT"; exit 77; }
grep -q "chaos_shm: shm job exit [1-9]" "$OUT" || fail "the job over a full /dev/shm did not fail"
secs=$(sed -n 's/.*chaos_shm: shm job exit [0-9]* after \([0-9]*\) s.*/\1/p' "$OUT")
[ "$secs" -le 15 ] || fail "the failing job took $secs s (a rank waited for a failed peer)"
r=0
while [ "$r" -lt "$np" ]; do
  line=$(grep "^\[$r\]<stdout>: chaos_probe: init failed" "$OUT" | head -n 1)
  [ -n "$line" ] || fail "rank $r reported no init failure"
  echo "$line" | grep -q "/dev/shm" || fail "rank $r's error does not name /dev/shm: $line"
  echo "$line" | grep -q "HORA_SHM=0" || fail "rank $r's error does not name HORA_SHM=0: $line"
  r=$((r + 1))
done
grep -q "chaos_shm: left \[\]" "$OUT" || fail "segments left in /dev/shm"
grep -q "chaos_shm: tcp job exit 0" "$OUT" || fail "the job with HORA_SHM=0 failed"
n=$(grep -c "chaos_probe: rank [0-9]* done after 2 steps" "$OUT")
[ "$n" -eq "$np" ] || fail "$n of $np ranks of the HORA_SHM=0 job finished"
echo "PASS: a full /dev/shm fails init on every rank in $secs s naming it; HORA_SHM=0 runs"
