#!/bin/sh
# expect_ranks_ok.sh N COMMAND...: passes when COMMAND (a job of N ranks running
# mpi_job_probe) exits 0 and every rank r in [0, N) printed
# "rank r of N ... backend mpi: allreduce ok" exactly once.
set -u
n=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ "$rc" -eq 0 ] || fail "the job exited $rc"
r=0
while [ "$r" -lt "$n" ]; do
  got=$(grep -c "rank $r of $n (local [0-9]* of [0-9]*) backend mpi: allreduce ok" "$out")
  [ "$got" -eq 1 ] || fail "rank $r of $n printed its allreduce line $got times, expected once"
  r=$((r + 1))
done
total=$(grep -c "allreduce ok" "$out")
[ "$total" -eq "$n" ] || fail "$total ranks reported, expected $n"
echo "PASS: $n ranks, backend mpi"
