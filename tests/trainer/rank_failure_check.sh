#!/usr/bin/env bash
# A rank that throws mid-epoch: horarun must end the job promptly (not hang, and not only once
# the other rank's collective timed out by itself), exit non-zero, and name the rank.
# Usage: rank_failure_check.sh HORARUN TRAIN_MLP
# HORA_TIMEOUT_S (the collectives' deadline) must be at least twice the bound below, so that a
# job that ended only through that deadline fails the check.
set -u
horarun=$1
train=$2
bound_s=30
if [[ "${HORA_TIMEOUT_S:-0}" -lt $((2 * bound_s)) ]]; then
  echo "FAIL: HORA_TIMEOUT_S is '${HORA_TIMEOUT_S:-}', the check needs >= $((2 * bound_s))"; exit 1
fi
start=$(date +%s%N)
out=$(timeout 120 "$horarun" -np 2 "$train" --epochs 3 --baseline-steps 0 --fail-at-step 20 \
      --fail-rank 1 2>&1)
rc=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
echo "$out"
echo "the job ended after $elapsed_ms ms (bound ${bound_s} s, HORA_TIMEOUT_S=$HORA_TIMEOUT_S)"
if [[ $rc -eq 124 ]]; then echo "FAIL: the job hung (timeout)"; exit 1; fi
if [[ $rc -eq 0 ]]; then echo "FAIL: horarun exited 0 although rank 1 threw"; exit 1; fi
if [[ $elapsed_ms -gt $((bound_s * 1000)) ]]; then
  echo "FAIL: horarun took more than ${bound_s} s to end the job after rank 1 threw"; exit 1
fi
if ! grep -q "horarun: rank 1 " <<<"$out"; then
  echo "FAIL: horarun's output does not name rank 1"; exit 1
fi
if ! grep -q "injected failure on rank 1 at step 20" <<<"$out"; then
  echo "FAIL: the rank's exception text is missing"; exit 1
fi
echo "PASS: horarun exited $rc naming rank 1 after $elapsed_ms ms"
