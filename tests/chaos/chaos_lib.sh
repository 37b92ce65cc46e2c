# Shared by the chaos drivers (sourced). Starts chaos_probe jobs under horarun, breaks them,
# and checks what every rank printed, the exit code, the time each survivor took to report,
# that nothing is left in /dev/shm and that no process of the job outlives it.
#
# The caller sets: HORARUN, PROBE (paths); HORA_TIMEOUT_S (exported, a few seconds).
# Lines of chaos_probe (see chaos_probe.cc) come back tagged by horarun:
#   [R]<stdout>: chaos_probe: rank R pid P started
#   [R]<stdout>: chaos_probe: rank R failed at E after step S: MESSAGE
# The promise checked: every survivor fails within HORA_TIMEOUT_S + MARGIN_S of the fault.

MARGIN_S=${MARGIN_S:-2}
WORK=$(mktemp -d)
JOB_PIDS=""
trap 'chaos_cleanup' EXIT

chaos_cleanup() {
  for p in $JOB_PIDS; do kill -9 "$p" 2>/dev/null; done
  [ -n "${JOB:-}" ] && kill -9 "$JOB" 2>/dev/null
  rm -rf "$WORK"
}

fail() {
  echo "---- job output ----"
  cat "$OUT" 2>/dev/null
  echo "FAIL: $*"
  exit 1
}

now() { date +%s.%N; }

# start_job NP PROBE_ARGS...: the job in the background; its output in $OUT.
start_job() {
  local np=$1
  shift
  OUT=$WORK/out.$(date +%s%N)
  : >"$OUT"  # before the background job opens it: the waits below read it at once
  "$HORARUN" --grace "${GRACE_S:-20}" -np "$np" "$PROBE" "$@" >"$OUT" 2>&1 &
  JOB=$!
  JOB_PIDS=""
}

# wait_for PATTERN N: until N lines match PATTERN (60 s at most).
wait_for() {
  local tries=0
  while [ "$(grep -Ec "$1" "$OUT" 2>/dev/null || true)" -lt "$2" ]; do
    tries=$((tries + 1))
    if [ "$tries" -gt 600 ] || ! kill -0 "$JOB" 2>/dev/null; then
      fail "only $(grep -Ec "$1" "$OUT") of $2 lines matching '$1'"
    fi
    sleep 0.1
  done
}

# wait_started N: until N ranks initialised; fills JOB_PIDS. wait_ready N: until N ranks
# finished their warm-up collective.
wait_started() {
  wait_for 'chaos_probe: rank [0-9]+ pid [0-9]+ started' "$1"
  JOB_PIDS=$(sed -n 's/.*chaos_probe: rank [0-9]* pid \([0-9]*\) started.*/\1/p' "$OUT")
}
wait_ready() {
  wait_started "$1"
  wait_for 'chaos_probe: rank [0-9]+ ready' "$1"
}

pid_of() { sed -n "s/.*chaos_probe: rank $1 pid \([0-9]*\) started.*/\1/p" "$OUT" | head -n 1; }

# finish_job BOUND_S: waits for horarun, killing it (and failing) after BOUND_S; sets RC.
finish_job() {
  local bound=$1 waited=0
  while kill -0 "$JOB" 2>/dev/null; do
    if [ "$waited" -ge $((bound * 10)) ]; then
      kill -9 "$JOB" 2>/dev/null
      fail "the job still ran $bound s after the fault (hang)"
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  wait "$JOB"
  RC=$?
  JOB=""
}

# check_survivor R VICTIM FAULT_AT [PATTERN]: rank R reported a failure within
# HORA_TIMEOUT_S + MARGIN_S of FAULT_AT (wall-clock seconds), naming rank VICTIM (or
# matching the extended regex PATTERN).
check_survivor() {
  local r=$1 victim=$2 at=$3 line when took msg pattern=${4:-"ranks? $2([^0-9]|\$)|rank\(s\) ([0-9]+, )*$2([^0-9]|\$)"}
  line=$(grep "chaos_probe: rank $r failed at" "$OUT" | head -n 1)
  [ -n "$line" ] || fail "survivor rank $r reported no failure"
  when=$(echo "$line" | sed 's/.*failed at \([0-9.]*\) after.*/\1/')
  took=$(awk -v a="$when" -v b="$at" 'BEGIN { printf "%.2f", a - b }')
  awk -v t="$took" -v d="$HORA_TIMEOUT_S" -v m="$MARGIN_S" 'BEGIN { exit !(t <= d + m) }' ||
    fail "rank $r reported the failure $took s after the fault (bound: HORA_TIMEOUT_S=$HORA_TIMEOUT_S + $MARGIN_S s)"
  msg=$(echo "$line" | sed 's/.*after step [0-9]*: //')
  echo "$msg" | grep -Eq "$pattern" || fail "rank $r does not name rank $victim: $msg"
  echo "  rank $r: failed $took s after the fault, naming rank $victim"
}

# check_survivors NP VICTIM FAULT_AT: check_survivor for every rank of NP but VICTIM.
check_survivors() {
  local r=0
  while [ "$r" -lt "$1" ]; do
    [ "$r" -eq "$2" ] || check_survivor "$r" "$2" "$3"
    r=$((r + 1))
  done
}

# check_clean: no process of the job is left, and none of its ranks left a segment in /dev/shm
# (builtin segments are named /dev/shm/hora-<creator pid>-...).
check_clean() {
  local p left
  for p in $JOB_PIDS; do
    if kill -0 "$p" 2>/dev/null && [ "$(ps -o stat= -p "$p" | cut -c1)" != "Z" ]; then
      fail "rank process $p outlived the job"
    fi
    left=$(ls /dev/shm 2>/dev/null | grep "^hora-$p-")
    [ -z "$left" ] || fail "left in /dev/shm: $left"
  done
}
