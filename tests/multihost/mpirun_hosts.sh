#!/usr/bin/env bash
# Runs a program as one Open MPI job over the hosts of netns_hosts.sh:
#   mpirun_hosts.sh SLOTS PROG [ARGS...]
# SLOTS as in horarun_hosts.sh ("2,2"). mpirun runs on the first host with -H and Open MPI's
# plm_rsh_agent set to ns_rsh.sh, so it starts its orted on the other hosts as over ssh and
# its out-of-band and byte-transfer-layer traffic crosses the bridge. Every HORA_* variable of
# this environment is exported to the ranks (-x).
set -euo pipefail
slots=$1
shift
read -r -a hosts <<<"$HORA_NS_HOSTS"
IFS=, read -r -a counts <<<"$slots"
list=""
np=0
for ((k = 0; k < ${#counts[@]}; ++k)); do
  list+="${list:+,}${hosts[k]}:${counts[k]}"
  np=$((np + counts[k]))
done
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found" >&2; exit 77; }
args=(-np "$np" -H "$list" --mca plm_rsh_agent "$HORA_NS_RSH")
# The namespace hosts share one CPU set: more ranks than cores must not make Open MPI refuse.
args+=(--oversubscribe)
[[ $(id -u) -eq 0 ]] && args+=(--allow-run-as-root)
while IFS='=' read -r key _; do
  [[ $key == HORA_* && $key != HORA_NS_* ]] && args+=(-x "$key")
done < <(env)
exec "$HORA_NS_EXEC" "${hosts[0]}" mpirun "${args[@]}" "$@"
