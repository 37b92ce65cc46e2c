#!/bin/sh
# train_mlp --elastic under horarun's elastic driver, faults injected by the trainer's
# --elastic-fail. The workers must finish every epoch in the processes they started in, end
# with identical weights and optimizer state, and match a single-process run of the same
# schedule (a rollback to the last commit replays the same global batches) within float
# rounding: an uninterrupted 3-rank run differs from it by about 2e-5, a run that skips the
# restore by about 2e-2.
# Usage: elastic_trainer_check.sh HORARUN TRAIN_MLP COMPARE_PY MODE
#   MODE kill:  3 workers, rank 2 SIGKILLed at step 100 (3 -> 2)
#        stop:  3 workers, rank 1 SIGSTOPped at step 100, dropped after HORA_TIMEOUT_S (3 -> 2)
#        twice: 3 workers, rank 2 killed at step 100, then rank 1 of the next generation at
#               step 300 (3 -> 2 -> 1)
#        grow:  2 workers, discovery offers a third slot: the job resets at its first commit
#               and the new worker joins with the committed state (2 -> 3)
set -u
horarun=$1 trainer=$2 compare=$3 mode=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
common="--elastic --epochs 2 --hidden 32,32 --global-batch-size 60 --commit-every 7"
np=3 faults="" launch="--min-np 1"
case $mode in
  kill) faults="--elastic-fail 0:100:2:kill" survivors=2 resets=1 ;;
  stop) faults="--elastic-fail 0:100:1:stop" survivors=2 resets=1 ;;
  twice) faults="--elastic-fail 0:100:2:kill --elastic-fail 1:300:1:kill" survivors=1 resets=2 ;;
  grow)
    printf '#!/bin/sh\necho localhost:3\n' >"$dir/discover.sh"
    chmod +x "$dir/discover.sh"
    np=2 survivors=2 resets=1
    launch="--min-np 2 --max-np 3 --host-discovery-script $dir/discover.sh"
    ;;
  *) fail "unknown mode $mode" ;;
esac
# The reference: one process, no elastic job.
env -u HORA_ELASTIC "$trainer" $common --weights-out "$dir/ref" >"$dir/ref.log" 2>&1 ||
  { cat "$dir/ref.log"; fail "the reference run failed"; }
# shellcheck disable=SC2086
"$horarun" -np "$np" $launch "$trainer" $common $faults --weights-out "$dir/run" \
  >"$dir/run.log" 2>&1
rc=$?
cat "$dir/run.log"
[ "$rc" -eq 0 ] || fail "the elastic job exited $rc"
# The workers of generation 0 that end: each after the expected resets, in its first process.
done_lines=$(grep -c "done as rank .* after $resets reset" "$dir/run.log")
[ "$done_lines" -eq "$survivors" ] ||
  fail "$done_lines workers finished after $resets resets; expected $survivors"
for pid in $(sed -n "s/.*worker pid \([0-9]*\) done as rank .* after $resets reset.*/\1/p" \
  "$dir/run.log"); do
  grep -q "worker pid $pid is rank . of $np in generation 0" "$dir/run.log" ||
    fail "worker pid $pid finished but did not start in generation 0"
done
size=$(sed -n 's/.*done as rank [0-9]* of \([0-9]*\) after.*/\1/p' "$dir/run.log" | head -n 1)
r=1
while [ "$r" -lt "$size" ]; do
  cmp "$dir/run.0" "$dir/run.$r" || fail "rank $r's final state differs from rank 0's"
  r=$((r + 1))
done
python3 "$compare" "$dir/run.0" "$dir/ref.0" --rtol 1e-3 --atol 1e-4 ||
  fail "the workers' weights differ from the single-process reference"
echo "PASS: $size workers at the end, $resets reset(s), identical state equal to the reference"
