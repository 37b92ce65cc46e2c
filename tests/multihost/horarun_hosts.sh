#!/usr/bin/env bash
# Runs a program as one job over the hosts of netns_hosts.sh, through horarun -H and --rsh:
#   horarun_hosts.sh HORARUN SLOTS PROG [ARGS...]
# SLOTS is the ranks per host, comma separated ("2,2": ranks 0-1 on the first host, 2-3 on the
# second; "3,1" unequal). horarun itself runs on the first host (its store is reachable from
# the others there), local ranks are its children, and the other hosts' ranks start through
# ns_rsh.sh, as over ssh. HORA_* variables of this environment reach every rank.
set -euo pipefail
horarun=$1
slots=$2
shift 2
read -r -a hosts <<<"$HORA_NS_HOSTS"
IFS=, read -r -a counts <<<"$slots"
if ((${#counts[@]} > ${#hosts[@]})); then
  echo "horarun_hosts.sh: $slots names ${#counts[@]} hosts, only ${#hosts[@]} exist" >&2
  exit 2
fi
list=""
np=0
for ((k = 0; k < ${#counts[@]}; ++k)); do
  list+="${list:+,}${hosts[k]}:${counts[k]}"
  np=$((np + counts[k]))
done
exec "$HORA_NS_EXEC" "${hosts[0]}" "$horarun" -np "$np" -H "$list" --rsh "$HORA_NS_RSH" "$@"
