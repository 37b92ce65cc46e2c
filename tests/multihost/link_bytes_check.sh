#!/usr/bin/env bash
# Bytes cross the link between two namespace hosts, and only between hosts:
#   link_bytes_check.sh HORARUN HORA_BENCH
# Run under netns_hosts.sh --hosts 2. Reads each host's eth0 and lo counters, runs one 4-rank
# (2 per host) float32 ring allreduce of 64 MiB through horarun --rsh, and reads them again:
# - each host's eth0 sent and received at least what the ring moves across hosts: the ring
#   0 -> 1 -> 2 -> 3 -> 0 crosses hosts at 1 -> 2 and 3 -> 0, each rank sends 2 (n - 1) / n of
#   the buffer, so at least 96 MiB each way;
# - each host's lo carried less than 4 MiB: the two ranks of a host talk over shared memory,
#   not loopback TCP (hora tells the namespaces apart as hosts).
set -euo pipefail
horarun=$1
bench=$2
read -r h1 h2 _ <<<"$HORA_NS_HOSTS"

counter() {  # counter HOST IFACE tx|rx
  ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3_bytes"
}
snapshot() {
  for h in "$h1" "$h2"; do
    for i in eth0 lo; do
      for d in tx rx; do echo "$h $i $d $(counter "$h" "$i" "$d")"; done
    done
  done
}
before=$(snapshot)
"$HORA_NS_EXEC" "$h1" env HORA_BACKEND=builtin "$horarun" -np 4 -H "$h1:2,$h2:2" \
  --rsh "$HORA_NS_RSH" "$bench" allreduce -b 64M -e 64M -n 1 -w 0 --algo ring
after=$(snapshot)

mib=$((1 << 20))
fail=0
while read -r h i d b; do
  a=$(awk -v h="$h" -v i="$i" -v d="$d" '$1 == h && $2 == i && $3 == d { print $4 }' <<<"$after")
  delta=$((a - b))
  echo "link_bytes: $h $i $d $((delta / 1024)) KiB"
  if [[ $i == eth0 && $delta -lt $((96 * mib)) ]]; then
    echo "FAIL: $h eth0 $d moved $delta bytes; the ring must carry at least 96 MiB across hosts" >&2
    fail=1
  fi
  if [[ $i == lo && $delta -ge $((4 * mib)) ]]; then
    echo "FAIL: $h lo $d moved $delta bytes: ranks of one host used loopback TCP, not shared memory" >&2
    fail=1
  fi
done <<<"$before"
exit $fail
