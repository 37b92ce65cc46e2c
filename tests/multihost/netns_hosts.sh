#!/usr/bin/env bash
# Several hosts on one machine: Linux network namespaces joined by veth pairs to a bridge, for
# the duration of one command.
#
#   netns_hosts.sh [--hosts N] [--rate RATE] [--delay DELAY] -- COMMAND [ARGS...]
#
# Creates N (2..4, default 2) host namespaces and one switch namespace holding the bridge; host
# k gets eth0 with 10.213.7.k/24 (a private /24 that exists only inside these namespaces: the
# machine's own namespace gets no address and no route, so no traffic leaves the bridge) and
# /etc/netns/<host>/hosts naming every host, which `ip netns exec` shows as /etc/hosts. With
# --rate (tc units, e.g. 10gbit) and/or --delay (e.g. 50us) each host's eth0 egress is shaped by
# netem, so each direction of a host's link carries at most RATE after DELAY.
#
# A host is a namespace plus its own UTS namespace: ns_exec.sh and ns_rsh.sh (beside this file)
# enter the network namespace and set the hostname to the host's name. hora tells hosts apart
# by hostname, boot id and network namespace (core/base/host_identity.h), so ranks in
# different namespaces use TCP between them and shared memory only within one.
#
# COMMAND runs in this (the machine's) namespace with:
#   HORA_NS_HOSTS  the host names, space separated (also the namespace names)
#   HORA_NS_ADDRS  their addresses, in the same order
#   HORA_NS_EXEC   ns_exec.sh: `ns_exec.sh HOST PROG ARGS...` runs PROG on HOST
#   HORA_NS_RSH    ns_rsh.sh: an ssh stand-in for horarun --rsh and Open MPI's plm_rsh_agent
# Everything is removed when COMMAND ends, fails or is interrupted (trap on EXIT): processes
# still inside the namespaces are killed, the namespaces (and with them the veths and the
# bridge) deleted, /etc/netns/<host> removed. Names carry this script's pid, so concurrent runs
# never collide (each has its own switch, so they may all use the same /24).
#
# Exit status: COMMAND's; 77 (CTest's skip code) with a "SKIP:" line when namespaces cannot be
# created here (not root, no ip/unshare/tc, or the kernel refuses); 2 for a bad invocation.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
hosts=2
rate=""
delay=""
while (($#)); do
  case "$1" in
    --hosts) hosts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --delay) delay=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "netns_hosts.sh: unknown option '$1' (expected --hosts, --rate, --delay, --)" >&2; exit 2 ;;
  esac
done
if (($# == 0)); then echo "netns_hosts.sh: no command after --" >&2; exit 2; fi
if ! [[ $hosts =~ ^[2-4]$ ]]; then echo "netns_hosts.sh: --hosts $hosts: expected 2, 3 or 4" >&2; exit 2; fi

skip() {
  echo "SKIP: network-namespace hosts unavailable: $*" >&2
  exit 77
}
[[ $(id -u) -eq 0 ]] || skip "needs root (ip netns add, veth, unshare --uts); running as uid $(id -u)"
for tool in ip unshare; do
  command -v "$tool" >/dev/null || skip "'$tool' not found (iproute2 / util-linux)"
done
if [[ -n $rate$delay ]] && ! command -v tc >/dev/null; then skip "'tc' not found (shaping asked for)"; fi

prefix="hm$$"
switch="${prefix}sw"
names=()
addrs=()
for ((k = 1; k <= hosts; ++k)); do
  names+=("${prefix}h$k")
  addrs+=("10.213.7.$k")
done

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  for ns in "${names[@]}" "$switch"; do
    if ip netns list 2>/dev/null | grep -qw "$ns"; then
      # Processes this run started inside the namespace (ranks, daemons) go first.
      for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
      ip netns del "$ns" 2>/dev/null || true
    fi
  done
  for ns in "${names[@]}"; do rm -rf "/etc/netns/$ns"; done
  rmdir /etc/netns 2>/dev/null || true
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Egress shaping of host $1's eth0: tbf for the rate, netem for the delay (under tbf when
# both). tbf's bucket is 128 KiB, two 64 KiB GSO segments: enough to keep TCP going at 10
# Gbit/s, and small beside a probe's 1 MiB message (a 1 MiB bucket let such a message through
# at twice the rate, so init measured a link twice as fast as it was).
# A kernel without sch_netem cannot delay: that is said, and the delay is left out.
shape_link() {
  local ns=$1 parent="root"
  [[ -n $rate$delay ]] || return 0
  if [[ -n $rate ]]; then
    ip netns exec "$ns" tc qdisc add dev eth0 root handle 1: tbf rate "$rate" burst 128kb latency 10ms
    parent="parent 1:1"
  fi
  if [[ -n $delay ]] && ! ip netns exec "$ns" tc qdisc add dev eth0 $parent handle 10: netem limit 100000 delay "$delay" 2>/dev/null; then
    [[ $ns == "${names[0]}" ]] && echo "netns_hosts: --delay $delay not applied: this kernel has no netem qdisc (sch_netem)" >&2
    delay_applied=""
  fi
  return 0
}
delay_applied=$delay

ip netns add "$switch" 2>/dev/null || skip "'ip netns add' refused (no CAP_SYS_ADMIN or no network namespaces)"
ip -n "$switch" link add br0 type bridge
ip -n "$switch" link set br0 up
hosts_file=$'127.0.0.1\tlocalhost\n'
for ((k = 0; k < hosts; ++k)); do hosts_file+="${addrs[k]}"$'\t'"${names[k]}"$'\n'; done
for ((k = 0; k < hosts; ++k)); do
  ns=${names[k]}
  ip netns add "$ns"
  # Both ends are created straight inside their namespaces: no name in this namespace.
  ip link add name "p$((k + 1))" netns "$switch" type veth peer name eth0 netns "$ns"
  ip -n "$switch" link set "p$((k + 1))" master br0
  ip -n "$switch" link set "p$((k + 1))" up
  ip -n "$ns" addr add "${addrs[k]}/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  shape_link "$ns"
  mkdir -p "/etc/netns/$ns"
  printf '%s' "$hosts_file" >"/etc/netns/$ns/hosts"
  echo "$ns" >"/etc/netns/$ns/hostname"
done
# The bridge learns both ports before the command starts (no flooding at its first packet).
for ((k = 1; k < hosts; ++k)); do
  # A refused connection to the discard port is enough: ARP and the bridge's table are filled.
  ip netns exec "${names[0]}" timeout 2 bash -c ": <>/dev/tcp/${addrs[k]}/9" >/dev/null 2>&1 || true
done

export HORA_NS_HOSTS="${names[*]}"
export HORA_NS_ADDRS="${addrs[*]}"
export HORA_NS_EXEC="$here/ns_exec.sh"
export HORA_NS_RSH="$here/ns_rsh.sh"
echo "netns_hosts: ${names[*]} (${addrs[*]}) on bridge br0 in $switch${rate:+, rate $rate}${delay_applied:+, delay $delay_applied}" >&2
set +e
"$@"
status=$?
set -e
exit "$status"
