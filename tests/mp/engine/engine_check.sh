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
  timeline|timeline_kill)
    trace=$(mktemp)
    HORA_TIMELINE=$trace "$horarun" -np "$np" "$probe" "$mode" >"$out" 2>&1 ;;
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
    python3 - "$trace" "$np" <<'PY' || fail "the timeline is not the expected Chrome trace"
import json, sys
events = json.load(open(sys.argv[1]))
np = int(sys.argv[2])
rows = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M"}
names = set(rows.values())
phases = {e["name"] for e in events if e.get("ph") == "X"}
assert "layer0.weight" in names and "layer3.weight" in names and "grad3" in names, names
want = {"NEGOTIATE", "QUEUE", "ALLREDUCE"}
# A fused bucket is packed (MEMCPY_IN/OUT_FUSION_BUFFER) unless it was reduced where its
# tensors lie (the builtin backend over shared memory: ALLREDUCE's algorithm native-in-place).
in_place = any(e.get("name") == "ALLREDUCE" and e["args"].get("algorithm") == "native-in-place"
               for e in events)
if not in_place:
    want |= {"MEMCPY_IN_FUSION_BUFFER", "MEMCPY_OUT_FUSION_BUFFER"}
assert want <= phases, phases
assert all(e["dur"] >= 0 for e in events if e.get("ph") == "X")
# Every phase lies within the job: NEGOTIATE starts at the tensor's enqueue, which rank 0
# stamps only when its timeline is on (Engine::enqueue_stamp).
end = max(e["ts"] + e["dur"] for e in events if e.get("ph") == "X")
assert all(e["ts"] >= 0 and e["ts"] + e["dur"] <= end for e in events if e.get("ph") == "X")
assert all(e["dur"] < 60e6 for e in events if e.get("name") == "NEGOTIATE")
for e in events:
    if e.get("name") == "ALLREDUCE":
        assert {"algorithm", "backend", "bytes", "tensors"} <= set(e["args"]), e
    if e.get("name") == "NEGOTIATE":
        assert e["args"]["dtype"] == "float32" and e["args"]["shape"] == "[1000]", e
# Every rank's readiness is marked on a negotiated tensor's row.
marks = {(rows[e["tid"]], e["name"]) for e in events if e.get("ph") == "i"}
for r in range(np):
    assert ("grad0", "rank %d ready" % r) in marks, sorted(marks)
# A fused step: one ALLREDUCE per tensor of the bucket, each naming 4 tensors.
fused = [e for e in events if e.get("name") == "ALLREDUCE" and e["args"]["tensors"] == "4"]
assert len(fused) >= 4, fused
PY
    rm -f "$trace"
    ;;
  timeline_kill)
    [ "$rc" -ne 0 ] || fail "job exited 0 although rank 0 was killed"
    python3 - "$trace" <<'PY' || fail "the timeline of a killed job does not load as JSON"
import json, sys
events = json.load(open(sys.argv[1]))
phases = {e["name"] for e in events if e.get("ph") == "X"}
assert "NEGOTIATE" in phases and "ALLREDUCE" in phases, phases
PY
    rm -f "$trace"
    ;;
esac
[ "$elapsed" -le 120 ] || fail "took ${elapsed}s"
cat "$out" | grep -E "probe rank|stall" | head -20
echo "PASS: $mode np$np exit $rc after ${elapsed}s"
