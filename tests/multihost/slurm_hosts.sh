#!/usr/bin/env bash
# Runs a program as one Slurm job step over the hosts of netns_hosts.sh:
#   slurm_hosts.sh SLOTS PROG [ARGS...]
# Starts a private Slurm cluster for the duration of the step: munged (its own key, socket and
# files in a fresh directory), slurmctld on the first host and one slurmd per host (node name =
# host name, NodeAddr = its address), all inside the namespaces. Waits until every node is
# idle, then `srun --distribution=arbitrary` places ranks as SLOTS says ("2,2", "3,1") through
# SLURM_HOSTFILE. Rank 0 (on the first host) hosts hora's store at HORA_RENDEZVOUS_ADDR:PORT,
# which this script sets with a fresh HORA_SECRET, so hora reads its layout from Slurm's own
# SLURM_* variables. Every daemon is stopped and the directory removed on exit (trap), also
# after a failure.
#
# Exit status: the step's; 77 with a "SKIP:" line when Slurm or munge is not installed
# (Debian: slurm-wlm, munge) or the cluster does not come up (its logs are printed).
set -euo pipefail
slots=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
skip() {
  echo "SKIP: Slurm unavailable: $*" >&2
  exit 77
}
for tool in slurmctld slurmd srun sinfo munged nsenter; do
  command -v "$tool" >/dev/null || skip "'$tool' not found (install Debian's slurm-wlm and munge)"
done
read -r -a hosts <<<"$HORA_NS_HOSTS"
read -r -a addrs <<<"$HORA_NS_ADDRS"
IFS=, read -r -a counts <<<"$slots"
np=0
for c in "${counts[@]}"; do np=$((np + c)); done

dir=$(mktemp -d /tmp/hora-slurm.XXXXXX)
chmod 755 "$dir"
pids=()
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
show_logs() {
  for f in "$dir"/*.log; do
    [[ -f $f ]] && { echo "--- $f"; tail -n 20 "$f"; } >&2
  done
}

# slurmd needs this machine's cgroup mounts, which `ip netns exec` (ns_exec.sh) hides behind
# a fresh /sys: it enters only the host's network namespace, plus a UTS namespace of its own.
on_host_with_sys() {
  local host=$1
  shift
  nsenter --net="/run/netns/$host" unshare --uts -- /bin/sh -c 'hostname "$0" && exec "$@"' "$host" "$@"
}

# munge: a key of our own; munged refuses to run as root unless forced.
dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge.key"
"$HORA_NS_EXEC" "${hosts[0]}" munged --foreground --force --key-file="$dir/munge.key" \
  --socket="$dir/munge.sock" --pid-file="$dir/munged.pid" --seed-file="$dir/munge.seed" \
  --log-file="$dir/munged.log" >"$dir/munged.out" 2>&1 &
pids+=($!)

conf="$dir/slurm.conf"
{
  echo "ClusterName=hora"
  echo "SlurmctldHost=${hosts[0]}(${addrs[0]})"
  echo "AuthType=auth/munge"
  echo "AuthInfo=socket=$dir/munge.sock"
  echo "CredType=cred/munge"
  echo "SlurmUser=root"
  echo "SlurmdUser=root"
  echo "StateSaveLocation=$dir/state"
  echo "SlurmdSpoolDir=$dir/spool-%n"
  echo "SlurmctldPidFile=$dir/slurmctld.pid"
  echo "SlurmdPidFile=$dir/slurmd-%n.pid"
  echo "SlurmctldLogFile=$dir/slurmctld.log"
  echo "SlurmdLogFile=$dir/slurmd-%n.log"
  echo "ProctrackType=proctrack/linuxproc"
  echo "TaskPlugin=task/none"
  echo "JobAcctGatherType=jobacct_gather/none"
  echo "AccountingStorageType=accounting_storage/none"
  echo "MpiDefault=none"
  echo "SchedulerType=sched/builtin"
  echo "SelectType=select/cons_tres"
  echo "SelectTypeParameters=CR_Core"
  # The namespace hosts share this machine's CPUs: take the configured counts as given.
  echo "SlurmdParameters=config_overrides"
  echo "ReturnToService=2"
  for ((k = 0; k < ${#hosts[@]}; ++k)); do
    echo "NodeName=${hosts[k]} NodeAddr=${addrs[k]} CPUs=8 State=UNKNOWN"
  done
  echo "PartitionName=hora Nodes=$(IFS=,; echo "${hosts[*]}") Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE"
} >"$conf"
mkdir -p "$dir/state"
export SLURM_CONF="$conf"
sleep 0.2  # munged's socket
"$HORA_NS_EXEC" "${hosts[0]}" slurmctld -D -i -f "$conf" >"$dir/slurmctld.out" 2>&1 &
pids+=($!)
for ((k = 0; k < ${#counts[@]}; ++k)); do
  mkdir -p "$dir/spool-${hosts[k]}"
  on_host_with_sys "${hosts[k]}" slurmd -D -f "$conf" -N "${hosts[k]}" >"$dir/slurmd-${hosts[k]}.out" 2>&1 &
  pids+=($!)
done

# Every node idle within 30 s, or a visible skip with the daemons' logs.
idle=0
for ((t = 0; t < 150; ++t)); do
  idle=$("$HORA_NS_EXEC" "${hosts[0]}" sinfo -h -N -o '%T' 2>/dev/null | grep -c '^idle' || true)
  ((idle >= ${#counts[@]})) && break
  sleep 0.2
done
if ((idle < ${#counts[@]})); then
  "$HORA_NS_EXEC" "${hosts[0]}" sinfo -N >&2 || true
  show_logs
  skip "the private Slurm cluster did not come up within 30 s (logs above)"
fi

# Rank placement, one line per rank; rank 0 on the first host hosts hora's store.
hostfile="$dir/hostfile"
: >"$hostfile"
for ((k = 0; k < ${#counts[@]}; ++k)); do
  for ((i = 0; i < counts[k]; ++i)); do echo "${hosts[k]}" >>"$hostfile"; done
done
export SLURM_HOSTFILE="$hostfile"
export HORA_RENDEZVOUS_ADDR="${addrs[0]}"
export HORA_RENDEZVOUS_PORT=$((20000 + RANDOM % 20000))
HORA_SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
export HORA_SECRET
set +e
"$HORA_NS_EXEC" "${hosts[0]}" srun --nodes="${#counts[@]}" --ntasks="$np" --distribution=arbitrary \
  --overcommit --kill-on-bad-exit=1 --label --time=10 "$@"
status=$?
set -e
if ((status != 0)); then show_logs; fi
exit "$status"
