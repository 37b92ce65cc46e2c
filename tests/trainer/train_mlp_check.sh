#!/usr/bin/env bash
# train_mlp under horarun -np 2 must succeed: exit status 0 and rank 0's expected lines.
#   default EPOCHS: the main job with default flags for EPOCHS epochs: the progress bar, one
#     line per epoch (the last one above 85% held-out accuracy), the total time and the
#     scaling figure.
#   resume: one epoch with --checkpoint, then the same command again: the second run finds
#     nothing left to train and must still report the checkpoint's real accuracy (the first
#     run's last epoch line), not 0.
# Usage: train_mlp_check.sh HORARUN TRAIN_MLP default EPOCHS | HORARUN TRAIN_MLP resume
set -u
horarun=$1
train=$2
mode=$3
out=$(mktemp)
ckpt=$(mktemp -u)
trap 'rm -f "$out" "$ckpt"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# Runs the job with the given flags into $out, shows it, and requires exit status 0.
run_ok() {
  "$horarun" -np 2 "$train" "$@" >"$out" 2>&1
  local rc=$?
  cat "$out"
  [ "$rc" -eq 0 ] || fail "exit status $rc of: train_mlp $*"
}
expect() { grep -Eq -- "$1" "$out" || fail "no line matching '$1'"; }
number='[0-9]+(\.[0-9]+)?'

case "$mode" in
  default)
    epochs=$4
    run_ok --epochs "$epochs"
    # The bar's final line (ProgressBar::finish) for every epoch, then the epoch line.
    for ((e = 1; e <= epochs; ++e)); do
      expect "epoch $e/$epochs \[#+\] +[0-9]+/[0-9]+ loss $number +$number samples/s  ETA ${number}s"
      expect "epoch $e/$epochs: loss $number, held-out accuracy $number%, $number s, [0-9]+ samples/s"
    done
    expect "epoch $epochs/$epochs: loss $number, held-out accuracy (8[5-9]|9[0-9])\.[0-9]+%"
    expect "done: $number s in total, final held-out accuracy $number%"
    expect "scaling: [0-9]+ samples/s on 2 ranks vs [0-9]+ samples/s on 1 rank \([0-9]+-step baseline\): efficiency $number%"
    ;;
  resume)
    run_ok --epochs 1 --baseline-steps 0 --checkpoint "$ckpt"
    [ -s "$ckpt" ] || fail "the checkpoint $ckpt was not written"
    trained=$(grep -Eo "epoch 1/1: loss $number, held-out accuracy $number%" "$out" |
              grep -Eo "$number%$")
    [ -n "$trained" ] || fail "no accuracy line for epoch 1/1"
    run_ok --epochs 1 --baseline-steps 0 --checkpoint "$ckpt"
    expect "resumed from .* after epoch 1"
    expect "no epochs left to run: the checkpoint is at epoch 1 of 1"
    ! grep -Eq "epoch 1/1: loss" "$out" || fail "the resumed run trained an epoch again"
    # The same weights on the same held-out set: the same accuracy, to the printed digit.
    expect "done: $number s in total, final held-out accuracy ${trained//./\\.}"
    ;;
  *)
    fail "unknown mode '$mode'"
    ;;
esac
echo "PASS"
