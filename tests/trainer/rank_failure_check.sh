#!/usr/bin/env bash
# A rank that throws mid-epoch: horarun must end the job (not hang), exit non-zero, and name
# the rank. Usage: rank_failure_check.sh HORARUN TRAIN_MLP
set -u
horarun=$1
train=$2
out=$(timeout 120 "$horarun" -np 2 "$train" --epochs 3 --baseline-steps 0 --fail-at-step 20 \
      --fail-rank 1 2>&1)
rc=$?
echo "$out"
if [[ $rc -eq 124 ]]; then echo "FAIL: the job hung (timeout)"; exit 1; fi
if [[ $rc -eq 0 ]]; then echo "FAIL: horarun exited 0 although rank 1 threw"; exit 1; fi
if ! grep -q "horarun: rank 1 " <<<"$out"; then
  echo "FAIL: horarun's output does not name rank 1"; exit 1
fi
if ! grep -q "injected failure on rank 1 at step 20" <<<"$out"; then
  echo "FAIL: the rank's exception text is missing"; exit 1
fi
echo "PASS: horarun exited $rc naming rank 1"
