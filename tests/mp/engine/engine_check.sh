#!/bin/sh
# Runs one engine_probe mode under horarun and checks the job's outcome from outside.
# Usage: engine_check.sh HORARUN PROBE NP MODE
set -u
horarun=$1 probe=$2 np=$3 mode=$4
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { cat "$out"; echo "FAIL: $*"; exit 1; }
start=$(date +%s)
case "$mode" in
  stall) HORA_STALL_WARNING_S=1 "$horarun" -np "$np" "$probe" stall >"$out" 2>&1 ;;
  stall_shutdown) HORA_STALL_SHUTDOWN_S=2 HORA_STALL_WARNING_S=1 \
                    "$horarun" -np "$np" "$probe" stall_shutdown >"$out" 2>&1 ;;
  kill) "$horarun" --grace 60 -np "$np" "$probe" kill >"$out" 2>&1 ;;
  timeline) trace=$(mktemp); HORA_TIMELINE=$trace "$horarun" -np "$np" "$probe" timeline >"$out" 2>&1 ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
rc=$?
elapsed=$(( $(date +%s) - start ))
case "$mode" in
  stall)
    [ "$rc" -eq 0 ] || fail "job exited $rc"
    grep -q "stall: .*'late' (ready: 0.*; missing: 1" "$out" || fail "no stall warning naming 'late' and missing rank 1"
    ;;
  stall_shutdown)
    [ "$rc" -eq 0 ] || fail "job exited $rc: some rank did not fail with the stall"
    n=$(grep -c "probe rank .*stalled" "$out")
    [ "$n" -eq "$np" ] || fail "$n of $np ranks reported the stall"
    grep -q "'only.rank0' (ready: 0; missing: " "$out" || fail "stall message does not name the tensor and ranks"
    ;;
  kill)
    victim=$((np - 1))
    [ "$rc" -ne 0 ] || fail "job exited 0 although rank $victim was killed"
    n=$(grep -c "probe rank .*rank $victim" "$out")
    [ "$n" -eq "$victim" ] || fail "$n of $victim survivors named rank $victim"
    ;;
  timeline)
    [ "$rc" -eq 0 ] || fail "job exited $rc"
    python3 - "$trace" <<'PY' || fail "the timeline is not the expected Chrome trace"
import json, sys
events = json.load(open(sys.argv[1]))
names = {e["args"]["name"] for e in events if e.get("ph") == "M"}
phases = {e["name"] for e in events if e.get("ph") == "X"}
assert "layer0.weight" in names and "layer3.weight" in names, names
assert {"NEGOTIATE", "PACK", "UNPACK"} <= phases, phases
assert all(e["dur"] >= 0 for e in events if e.get("ph") == "X")
PY
    rm -f "$trace"
    ;;
esac
[ "$elapsed" -le 120 ] || fail "took ${elapsed}s"
cat "$out" | grep -E "probe rank|stall" | head -20
echo "PASS: $mode np$np exit $rc after ${elapsed}s"
