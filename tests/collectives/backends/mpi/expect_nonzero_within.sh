#!/bin/sh
# expect_nonzero_within.sh LIMIT_S PATTERN COMMAND...: passes when COMMAND exits non-zero
# within LIMIT_S seconds (a job whose rank died was torn down) after printing a line that
# contains PATTERN (it reached the point under test); fails when it exits 0, never printed
# PATTERN, or is still running after LIMIT_S (a hang).
limit="$1"
pattern="$2"
shift 2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
timeout -k 5 "$limit" "$@" >"$log" 2>&1
rc=$?
cat "$log"
elapsed=$(( $(date +%s) - start ))
# timeout(1) exits 124, or 137 when it had to SIGKILL; a job whose rank was SIGKILLed also
# exits 137 (mpirun reports 128+signal), so 137 is a hang only when the limit was reached.
if [ "$rc" -eq 124 ] || { [ "$rc" -eq 137 ] && [ "$elapsed" -ge "$limit" ]; }; then
  echo "FAIL: still running after ${limit}s (rc $rc): a dead rank made the job hang"
  exit 1
fi
if [ "$rc" -eq 0 ]; then
  echo "FAIL: exited 0 after ${elapsed}s; a job with a dead rank must fail"
  exit 1
fi
if ! grep -q -- "$pattern" "$log"; then
  echo "FAIL: exited $rc but never printed '$pattern': it failed before the point under test"
  exit 1
fi
echo "PASS: exited $rc after ${elapsed}s"
exit 0
