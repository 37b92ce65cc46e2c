#!/usr/bin/env bash
# horarun's elastic driver across the hosts of netns_hosts.sh, with the protocol-speaking
# worker of tests/launcher (no hora runtime):
#   elastic_hosts_check.sh HORARUN ELASTIC_TEST_WORKER
# horarun runs on the first host with a discovery script offering 2 slots there and 1 on the
# second; the second host's worker starts through ns_rsh.sh and reaches the store across the
# bridge. Every process of the second host is then SIGKILLed: the two workers of the first host
# must go on as generation 1 (ranks 0 and 1, same processes) and horarun exit 0, naming the
# second host blacklisted, with no process left in either namespace.
set -euo pipefail
horarun=$1
worker=$2
read -r -a hosts <<<"$HORA_NS_HOSTS"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
log=$dir/log
printf '%s:2\n%s:1\n' "${hosts[0]}" "${hosts[1]}" >"$dir/hosts"
fail() {
  echo "elastic_hosts_check: $*" >&2
  echo "--- horarun's stderr:" >&2
  cat "$dir/err" >&2 || true
  exit 1
}

"$HORA_NS_EXEC" "${hosts[0]}" "$horarun" -np 3 --min-np 2 --rsh "$HORA_NS_RSH" \
  --host-discovery-script "cat $dir/hosts" "$worker" "$log" 2 >"$dir/out" 2>"$dir/err" &
horarun_pid=$!
started() { [[ -f $log ]] && (($(grep -c 'generation=0' "$log") >= 3)); }
for _ in $(seq 300); do
  started && break
  sleep 0.1
done
started || fail "generation 0 never started"
victims=$(ip netns pids "${hosts[1]}")
[[ -n $victims ]] || fail "no process runs on ${hosts[1]}"
# shellcheck disable=SC2086 # one pid a word
kill -KILL $victims
rc=0
wait "$horarun_pid" || rc=$?
((rc == 0)) || fail "horarun exited $rc"
gen1=$(grep 'generation=1' "$log" | sed 's/ pid=.*//' | sort)
expected=$'worker=0 generation=1 rank=0 size=2\nworker=1 generation=1 rank=1 size=2'
[[ $gen1 == "$expected" ]] || fail "generation 1 is '$gen1', expected '$expected'"
grep -q "host ${hosts[1]} blacklisted" "$dir/err" || fail "${hosts[1]} not named blacklisted"
for h in "${hosts[@]}"; do
  left=$(ip netns pids "$h")
  [[ -z $left ]] || fail "processes left on $h: $left"
done
echo "elastic_hosts_check: ${hosts[1]}'s processes killed; the 2 workers of ${hosts[0]} went on"
