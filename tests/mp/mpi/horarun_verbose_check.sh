#!/bin/sh
# horarun_verbose_check.sh HORARUN PROBE: `horarun --mpi --verbose -np 2 PROBE` prints the
# mpirun command line it execs (with -x for the HORA_* variables, --tag-output, and
# --allow-run-as-root exactly when run as root), and the job then runs: both ranks report.
set -u
horarun=$1 probe=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
HORA_TIMEOUT_S=60 "$horarun" --mpi --verbose -np 2 "$probe" ok >"$out" 2>&1
rc=$?
cat "$out"
fail() { echo "FAIL: $*"; exit 1; }
line=$(grep "^horarun: exec " "$out")
[ -n "$line" ] || fail "no 'horarun: exec ...' line"
case "$line" in
  "horarun: exec mpirun -np 2 "*) ;;
  *) fail "the command line does not start with 'mpirun -np 2': $line" ;;
esac
for word in "-x HORA_BACKEND" "-x HORA_TIMEOUT_S" "--tag-output $probe ok"; do
  case "$line" in *"$word"*) ;; *) fail "the command line lacks '$word': $line" ;; esac
done
case "$line" in
  *--allow-run-as-root*) [ "$(id -u)" -eq 0 ] || fail "--allow-run-as-root while not root" ;;
  *) [ "$(id -u)" -ne 0 ] || fail "running as root but no --allow-run-as-root" ;;
esac
case "$line" in *HORA_RANK*|*HORA_SECRET*) fail "per-rank variables exported: $line" ;; esac
[ "$rc" -eq 0 ] || fail "the job exited $rc"
[ "$(grep -c 'backend mpi: allreduce ok' "$out")" -eq 2 ] || fail "not both ranks reported"
echo "PASS"
